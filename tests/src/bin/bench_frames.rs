//! Benchmark: read_page on a page with one iframe, the frame of another site (out-of-process:
//! walked in its own debugger session) beside the same frame of the same site (in the page's
//! process), and the page with no frame at all, measured in the same run, interleaved.
//! Also a click by ref inside each frame (resolving the ref and, for the other site, moving the
//! point into the top viewport).
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_frames`

use browser_operator_e2e::{Backend, Browser, BrowserOptions, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const RUNS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn tab(backend: &Backend, create: bool) -> Result<i64> {
    if create {
        let out = backend.text("tabs_create_mcp", json!({})).await?;
        let id = out
            .split("Tab ID: ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("a tab id");
        return Ok(id);
    }
    let out = backend
        .text("tabs_context_mcp", json!({"createIfEmpty": true}))
        .await?;
    let v: Value = serde_json::from_str(out.lines().next().unwrap_or("")).unwrap_or(Value::Null);
    Ok(v["availableTabs"][0]["tabId"].as_i64().expect("a tab id"))
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let other = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&backend.ws_url(), backend.token(), None)
        .await?;
    backend.wait_browsers(1, Duration::from_secs(20)).await?;
    browser
        .wait_status("connected", Duration::from_secs(20))
        .await?;
    let same = other.url("site-frame.html?name=Same");
    let cross = same
        .replace("127.0.0.1", "localhost")
        .replace("Same", "Cross");
    let pages = [
        ("no frame", fixtures.url("oopif.html")),
        (
            "same-site frame",
            format!("{}?src={}", fixtures.url("oopif.html"), encode(&same)),
        ),
        (
            "other-site frame",
            format!("{}?src={}", fixtures.url("oopif.html"), encode(&cross)),
        ),
    ];
    let mut tabs = Vec::new();
    for (i, (_, url)) in pages.iter().enumerate() {
        let t = tab(&backend, i > 0).await?;
        backend
            .text("navigate", json!({"tabId": t, "url": url}))
            .await?;
        tabs.push(t);
    }
    // Wait for the frames' documents.
    for (i, t) in tabs.iter().enumerate().skip(1) {
        let want = if i == 1 {
            "Same site heading"
        } else {
            "Cross site heading"
        };
        for _ in 0..100 {
            let tree = backend.text("read_page", json!({"tabId": t})).await?;
            if tree.contains(want) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut read: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    let mut click: Vec<Vec<Duration>> = vec![Vec::new(); 3];
    for run in 0..=RUNS {
        for (i, t) in tabs.iter().enumerate() {
            let s = Instant::now();
            let tree = backend.text("read_page", json!({"tabId": t})).await?;
            let d = s.elapsed();
            let button = tree
                .lines()
                .find(|l| l.contains("button \"Site button\""))
                .and_then(|l| Some(l[l.find("[ref_")? + 1..l.find(']')?].to_string()));
            let s = Instant::now();
            if let Some(b) = &button {
                backend
                    .text(
                        "computer",
                        json!({"tabId": t, "action": "left_click", "ref": b}),
                    )
                    .await?;
            }
            let dc = s.elapsed();
            if run > 0 {
                read[i].push(d);
                if button.is_some() {
                    click[i].push(dc);
                }
            }
        }
    }
    println!(
        "oopif.html, median of {RUNS} runs each, interleaved (backend round trip; load average {}):",
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
