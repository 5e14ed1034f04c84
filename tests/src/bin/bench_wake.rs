//! How soon a stopped worker serves again: the worker is stopped N times (default 10) while
//! connected over WebSocket and idle, and the time from the stop to (a) a new worker running,
//! (b) the server seeing the browser connected again and (c) the first command answered is
//! measured. With the watchdog (an offscreen document that connects to the worker again when its
//! port closes), then, as the baseline in the same run, with the watchdog closed so only the 30 s
//! keep-alive alarm restarts the worker (3 rounds: each may take up to a minute).
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_wake [N]`

use browser_operator_e2e::{Backend, Browser, Error, Result};
use serde_json::json;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(90);
const BASELINE_ROUNDS: usize = 3;

struct Round {
    worker: Duration,
    connected: Duration,
    answered: Duration,
    started_for: String,
}

async fn connected_at(backend: &Backend) -> Result<Option<u64>> {
    Ok(backend.status().await?["browsers"][0]["connectedAt"].as_u64())
}

/// Stops the worker (after closing the watchdog when `alarm_only`) and times its return.
async fn round(browser: &Browser, backend: &Backend, alarm_only: bool) -> Result<Round> {
    let worker = browser.worker().await?;
    if alarm_only {
        worker
            .eval("chrome.offscreen.closeDocument().then(() => 1, () => 0)")
            .await?;
    }
    worker.detach().await?;
    let old = browser
        .worker_target()
        .await?
        .ok_or_else(|| Error::new("no worker before the stop"))?;
    let before = connected_at(backend).await?;
    let start = Instant::now();
    browser.stop_worker().await?;
    let worker_at = loop {
        if let Some(t) = browser.worker_target().await? {
            if t.id != old.id {
                break start.elapsed();
            }
        }
        if start.elapsed() > WAIT {
            return Err(Error::new("no new worker within 90 s"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let connected_at_ = loop {
        let now = connected_at(backend).await?;
        if now.is_some() && now != before {
            break start.elapsed();
        }
        if start.elapsed() > WAIT {
            return Err(Error::new("no new connection within 90 s"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    backend
        .caller()
        .command_when_connected("tabs_context_mcp", json!({}), WAIT)
        .await?;
    let answered = start.elapsed();
    let worker = browser.worker().await?;
    let started_for = worker
        .eval("self.browserOperator.startedFor()")
        .await?
        .as_str()
        .unwrap_or("?")
        .to_string();
    worker.detach().await?;
    Ok(Round {
        worker: worker_at,
        connected: connected_at_,
        answered,
        started_for,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(label: &str, rounds: &[Round]) {
    let stat = |f: &dyn Fn(&Round) -> Duration| {
        let mut v: Vec<Duration> = rounds.iter().map(f).collect();
        v.sort();
        (ms(v[v.len() / 2]), ms(v[v.len() - 1]))
    };
    let (wm, wx) = stat(&|r| r.worker);
    let (cm, cx) = stat(&|r| r.connected);
    let (am, ax) = stat(&|r| r.answered);
    let mut causes: Vec<&str> = rounds.iter().map(|r| r.started_for.as_str()).collect();
    causes.sort();
    causes.dedup();
    println!(
        "{label:<34} {:>3} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0}  {}",
        rounds.len(),
        wm,
        wx,
        cm,
        cx,
        am,
        ax,
        causes.join(",")
    );
}

#[tokio::main]
async fn main() -> Result<()> {
    let rounds = browser_operator_e2e::count_arg(10);
    let (_fixtures, backend, browser) = browser_operator_e2e::connected_over("websocket").await?;
    backend.first_tab().await?;
    let mut watched = Vec::new();
    for _ in 0..rounds {
        watched.push(round(&browser, &backend, false).await?);
    }
    let mut alarm = Vec::new();
    for _ in 0..BASELINE_ROUNDS {
        alarm.push(round(&browser, &backend, true).await?);
    }
    println!(
        "\nA stopped worker serves again (WebSocket, idle), ms from the stop; median and worst\n"
    );
    println!(
        "{:<34} {:>3} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  started for",
        "", "n", "worker", "worst", "connected", "worst", "answered", "worst"
    );
    report("watchdog (offscreen port)", &watched);
    report("  baseline: keep-alive alarm only", &alarm);
    browser.close().await?;
    Ok(())
}
