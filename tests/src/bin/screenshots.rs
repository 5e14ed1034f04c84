//! Takes the screenshots in docs/screenshots/: the popup (with a pairing offer, connected,
//! paused by Stop, with an approval waiting, and with two connections), the activity log, the
//! Options page (its site rules, and its connections) and the server's /pair page, in light and
//! dark mode.
//!
//! Run: `cargo run -p browser-operator-e2e --bin screenshots` (after ./build.sh build).

use base64::Engine;
use browser_operator_e2e::{Backend, Browser, BrowserOptions, FixtureServer, Page, Result};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

async fn shoot(page: &Page, width: u32, name: &str) -> Result<()> {
    shoot_part(page, width, name, None).await
}

/// [`shoot`], of the element `selector` only when given.
async fn shoot_part(page: &Page, width: u32, name: &str, selector: Option<&str>) -> Result<()> {
    for scheme in ["light", "dark"] {
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 100, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        page.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        )
        .await?;
        let height = page
            .eval(
                "document.activeElement?.blur(), Math.ceil(document.documentElement.scrollHeight)",
            )
            .await?
            .as_u64()
            .unwrap_or(600);
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut params = json!({"format": "png"});
        if let Some(sel) = selector {
            let r = page
                .eval(&format!(
                    "(() => {{ const r = document.querySelector({}).getBoundingClientRect(); return [r.x, r.y + scrollY, r.width, r.height]; }})()",
                    browser_operator_e2e::js_string(sel)
                ))
                .await?;
            let n = |i: usize| r[i].as_f64().unwrap_or(0.0);
            params["clip"] =
                json!({"x": n(0), "y": n(1), "width": n(2), "height": n(3), "scale": 1});
            params["captureBeyondViewport"] = json!(true);
        }
        let shot = page.call("Page.captureScreenshot", params).await?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or(""))
            .map_err(|e| browser_operator_e2e::Error::new(e.to_string()))?;
        let path =
            browser_operator_e2e::repo_root().join(format!("docs/screenshots/{name}-{scheme}.png"));
        std::fs::write(&path, data)?;
        println!("{}", path.display());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let fixtures = FixtureServer::start();
    let browser = Browser::launch(BrowserOptions {
        ask_before_scripts: true,
        ..Default::default()
    })
    .await?;

    let pair = browser
        .open_page(&format!("{}/pair", backend.http_url()))
        .await?;
    pair.wait_for(
        "document.querySelector('#presence').dataset.state === 'installed'",
        WAIT,
    )
    .await?;
    pair.click("#connect").await?;
    pair.wait_for(
        "document.querySelector('#state').dataset.state === 'waiting'",
        WAIT,
    )
    .await?;
    shoot(&pair, 760, "pair").await?;

    let popup = browser.popup_page().await?;
    popup
        .wait_for("!document.querySelector('#offer').hidden", WAIT)
        .await?;
    shoot(&popup, 360, "popup-offer").await?;
    popup.click("#accept").await?;
    popup.wait_status("connected", WAIT).await?;
    shoot(&popup, 360, "popup").await?;

    // A few commands, Stop, one refused while paused: the popup paused, and the log.
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("login.html")).await?;
    // This browser asks before javascript_tool, as a fresh install does: allowed once.
    let caller = backend.caller();
    let focus = tokio::spawn(async move {
        caller
            .command(
                "javascript_tool",
                json!({"tabId": tab, "text": "document.getElementById('password').focus(); 'focused'"}),
            )
            .await
    });
    popup
        .wait_for("!document.querySelector('#approval').hidden", WAIT)
        .await?;
    popup.click("#approve-once").await?;
    let _ = focus.await;
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "type", "text": "correct horse"}),
        )
        .await?;
    backend
        .text("find", json!({"tabId": tab, "query": "sign in button"}))
        .await
        .ok();
    popup.click("#stop").await?;
    popup
        .wait_for("!document.querySelector('#resume').hidden", WAIT)
        .await?;
    backend
        .command("javascript_tool", json!({"tabId": tab, "text": "1"}))
        .await?;
    shoot(&popup, 360, "popup-paused").await?;
    let activity = browser
        .open_page(&format!(
            "chrome-extension://{}/extension/activity.html",
            browser.extension_id().await?
        ))
        .await?;
    activity
        .wait_for("document.body.dataset.ready === 'true'", WAIT)
        .await?;
    shoot(&activity, 1100, "activity").await?;
    popup.click("#resume").await?;

    // An approval waiting: javascript_tool on a fixture page.
    let (tab, _) = backend.first_tab().await?;
    let page = format!("http://127.0.0.1:{}/hello.html", fixtures.addr().port());
    backend.navigate(tab, &page).await?;
    let caller = backend.caller();
    let waiting = tokio::spawn(async move {
        caller
            .command(
                "javascript_tool",
                json!({"tabId": tab, "text": "document.title === 'Hello\u{200B}' ? 'same' : document.title"}),
            )
            .await
    });
    popup
        .wait_for("!document.querySelector('#approval').hidden", WAIT)
        .await?;
    shoot(&popup, 360, "popup-approval").await?;
    popup.click("#approve-deny").await?;
    let _ = waiting.await;

    let options = browser.options_page().await?;
    options.select_value("#transport", "sse-http").await?;
    options.type_into("#serverUrl", &backend.http_url()).await?;
    // The connection settings (the site rules have their own picture).
    options
        .eval("document.getElementById('site-rules').hidden = true")
        .await?;
    shoot(&options, 760, "options").await?;
    options
        .eval("document.getElementById('site-rules').hidden = false")
        .await?;
    options
        .type_into("#blockedSites", "bank.example\nadmin.example.com")
        .await?;
    options.type_into("#askSites", "*.shop.example").await?;
    shoot_part(&options, 760, "site-rules", Some("#site-rules")).await?;
    options.close().await?;

    // A second backend paired: Options lists both connections, the popup each one's status.
    let second = Backend::start().await?;
    let pair = browser
        .open_page(&format!("{}/pair", second.http_url()))
        .await?;
    pair.wait_for(
        "document.querySelector('#presence').dataset.state === 'installed'",
        WAIT,
    )
    .await?;
    pair.click("#connect").await?;
    let popup = browser.popup_page().await?;
    popup
        .wait_for("!document.querySelector('#offer').hidden", WAIT)
        .await?;
    popup.click("#accept").await?;
    second.wait_browsers(1, WAIT).await?;
    popup
        .wait_for(
            "document.querySelectorAll('#connections li[data-state=\"connected\"]').length === 2",
            WAIT,
        )
        .await?;
    shoot(&popup, 360, "popup-connections").await?;
    let options = browser.options_page().await?;
    options
        .wait_for(
            "!document.querySelector('#connections-section').hidden",
            WAIT,
        )
        .await?;
    options
        // Only the list (the form above it is the shot before).
        .eval("for (const s of ['#form', '#settings']) document.querySelector(s).hidden = true")
        .await?;
    shoot(&options, 760, "options-connections").await?;
    browser.close().await?;
    Ok(())
}
