//! Benchmark: read_page and find on the ~10,000-element fixture page (`large.html`) and on the
//! ~2,000-element article (`bench/article.html`, when present), each measured beside a baseline
//! in the same run: a page-side DOM walk of the kind extensions commonly inject (every element a
//! line, role from the tag, name from aria-label or text cut at 100, refs in a page global),
//! called through the same path (backend → extension → CDP) as javascript_tool. read_page walks
//! the page in the worker's isolated world (tools/read_page.js), which keeps its last whole tree
//! while nothing it was made from changes: read_page is measured on the unchanged page and right
//! after a change (a heading's text, set outside the timing). When Playwright MCP is installed
//! (`npm install --prefix .tools @playwright/mcp`), its snapshot of the same pages is measured
//! too, for size (the goal: read_page ≤ 0.5 × its characters).
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_read_page`
//! (`BENCH_DUMP=<dir>` writes each answer there; `BENCH_RUNS=<n>` sets the rounds).

use browser_operator_e2e::{Backend, Browser, BrowserOptions, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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

fn percentile(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) * p + 50) / 100]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One measured call: what it asks, and whether the page changes (outside the timing) first.
struct Case {
    label: &'static str,
    tool: &'static str,
    args: Value,
    change: bool,
}

/// A page, the cases run on it, and the script that changes it (`{i}`: the round).
struct Bench {
    file: &'static str,
    change: &'static str,
    cases: Vec<Case>,
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21);
    let dump = std::env::var("BENCH_DUMP")
        .ok()
        .map(std::path::PathBuf::from);
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

    let whole = json!({"tabId": tab, "max_chars": 1_000_000});
    let case = |label, tool, args: &Value, change| Case {
        label,
        tool,
        args: args.clone(),
        change,
    };
    let mut benches = vec![Bench {
        file: "large.html",
        change: "document.querySelectorAll('h2')[300].textContent = 'Item 300, round {i}'",
        cases: vec![
            case(
                "baseline (page-side walk)",
                "javascript_tool",
                &json!({"tabId": tab, "text": BASELINE}),
                false,
            ),
            case("read_page, unchanged", "read_page", &whole, false),
            case("read_page, after a change", "read_page", &whole, true),
            case(
                "read_page interactive",
                "read_page",
                &json!({"tabId": tab, "filter": "interactive"}),
                false,
            ),
            case(
                "find \"buy 42\", unchanged",
                "find",
                &json!({"tabId": tab, "query": "buy 42"}),
                false,
            ),
            case(
                "find \"note for 599\", unchanged",
                "find",
                &json!({"tabId": tab, "query": "note for 599"}),
                false,
            ),
            case(
                "find \"buy 42\", after a change",
                "find",
                &json!({"tabId": tab, "query": "buy 42"}),
                true,
            ),
        ],
    }];
    if browser_operator_e2e::fixtures::fixtures_dir()
        .join("bench/article.html")
        .exists()
    {
        benches.push(Bench {
            file: "bench/article.html",
            change: "document.querySelectorAll('h2')[20].textContent = 'Part 21, round {i}'",
            cases: vec![
                case(
                    "baseline (page-side walk)",
                    "javascript_tool",
                    &json!({"tabId": tab, "text": BASELINE}),
                    false,
                ),
                case("read_page, unchanged", "read_page", &whole, false),
                case("read_page, after a change", "read_page", &whole, true),
                case(
                    "read_page interactive",
                    "read_page",
                    &json!({"tabId": tab, "filter": "interactive"}),
                    false,
                ),
                case(
                    "find \"search\"",
                    "find",
                    &json!({"tabId": tab, "query": "search"}),
                    false,
                ),
            ],
        });
    }

    let mut sizes = Vec::new();
    for bench in &benches {
        let url = fixtures.url(bench.file);
        backend
            .text("navigate", json!({"tabId": tab, "url": url}))
            .await?;
        let elements = backend
            .text(
                "javascript_tool",
                json!({"tabId": tab, "text": "document.getElementsByTagName('*').length"}),
            )
            .await?;
        // A direct debugger session on the tab, to change the page and to collect garbage
        // before each measured call: no call then pays for another's leftovers.
        let target = browser
            .page_targets()
            .await?
            .into_iter()
            .find(|t| t.url == url)
            .expect("the page's target");
        let cdp = browser.cdp();
        let session = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target.id, "flatten": true}),
            )
            .await?;
        let session = session["sessionId"].as_str().expect("session").to_string();
        let eval = |expression: String| {
            let session = &session;
            async move {
                cdp.call_session(
                    session,
                    "Runtime.evaluate",
                    json!({"expression": expression}),
                )
                .await
                .map(drop)
            }
        };
        let n = bench.cases.len();
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); n];
        let mut chars = vec![0; n];
        // Every case in every round, in a rotating order; the first round warms caches.
        for i in 0..=runs {
            for k in 0..n {
                let which = (i + k) % n;
                let c = &bench.cases[which];
                if c.change {
                    eval(bench.change.replace("{i}", &(i * n + k).to_string())).await?;
                }
                eval("0".into()).await?;
                cdp.call_session(&session, "HeapProfiler.collectGarbage", json!({}))
                    .await?;
                let t = Instant::now();
                let text = backend.text(c.tool, c.args.clone()).await?;
                let took = t.elapsed();
                if i > 0 {
                    times[which].push(took);
                }
                chars[which] = text.chars().count();
                if let (Some(dir), 0) = (&dump, i) {
                    let name = format!(
                        "{}.{}.txt",
                        bench.file.replace('/', "_"),
                        c.label.replace(|ch: char| !ch.is_alphanumeric(), "_")
                    );
                    std::fs::create_dir_all(dir)?;
                    std::fs::write(dir.join(name), &text)?;
                }
            }
        }
        let _ = cdp
            .call("Target.detachFromTarget", json!({"sessionId": session}))
            .await;
        println!(
            "\n{} ({elements} elements), {runs} rounds, interleaved (backend round trip):",
            bench.file
        );
        println!(
            "{:<34} {:>10} {:>10} {:>12}",
            "", "median", "p90", "characters"
        );
        for (c, (t, chars)) in bench.cases.iter().zip(times.iter().zip(&chars)) {
            println!(
                "{:<34} {:>8.1}ms {:>8.1}ms {:>12}",
                c.label,
                ms(percentile(t, 50)),
                ms(percentile(t, 90)),
                chars
            );
        }
        sizes.push((bench.file, url, chars[1]));
    }
    playwright(&sizes, dump.as_deref()).await;
    Ok(())
}

/// Playwright MCP's snapshot of the same pages (its characters beside read_page's), when it is
/// installed under `.tools`; it drives its own Chromium (the system one, headless).
async fn playwright(sizes: &[(&str, String, usize)], dump: Option<&std::path::Path>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let cli = browser_operator_e2e::repo_root().join(".tools/node_modules/@playwright/mcp/cli.js");
    if !cli.exists() {
        println!(
            "\n(Playwright MCP not installed under .tools: its snapshot sizes are not measured)"
        );
        return;
    }
    let chromium = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("chromium");
    let child = tokio::process::Command::new("node")
        .arg(&cli)
        .args(["--executable-path", chromium, "--headless", "--isolated"])
        .args(["--no-sandbox", "--viewport-size", "780x437"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        // It writes its own files where it runs: not into the repository.
        .current_dir(std::env::temp_dir())
        .spawn();
    let Ok(mut child) = child else {
        println!("\n(Playwright MCP did not start)");
        return;
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return;
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut id = 0;
    let mut call = |method: &str, params: Value| {
        id += 1;
        (
            id,
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            ),
        )
    };
    let (n, msg) = call(
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
    );
    println!("\nPlaywright MCP browser_snapshot on the same pages:");
    if stdin.write_all(msg.as_bytes()).await.is_err() || read_answer(&mut lines, n).await.is_none()
    {
        return;
    }
    let initialized = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    if stdin.write_all(initialized.as_bytes()).await.is_err() {
        return;
    }
    for (file, url, ours) in sizes {
        let (n, msg) = call(
            "tools/call",
            json!({"name": "browser_navigate", "arguments": {"url": url}}),
        );
        if stdin.write_all(msg.as_bytes()).await.is_err()
            || read_answer(&mut lines, n).await.is_none()
        {
            return;
        }
        let mut times = Vec::new();
        let mut chars = 0;
        for _ in 0..5 {
            let (n, msg) = call(
                "tools/call",
                json!({"name": "browser_snapshot", "arguments": {}}),
            );
            let t = Instant::now();
            if stdin.write_all(msg.as_bytes()).await.is_err() {
                return;
            }
            let Some(answer) = read_answer(&mut lines, n).await else {
                return;
            };
            times.push(t.elapsed());
            let text: String = answer
                .pointer("/result/content")
                .and_then(Value::as_array)
                .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
                .unwrap_or_default();
            chars = text.chars().count();
            if let Some(dir) = dump {
                let _ = std::fs::write(
                    dir.join(format!("{}.playwright.txt", file.replace('/', "_"))),
                    &text,
                );
            }
        }
        println!(
            "{:<20} {:>8.1}ms median, {:>8} characters; read_page's whole tree {:>8} = {:.2} x",
            file,
            ms(percentile(&times, 50)),
            chars,
            ours,
            *ours as f64 / chars.max(1) as f64
        );
    }
    let _ = child.kill().await;
}

/// The JSON-RPC answer with id `n` (other messages skipped), or `None` when the stream ends.
async fn read_answer(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    n: i64,
) -> Option<Value> {
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v.get("id").and_then(Value::as_i64) == Some(n) {
            return Some(v);
        }
    }
    None
}
