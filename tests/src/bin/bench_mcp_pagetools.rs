//! Cost of listing page tools over MCP (`browser-operator mcp` over stdio with its own relay,
//! the real extension in headless Chromium): tools/list with no browser connected (the catalog
//! only: the baseline), with a group tab without page tools, with one and with two tabs on the
//! todo app; and the time from a page registering a provider (a sign-in clicked through
//! javascript_tool) to `notifications/tools/list_changed`. Medians and p90 side by side.
//!
//! `cargo run --release -p browser-operator-e2e --bin bench_mcp_pagetools [rounds]` (after
//! ./build.sh build and `cargo build --release -p browser-operator-e2e --bins`)

use browser_operator_e2e::mcp::{text_of, StdioMcp};
use browser_operator_e2e::{Browser, BrowserOptions, Error, FixtureServer, Result};
use serde_json::json;
use std::time::{Duration, Instant};

const CONNECT: Duration = Duration::from_secs(30);

/// tools/list `rounds` times: sorted durations and the number of tools listed.
async fn list(mcp: &StdioMcp, rounds: usize) -> Result<(Vec<Duration>, usize)> {
    let mut times = Vec::with_capacity(rounds);
    let mut count = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        count = mcp.tools().await?.len();
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times, count))
}

fn row(name: &str, times: &[Duration], tools: usize, baseline: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = times[times.len() / 2];
    println!(
        "{name:<44} {tools:>6} {:>9.2} {:>9.2} {:>+10.2}",
        ms(median),
        ms(times[times.len() * 9 / 10]),
        ms(median) - ms(baseline)
    );
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let rounds = browser_operator_e2e::count_arg(30);
    let cli = browser_operator_e2e::cli_beside_this_program()?;
    let cli = cli.to_string_lossy().into_owned();
    let fixtures = FixtureServer::start();
    let dir = std::env::temp_dir().join(format!("bo-bench-pagetools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::new(e.to_string()))?;
    let port = browser_operator_e2e::free_port();
    let token =
        browser_operator_server::main_token::generate().map_err(|e| Error::new(e.to_string()))?;
    let mcp = StdioMcp::spawn(&cli, port, &token, &dir, &dir.join("mcp.log")).await?;
    let (no_browser, n0) = list(&mcp, rounds).await?;

    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&format!("ws://127.0.0.1:{port}/ws"), &token, None)
        .await?;
    browser.wait_status("connected", CONNECT).await?;
    let tab = mcp.first_tab().await?;
    mcp.navigate(tab, &fixtures.url("hello.html")).await?;
    let (plain_tab, n1) = list(&mcp, rounds).await?;
    mcp.navigate(tab, &fixtures.url("todo.html")).await?;
    let (one_todo, n2) = list(&mcp, rounds).await?;
    let second = mcp.new_tab().await?;
    mcp.navigate(second, &fixtures.url("todo.html")).await?;
    let (two_todos, n3) = list(&mcp, rounds).await?;

    // Sign in and out: each click registers or removes a provider.
    let mut notice = Vec::new();
    for _ in 0..rounds.min(10) {
        let seen = mcp.tools_changed();
        let start = Instant::now();
        text_of(
            &mcp.call(
                "javascript_tool",
                json!({"tabId": tab, "text": "document.getElementById('signin').click(); 'ok'"}),
            )
            .await?,
        )?;
        mcp.wait_tools_changed(seen, Duration::from_secs(30))
            .await?;
        notice.push(start.elapsed());
    }
    notice.sort();

    println!("tools/list over stdio, {rounds} rounds (ms)");
    println!(
        "{:<44} {:>6} {:>9} {:>9} {:>10}",
        "", "tools", "median", "p90", "vs base"
    );
    let base = no_browser[no_browser.len() / 2];
    row("no browser (catalog only, baseline)", &no_browser, n0, base);
    row("group tab without page tools", &plain_tab, n1, base);
    row("one group tab on the todo app", &one_todo, n2, base);
    row("two group tabs on the todo app", &two_todos, n3, base);
    println!();
    row(
        "sign-in click → tools/list_changed",
        &notice,
        0,
        notice[notice.len() / 2],
    );
    mcp.close().await?;
    browser.close().await?;
    Ok(())
}
