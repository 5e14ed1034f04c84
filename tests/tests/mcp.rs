//! The reference backend as an MCP server, end to end: an MCP client drives the built extension
//! in headless Chromium through `browser-operator mcp` (stdio, the SDK's client, the spawned
//! command line) and through `/mcp` of a running server (streamable HTTP); several browsers by
//! target, the takeover rule, and a revoked per-target token closing a real connection.

use base64::Engine;
use browser_operator_e2e::mcp::{error_of, stdio_with_browser, text_of, HttpMcp, StdioMcp};
use browser_operator_e2e::{
    connected, tabs_context, temp_dir, Backend, Browser, BrowserOptions, Error, FixtureServer,
    Result,
};
use browser_operator_server::target_tokens::{TokenStore, TOKENS_FILE};
use browser_operator_server::{RunningServer, ServerConfig};
use serde_json::{json, Value};
use std::time::Duration;

const CONNECT: Duration = Duration::from_secs(20);
/// The `browser-operator` command line (this crate's copy of the server crate's binary).
const CLI: &str = env!("CARGO_BIN_EXE_browser-operator-cli");

fn random_token() -> String {
    browser_operator_server::main_token::generate().expect("random token")
}

/// Every catalog tool is listed with a schema that is itself valid JSON Schema and the
/// catalog's description.
fn check_tools(tools: &[Value]) {
    assert!(!tools.iter().any(|t| t["name"] == "set_policy"));
    for spec in protocol::catalog().into_iter().filter(|t| !t.backend_only) {
        let tool = tools
            .iter()
            .find(|t| t["name"] == spec.name)
            .unwrap_or_else(|| panic!("{} is listed", spec.name));
        assert_eq!(tool["description"], spec.description);
        let schema = &tool["inputSchema"];
        assert_eq!(*schema, spec.input_schema);
        jsonschema::meta::validate(schema)
            .unwrap_or_else(|e| panic!("{}'s schema is not valid JSON Schema: {e}", spec.name));
        assert!(jsonschema::validator_for(schema).is_ok());
    }
    for extra in ["list_connected_browsers", "select_browser"] {
        let tool = tools.iter().find(|t| t["name"] == extra).expect("listed");
        jsonschema::meta::validate(&tool["inputSchema"]).expect("valid schema");
    }
}

/// What one MCP session does with a real browser, whatever the transport: open the group,
/// navigate, take a screenshot (image content), and get an error result.
async fn drive<F, Fut>(call: F, fixtures: &FixtureServer) -> Result<()>
where
    F: Fn(&'static str, Value) -> Fut,
    Fut: std::future::Future<Output = Result<Value>>,
{
    let ctx = tabs_context(&text_of(
        &call("tabs_context_mcp", json!({"createIfEmpty": true})).await?,
    )?);
    let tab = ctx["availableTabs"][0]["tabId"]
        .as_i64()
        .ok_or_else(|| Error::new(format!("no tab in {ctx}")))?;
    let url = fixtures.url("hello.html");
    let nav = text_of(&call("navigate", json!({"tabId": tab, "url": url})).await?)?;
    assert_eq!(
        nav,
        format!("Navigated to {url}\nHTTP status: 200\nTitle: Fixture: hello")
    );

    let shot = call("computer", json!({"action": "screenshot", "tabId": tab})).await?;
    assert_eq!(shot["isError"], json!(false), "{shot}");
    let image = shot["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "image")
        .ok_or_else(|| Error::new(format!("no image content in {shot}")))?;
    assert_eq!(image["mimeType"], "image/jpeg");
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().unwrap_or_default())
        .map_err(|e| Error::new(format!("image data is not base64: {e}")))?;
    assert_eq!(&jpeg[..3], b"\xFF\xD8\xFF");

    // Where read_page would be: a page-side error comes back as an MCP error result.
    let err = error_of(
        &call(
            "javascript_tool",
            json!({"tabId": tab, "text": "throw new Error('no such element: #missing')"}),
        )
        .await?,
    )?;
    assert!(err.contains("no such element: #missing"), "{err}");
    // A tab outside the group is refused with a message, and the session goes on.
    let err = error_of(&call("navigate", json!({"tabId": 999_999, "url": url})).await?)?;
    assert!(err.contains("999999"), "{err}");
    let title = text_of(
        &call(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.title"}),
        )
        .await?,
    )?;
    assert_eq!(title, "Fixture: hello");
    Ok(())
}

#[tokio::test]
async fn an_mcp_client_over_stdio_drives_a_real_browser() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let dir = temp_dir("stdio");
    // The extension connects to the relay that `mcp` runs, configured like a user does.
    let (mcp, _browser, token) = stdio_with_browser(CLI, &dir).await?;

    check_tools(&mcp.tools_json().await?);
    drive(|tool, args| mcp.call(tool, args), &fixtures).await?;
    mcp.close().await?;

    // Nothing but MCP went to stdout: the log is on stderr.
    let log = std::fs::read_to_string(dir.join("mcp.log")).unwrap_or_default();
    assert!(log.contains("MCP on stdio"), "{log}");
    assert!(!log.contains(&token), "the token must not be logged");
    Ok(())
}

