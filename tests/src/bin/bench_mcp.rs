//! Round-trip time of one cheap tool call (`tabs_context_mcp`) to the real extension in headless
//! Chromium, through each way in: `POST /commands` (the baseline), MCP over streamable HTTP at
//! `/mcp`, `browser-operator mcp` over stdio with its own relay, and `mcp` over stdio forwarding
//! to a running server. Prints median and p90 side by side.
//!
//! `cargo run --release -p browser-operator-e2e --bin bench_mcp [calls]` (after ./build.sh build)

use browser_operator_e2e::mcp::{text_of, HttpMcp, StdioMcp};
use browser_operator_e2e::{Browser, BrowserOptions, Error, Result};
use serde_json::json;
use std::future::Future;
use std::time::{Duration, Instant};

const CONNECT: Duration = Duration::from_secs(30);

async fn measure<F, Fut>(calls: usize, mut call: F) -> Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    // Warm up: the first calls attach and create the group.
    for _ in 0..5 {
        call().await?;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        call().await?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times)
}

fn row(name: &str, times: &[Duration], baseline: Duration) {
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    let extra = median.as_secs_f64() * 1000.0 - baseline.as_secs_f64() * 1000.0;
    println!(
        "{name:<40} {:>9.2} {:>9.2} {:>+10.2}",
        median.as_secs_f64() * 1000.0,
        p90.as_secs_f64() * 1000.0,
        extra
    );
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let calls = browser_operator_e2e::count_arg(200);
    let cli = browser_operator_e2e::cli_beside_this_program()?;
    let cli = cli.to_string_lossy().into_owned();
    let dir = std::env::temp_dir().join(format!("bo-bench-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::new(e.to_string()))?;
    let args = json!({"createIfEmpty": true});

    let (_fixtures, backend, _browser) = browser_operator_e2e::connected().await?;

    let api = measure(calls, || async {
        backend
            .text("tabs_context_mcp", args.clone())
            .await
            .map(drop)
    })
    .await?;
    // The same API over one kept-alive connection (the CLI's `call` opens one per call).
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let commands = format!("{}/commands", backend.http_url());
    let auth = format!("Bearer {}", backend.token());
    let body = json!({"tool": "tabs_context_mcp", "args": args}).to_string();
    let api_kept = measure(calls, || {
        let (agent, commands, auth, body) =
            (agent.clone(), commands.clone(), auth.clone(), body.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                agent
                    .post(&commands)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(body)
                    .and_then(|mut r| r.body_mut().read_to_string())
                    .map(drop)
                    .map_err(|e| Error::new(format!("POST /commands: {e}")))
            })
            .await
            .map_err(|e| Error::new(e.to_string()))?
        }
    })
    .await?;
    let http = HttpMcp::connect(&backend.http_url(), backend.token()).await?;
    let over_http = measure(calls, || async {
        text_of(&http.call("tabs_context_mcp", args.clone()).await?).map(drop)
    })
    .await?;
    let port: u16 = backend
        .http_url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| Error::new("no port"))?;
    let forward =
        StdioMcp::spawn(&cli, port, backend.token(), &dir, &dir.join("forward.log")).await?;
    let forwarded = measure(calls, || async {
        text_of(&forward.call("tabs_context_mcp", args.clone()).await?).map(drop)
    })
    .await?;
    forward.close().await?;

    // stdio with its own relay, and its own browser connected to it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::new(e.to_string()))?
        .port();
    let token =
        browser_operator_server::main_token::generate().map_err(|e| Error::new(e.to_string()))?;
    let stdio = StdioMcp::spawn(&cli, port, &token, &dir, &dir.join("stdio.log")).await?;
    let second = Browser::launch(BrowserOptions::default()).await?;
    second
        .configure_extension(&format!("ws://127.0.0.1:{port}/ws"), &token, None)
        .await?;
    second.wait_status("connected", CONNECT).await?;
    let over_stdio = measure(calls, || async {
        text_of(&stdio.call("tabs_context_mcp", args.clone()).await?).map(drop)
    })
    .await?;
    stdio.close().await?;

    let baseline = api[api.len() / 2];
    println!("tabs_context_mcp round trip to headless Chromium, {calls} calls each (ms)");
    println!(
        "{:<40} {:>9} {:>9} {:>10}",
        "path", "median", "p90", "vs API"
    );
    row("POST /commands, new connection (baseline)", &api, baseline);
    row("POST /commands, kept-alive connection", &api_kept, baseline);
    row("MCP streamable HTTP /mcp", &over_http, baseline);
    row("MCP stdio, own relay", &over_stdio, baseline);
    row("MCP stdio, forwarding to serve", &forwarded, baseline);
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
