//! Benchmark: read_page on a page with one iframe, the frame of another site (out-of-process:
//! walked in its own debugger session) beside the same frame of the same site (in the page's
//! process), and the page with no frame at all, measured in the same run, in rounds.
//! Also a click by ref inside each frame (resolving the ref and, for the other site, moving the
//! point into the top viewport).
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_frames`

use browser_operator_e2e::{median, percent_encode, Result};
use serde_json::json;
use std::time::{Duration, Instant};

const ROUNDS: usize = 3;
const PER_ROUND: usize = 5;
const RUNS: usize = ROUNDS * PER_ROUND;

#[tokio::main]
async fn main() -> Result<()> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let other = browser_operator_e2e::FixtureServer::start();
    let same = other.url("site-frame.html?name=Same");
    let cross = same
        .replace("127.0.0.1", "localhost")
        .replace("Same", "Cross");
    let pages = [
        ("no frame", fixtures.url("oopif.html")),
        (
            "same-site frame",
            format!(
                "{}?src={}",
                fixtures.url("oopif.html"),
                percent_encode(&same)
            ),
        ),
        (
            "other-site frame",
            format!(
                "{}?src={}",
                fixtures.url("oopif.html"),
                percent_encode(&cross)
            ),
        ),
    ];
    let (t, _) = backend.first_tab().await?;
    let mut read: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    let mut click: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    // Rounds over the three pages in one (active) tab: each page loaded, waited for, read once
    // to warm up, then measured PER_ROUND times.
    for _ in 0..ROUNDS {
        for (i, (_, url)) in pages.iter().enumerate() {
            backend
                .text("navigate", json!({"tabId": t, "url": url}))
                .await?;
            let want = ["Top page", "Same site heading", "Cross site heading"][i];
            for _ in 0..100 {
                let tree = backend.text("read_page", json!({"tabId": t})).await?;
                if tree.contains(want) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            for _ in 0..PER_ROUND {
                let s = Instant::now();
                let tree = backend.text("read_page", json!({"tabId": t})).await?;
                read[i].push(s.elapsed());
                let button = tree
                    .lines()
                    .find(|l| l.contains("button \"Site button\""))
                    .and_then(|l| Some(l[l.find("[ref_")? + 1..l.find(']')?].to_string()));
                if let Some(b) = &button {
                    let s = Instant::now();
                    backend
                        .text(
                            "computer",
                            json!({"tabId": t, "action": "left_click", "ref": b}),
                        )
                        .await?;
                    click[i].push(s.elapsed());
                }
            }
        }
    }
    println!(
        "oopif.html, median of {RUNS} runs each, in rounds of {PER_ROUND} (backend round trip; load average {}):",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    println!("{:<20} {:>12} {:>18}", "", "read_page", "left_click by ref");
    for (i, (name, _)) in pages.iter().enumerate() {
        let c = if click[i].is_empty() {
            "—".to_string()
        } else {
            format!("{:.1} ms", median(click[i].clone()).as_secs_f64() * 1e3)
        };
        println!(
            "{:<20} {:>9.1} ms {:>18}",
            name,
            median(read[i].clone()).as_secs_f64() * 1e3,
            c
        );
    }
    browser.close().await?;
    Ok(())
}
