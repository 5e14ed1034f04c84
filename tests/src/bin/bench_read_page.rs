//! Benchmark: read_page on the ~10,000-element fixture page, side by side with a baseline
//! measured in the same run: a page-side DOM walk of the kind extensions commonly inject (every
//! element a line, role from the tag, name from aria-label or text, refs in a page global),
//! called through the same path (backend → extension → CDP) as javascript_tool. read_page itself
//! walks the page in the worker's isolated world (tools/read_page.js), which keeps its last whole
//! tree while nothing it was made from changes: read_page is measured on the unchanged page and
//! right after a change (a heading's text, set outside the timing), where it walks anew and sends
//! the worker only the lines that differ from the last answer.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_read_page`

use browser_operator_e2e::{Backend, Browser, BrowserOptions, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const RUNS: usize = 21;

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

fn median(v: &[Duration]) -> Duration {
    percentile(v, 50)
}

fn percentile(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) * p + 50) / 100]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&backend.ws_url(), backend.token(), None)
        .await?;
    backend.wait_browsers(1, Duration::from_secs(20)).await?;
    browser
        .wait_status("connected", Duration::from_secs(20))
        .await?;
    let ctx = backend
        .text("tabs_context_mcp", json!({"createIfEmpty": true}))
        .await?;
    let ctx: Value = serde_json::from_str(ctx.lines().next().unwrap_or("")).expect("JSON");
    let tab = ctx["availableTabs"][0]["tabId"].as_i64().expect("tab");
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("large.html")}),
        )
        .await?;
    let elements = backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.getElementsByTagName('*').length"}),
        )
        .await?;

    // A direct debugger session on the tab, only to collect garbage before each measured call:
    // neither side then pays for the other's leftovers (the baseline leaves 575k-character
    // strings behind, read_page a 275k one).
    let target = browser
        .page_targets()
        .await?
        .into_iter()
        .find(|t| t.url.contains("large.html"))
        .expect("the large page's target");
    let session = browser
        .cdp()
        .call(
            "Target.attachToTarget",
            json!({"targetId": target.id, "flatten": true}),
        )
        .await?;
    let session = session["sessionId"].as_str().expect("session").to_string();
    let collect = || async {
        browser
            .cdp()
            .call_session(&session, "HeapProfiler.collectGarbage", json!({}))
            .await
            .map(drop)
    };

    // A change the page's MutationObserver sees, made outside the timing: a heading in the
    // middle of the page gets new text (one line of read_page's answer changes).
    let cdp = browser.cdp();
    let session = &session;
    let change = |i: usize| async move {
        cdp.call_session(
            session,
            "Runtime.evaluate",
            json!({"expression": format!(
                "document.querySelectorAll('h2')[300].textContent = 'Item 300, round {i}'"
            )}),
        )
        .await
        .map(drop)
    };

    // Four calls, each run in every round, in a rotating order: the baseline (its answer cut to
    // 50,000 characters by javascript_tool), read_page with its whole answer on the unchanged
    // page and right after a change, and read_page after a change at its default max_chars
    // (50,000), where the answer is withheld and an error says how to ask for less: like the
    // baseline, the whole walk and its text reach the worker, but not the backend.
    let mut times: [Vec<Duration>; 4] = Default::default();
    let mut ours_chars = 0;
    for i in 0..=RUNS {
        for k in 0..4 {
            let which = (i + k) % 4;
            if which >= 2 {
                change(i * 4 + k).await?;
            }
            collect().await?;
            let t = Instant::now();
            match which {
                0 => {
                    backend
                        .text("javascript_tool", json!({"tabId": tab, "text": BASELINE}))
                        .await?;
                }
                1 | 2 => {
                    let text = backend
                        .text("read_page", json!({"tabId": tab, "max_chars": 1_000_000}))
                        .await?;
                    ours_chars = text.chars().count();
                }
                _ => {
                    let e = backend.error("read_page", json!({"tabId": tab})).await?;
                    assert!(e.contains("over max_chars"), "{e}");
                }
            }
            // The first round warms caches on every side.
            if i > 0 {
                times[which].push(t.elapsed());
            }
        }
    }
    let [base, ours, changed, withheld] = times;
    let base_chars: usize = backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": format!("{BASELINE}.length")}),
        )
        .await?
        .parse()
        .unwrap_or(0);
    println!(
        "read_page on a page of {elements} elements, {RUNS} runs each, interleaved (backend round trip):"
    );
    println!(
        "{:<34} {:>10} {:>10} {:>12}",
        "", "median", "p90", "characters"
    );
    println!(
        "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
        "baseline (page-side walk)",
        ms(median(&base)),
        ms(percentile(&base, 90)),
        base_chars
    );
    println!(
        "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
        "read_page, unchanged page",
        ms(median(&ours)),
        ms(percentile(&ours, 90)),
        ours_chars
    );
    println!(
        "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
        "read_page, after a change",
        ms(median(&changed)),
        ms(percentile(&changed, 90)),
        ours_chars
    );
    println!(
        "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
        "read_page, changed, withheld",
        ms(median(&withheld)),
        ms(percentile(&withheld, 90)),
        "(error)"
    );
    // find keeps its candidates like read_page keeps its tree: measured both ways.
    for (label, tool, args, changed) in [
        (
            "read_page filter interactive",
            "read_page",
            json!({"tabId": tab, "filter": "interactive"}),
            false,
        ),
        (
            "find \"buy 42\", unchanged",
            "find",
            json!({"tabId": tab, "query": "buy 42"}),
            false,
        ),
        (
            "find \"note for 599\", unchanged",
            "find",
            json!({"tabId": tab, "query": "note for 599"}),
            false,
        ),
        (
            "find \"buy 42\", after a change",
            "find",
            json!({"tabId": tab, "query": "buy 42"}),
            true,
        ),
    ] {
        let mut times = Vec::new();
        let mut chars = 0;
        for i in 0..=RUNS {
            if changed {
                change(1_000 + i).await?;
            }
            collect().await?;
            let t = Instant::now();
            chars = backend.text(tool, args.clone()).await?.chars().count();
            if i > 0 {
                times.push(t.elapsed());
            }
        }
        println!(
            "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
            label,
            ms(median(&times)),
            ms(percentile(&times, 90)),
            chars
        );
    }
    println!(
        "ratio to the baseline (medians): unchanged page {:.2}, after a change {:.2}, withheld {:.2}; size {:.2}",
        ms(median(&ours)) / ms(median(&base)),
        ms(median(&changed)) / ms(median(&base)),
        ms(median(&withheld)) / ms(median(&base)),
        ours_chars as f64 / base_chars as f64
    );
    Ok(())
}
