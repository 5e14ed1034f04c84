//! Reconnect times per transport: the server is stopped and started again N times (default 5)
//! and the time until the browser is connected again is measured; WebSocket is the baseline.
//! One worker stop per transport is measured too (bounded by Chrome's 30 s alarm).
//!
//! Run: `cargo run --release -p browser-operator-e2e --bin bench_reconnect [N]`

use browser_operator_e2e::{Backend, Browser, BrowserOptions, Result};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

async fn attempts(backend: &Backend) -> Result<u64> {
    let s = backend.status().await?;
    Ok(s["wsConnections"].as_u64().unwrap_or(0) + s["httpRequests"].as_u64().unwrap_or(0))
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let rounds = browser_operator_e2e::count_arg(5);
    println!(
        "{:<16} {:>22} {:>22} {:>18}",
        "transport", "server restart median", "server restart worst", "worker stop"
    );
    for transport in ["websocket", "sse-http", "http-poll", "http-short-poll"] {
        let mut backend = Backend::start().await?;
        let browser = Browser::launch(BrowserOptions::default()).await?;
        browser_operator_e2e::connect(&browser, &backend, transport).await?;
        let mut restarts = Vec::new();
        for _ in 0..rounds {
            backend.stop().await;
            backend.start_again().await?;
            let start = Instant::now();
            backend.wait_browsers(1, WAIT).await?;
            restarts.push(start.elapsed());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let before = attempts(&backend).await?;
        let start = Instant::now();
        browser.stop_worker().await?;
        while attempts(&backend).await? == before && start.elapsed() < WAIT {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let worker = start.elapsed();
        let (median, worst) = stats(restarts);
        println!("{transport:<16} {median:>22.2?} {worst:>22.2?} {worker:>18.2?}");
        browser.close().await?;
    }
    Ok(())
}