#[tokio::test]
async fn an_mcp_client_over_http_drives_a_real_browser_and_mcp_forwards_to_a_running_server(
) -> Result<()> {
    let (fixtures, backend, _browser) = connected().await?;

    let http = HttpMcp::connect(&backend.http_url(), backend.token()).await?;
    check_tools(&http.tools().await?);
    drive(|tool, args| http.call(tool, args), &fixtures).await?;

    // `browser-operator mcp` on the port of the running server forwards to it.
    let dir = temp_dir("forward");
    let port = backend.addr().port();
    let forwarded = StdioMcp::spawn(CLI, port, backend.token(), &dir, &dir.join("mcp.log")).await?;
    let ctx = tabs_context(&text_of(
        &forwarded.call("tabs_context_mcp", json!({})).await?,
    )?);
    assert_eq!(
        ctx["availableTabs"][0]["url"],
        json!(fixtures.url("hello.html"))
    );
    let listed = text_of(&forwarded.call("list_connected_browsers", json!({})).await?)?;
    assert_eq!(
        serde_json::from_str::<Value>(&listed)?["browsers"],
        json!([{"target": "default", "selected": false}])
    );
    forwarded.close().await?;
    let log = std::fs::read_to_string(dir.join("mcp.log")).unwrap_or_default();
    assert!(log.contains("forwarding calls to it"), "{log}");
    Ok(())
}

