//! The foundation, end to end: the built extension in headless Chromium, configured through its
//! Options page like a user does, driven through the real server's command API.

use base64::Engine;
use browser_operator_e2e::{
    connected, image_size, images, tabs_context, Backend, Browser, BrowserOptions, Result,
};
use serde_json::{json, Value};
use std::time::Duration;

const CONNECT: Duration = Duration::from_secs(20);

fn first_tab(ctx: &Value) -> i64 {
    ctx["availableTabs"][0]["tabId"].as_i64().expect("a tab id")
}

#[tokio::test]
async fn a_backend_drives_a_tab_in_the_automation_group() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;

    let text = backend.text("tabs_context_mcp", json!({})).await?;
    assert_eq!(
        text,
        "No automation tab group exists. Use createIfEmpty: true to create one."
    );

    let ctx = tabs_context(
        &backend
            .text("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?,
    );
    assert_eq!(
        ctx["availableTabs"].as_array().map(Vec::len),
        Some(1),
        "{ctx}"
    );
    let group = ctx["tabGroupId"].as_i64().expect("group id");
    let tab = first_tab(&ctx);
    // Asking again finds the same group instead of making another.
    let again = tabs_context(
        &backend
            .text("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?,
    );
    assert_eq!(again["tabGroupId"].as_i64(), Some(group));

    let url = fixtures.url("hello.html");
    let nav = backend.navigate(tab, &url).await?;
    assert_eq!(
        nav,
        format!("Navigated to {url}\nHTTP status: 200\nTitle: Fixture: hello")
    );
    let title = backend.js(tab, "document.title").await?;
    assert_eq!(title, "Fixture: hello");

    // REPL semantics: top-level await, last expression, objects as JSON, errors with their line.
    let v = backend
        .js(tab, "const a = await Promise.resolve(20);\na + 22")
        .await?;
    assert_eq!(v, "42");
    let v = backend
        .js(tab, "({n: 1, list: [1, 'two'], el: document.body})")
        .await?;
    let parsed: Value = serde_json::from_str(&v).expect("JSON");
    assert_eq!(parsed, json!({"n": 1, "list": [1, "two"], "el": "[body]"}));
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "1;\nnope.x"}),
        )
        .await?;
    assert!(
        e.contains("ReferenceError: nope is not defined") && e.contains("line 2"),
        "{e}"
    );

    // The screenshot is an image of the viewport's size: one JPEG capture, even of a plain
    // page whose PNG would be smaller (no second capture to compare).
    let shot = backend
        .command("computer", json!({"tabId": tab, "action": "screenshot"}))
        .await?;
    let imgs = images(&shot);
    assert_eq!(imgs.len(), 1, "{shot:?}");
    assert_eq!(imgs[0].1, "image/jpeg");
    let jpeg = base64::engine::general_purpose::STANDARD
        .decode(imgs[0].0)
        .expect("base64");
    let (w, h) = image_size(&jpeg).unwrap_or_else(|| panic!("not a JPEG: {:?}", &jpeg[..8]));
    let viewport = backend.js(tab, "[innerWidth, innerHeight]").await?;
    let viewport: Vec<u32> = serde_json::from_str(&viewport).expect("viewport");
    assert_eq!(vec![w, h], viewport);

    // A second tab joins the group.
    let new_tab = backend.new_tab().await?;
    let ctx = tabs_context(&backend.text("tabs_context_mcp", json!({})).await?);
    let ids: Vec<i64> = ctx["availableTabs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["tabId"].as_i64())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&tab) && ids.contains(&new_tab), "{ids:?}");
    // The new tab is used: recorded, refs given (and stored), a tree kept, a screenshot's scale
    // and image kept.
    backend.navigate(new_tab, &url).await?;
    backend
        .command(
            "computer",
            json!({"tabId": new_tab, "action": "screenshot"}),
        )
        .await?;
    backend.text("read_page", json!({"tabId": new_tab})).await?;
    backend
        .text("read_console_messages", json!({"tabId": new_tab}))
        .await?;
    // What the worker keeps of a tab, as the extension's own pages can see it: the stores its
    // state, asked about the tab, names, and what of the tab sits in session storage.
    let options = browser.options_page().await?;
    let kept = format!(
        "chrome.runtime.sendMessage({{type: 'getState', tab: {new_tab}}}).then(async (state) => {{ \
           const t = {new_tab}; const stored = await chrome.storage.session.get(null); \
           const keys = Object.entries(stored).filter(([k, v]) => k === 'refs:' + t \
             || (k === 'coordScales' && v && String(t) in v) \
             || (k === 'keptImages' && Array.isArray(v) && v.some((i) => i.tab === t))).map(([k]) => k); \
           return {{kept: state.kept, stored: keys}}; }})"
    );
    let before = options.eval(&kept).await?;
    let holds = |v: &Value| v["kept"] != json!([]);
    for store in ["recording", "refs", "screenshot scale", "tools"] {
        assert!(
            before["kept"]
                .as_array()
                .is_some_and(|k| k.contains(&json!(store))),
            "the state names {store} for the tab in use: {before}"
        );
    }
    assert_eq!(
        before["stored"],
        json!(["coordScales", "keptImages", format!("refs:{new_tab}")]),
        "{before}"
    );
    let closed = backend
        .text("tabs_close_mcp", json!({"tabId": new_tab}))
        .await?;
    assert!(
        closed.starts_with(&format!("Closed tab {new_tab}.")),
        "{closed}"
    );
    // Closed: nothing of it is kept, in memory or in storage (storage is written off the
    // event's path: waited for, bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let after = loop {
        let after = options.eval(&kept).await?;
        let clean = !holds(&after) && after["stored"] == json!([]);
        if clean || std::time::Instant::now() > deadline {
            break after;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!holds(&after), "a closed tab is kept: {after}");
    assert_eq!(
        after["stored"],
        json!([]),
        "a closed tab's state is stored: {after}"
    );
    options.close().await?;
    // Its id is no tab any more.
    let e = backend
        .error("read_page", json!({"tabId": new_tab}))
        .await?;
    assert!(e.contains(&format!("Tab {new_tab} does not exist")), "{e}");

    // History.
    backend.navigate(tab, &fixtures.url("index.html")).await?;
    let back = backend.navigate(tab, "back").await?;
    // A history step: no status of its own.
    assert_eq!(back, format!("Navigated to {url}\nTitle: Fixture: hello"));
    Ok(())
}

