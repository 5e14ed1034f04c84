//! A stopped worker is started again by the watchdog (an offscreen document holding a port to
//! it), not by the 30 s keep-alive alarm: the alarms are cleared before each stop, so only the
//! watchdog can be the cause, and the new worker says what started it. Idle, and with a command
//! in flight and another queued behind it (each answered with the error that says whether it
//! ran); after the user's Disconnect the watchdog is gone, so nothing wakes the worker.

use browser_operator_e2e::{connected_over, Backend, Browser, Error, Result, TargetInfo};
use protocol::Outcome;
use serde_json::json;
use std::time::{Duration, Instant};

/// Bounds of the waits below (conditions, polled): generous for a loaded machine.
const WAIT: Duration = Duration::from_secs(20);

/// On the running worker: clears every alarm (the keep-alive and the debugger-idle backstops), so
/// nothing but the watchdog can start the worker again once it is stopped. Returns the number of
/// open watchdogs (offscreen documents) and the worker's target.
async fn disarm_alarms(browser: &Browser) -> Result<(u64, TargetInfo)> {
    let worker = browser.worker().await?;
    let watchdogs = worker
        .eval(
            "chrome.alarms.clearAll()
                .then(() => chrome.alarms.getAll())
                .then((all) => { if (all.length) throw new Error('alarms left: ' + JSON.stringify(all)); })
                .then(() => chrome.runtime.getContexts({contextTypes: ['OFFSCREEN_DOCUMENT']}))
                .then((found) => found.length)",
        )
        .await?;
    let target = browser
        .worker_target()
        .await?
        .ok_or_else(|| Error::new("the worker stopped while being read"))?;
    worker.detach().await?;
    Ok((watchdogs.as_u64().unwrap_or(0), target))
}

