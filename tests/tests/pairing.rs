//! One-click pairing as a person does it: the server's /pair page finds the extension, offers
//! a token made for this browser, the popup shows the offer with the page's real origin, the
//! user accepts, the browser connects. And what must be ignored: cross-origin frames, forged
//! origins, bad shapes, oversized fields; a ping answers without secrets.

use browser_operator_e2e::{
    js_string, Backend, Browser, BrowserOptions, Error, FixtureServer, Page, Result,
};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// Opens the server's /pair page, checks that it found the extension, and clicks Connect: the
/// page waits for the user's Accept in the popup.
async fn ask_to_pair(browser: &Browser, backend: &Backend) -> Result<Page> {
    let pair = browser
        .open_page(&format!("{}/pair", backend.http_url()))
        .await?;
    pair.wait_for(
        "document.querySelector('#presence').dataset.state === 'installed'",
        WAIT,
    )
    .await?;
    let presence = pair
        .eval("document.querySelector('#presence').textContent")
        .await?;
    assert!(
        presence.as_str().unwrap_or("").contains("Browser Operator"),
        "{presence}"
    );
    pair.click("#connect").await?;
    pair.wait_for(
        "document.querySelector('#state').dataset.state === 'waiting'",
        WAIT,
    )
    .await?;
    Ok(pair)
}

/// The popup, once it shows the parked offer.
async fn popup_with_offer(browser: &Browser) -> Result<Page> {
    let page = browser.popup_page().await?;
    page.wait_for("!document.querySelector('#offer').hidden", WAIT)
        .await?;
    Ok(page)
}

/// The offer card's fields, or null when no card shows.
async fn card(page: &Page) -> Result<Value> {
    page.eval(
        "document.querySelector('#offer').hidden ? null : {
            brand: document.querySelector('#offer-brand').textContent,
            origin: document.querySelector('#offer-origin').textContent,
            server: document.querySelector('#offer-server').textContent,
            transport: document.querySelector('#offer-transport').textContent }",
    )
    .await
}

#[tokio::test]
async fn pairing_from_the_pair_page_as_a_person_does_it() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    let pair = ask_to_pair(&browser, &backend).await?;
    assert_eq!(
        backend.browsers().await?,
        0,
        "nothing connects before the click in the popup"
    );

    let popup = popup_with_offer(&browser).await?;
    let shown = card(&popup).await?;
    assert_eq!(shown["origin"], backend.http_url());
    assert_eq!(
        shown["server"],
        format!("{}/ws", backend.ws_url().trim_end_matches("/ws"))
    );
    assert_eq!(shown["transport"], "WebSocket");
    assert_eq!(shown["brand"], "Browser Operator server");
    popup.click("#accept").await?;
    backend.wait_browsers(1, WAIT).await?;
    popup.wait_status("connected", WAIT).await?;
    // Commands run: the automation group and its tab are there.
    backend.first_tab().await?;
    pair.wait_for(
        "document.querySelector('#state').dataset.state === 'connected'",
        WAIT,
    )
    .await?;
    // The server sees it under the target issued for it.
    let target = backend.status().await?["browsers"][0]["target"].clone();
    assert!(
        target.as_str().unwrap_or("").starts_with("browser-"),
        "{target}"
    );
    Ok(())
}

fn offer_js(server: &str, brand: &str, extra: &str) -> String {
    format!(
        "window.postMessage({{__browserOperator: 'pair-offer', {extra} config: {{transport: 'sse-http', serverUrl: {server}, token: 'tok-123'}}, brand: {{name: {brand}}}}}, window.origin); true",
        server = js_string(server),
        brand = js_string(brand),
    )
}

/// Pings the page's content script and waits for the pong: every message posted before it
/// has been handled by then.
async fn ping(page: &Page) -> Result<Value> {
    page.eval(
        "new Promise((resolve) => {
            const nonce = 'n' + Math.random();
            addEventListener('message', function on(e) {
                if (e.source === window && e.data?.__browserOperator === 'pong' && e.data.nonce === nonce) {
                    removeEventListener('message', on); resolve(e.data);
                }
            });
            postMessage({__browserOperator: 'ping', nonce}, window.origin);
        })",
    )
    .await
}