#[tokio::test]
async fn bad_commands_get_clear_errors_and_the_extension_keeps_serving() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;
    let (tab, _) = backend.first_tab().await?;

    assert_eq!(
        backend.error("fly_to_moon", json!({})).await?,
        "Unknown tool: fly_to_moon"
    );
    assert_eq!(
        backend.error("navigate", json!({"url": "x"})).await?,
        format!("Missing required argument `tabId` (integer). Valid tab ids: {tab}. Call tabs_context_mcp to list them.")
    );
    let e = backend
        .error("navigate", json!({"tabId": "one", "url": "x"}))
        .await?;
    assert!(e.contains("`tabId`") && e.contains("integer"), "{e}");
    let e = backend
        .error("computer", json!({"tabId": tab, "action": "fly"}))
        .await?;
    assert!(e.contains("`action`"), "{e}");
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": "chrome://settings"}),
        )
        .await?;
    assert!(e.contains("Cannot navigate to chrome://settings"), "{e}");
    let e = backend
        .error("navigate", json!({"tabId": 999999, "url": "x"}))
        .await?;
    assert!(
        e.contains("Tab 999999 does not exist") && e.contains(&tab.to_string()),
        "{e}"
    );

    // A tab the user opened outside the group is refused, naming the valid ids.
    let outside = browser.open_page(&fixtures.url("hello.html")).await?;
    let worker = browser.worker().await?;
    let outside_ids = worker
        .eval("chrome.tabs.query({}).then(ts => ts.filter(t => t.groupId === -1).map(t => t.id))")
        .await?;
    worker.detach().await?;
    let outside_id = outside_ids[0].as_i64().expect("a tab outside the group");
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": outside_id, "text": "document.title"}),
        )
        .await?;
    assert_eq!(
        e,
        format!("Tab {outside_id} is not in the automation tab group. Valid tab ids: {tab}. Call tabs_context_mcp to list them.")
    );
    let title = outside.eval("document.title").await?;
    assert_eq!(title, "Fixture: hello", "the refused tab was not touched");

    // Still serving.
    backend.navigate(tab, &fixtures.url("hello.html")).await?;
    let title = backend.js(tab, "document.title").await?;
    assert_eq!(title, "Fixture: hello");
    Ok(())
}

