//! Benchmark: get_page_text on a ~2,000-element article page, side by side with baselines
//! measured in the same run: `document.body.innerText` through the same path (backend →
//! extension → CDP, as javascript_tool), the same expression over a direct CDP session to the
//! tab (the physical limit), and the page-side script of get_page_text alone over that session
//! (what the page spends). The page is built in the tab (a site header and navigation, an
//! `<article>` of 450 paragraphs with inline links and emphasis, an aside and a footer). Garbage
//! is collected before each measured call; the calls rotate their order every round.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_page_text [rounds]`

use browser_operator_e2e::{count_arg, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const PAGE: &str = r#"(() => {
  const words = 'the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches near the old harbour'.split(' ');
  const sentence = (n, k) => { const w = []; for (let i = 0; i < k; i++) w.push(words[(n * 7 + i * 3) % words.length]); const s = w.join(' '); return s[0].toUpperCase() + s.slice(1) + '.'; };
  let html = '<header><nav><ul>';
  for (let i = 0; i < 40; i++) html += `<li><a href="/section/${i}">Section ${i}</a></li>`;
  html += '</ul></nav></header><article><h1>The long read</h1>';
  for (let p = 0; p < 450; p++) {
    if (p % 20 === 0) html += `<h2>Part ${p / 20 + 1}</h2>`;
    html += `<p>${sentence(p, 14)} <strong>${sentence(p + 1, 3)}</strong> ${sentence(p + 2, 12)} <a href="/note/${p}">note ${p}</a> ${sentence(p + 3, 10)} <em>${sentence(p + 4, 4)}</em></p>`;
  }
  html += '</article><aside><ul>';
  for (let i = 0; i < 40; i++) html += `<li><a href="/more/${i}">More reading ${i}</a></li>`;
  html += '</ul></aside><footer><p>Footer text</p></footer>';
  document.title = 'Fixture: article';
  document.body.innerHTML = html;
  return document.getElementsByTagName('*').length;
})()"#;

const INNER_TEXT: &str = "document.body.innerText";

fn percentile(v: &[Duration], p: usize) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) * p + 50) / 100]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

const NAMES: [&str; 4] = [
    "get_page_text (ours)",
    "innerText via javascript_tool",
    "raw CDP evaluate innerText",
    "raw CDP evaluate page_text.js",
];

#[tokio::main]
async fn main() -> Result<()> {
    let rounds = count_arg(21);
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("hello.html");
    backend.navigate(tab, &url).await?;
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
    let eval = |expression: String| {
        let session = &session;
        async move {
            cdp.call_session(
                session,
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await
        }
    };
    let elements = eval(PAGE.to_string()).await?;
    let elements = elements
        .pointer("/result/value")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let script = format!(
        "({})(50000)",
        include_str!("../../../crates/worker/src/tools/page_text.js")
    );

    let mut times: [Vec<Duration>; 4] = Default::default();
    let mut chars = [0usize; 4];
    for i in 0..=rounds {
        for k in 0..4 {
            let which = (i + k) % 4;
            cdp.call_session(&session, "HeapProfiler.collectGarbage", json!({}))
                .await?;
            let t = Instant::now();
            let n = match which {
                0 => backend
                    .text("get_page_text", json!({"tabId": tab}))
                    .await?
                    .chars()
                    .count(),
                1 => backend
                    .text("javascript_tool", json!({"tabId": tab, "text": INNER_TEXT}))
                    .await?
                    .chars()
                    .count(),
                2 => {
                    let v = eval(INNER_TEXT.to_string()).await?;
                    v.pointer("/result/value")
                        .and_then(Value::as_str)
                        .map_or(0, |s| s.chars().count())
                }
                _ => {
                    let v = eval(script.clone()).await?;
                    v.pointer("/result/value/text")
                        .and_then(Value::as_str)
                        .map_or(0, |s| s.chars().count())
                }
            };
            let d = t.elapsed();
            chars[which] = n;
            if i > 0 {
                times[which].push(d);
            }
        }
    }
    println!("get_page_text on a {elements}-element article, {rounds} rounds (+1 warm-up), rotating order:");
    println!(
        "{:<36} {:>9} {:>9} {:>8} {:>9}",
        "", "median", "p90", "ratio", "chars"
    );
    for (k, name) in NAMES.iter().enumerate() {
        println!(
            "{:<36} {:>7.1}ms {:>7.1}ms {:>7.2}x {:>9}",
            name,
            ms(percentile(&times[k], 50)),
            ms(percentile(&times[k], 90)),
            ms(percentile(&times[k], 50)) / ms(percentile(&times[1], 50)),
            chars[k]
        );
    }
    Ok(())
}
