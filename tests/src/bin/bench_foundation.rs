//! Foundation benchmark: worker start to connected, and command round trips through the
//! extension, each beside a baseline measured in the same run.
//!
//! - start → connected: `ServiceWorker.startWorker` on a stopped worker until the server lists
//!   the browser; baseline: the same start until the worker's target appears (no connection).
//! - javascript_tool round trip (POST /commands → server → extension → CDP → back);
//!   baseline: the same `Runtime.evaluate` sent straight over CDP from this process.

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