#[tokio::test]
async fn a_rejected_token_is_cleared_and_never_retried() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&backend.ws_url(), "not-the-token", None)
        .await?;
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("rejected the token"), "{status}");
    let options = browser.options_page().await?;
    assert_eq!(
        options
            .eval("document.querySelector('#token').value")
            .await?,
        ""
    );
    options.close().await?;
    let seen = backend.status().await?;
    assert_eq!(seen["authFailures"], 1, "{seen}");
    let attempts = seen["wsConnections"].clone();
    // Longer than one alarm period (30 s): no further attempt reaches the server.
    tokio::time::sleep(Duration::from_secs(40)).await;
    let seen = backend.status().await?;
    assert_eq!(seen["wsConnections"], attempts, "{seen}");
    assert_eq!(seen["authFailures"], 1, "{seen}");

    // Giving the right token connects again.
    browser
        .configure_extension(&backend.ws_url(), backend.token(), None)
        .await?;
    backend.wait_browsers(1, CONNECT).await?;
    Ok(())
}

#[tokio::test]
async fn the_extension_reconnects_after_the_server_restarts() -> Result<()> {
    let (_fixtures, mut backend, browser) = connected().await?;
    backend.stop().await;
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("Retrying"), "{status}");
    backend.start_again().await?;
    backend.wait_browsers(1, Duration::from_secs(40)).await?;
    // Commands run again: the automation group and its tab are there.
    backend.first_tab().await?;
    Ok(())
}