#[tokio::test]
async fn mcp_takes_the_relay_over_when_the_server_it_forwards_to_stops() -> Result<()> {
    let (_fixtures, mut backend, browser) = connected().await?;
    let dir = temp_dir("takeover");
    let port = backend.addr().port();
    let mcp = StdioMcp::spawn(CLI, port, backend.token(), &dir, &dir.join("mcp.log")).await?;
    text_of(
        &mcp.call("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?,
    )?;

    backend.stop().await;
    browser.wait_status("error", CONNECT).await?;
    let err = error_of(&mcp.call("tabs_context_mcp", json!({})).await?)?;
    assert!(err.contains("now runs the relay there itself"), "{err}");
    // The extension finds the relay again on the same port, now in the `mcp` process.
    browser
        .wait_status("connected", Duration::from_secs(45))
        .await?;
    let ctx = tabs_context(&text_of(&mcp.call("tabs_context_mcp", json!({})).await?)?);
    assert_eq!(
        ctx["availableTabs"].as_array().map(Vec::len),
        Some(1),
        "{ctx}"
    );
    mcp.close().await?;
    let log = std::fs::read_to_string(dir.join("mcp.log")).unwrap_or_default();
    assert!(
        log.contains("this MCP server now runs the relay there"),
        "{log}"
    );
    Ok(())
}

/// Whether `browser` has a page open at `url`.
async fn has_page(browser: &Browser, url: &str) -> Result<bool> {
    Ok(browser.page_targets().await?.iter().any(|t| t.url == url))
}

#[tokio::test]
async fn two_browsers_route_by_target_and_a_second_connection_for_a_target_is_refused() -> Result<()>
{
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let alpha = Browser::launch(BrowserOptions::default()).await?;
    let beta = Browser::launch(BrowserOptions::default()).await?;
    alpha
        .configure_extension(&backend.ws_url(), backend.token(), Some("alpha"))
        .await?;
    beta.configure_extension(&backend.ws_url(), backend.token(), Some("beta"))
        .await?;
    backend.wait_browsers(2, CONNECT).await?;

    let mcp = HttpMcp::connect(&backend.http_url(), backend.token()).await?;
    let err = error_of(&mcp.call("tabs_context_mcp", json!({})).await?)?;
    assert!(err.contains("Connected targets: 'alpha', 'beta'"), "{err}");
    let listed: Value = serde_json::from_str(&text_of(
        &mcp.call("list_connected_browsers", json!({})).await?,
    )?)?;
    assert_eq!(
        listed["browsers"],
        json!([{"target": "alpha", "selected": false}, {"target": "beta", "selected": false}])
    );

    // Each selection drives its own browser.
    for (target, page) in [("alpha", "hello.html"), ("beta", "index.html")] {
        text_of(
            &mcp.call("select_browser", json!({"target": target}))
                .await?,
        )?;
        let ctx = tabs_context(&text_of(
            &mcp.call("tabs_context_mcp", json!({"createIfEmpty": true}))
                .await?,
        )?);
        let tab = ctx["availableTabs"][0]["tabId"].as_i64().expect("tab");
        text_of(
            &mcp.call("navigate", json!({"tabId": tab, "url": fixtures.url(page)}))
                .await?,
        )?;
    }
    assert!(has_page(&alpha, &fixtures.url("hello.html")).await?);
    assert!(!has_page(&alpha, &fixtures.url("index.html")).await?);
    assert!(has_page(&beta, &fixtures.url("index.html")).await?);
    assert!(!has_page(&beta, &fixtures.url("hello.html")).await?);

    // A third browser claiming "alpha" is refused and told why; alpha keeps its target.
    let intruder = Browser::launch(BrowserOptions::default()).await?;
    intruder
        .configure_extension(&backend.ws_url(), backend.token(), Some("alpha"))
        .await?;
    let page = intruder.options_page().await?;
    page.wait_for(
        "document.querySelector('#status')?.textContent.includes('already connected')",
        CONNECT,
    )
    .await?;
    let shown: String = serde_json::from_value(
        page.eval("document.querySelector('#status').textContent")
            .await?,
    )?;
    page.close().await?;
    assert!(shown.contains("already connected"), "{shown}");
    assert_eq!(backend.browsers().await?, 2);
    text_of(
        &mcp.call("select_browser", json!({"target": "alpha"}))
            .await?,
    )?;
    let ctx = tabs_context(&text_of(&mcp.call("tabs_context_mcp", json!({})).await?)?);
    assert_eq!(
        ctx["availableTabs"][0]["url"],
        json!(fixtures.url("hello.html"))
    );
    Ok(())
}

#[tokio::test]
async fn revoking_a_per_target_token_disconnects_the_browser_and_tells_it_why() -> Result<()> {
    browser_operator_e2e::init();
    let dir = temp_dir("revoke");
    let main_token = random_token();
    let store = TokenStore::at(dir.join(TOKENS_FILE));
    let laptop = store
        .issue("laptop")
        .map_err(|e| Error::new(e.to_string()))?;
    let mut config = ServerConfig::new("127.0.0.1:0".parse().expect("addr"), main_token.clone());
    config.tokens = store;
    let server = RunningServer::start(config)
        .await
        .map_err(|e| Error::new(format!("starting the server: {e}")))?;
    let port = server.addr().port();

    // The extension connects with the per-target token and no target: it becomes "laptop".
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&format!("ws://127.0.0.1:{port}/ws"), &laptop.token, None)
        .await?;
    browser.wait_status("connected", CONNECT).await?;
    let targets = server.relay().browsers();
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].target, "laptop");

    // `browser-operator token revoke` removes it and tells the running server.
    let out = tokio::process::Command::new(CLI)
        .args(["token", "revoke", &laptop.id, "--port", &port.to_string()])
        .env("BROWSER_OPERATOR_CONFIG_DIR", &dir)
        .env("BROWSER_OPERATOR_TOKEN", &main_token)
        .output()
        .await
        .map_err(|e| Error::new(format!("running token revoke: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("closed 1 live connection"), "{stdout}");

    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("token revoked"), "{status}");
    assert!(server.relay().browsers().is_empty());
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
