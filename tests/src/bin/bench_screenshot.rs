//! Benchmark: the computer screenshot round trip (backend → extension → CDP → image back) on a
//! typical page, side by side with a baseline measured in the same run: a plain PNG
//! `Page.captureScreenshot` of the same page over a direct CDP connection.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_screenshot`

use browser_operator_e2e::{images, median, Result};
use serde_json::json;
use std::time::Instant;

const RUNS: usize = 9;

#[tokio::main]
async fn main() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("login.html");
    backend.navigate(tab, &url).await?;
    // The baseline captures the same tab, through a second CDP session of its own.
    let target = browser
        .page_targets()
        .await?
        .into_iter()
        .find(|t| t.url == url)
        .expect("the group tab's target");
    let attached = browser
        .cdp()
        .call(
            "Target.attachToTarget",
            json!({"targetId": target.id, "flatten": true}),
        )
        .await?;
    let session = attached["sessionId"].as_str().expect("session").to_string();

    let (mut ours, mut base) = (Vec::new(), Vec::new());
    let (mut ours_bytes, mut base_bytes, mut mime) = (0, 0, String::new());
    for i in 0..=RUNS {
        let t = Instant::now();
        let r = backend
            .command("computer", json!({"tabId": tab, "action": "screenshot"}))
            .await?;
        let d = t.elapsed();
        if let Some((data, m)) = images(&r).first() {
            ours_bytes = data.len() * 3 / 4;
            mime = m.to_string();
        }
        let t = Instant::now();
        let b = browser
            .cdp()
            .call_session(&session, "Page.captureScreenshot", json!({"format": "png"}))
            .await?;
        let db = t.elapsed();
        base_bytes = b["data"].as_str().map(|s| s.len() * 3 / 4).unwrap_or(0);
        if i > 0 {
            ours.push(d);
            base.push(db);
        }
    }
    println!("screenshot of {url}, median of {RUNS} runs:");
    println!("{:<44} {:>10} {:>10}", "", "time", "bytes");
    println!(
        "{:<44} {:>8.1}ms {:>10}",
        "baseline (direct CDP PNG capture)",
        median(base).as_secs_f64() * 1e3,
        base_bytes
    );
    println!(
        "{:<44} {:>8.1}ms {:>10}",
        format!("computer screenshot round trip ({mime})"),
        median(ours).as_secs_f64() * 1e3,
        ours_bytes
    );
    Ok(())
}