#[tokio::test]
async fn offers_are_checked_replaced_dismissed_and_never_applied_alone() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let other = FixtureServer::start();
    let browser = Browser::launch(BrowserOptions::default()).await?;
    let page = browser.open_page(&fixtures.url("hello.html")).await?;
    let origin = format!("http://{}", fixtures.addr());

    // A ping gets a pong with the version and product name, nothing else.
    let pong = ping(&page).await?;
    let mut keys: Vec<&str> = pong
        .as_object()
        .expect("pong")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["__browserOperator", "nonce", "productName", "version"]
    );
    assert_eq!(pong["productName"], "Browser Operator");

    // First offer, then a second that replaces it.
    page.eval(&offer_js("http://first.example:1", "First", ""))
        .await?;
    let popup_page = browser.popup_page().await?;
    popup_page
        .wait_for("!document.querySelector('#offer').hidden", WAIT)
        .await?;
    assert_eq!(card(&popup_page).await?["server"], "http://first.example:1");
    page.eval(&offer_js("http://second.example:2", "Second", ""))
        .await?;
    popup_page
        .wait_for(
            "document.querySelector('#offer-server').textContent === 'http://second.example:2'",
            WAIT,
        )
        .await?;
    assert_eq!(card(&popup_page).await?["brand"], "Second");

    // Ignored: a forged origin field (the real origin is shown), bad shapes, oversized fields,
    // a cross-origin iframe.
    page.eval(&offer_js(
        "http://forged.example:3",
        "Forged",
        "origin: 'https://bank.example',",
    ))
    .await?;
    popup_page
        .wait_for(
            "document.querySelector('#offer-server').textContent === 'http://forged.example:3'",
            WAIT,
        )
        .await?;
    assert_eq!(card(&popup_page).await?["origin"], origin);
    let bad = [
        "{__browserOperator: 'pair-offer'}",
        "{__browserOperator: 'pair-offer', config: {transport: 'websocket', serverUrl: 'http://wrong-scheme.example', token: 't'}}",
        "{__browserOperator: 'pair-offer', config: {transport: 'sse-http', serverUrl: 'http://no-token.example', token: ''}}",
        "{__browserOperator: 'pair-offer', config: {transport: 'carrier-pigeon', serverUrl: 'http://x.example', token: 't'}}",
        "{__browserOperator: 'pair-offer', config: {transport: 'sse-http', serverUrl: 'not a url', token: 't'}}",
        "{__browserOperator: 'pair-offer', config: {transport: 'sse-http', serverUrl: 'http://big.example', token: 'x'.repeat(100000)}}",
        "{__browserOperator: 'pair-offer', config: {transport: 'sse-http', serverUrl: 'http://brand.example', token: 't'}, brand: {name: 'y'.repeat(500)}}",
        "'__browserOperator'",
    ];
    for b in bad {
        page.eval(&format!("window.postMessage({b}, window.origin); true"))
            .await?;
    }
    let frame_url = other.url("pair-frame.html");
    page.eval(&format!(
        "new Promise((resolve) => {{ const f = document.createElement('iframe'); f.src = {}; f.onload = () => resolve(true); document.body.appendChild(f); }})",
        js_string(&frame_url)
    ))
    .await?;
    ping(&page).await?;
    // Settled: whatever the content script relayed has reached the worker by the time the
    // popup, opened afresh, reads the parked offer.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fresh = browser.popup_page().await?;
    let shown = card(&fresh).await?;
    assert_eq!(
        shown["server"], "http://forged.example:3",
        "a bad offer replaced the good one: {shown}"
    );
    fresh.close().await?;

    // Nothing was applied by itself.
    let state = popup_page
        .eval("document.querySelector('#status').dataset.state")
        .await?;
    assert_eq!(state, "disconnected");

    // Dismiss clears the card and the badge.
    popup_page.click("#dismiss").await?;
    popup_page
        .wait_for("document.querySelector('#offer').hidden", WAIT)
        .await?;
    let again = browser.popup_page().await?;
    assert_eq!(card(&again).await?, Value::Null);
    Ok(())
}

