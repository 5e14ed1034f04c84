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

#[tokio::test]
async fn tmp_fake_extension() -> Result<()> {
    let opts = BrowserOptions {
        extension_dir: Some("/tmp/fakeext".into()),
        ..Default::default()
    };
    let browser = Browser::launch(opts).await?;
    let t = std::time::Instant::now();
    let id = browser.extension_id().await?;
    eprintln!("id {id} after {:?}", t.elapsed());
    let w = browser.worker().await?;
    for i in 0..3 {
        eprintln!(
            "probe {i}: {:?}",
            w.eval(
                "[typeof self, self.constructor.name, location.href, typeof chrome, self.started]"
            )
            .await?
        );
        if i == 0 {
            eprintln!("enable {:?}", w.call("Runtime.enable", json!({})).await?);
        }
        if i == 1 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    eprintln!(
        "worker eval {:?}",
        w.eval("chrome.runtime.getPlatformInfo()").await?
    );
    w.detach().await?;
    let t = std::time::Instant::now();
    browser.stop_worker().await?;
    eprintln!(
        "stopped after {:?}; target {:?}",
        t.elapsed(),
        browser.worker_target().await?
    );
    let err = browser.configure_extension("http://bad", "tok", None).await;
    eprintln!("bad config: {err:?}");
    let t = std::time::Instant::now();
    browser
        .configure_extension("ws://127.0.0.1:9/ws", "s3cret", Some("tgt"))
        .await?;
    eprintln!("configured after {:?}", t.elapsed());
    let text = browser
        .wait_status("disconnected", Duration::from_secs(5))
        .await?;
    eprintln!("status {text}");
    let err = browser
        .wait_status("connected", Duration::from_millis(300))
        .await;
    eprintln!("{err:?}");
    let p = browser.options_page().await?;
    eprintln!(
        "stored {:?}",
        p.eval("chrome.storage.local.get(null)").await?
    );
    // wake the worker
    p.eval("chrome.runtime.sendMessage('hi')")
        .await
        .map(|v| eprintln!("reply {v}"))?;
    eprintln!(
        "worker back: {:?}",
        browser.wait_worker(Duration::from_secs(5)).await?
    );
    eprintln!("pages {:?}", browser.page_targets().await?);
    browser.close().await?;

    // loadUnpacked on a browser without --load-extension
    let b2 = Browser::launch(BrowserOptions::without_extension()).await?;
    let r = b2
        .cdp()
        .call("Extensions.loadUnpacked", json!({"path": "/tmp/fakeext"}))
        .await;
    eprintln!("loadUnpacked: {r:?}");
    let t = std::time::Instant::now();
    loop {
        let ts = b2.targets().await?;
        if let Some(t2) = ts.iter().find(|t| t.kind == "service_worker") {
            eprintln!("sw {t2:?} after {:?}", t.elapsed());
            break;
        }
        if t.elapsed() > Duration::from_secs(5) {
            eprintln!("no sw: {ts:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
