//! Benchmark: what idle detach costs the next command. A group tab idle past the setting (1 s
//! here) is detached; the first command afterwards attaches again, enables recording (Page,
//! Network, Log, Runtime; console messages replayed) and reads the page's resource timing for
//! the gap. Baseline, same run: the same command right after, with the debugger attached.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_idle`

use browser_operator_e2e::{median, Result};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 9;

#[tokio::main]
async fn main() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let worker = browser.worker().await?;
    worker.set_idle_seconds(1).await?;
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("console.html");
    backend
        .text("navigate", json!({"tabId": tab, "url": url}))
        .await?;
    let attached = format!(
        "chrome.debugger.getTargets().then((ts) => ts.some((t) => t.tabId === {tab} && t.attached))"
    );
    let command = json!({"tabId": tab, "text": "document.title"});
    let (mut after_idle, mut attached_runs) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let waited = Instant::now();
        while worker.eval(&attached).await? == json!(true) {
            if waited.elapsed() > Duration::from_secs(20) {
                panic!("tab {tab} was not detached within 20 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let t = Instant::now();
        backend.text("javascript_tool", command.clone()).await?;
        after_idle.push(t.elapsed());
        let t = Instant::now();
        backend.text("javascript_tool", command.clone()).await?;
        attached_runs.push(t.elapsed());
    }
    println!("javascript_tool on {url}, median of {RUNS} runs:");
    println!(
        "{:<58} {:>8.1}ms",
        "baseline (debugger attached)",
        median(attached_runs).as_secs_f64() * 1e3
    );
    println!(
        "{:<58} {:>8.1}ms",
        "first command after idle detach (attach, enable, replay)",
        median(after_idle).as_secs_f64() * 1e3
    );
    Ok(())
}
