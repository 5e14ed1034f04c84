//! Foundation benchmark: worker start to connected, and command round trips through the
//! extension, each beside a baseline measured in the same run.
//!
//! - start → connected: `ServiceWorker.startWorker` on a stopped worker until the server lists
//!   the browser; baseline: the same start until the worker's target appears (no connection).
//! - javascript_tool round trip (POST /commands → server → extension → CDP → back);
//!   baseline: the same `Runtime.evaluate` sent straight over CDP from this process.
//!
//! `bench_foundation path [rounds]`: the everyday command's path instead, over WebSocket,
//! SSE + HTTP and long polling, each round alternating its baselines (the HTTP floor: `GET
//! /status` through the same client, new connection each; raw CDP `Runtime.evaluate "1+1"`)
//! with `javascript_tool "1+1"` and an unknown tool's error through `POST /commands`; then
//! over WebSocket 10,000 trivial commands pipelined (the relay in-process, 256 in flight) and
//! the worker's memory (after a GC) before and after.

use browser_operator_e2e::{Browser, Result};
use serde_json::json;
use std::time::{Duration, Instant};

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = samples[samples.len() / 2];
    let p90 = samples[(samples.len() * 9 / 10).min(samples.len() - 1)];
    println!(
        "{name:<48} n={:<4} median {:>8.2} ms   p90 {:>8.2} ms   worst {:>8.2} ms",
        samples.len(),
        ms(median),
        ms(p90),
        ms(*samples.last().unwrap_or(&median))
    );
}

