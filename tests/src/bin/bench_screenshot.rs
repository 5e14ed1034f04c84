//! Benchmark: the computer screenshot and zoom round trips (backend → extension → CDP → image
//! back) on a typical page, side by side with baselines measured in the same run over a direct
//! CDP session to the same tab: one `Page.captureScreenshot` of the same size and quality (JPEG
//! q80 of the viewport, plain and with the viewport as a clip), a PNG of the viewport, and for
//! zoom a JPEG q80 capture of the same clip; and the path's own cost, a computer `wait` of 0 s
//! (the same tool's dispatch and tab checks, no CDP call). The calls rotate their order every
//! round.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_screenshot [rounds]`

use browser_operator_e2e::{count_arg, images, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn percentile(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) * p + 50) / 100]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

const NAMES: [&str; 7] = [
    "computer screenshot (ours)",
    "raw CDP JPEG q80, viewport",
    "raw CDP JPEG q80, viewport as clip",
    "raw CDP PNG, viewport",
    "computer zoom 400x300 (ours)",
    "raw CDP JPEG q80, the zoom's clip",
    "computer wait 0 s (the path, no CDP)",
];

#[tokio::main]
async fn main() -> Result<()> {
    let rounds = count_arg(21);
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("login.html");
    backend.navigate(tab, &url).await?;
    // The baselines capture the same tab, through a second CDP session of their own.
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
    let cdp = browser.cdp();
    let vp = cdp
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({"expression": "[innerWidth, innerHeight, devicePixelRatio]", "returnByValue": true}),
        )
        .await?;
    let vp: Vec<f64> = vp
        .pointer("/result/value")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    let (w, h) = (vp[0], vp[1]);
    let raw = |params: Value| {
        let session = &session;
        async move {
            let b = cdp
                .call_session(session, "Page.captureScreenshot", params)
                .await?;
            Ok::<usize, browser_operator_e2e::Error>(
                b["data"].as_str().map(|s| s.len() * 3 / 4).unwrap_or(0),
            )
        }
    };

    let mut times: [Vec<Duration>; 7] = Default::default();
    let mut bytes = [0usize; 7];
    let mut mime = String::new();
    for i in 0..=rounds {
        for k in 0..7 {
            let which = (i + k) % 7;
            let t = Instant::now();
            let b = match which {
                0 | 4 => {
                    let args = if which == 0 {
                        json!({"tabId": tab, "action": "screenshot"})
                    } else {
                        json!({"tabId": tab, "action": "zoom", "region": [100, 80, 500, 380]})
                    };
                    let r = backend.command("computer", args).await?;
                    let imgs = images(&r);
                    let (data, m) = imgs.first().expect("an image");
                    if which == 0 {
                        mime = m.to_string();
                    }
                    data.len() * 3 / 4
                }
                1 => raw(json!({"format": "jpeg", "quality": 80})).await?,
                2 => {
                    raw(json!({"format": "jpeg", "quality": 80,
                        "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}}))
                    .await?
                }
                3 => raw(json!({"format": "png"})).await?,
                6 => {
                    backend
                        .text(
                            "computer",
                            json!({"tabId": tab, "action": "wait", "duration": 0}),
                        )
                        .await?;
                    0
                }
                _ => {
                    raw(json!({"format": "jpeg", "quality": 80,
                        "clip": {"x": 100, "y": 80, "width": 400, "height": 300, "scale": 1}}))
                    .await?
                }
            };
            let d = t.elapsed();
            bytes[which] = b;
            if i > 0 {
                times[which].push(d);
            }
        }
    }
    println!(
        "screenshot of {url} ({w}x{h} CSS px, DPR {}), {rounds} rounds (+1 warm-up), rotating order:",
        vp[2]
    );
    println!(
        "{:<40} {:>9} {:>9} {:>8} {:>9}",
        "", "median", "p90", "ratio", "bytes"
    );
    let base = [1, 1, 1, 1, 5, 5, 6];
    for (k, name) in NAMES.iter().enumerate() {
        let name = if k == 0 {
            format!("{name} {mime}")
        } else {
            name.to_string()
        };
        println!(
            "{:<40} {:>7.1}ms {:>7.1}ms {:>7.2}x {:>9}",
            name,
            ms(percentile(&times[k], 50)),
            ms(percentile(&times[k], 90)),
            ms(percentile(&times[k], 50)) / ms(percentile(&times[base[k]], 50)),
            bytes[k]
        );
    }
    Ok(())
}