#[tokio::test]
async fn a_stopped_worker_comes_back_connected_and_finds_its_group() -> Result<()> {
    let (_fixtures, backend, browser) = connected().await?;
    let ctx = tabs_context(
        &backend
            .text("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?,
    );
    let group = ctx["tabGroupId"].as_i64();

    let sockets = backend.status().await?["wsConnections"]
        .as_u64()
        .unwrap_or(0);
    browser.stop_worker().await?;
    // Its alarm (30 s period) or an event of the recorded group tab wakes it again: it opens
    // exactly one new connection, even when start and alarm arrive together.
    let start = std::time::Instant::now();
    while backend.status().await?["wsConnections"].as_u64() != Some(sockets + 1) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no reconnect in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    backend.wait_browsers(1, Duration::from_secs(10)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = backend.status().await?;
    assert_eq!(seen["wsConnections"].as_u64(), Some(sockets + 1), "{seen}");

    let after = tabs_context(&backend.text("tabs_context_mcp", json!({})).await?);
    assert_eq!(after["tabGroupId"].as_i64(), group, "{after}");
    assert_eq!(after["availableTabs"], ctx["availableTabs"]);
    Ok(())
}

#[tokio::test]
async fn options_validates_next_to_the_field_and_disconnect_sticks() -> Result<()> {
    let (_fixtures, backend, browser) = connected().await?;
    let page = browser.options_page().await?;

    // The token is masked until revealed.
    assert_eq!(
        page.eval("document.querySelector('#token').type").await?,
        "password"
    );
    page.click("#reveal").await?;
    assert_eq!(
        page.eval("document.querySelector('#token').type").await?,
        "text"
    );
    assert_eq!(
        page.eval("document.querySelector('#token').value").await?,
        backend.token()
    );

    // A wrong kind of URL: the message sits next to the field, nothing is saved.
    page.type_into("#serverUrl", "http://127.0.0.1:1").await?;
    page.click("#save").await?;
    page.wait_for(
        "document.querySelector('#serverUrl-error').textContent !== ''",
        CONNECT,
    )
    .await?;
    let msg = page
        .eval("document.querySelector('#serverUrl-error').textContent")
        .await?;
    assert!(msg.as_str().unwrap_or("").contains("ws://"), "{msg}");
    assert_eq!(
        backend.browsers().await?,
        1,
        "still connected with the saved config"
    );

    // Disconnect sticks: the server sees the browser leave and no attempt follows.
    page.click("#disconnect").await?;
    page.wait_status("disconnected", CONNECT).await?;
    backend.wait_browsers(0, CONNECT).await?;
    let attempts = backend.status().await?["wsConnections"].clone();
    tokio::time::sleep(Duration::from_secs(35)).await;
    assert_eq!(backend.status().await?["wsConnections"], attempts);
    Ok(())
}

#[tokio::test]
async fn an_idle_connection_keeps_the_worker_alive() -> Result<()> {
    let (_fixtures, backend, browser) = connected().await?;
    // No CDP session on the worker (one would keep it alive by itself), no command: Chrome
    // stops an idle worker after 30 s unless the session keeps it busy.
    let before = backend.status().await?;
    tokio::time::sleep(Duration::from_secs(45)).await;
    let after = backend.status().await?;
    assert_eq!(
        after["browsers"], before["browsers"],
        "the same connection is still up"
    );
    assert_eq!(
        after["wsConnections"], before["wsConnections"],
        "no reconnect happened"
    );
    assert!(
        browser.worker_target().await?.is_some(),
        "the worker is running"
    );
    // Commands run again: the automation group and its tab are there.
    backend.first_tab().await?;
    Ok(())
}

/// Options and the popup read the worker's state once as they open; a status written while that
/// read is in flight is newer than its snapshot and must stay on screen (a page showing the
/// stale "Connecting…" of a worker that has connected is what a user would see stuck).
#[tokio::test]
async fn a_status_written_while_a_page_opens_is_not_overwritten_by_its_snapshot() -> Result<()> {
    browser_operator_e2e::init();
    let browser = Browser::launch(BrowserOptions::default()).await?;
    // The pages' getState answers only after a newer status has reached chrome.storage (and its
    // change event the page): the snapshot it carries is then the older one.
    const LATE_SNAPSHOT: &str = r#"
        const real = chrome.runtime.sendMessage.bind(chrome.runtime);
        chrome.runtime.sendMessage = async (message, ...rest) => {
            const reply = await real(message, ...rest);
            if (message && message.type === 'getState') {
                await chrome.storage.session.set({status: {
                    state: 'connected', message: 'Connected to the newer status', since: Date.now()}});
                await new Promise((r) => setTimeout(r, 300));
            }
            return reply;
        };"#;
    // The worker writes its own first status as it starts: wait for it, so that it cannot land
    // in the middle of what follows.
    let setup = browser.options_page().await?;
    setup
        .wait_for(
            "chrome.storage.session.get('status').then((s) => s.status !== undefined)",
            CONNECT,
        )
        .await?;
    for (name, url) in [
        ("Options", browser.options_url().await?),
        (
            "popup",
            browser
                .options_url()
                .await?
                .replace("options.html", "popup.html"),
        ),
    ] {
        setup
            .eval(
                "chrome.storage.session.set({status: {state: 'connecting', \
                 message: 'Connecting (the older status)', since: Date.now()}}).then(() => true)",
            )
            .await?;
        let page = browser.open_page("about:blank").await?;
        page.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": LATE_SNAPSHOT }),
        )
        .await?;
        page.call("Page.navigate", json!({ "url": url })).await?;
        page.wait_for(
            "location.protocol === 'chrome-extension:' && document.body?.dataset.ready === 'true'",
            CONNECT,
        )
        .await?;
        let shown = page
            .eval("[document.querySelector('#status').dataset.state, document.querySelector('#status').textContent]")
            .await?;
        assert_eq!(
            shown,
            json!(["connected", "Connected to the newer status"]),
            "the {name} page"
        );
        let _ = page.close().await;
    }
    Ok(())
}