async fn start_worker(browser: &Browser) -> Result<()> {
    let id = browser.extension_id().await?;
    let page = browser.open_page("about:blank").await?;
    page.call("ServiceWorker.enable", json!({})).await?;
    page.call(
        "ServiceWorker.startWorker",
        json!({"scopeURL": format!("chrome-extension://{id}/")}),
    )
    .await?;
    page.close().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("path") {
        return path().await;
    }
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;

    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("hello.html");
    backend.navigate(tab, &url).await?;

    // Round trips.
    for _ in 0..5 {
        backend.js(tab, "1 + 1").await?;
    }
    let mut through = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        backend.js(tab, "document.title").await?;
        through.push(t.elapsed());
    }
    let mut trivial = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        backend.text("tabs_context_mcp", json!({})).await?;
        trivial.push(t.elapsed());
    }
    let page = browser.open_page(&url).await?;
    let mut direct = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        page.eval("document.title").await?;
        direct.push(t.elapsed());
    }
    page.close().await?;

    // Start → connected.
    let mut to_connected = Vec::new();
    let mut to_target = Vec::new();
    for _ in 0..5 {
        // The watchdog would start the stopped worker itself (bench_wake measures that): it is
        // closed first, so the start measured here is this benchmark's own.
        let worker = browser.worker().await?;
        worker
            .eval("chrome.offscreen.closeDocument().then(() => 1, () => 0)")
            .await?;
        worker.detach().await?;
        browser.stop_worker().await?;
        backend.wait_browsers(0, Duration::from_secs(10)).await?;
        let t = Instant::now();
        start_worker(&browser).await?;
        browser.wait_worker(Duration::from_secs(10)).await?;
        to_target.push(t.elapsed());
        backend.wait_browsers(1, Duration::from_secs(20)).await?;
        to_connected.push(t.elapsed());
    }

    let wasm = std::fs::metadata(browser_operator_e2e::built_worker_wasm())?.len();
    println!("\nBrowser Operator foundation benchmark (headless Chromium, loopback)\n");
    println!("worker wasm: {wasm} bytes raw");
    summary("javascript_tool via POST /commands", through);
    summary("  baseline: Runtime.evaluate straight over CDP", direct);
    summary("tabs_context_mcp via POST /commands", trivial);
    summary("worker start → server sees it connected", to_connected);
    summary("  baseline: worker start → worker target up", to_target);
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn med(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn timed<F: std::future::Future<Output = Result<T>>, T>(f: F) -> Result<Duration> {
    let t = Instant::now();
    f.await?;
    Ok(t.elapsed())
}

async fn worker_memory(browser: &Browser) -> Result<(f64, f64)> {
    let worker = browser.worker().await?;
    worker
        .call("HeapProfiler.collectGarbage", json!({}))
        .await?;
    let heap = worker.call("Runtime.getHeapUsage", json!({})).await?;
    let wasm = worker
        .eval("self.browserOperator.wasmMemoryBytes()")
        .await?
        .as_f64()
        .unwrap_or(0.0);
    let _ = worker.detach().await;
    Ok((heap["usedSize"].as_f64().unwrap_or(0.0), wasm))
}

async fn path() -> Result<()> {
    let rounds = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(60usize);
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("hello.html");
    backend.navigate(tab, &url).await?;
    let page = browser.open_page(&url).await?;
    let http = backend.http_url();
    let token = backend.token().to_string();
    let floor = || {
        let (http, token) = (http.clone(), token.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                browser_operator_server::call::status(&http, &token)
            })
            .await
            .map_err(|e| browser_operator_e2e::Error::new(e.to_string()))?
            .map_err(|e| browser_operator_e2e::Error::new(e.to_string()))
        }
    };
    println!(
        "\nBrowser Operator command path (headless Chromium, loopback), medians of {rounds}\n"
    );
    // Pipelined over one WebSocket.
    backend
        .caller()
        .command_when_connected("no_such_tool", json!({}), Duration::from_secs(20))
        .await?;
    let relay = backend
        .relay()
        .ok_or_else(|| browser_operator_e2e::Error::new("no server"))?;
    let total = 10_000usize;
    let in_flight = 256usize;
    let mut before = (0.0, 0.0);
    for (label, tool, args) in [
        ("warm-up (unknown tool)", "no_such_tool", json!({})),
        ("unknown tool", "no_such_tool", json!({})),
        ("tabs_context_mcp", "tabs_context_mcp", json!({})),
    ] {
        let args = args.as_object().cloned().unwrap_or_default();
        if label == "unknown tool" {
            before = worker_memory(&browser).await?;
        }
        let start = Instant::now();
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(in_flight));
        let mut tasks = tokio::task::JoinSet::new();
        let n = if label == "unknown tool" {
            total
        } else {
            total / 5
        };
        for _ in 0..n {
            let permit = std::sync::Arc::clone(&sem).acquire_owned().await;
            let (relay, args) = (std::sync::Arc::clone(&relay), args.clone());
            tasks.spawn(async move {
                let _permit = permit;
                relay
                    .run_command(tool, args, None, Duration::from_secs(60))
                    .await
            });
        }
        let mut failed = 0;
        while let Some(r) = tasks.join_next().await {
            if !matches!(r, Ok(Ok(_))) {
                failed += 1;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "pipelined {label}: {n} commands in {secs:.2} s = {:.0} commands/s ({failed} failed)",
            n as f64 / secs
        );
        if label == "unknown tool" {
            let after = worker_memory(&browser).await?;
            println!(
                "worker memory after a GC, over these {n}: JS heap {:.2} -> {:.2} MB ({:+.1} %), wasm {:.2} -> {:.2} MB",
                before.0 / 1e6,
                after.0 / 1e6,
                (after.0 / before.0 - 1.0) * 100.0,
                before.1 / 1e6,
                after.1 / 1e6
            );
        }
    }
    // What the extension APIs on the command path cost, timed inside the worker.
    {
        let worker = browser.worker().await?;
        let probe = format!(
            "(async () => {{
                const time = async (f) => {{ const t = performance.now(); for (let i = 0; i < 50; i++) await f(); return (performance.now() - t) / 50; }};
                const ids = Array.from({{length: 512}}, (_, i) => 'cmd-' + i.toString(16).padStart(32, '0'));
                return {{
                    tabsGet: await time(() => chrome.tabs.get({tab})),
                    storageSetLedger: await time(() => chrome.storage.session.set({{probe: {{done: ids, running: [], queued: [], outbox: []}}}})),
                    storageSetSmall: await time(() => chrome.storage.session.set({{probe1: {{id: ids[0], n: 1, s: 'running'}}}})),
                    debuggerEval: await time(() => chrome.debugger.sendCommand({{tabId: {tab}}}, 'Runtime.evaluate', {{expression: '1+1'}})),
                    cleanup: await chrome.storage.session.remove(['probe', 'probe1']),
                }};
            }})()"
        );
        println!(
            "extension APIs from the worker (ms each): {}",
            worker.eval(&probe).await?
        );
        let _ = worker.detach().await;
    }
    for transport in ["websocket", "sse-http", "http-poll"] {
        if transport != "websocket" {
            browser_operator_e2e::connect(&browser, &backend, transport).await?;
        }
        let caller = backend.caller();
        caller
            .command_when_connected(
                "javascript_tool",
                json!({"tabId": tab, "text": "1+1"}),
                Duration::from_secs(20),
            )
            .await?;
        for _ in 0..10 {
            backend.js(tab, "1+1").await?;
            backend.command("no_such_tool", json!({})).await?;
        }
        let (mut f, mut c, mut j, mut u) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            f.push(timed(floor()).await?);
            c.push(timed(page.eval("1+1")).await?);
            j.push(timed(backend.js(tab, "1+1")).await?);
            u.push(timed(backend.command("no_such_tool", json!({}))).await?);
        }
        let (f, c, j, u) = (med(f), med(c), med(j), med(u));
        println!(
            "{transport:<10} http floor {:>6.2}  raw CDP {:>6.2}  javascript_tool {:>6.2} ms ({:.2}x floor+CDP)  unknown tool {:>6.2} ms (floor +{:.2})",
            ms(f),
            ms(c),
            ms(j),
            ms(j) / (ms(f) + ms(c)),
            ms(u),
            ms(u) - ms(f)
        );
    }
    page.close().await?;
    browser.close().await?;
    Ok(())
}
