//! Takes the screenshots in docs/screenshots/: the popup (with a pairing offer, connected, and
//! paused by Stop), the activity log, the Options page and the server's /pair page, in light
//! and dark mode.
//!
//! Run: `cargo run -p browser-operator-e2e --bin screenshots` (after ./build.sh build).

use base64::Engine;
use browser_operator_e2e::{Backend, Browser, BrowserOptions, Page, Result};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

async fn shoot(page: &Page, width: u32, name: &str) -> Result<()> {
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
        let shot = page
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await?;
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
    let browser = Browser::launch(BrowserOptions::default()).await?;

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
    let fixtures = browser_operator_e2e::FixtureServer::start();
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("login.html")).await?;
    backend
        .js(
            tab,
            "document.getElementById('password').focus(); 'focused'",
        )
        .await?;
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

    let options = browser.options_page().await?;
    options.select_value("#transport", "sse-http").await?;
    options.type_into("#serverUrl", &backend.http_url()).await?;
    shoot(&options, 760, "options").await?;
    browser.close().await?;
    Ok(())
}