/// Waits until a worker instance other than `old` runs; then what started it
/// (`self.browserOperator.startedFor()`).
async fn restarted(browser: &Browser, old: &TargetInfo) -> Result<String> {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(t) = browser.worker_target().await? {
            if t.id != old.id {
                break;
            }
        }
        if Instant::now() > deadline {
            return Err(Error::new(format!(
                "no new worker within {WAIT:?} of stopping it (alarms cleared: only the watchdog can start it)"
            ))
            .with_log(&browser.log_tail()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The event Chrome started it for may be delivered just after the worker is up.
    let worker = browser.worker().await?;
    let why = loop {
        let why = worker
            .eval("self.browserOperator?.startedFor?.() ?? null")
            .await?;
        if let Some(why) = why.as_str() {
            break why.to_string();
        }
        if Instant::now() > deadline {
            return Err(Error::new("the new worker never received an event"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    worker.detach().await?;
    Ok(why)
}

/// The tab is detached by the idle setting (1 s), so no debugger event can wake the worker.
async fn wait_detached(browser: &Browser, tab: i64) -> Result<()> {
    let worker = browser.worker().await?;
    worker.set_idle_seconds(1).await?;
    let attached = format!(
        "chrome.debugger.getTargets().then((ts) => ts.some((t) => t.tabId === {tab} && t.attached))"
    );
    let deadline = Instant::now() + WAIT;
    while worker.eval(&attached).await? == json!(true) {
        if Instant::now() > deadline {
            return Err(Error::new(format!(
                "tab {tab} still attached after {WAIT:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.detach().await
}

/// When the browser's current connection was made, per the server (`None`: not connected).
async fn connected_at(backend: &Backend) -> Result<Option<u64>> {
    Ok(backend.status().await?["browsers"][0]["connectedAt"].as_u64())
}

/// Waits until the server holds a connection other than the one made at `before`: commands
/// then go to the new worker, not to a connection that is closing.
async fn reconnected(backend: &Backend, before: Option<u64>) -> Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let now = connected_at(backend).await?;
        if now.is_some() && now != before {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::new(format!(
                "the browser did not connect again within {WAIT:?}: {}",
                backend.status().await?
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn title(backend: &Backend, tab: i64) -> Result<String> {
    let r = backend
        .caller()
        .command_when_connected(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.title"}),
            WAIT,
        )
        .await?;
    match r.outcome {
        Outcome::Result { result } => Ok(result.joined_text()),
        Outcome::Error { error } => Err(Error::new(format!("document.title failed: {error}"))),
    }
}

#[tokio::test]
async fn the_watchdog_starts_a_stopped_worker_again_without_the_alarm() -> Result<()> {
    let (fixtures, backend, browser) = connected_over("websocket").await?;
    let (tab, group) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("hello.html")).await?;
    wait_detached(&browser, tab).await?;

    // Idle, twice: each time the new worker was started by the watchdog and serves at once.
    for round in 0..2 {
        let (watchdogs, old) = disarm_alarms(&browser).await?;
        assert_eq!(watchdogs, 1, "one watchdog while connected (round {round})");
        let before = connected_at(&backend).await?;
        browser.stop_worker().await?;
        let why = restarted(&browser, &old).await?;
        assert_eq!(why, "watchdog", "what started the worker (round {round})");
        reconnected(&backend, before).await?;
        assert_eq!(title(&backend, tab).await?, "Fixture: hello");
        let (_, again) = backend.first_tab().await?;
        assert_eq!(again, group, "the restarted worker recognises its group");
    }

    // A command in flight and one queued behind it (same tab): the first is answered with the
    // interruption error, the second with an error saying it did not run; neither runs again,
    // and a command sent once the new worker is connected is answered. A command that only
    // reads, in flight on another tab (its entry is written after its tool started, not
    // before), is answered too: it changed nothing and is safe to send again.
    let other = backend.new_tab().await?;
    let sent_at = Instant::now();
    let spawn = |text: &'static str| {
        let caller = backend.caller();
        tokio::spawn(async move {
            caller
                .command("javascript_tool", json!({"tabId": tab, "text": text}))
                .await
        })
    };
    let slow = spawn("await new Promise(r => setTimeout(r, 4000)); window.__slow = (window.__slow || 0) + 1; 'slow done'");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let queued = spawn("window.__queued = (window.__queued || 0) + 1; 'queued done'");
    let reading = {
        let caller = backend.caller();
        tokio::spawn(async move {
            caller
                .command(
                    "computer",
                    json!({"tabId": other, "action": "wait", "duration": 4}),
                )
                .await
        })
    };
    // All received once the worker's stored delivery state (each ledger entry JSON text) lists
    // the second as waiting and the read as reading.
    let worker = browser.worker().await?;
    let deadline = Instant::now() + WAIT;
    while worker
        .eval(
            "chrome.storage.session.get(null).then((all) => Object.entries(all).filter(([k]) => k.startsWith('delivery.')).map(([, v]) => JSON.parse(v).s).filter((s) => s === 'queued' || s === 'reading').sort().join(' '))",
        )
        .await?
        != json!("queued reading")
    {
        assert!(
            Instant::now() < deadline,
            "the second command never waited for its turn, or the read was not stored"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.detach().await?;
    let (_, old) = disarm_alarms(&browser).await?;
    let before = connected_at(&backend).await?;
    browser.stop_worker().await?;
    reconnected(&backend, before).await?;
    assert_eq!(title(&backend, tab).await?, "Fixture: hello");
    let error_of = |answer: protocol::CommandResult| match answer.outcome {
        Outcome::Error { error } => error,
        Outcome::Result { result } => panic!("expected an error, got {}", result.joined_text()),
    };
    let slow = error_of(slow.await.map_err(|e| Error::new(e.to_string()))??);
    assert!(
        slow.contains("service worker was stopped while this command ran"),
        "{slow}"
    );
    let queued = error_of(queued.await.map_err(|e| Error::new(e.to_string()))??);
    assert!(
        queued.contains("before this command's turn came") && queued.contains("it did not run"),
        "{queued}"
    );
    let reading = error_of(reading.await.map_err(|e| Error::new(e.to_string()))??);
    assert!(
        reading.contains("while this command read the page")
            && reading.contains("safe to send again"),
        "{reading}"
    );
    assert_eq!(restarted(&browser, &old).await?, "watchdog");
    // The page's own counts once the slow script's time is over: the interrupted command ran at
    // most once (its script may go on in the page), the queued one never.
    let wait = Duration::from_secs(5).saturating_sub(sent_at.elapsed());
    tokio::time::sleep(wait).await;
    let counts = page_counts(&backend, tab).await?;
    assert!(
        counts == "0 0" || counts == "1 0",
        "__slow __queued = {counts}"
    );

    // The user's Disconnect closes the watchdog: nothing will wake the worker for a connection.
    let page = browser.options_page().await?;
    page.click("#disconnect").await?;
    page.wait_status("disconnected", WAIT).await?;
    page.close().await?;
    let worker = browser.worker().await?;
    let open = worker
        .eval("chrome.runtime.getContexts({contextTypes: ['OFFSCREEN_DOCUMENT']}).then((f) => f.length)")
        .await?;
    worker.detach().await?;
    assert_eq!(
        open,
        json!(0),
        "the watchdog outlived the user's Disconnect"
    );
    Ok(())
}

/// `window.__slow` and `window.__queued` ("0" for unset), space-separated.
async fn page_counts(backend: &Backend, tab: i64) -> Result<String> {
    let r = backend
        .caller()
        .command_when_connected(
            "javascript_tool",
            json!({"tabId": tab, "text": "(window.__slow || 0) + ' ' + (window.__queued || 0)"}),
            WAIT,
        )
        .await?;
    match r.outcome {
        Outcome::Result { result } => Ok(result.joined_text()),
        Outcome::Error { error } => Err(Error::new(error)),
    }
}