#[tokio::test]
async fn popup_options_and_pair_pages_pass_an_accessibility_checker() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    let pair = ask_to_pair(&browser, &backend).await?;
    let popup = popup_with_offer(&browser).await?;
    let options = browser.options_page().await?;
    // The activity log with a row in it (a command run in the worker, the direct transport).
    let worker = browser.worker().await?;
    worker
        .eval("self.browserOperator.run({id: 'a11y-1', tool: 'tabs_context_mcp', args: {}}).then(() => true)")
        .await?;
    let activity = browser
        .open_page(&format!(
            "chrome-extension://{}/extension/activity.html",
            browser.extension_id().await?
        ))
        .await?;
    activity
        .wait_for(
            "document.body.dataset.ready === 'true' && document.querySelectorAll('#entries tr').length > 0",
            WAIT,
        )
        .await?;
    // The checker itself works: a page with an unlabelled field and a nameless button fails.
    let bad = browser
        .open_page("data:text/html,<html><body><input><button></button></body></html>")
        .await?;
    let found = bad.accessibility_violations().await?;
    assert!(found.iter().any(|v| v.contains("label")), "{found:?}");
    let mut all = Vec::new();
    for (name, page) in [
        ("/pair", &pair),
        ("popup", &popup),
        ("options", &options),
        ("activity", &activity),
    ] {
        for v in page.accessibility_violations().await? {
            all.push(format!("{name} {v}"));
        }
    }
    assert!(
        all.is_empty(),
        "accessibility violations:\n{}",
        all.join("\n")
    );
    Ok(())
}

/// `ping` with a deadline: `null` when nothing answers within `ms`.
async fn ping_within(page: &Page, ms: u32) -> Result<Value> {
    page.eval(&format!(
        "new Promise((resolve) => {{
            const nonce = 'n' + Math.random();
            setTimeout(() => resolve(null), {ms});
            addEventListener('message', (e) => {{
                if (e.source === window && e.data?.__browserOperator === 'pong' && e.data.nonce === nonce) resolve(e.data);
            }});
            postMessage({{__browserOperator: 'ping', nonce}}, window.origin);
        }})"
    ))
    .await
}

#[tokio::test]
async fn a_page_opened_before_the_extension_reloaded_is_ignored() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let browser = Browser::launch(BrowserOptions::default()).await?;
    let page = browser.open_page(&fixtures.url("hello.html")).await?;
    assert!(ping(&page).await?.is_object(), "the content script answers");

    // Reload the extension (what chrome://extensions' reload button does): the page's content
    // script is orphaned.
    let old_worker = browser.worker_target().await?.map(|t| t.id);
    let root = browser_operator_e2e::repo_root();
    browser
        .cdp()
        .call(
            "Extensions.loadUnpacked",
            json!({"path": root.to_string_lossy()}),
        )
        .await?;
    let start = std::time::Instant::now();
    while browser.worker_target().await?.map(|t| t.id) == old_worker {
        assert!(start.elapsed() < WAIT, "the extension did not reload");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The orphaned script goes quiet: no pong, and no offer reaches the popup.
    assert_eq!(ping_within(&page, 1000).await?, Value::Null);
    page.eval(&offer_js("http://after-reload.example:9", "Stale", ""))
        .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let popup_page = browser.popup_page().await?;
    assert_eq!(
        card(&popup_page).await?,
        Value::Null,
        "the stale page's offer was ignored"
    );

    // The same page, loaded again, gets the new content script.
    page.eval("location.reload(); true").await?;
    page.wait_for("document.readyState === 'complete'", WAIT)
        .await?;
    let mut pong = Value::Null;
    let start = std::time::Instant::now();
    while pong.is_null() && start.elapsed() < WAIT {
        pong = ping_within(&page, 500).await.unwrap_or(Value::Null);
    }
    assert!(
        pong.is_object(),
        "the reloaded page talks to the reloaded extension"
    );
    Ok(())
}

