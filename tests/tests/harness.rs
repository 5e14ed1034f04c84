//! Smoke test of the harness itself: CDP client, Chromium launch, page input. Needs
//! Chromium but not the built extension.

use std::time::Duration;

use browser_operator_e2e::{Browser, BrowserOptions, FixtureServer, Result};
use serde_json::json;

#[tokio::test]
async fn harness_drives_a_fixture_page() -> Result<()> {
    let fixtures = FixtureServer::start();
    let browser = Browser::launch(BrowserOptions {
        window_size: Some((1024, 768)),
        ..BrowserOptions::without_extension()
    })
    .await?;
    let result = drive(&browser, &fixtures).await;
    if result.is_err() {
        eprintln!("--- Chromium log (tail) ---\n{}", browser.log_tail());
    }
    result
}

async fn drive(browser: &Browser, fixtures: &FixtureServer) -> Result<()> {
    let url = fixtures.url("hello.html");
    let page = browser.open_page(&url).await?;

    assert_eq!(page.eval("document.title").await?, json!("Fixture: hello"));
    assert_eq!(
        page.eval("document.querySelector('h1').textContent")
            .await?,
        json!("Hello from the fixture")
    );
    let pages = browser.page_targets().await?;
    assert!(
        pages
            .iter()
            .any(|t| t.url == url && t.title == "Fixture: hello"),
        "page targets: {pages:?}"
    );

    // Exceptions become errors carrying their description.
    let err = page.eval("(() => { throw new Error('boom') })()").await;
    assert!(
        err.as_ref().is_err_and(|e| e.message().contains("boom")),
        "{err:?}"
    );
    // Promises are awaited.
    assert_eq!(page.eval("Promise.resolve(6 * 7)").await?, json!(42));

    // Typing replaces the existing text and fires input events.
    page.type_into("#name", "Ada").await?;
    assert_eq!(
        page.eval("document.querySelector('#name').value").await?,
        json!("Ada")
    );
    assert_eq!(page.eval("document.body.dataset.inputs").await?, json!("1"));

    // A trusted mouse click.
    page.click("#greet").await?;
    page.wait_for(
        "document.querySelector('#message').textContent === 'Hello, Ada!'",
        Duration::from_secs(5),
    )
    .await?;
    assert_eq!(
        page.eval("document.querySelector('#message').dataset.trusted")
            .await?,
        json!("true")
    );

    // Bounded waits say what they waited for.
    let err = page.wait_for("false", Duration::from_millis(200)).await;
    assert!(
        err.as_ref()
            .is_err_and(|e| e.message().contains("waiting for `false`")),
        "{err:?}"
    );
    // Unknown elements are reported by selector.
    let err = page.click("#nope").await;
    assert!(
        err.as_ref().is_err_and(|e| e.message().contains("#nope")),
        "{err:?}"
    );

    // The fixture server answers 404 for unknown files.
    let status = page
        .eval(&format!(
            "fetch({:?}).then(r => r.status)",
            fixtures.url("missing.html")
        ))
        .await?;
    assert_eq!(status, json!(404));

    // Events are broadcast.
    let mut events = browser.cdp().events();
    page.call(
        "Runtime.evaluate",
        json!({ "expression": "console.log('ping')" }),
    )
    .await?;
    let event = browser_operator_e2e::wait_event_on(
        &mut events,
        |e| e.method == "Runtime.consoleAPICalled",
        Duration::from_secs(5),
    )
    .await?;
    assert_eq!(
        event.session_id.as_deref(),
        Some(page.session().session_id())
    );

    page.close().await?;
    Ok(())
}
