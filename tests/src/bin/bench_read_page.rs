//! Benchmark: read_page on the ~10,000-element fixture page, side by side with a baseline
//! measured in the same run: a page-side DOM walk of the kind extensions commonly inject (every
//! element a line, role from the tag, name from aria-label or text, refs in a page global),
//! called through the same path (backend → extension → CDP) as javascript_tool. read_page itself
//! walks the page in the worker's isolated world (tools/read_page.js).
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_read_page`

use browser_operator_e2e::{median, Result};
use serde_json::json;
use std::time::Instant;

const RUNS: usize = 9;

const BASELINE: &str = r#"(() => {
  const store = window.__refStore || (window.__refStore = { map: new WeakMap(), next: 0 });
  const roles = { A: 'link', BUTTON: 'button', INPUT: 'textbox', SELECT: 'combobox', TEXTAREA: 'textbox',
    H1: 'heading', H2: 'heading', H3: 'heading', UL: 'list', OL: 'list', LI: 'listitem', P: 'paragraph',
    IMG: 'img', NAV: 'navigation', MAIN: 'main', SECTION: 'region', FORM: 'form', TABLE: 'table' };
  const lines = [];
  const walk = (el, depth) => {
    if (depth > 15) return;
    const role = el.getAttribute('role') || roles[el.tagName] || 'generic';
    let id = store.map.get(el);
    if (!id) { id = 'ref_' + (++store.next); store.map.set(el, id); }
    const name = (el.getAttribute('aria-label') || el.getAttribute('placeholder') || el.getAttribute('title')
      || (el.textContent || '').trim()).replace(/\s+/g, ' ').slice(0, 100);
    let line = ' '.repeat(depth) + role + (name ? ' "' + name + '"' : '') + ' [' + id + ']';
    if (el.href) line += ' href="' + el.href + '"';
    if (el.type) line += ' type="' + el.type + '"';
    lines.push(line);
    for (const c of el.children) walk(c, depth + 1);
  };
  walk(document.body, 0);
  lines.push('Viewport: ' + innerWidth + 'x' + innerHeight);
  return lines.join('\n');
})()"#;

#[tokio::main]
async fn main() -> Result<()> {
    let (fixtures, backend, _browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("large.html")).await?;
    let elements = backend
        .js(tab, "document.getElementsByTagName('*').length")
        .await?;

    let mut ours = Vec::new();
    let mut ours_chars = 0;
    let mut base = Vec::new();
    let mut base_chars = 0;
    for i in 0..=RUNS {
        let t = Instant::now();
        let text = backend
            .text("read_page", json!({"tabId": tab, "max_chars": 1_000_000}))
            .await?;
        let d = t.elapsed();
        ours_chars = text.chars().count();
        let t = Instant::now();
        let b = backend.js(tab, BASELINE).await?;
        let db = t.elapsed();
        // javascript_tool bounds its output: take the full size from the page.
        let _ = b;
        base_chars = backend
            .js(tab, &format!("{BASELINE}.length"))
            .await?
            .parse()
            .unwrap_or(0);
        if i > 0 {
            // The first run warms caches on both sides.
            ours.push(d);
            base.push(db);
        }
    }
    let (o, b) = (median(ours), median(base));
    println!(
        "read_page on a page of {elements} elements, median of {RUNS} runs (backend round trip):"
    );
    println!("{:<28} {:>10} {:>12}", "", "time", "characters");
    println!(
        "{:<28} {:>8.1}ms {:>12}",
        "baseline (page-side walk)",
        b.as_secs_f64() * 1e3,
        base_chars
    );
    println!(
        "{:<28} {:>8.1}ms {:>12}",
        "read_page (isolated walk)",
        o.as_secs_f64() * 1e3,
        ours_chars
    );
    for (label, tool, args) in [
        (
            "read_page filter interactive",
            "read_page",
            json!({"tabId": tab, "filter": "interactive"}),
        ),
        (
            "find \"buy 42\"",
            "find",
            json!({"tabId": tab, "query": "buy 42"}),
        ),
    ] {
        let mut times = Vec::new();
        let mut chars = 0;
        for _ in 0..3 {
            let t = Instant::now();
            chars = backend.text(tool, args.clone()).await?.chars().count();
            times.push(t.elapsed());
        }
        println!(
            "{:<28} {:>8.1}ms {:>12}",
            label,
            median(times).as_secs_f64() * 1e3,
            chars
        );
    }
    println!(
        "ratio read_page / baseline:  time {:.2}, size {:.2}",
        o.as_secs_f64() / b.as_secs_f64(),
        ours_chars as f64 / base_chars as f64
    );
    Ok(())
}