/// `browser-operator <args>` against `backend`'s config directory and main token; its stdout.
async fn cli(backend: &Backend, args: &[&str]) -> Result<String> {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_browser-operator-cli"))
        .args(args)
        .env("BROWSER_OPERATOR_CONFIG_DIR", backend.config_dir())
        .env("BROWSER_OPERATOR_TOKEN", backend.token())
        .output()
        .await
        .map_err(|e| Error::new(format!("running browser-operator {args:?}: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Error::new(format!(
            "browser-operator {args:?} failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(stdout)
}

#[tokio::test]
async fn a_paired_browser_reconnects_after_a_server_restart_and_its_token_is_managed() -> Result<()>
{
    browser_operator_e2e::init();
    let mut backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    ask_to_pair(&browser, &backend).await?;
    popup_with_offer(&browser).await?.click("#accept").await?;
    backend.wait_browsers(1, WAIT).await?;
    let target = backend.status().await?["browsers"][0]["target"].clone();
    let target = target.as_str().unwrap_or_default().to_string();
    assert!(target.starts_with("browser-"), "{target}");

    // The server restarts (same port, same config directory): the paired token still works.
    backend.stop().await;
    backend.start_again().await?;
    backend.wait_browsers(1, Duration::from_secs(40)).await?;
    assert_eq!(backend.status().await?["browsers"][0]["target"], target);
    backend.first_tab().await?;

    // `token list` shows it as paired; `token revoke` refuses it and closes the connection.
    let listed = cli(&backend, &["token", "list"]).await?;
    let line = listed
        .lines()
        .find(|l| l.contains(&target))
        .unwrap_or_default();
    assert!(line.contains("(paired via /pair)"), "{listed}");
    let port = backend.addr().port().to_string();
    let said = cli(&backend, &["token", "revoke", &target, "--port", &port]).await?;
    assert!(said.contains("closed 1 live connection"), "{said}");
    let status = browser.wait_status("error", WAIT).await?;
    assert!(status.contains("token revoked"), "{status}");
    assert_eq!(backend.browsers().await?, 0);
    Ok(())
}

/// What a content script of another implementation does, loaded late: answer every ping it
/// hears from now on, in the protocol's shape.
const LATE_RESPONDER: &str = "addEventListener('message', (e) => {
    if (e.source === window && e.data?.__browserOperator === 'ping') {
        postMessage({__browserOperator: 'pong', nonce: e.data.nonce, version: '9.9.9', productName: 'Late Operator'}, location.origin);
    }
}); true";

#[tokio::test]
async fn the_pair_page_finds_an_extension_whose_content_script_loads_late() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::without_extension()).await?;
    let url = format!("{}/pair", backend.http_url());
    let presence = "document.querySelector('#presence').dataset.state";

    // A content script that runs 3 s after the page loaded is found.
    let pair = browser.open_page(&url).await?;
    pair.wait_for("performance.now() > 3000", WAIT).await?;
    pair.eval(LATE_RESPONDER).await?;
    pair.wait_for(&format!("{presence} === 'installed'"), WAIT)
        .await?;
    let text = pair
        .eval("document.querySelector('#presence').textContent")
        .await?;
    assert_eq!(text, "Late Operator 9.9.9 is installed.");
    assert_eq!(
        pair.eval("document.querySelector('#connect').disabled")
            .await?,
        false
    );

    // One that comes after the page said it found none: the page takes it back.
    let pair = browser.open_page(&url).await?;
    pair.wait_for(&format!("{presence} === 'missing'"), WAIT)
        .await?;
    pair.eval(LATE_RESPONDER).await?;
    pair.wait_for(&format!("{presence} === 'installed'"), WAIT)
        .await?;
    assert_eq!(
        pair.eval("document.querySelector('#connect').disabled")
            .await?,
        false
    );
    Ok(())
}
