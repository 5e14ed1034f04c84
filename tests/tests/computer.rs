//! Computer use, end to end: screenshots whose coordinates land at any device scale factor and
//! window size, mouse and keyboard actions checked by the page's own event log, scrolling, zoom,
//! uploads, dialogs, popups joining the group, and a tab dragged out of it.

use base64::Engine;
use browser_operator_e2e::{
    image_size, images, Backend, Browser, BrowserOptions, FixtureServer, Result,
};
use serde_json::{json, Value};
use std::time::Duration;

async fn connected(opts: BrowserOptions) -> Result<(FixtureServer, Backend, Browser, i64)> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected_with(opts).await?;
    let (tab, _) = backend.first_tab().await?;
    Ok((fixtures, backend, browser, tab))
}

fn context_tabs(text: &str) -> Vec<i64> {
    let ctx: Value = serde_json::from_str(text.lines().next().unwrap_or("")).expect("JSON line");
    ctx["availableTabs"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["tabId"].as_i64()).collect())
        .unwrap_or_default()
}

async fn js(backend: &Backend, tab: i64, code: &str) -> Result<String> {
    backend
        .text("javascript_tool", json!({"tabId": tab, "text": code}))
        .await
}

async fn computer(backend: &Backend, tab: i64, mut args: Value) -> Result<String> {
    args["tabId"] = json!(tab);
    backend.text("computer", args).await
}

/// Takes a screenshot; returns (width, height, id) after checking the image matches the text.
async fn screenshot(backend: &Backend, tab: i64) -> Result<(f64, f64, String)> {
    let r = backend
        .command("computer", json!({"tabId": tab, "action": "screenshot"}))
        .await?;
    let text = match &r.outcome {
        protocol::Outcome::Result { result } => result.content.iter().find_map(|b| match b {
            protocol::ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        }),
        _ => None,
    }
    .unwrap_or_else(|| panic!("{r:?}"));
    // "Successfully captured screenshot (WxH, fmt) - ID: id"
    let inner = &text[text.find('(').unwrap() + 1..text.find(')').unwrap()];
    let (size, fmt) = inner.split_once(", ").unwrap();
    let (w, h) = size.split_once('x').unwrap();
    let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
    let id = text.rsplit("ID: ").next().unwrap().to_string();
    let imgs = images(&r);
    assert_eq!(imgs.len(), 1);
    assert_eq!(imgs[0].1, format!("image/{fmt}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(imgs[0].0)
        .expect("base64");
    assert_eq!(image_size(&bytes), Some((w, h)), "{text}");
    assert!(w.max(h) <= 1568, "{text}");
    Ok((f64::from(w), f64::from(h), id))
}

/// The CSS centre of an element.
async fn centre(backend: &Backend, tab: i64, id: &str) -> Result<(f64, f64)> {
    let v = js(
        backend,
        tab,
        &format!("const r = document.getElementById('{id}').getBoundingClientRect(); [r.x + r.width / 2, r.y + r.height / 2]"),
    )
    .await?;
    let v: Vec<f64> = serde_json::from_str(&v).expect("point");
    Ok((v[0], v[1]))
}

async fn last_event(backend: &Backend, tab: i64, kind: &str) -> Result<Value> {
    let v = js(
        backend,
        tab,
        &format!("log.filter((e) => e.type === '{kind}').slice(-1)[0] || null"),
    )
    .await?;
    Ok(serde_json::from_str(&v).unwrap_or(Value::Null))
}

async fn clicks_land(opts: BrowserOptions) -> Result<()> {
    let (fixtures, backend, browser, tab) = connected(opts).await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("input.html")}),
        )
        .await?;
    let (w, h, _) = screenshot(&backend, tab).await?;
    let css_width: f64 = js(&backend, tab, "innerWidth")
        .await?
        .parse()
        .expect("width");
    let ratio = w / css_width;
    for id in ["b1", "b2", "b3"] {
        let (x, y) = centre(&backend, tab, id).await?;
        let (sx, sy) = ((x * ratio).round(), (y * ratio).round());
        let out = computer(
            &backend,
            tab,
            json!({"action": "left_click", "coordinate": [sx, sy]}),
        )
        .await?;
        assert_eq!(out, format!("Clicked at ({sx}, {sy})"));
        let e = last_event(&backend, tab, "click").await?;
        assert_eq!(e["id"], id, "{e}");
        assert!(
            (e["x"].as_f64().unwrap() - x).abs() <= 1.0 / ratio + 1.0,
            "{e} vs {x}"
        );
        assert_eq!(e["trusted"], true);
    }

    // A tab in the background never paints: its screenshot brings it to the front first, and
    // is the same image size as while it was in front.
    let created = backend.text("tabs_create_mcp", json!({})).await?;
    assert!(created.starts_with("Created new tab."), "{created}");
    assert_eq!(
        js(&backend, tab, "document.visibilityState").await?,
        "hidden"
    );
    let (w2, h2, _) = screenshot(&backend, tab).await?;
    assert_eq!((w2, h2), (w, h));
    assert_eq!(
        js(&backend, tab, "document.visibilityState").await?,
        "visible"
    );

    // The page zoomed in since the last screenshot (its CSS viewport halves, its pixel ratio
    // doubles): the next screenshot is not a capture of its device pixels (Chrome scales a
    // zoomed page's clip by the zoom: the image is at most the CSS viewport's size), and clicks
    // at its coordinates land.
    let dpr: f64 = js(&backend, tab, "devicePixelRatio")
        .await?
        .parse()
        .expect("ratio");
    let worker = browser.worker().await?;
    worker
        .eval(&format!("chrome.tabs.setZoom({tab}, 2).then(() => 1)"))
        .await?;
    let mut zoomed = dpr;
    for _ in 0..100 {
        zoomed = js(&backend, tab, "devicePixelRatio")
            .await?
            .parse()
            .expect("ratio");
        if zoomed == dpr * 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(zoomed, dpr * 2.0, "the page did not zoom");
    let css: Vec<f64> =
        serde_json::from_str(&js(&backend, tab, "[innerWidth, innerHeight]").await?).expect("size");
    let (w3, h3, _) = screenshot(&backend, tab).await?;
    assert!(
        w3 <= css[0] + 1.0 && h3 <= css[1] + 1.0,
        "the zoomed page's screenshot is {w3}x{h3}, its viewport {}x{} CSS px",
        css[0],
        css[1]
    );
    let (x, y) = centre(&backend, tab, "b2").await?;
    let ratio = w3 / css[0];
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [(x * ratio).round(), (y * ratio).round()]}),
    )
    .await?;
    let e = last_event(&backend, tab, "click").await?;
    assert_eq!(e["id"], "b2", "{e} on the zoomed page");
    worker.detach().await?;
    Ok(())
}

#[tokio::test]
async fn clicks_land_at_scale_1_and_default_size() -> Result<()> {
    clicks_land(BrowserOptions::default()).await
}

#[tokio::test]
async fn clicks_land_at_scale_2_and_a_wide_window() -> Result<()> {
    clicks_land(BrowserOptions {
        device_scale_factor: Some(2.0),
        window_size: Some((1700, 1000)),
        ..Default::default()
    })
    .await
}

#[tokio::test]
async fn mouse_keyboard_scroll_zoom_and_upload() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected(BrowserOptions::default()).await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("input.html")}),
        )
        .await?;
    let (bx, by) = centre(&backend, tab, "b2").await?;
    let at = json!([bx, by]);
    let out = computer(
        &backend,
        tab,
        json!({"action": "right_click", "coordinate": at}),
    )
    .await?;
    assert!(out.starts_with("Right-clicked at"), "{out}");
    let e = last_event(&backend, tab, "contextmenu").await?;
    assert_eq!(
        (e["id"].as_str(), e["button"].as_i64()),
        (Some("b2"), Some(2)),
        "{e}"
    );
    computer(
        &backend,
        tab,
        json!({"action": "double_click", "coordinate": at}),
    )
    .await?;
    let e = last_event(&backend, tab, "dblclick").await?;
    assert_eq!(
        (e["id"].as_str(), e["detail"].as_i64()),
        (Some("b2"), Some(2)),
        "{e}"
    );
    computer(
        &backend,
        tab,
        json!({"action": "triple_click", "coordinate": at}),
    )
    .await?;
    assert_eq!(last_event(&backend, tab, "click").await?["detail"], 3);
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": at, "modifiers": "ctrl+shift"}),
    )
    .await?;
    let e = last_event(&backend, tab, "click").await?;
    assert_eq!(
        (
            e["ctrl"].as_bool(),
            e["shift"].as_bool(),
            e["alt"].as_bool()
        ),
        (Some(true), Some(true), Some(false)),
        "{e}"
    );
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": at, "modifiers": "hyper"}),
        )
        .await?;
    assert!(e.contains("`modifiers`"), "{e}");
    let (hx, hy) = centre(&backend, tab, "b3").await?;
    computer(
        &backend,
        tab,
        json!({"action": "hover", "coordinate": [hx, hy]}),
    )
    .await?;
    assert_eq!(last_event(&backend, tab, "mouseover").await?["id"], "b3");

    // Clicks by ref.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "Three"}))
        .await?;
    let line = found
        .lines()
        .find(|l| l.contains("button \"Three\""))
        .expect("found");
    let r = &line[1..line.find(']').unwrap()];
    computer(&backend, tab, json!({"action": "left_click", "ref": r})).await?;
    assert_eq!(last_event(&backend, tab, "click").await?["id"], "b3");

    // Typing: exactly the text, with key events for US characters.
    let (tx, ty) = centre(&backend, tab, "text").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [tx, ty]}),
    )
    .await?;
    let out = computer(
        &backend,
        tab,
        json!({"action": "type", "text": "Hello, World! ça (1+1=2)"}),
    )
    .await?;
    assert_eq!(out, "Typed \"Hello, World! ça (1+1=2)\"");
    assert_eq!(
        js(&backend, tab, "text.value").await?,
        "Hello, World! ça (1+1=2)"
    );
    let e = last_event(&backend, tab, "keypress").await?;
    assert_eq!(
        (e["key"].as_str(), e["code"].as_str()),
        (Some(")"), Some("Digit0")),
        "{e}"
    );
    let out = computer(
        &backend,
        tab,
        json!({"action": "key", "text": "ctrl+a Backspace"}),
    )
    .await?;
    assert_eq!(out, "Pressed 2 key(s): ctrl+a Backspace");
    assert_eq!(js(&backend, tab, "text.value").await?, "");
    computer(&backend, tab, json!({"action": "type", "text": "abcd"})).await?;
    computer(
        &backend,
        tab,
        json!({"action": "key", "text": "Backspace", "repeat": 3}),
    )
    .await?;
    assert_eq!(js(&backend, tab, "text.value").await?, "a");
    computer(&backend, tab, json!({"action": "key", "text": "Tab"})).await?;
    assert_eq!(
        js(&backend, tab, "document.activeElement.id").await?,
        "area"
    );
    computer(
        &backend,
        tab,
        json!({"action": "type", "text": "line one\nline two"}),
    )
    .await?;
    assert_eq!(js(&backend, tab, "area.value").await?, "line one\nline two");
    let (ex, ey) = centre(&backend, tab, "edit").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [ex, ey]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "type", "text": "rich text"}),
    )
    .await?;
    assert_eq!(
        js(&backend, tab, "edit.innerText.trim()").await?,
        "rich text"
    );
    let (sx, sy) = centre(&backend, tab, "second").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [sx, sy]}),
    )
    .await?;
    computer(&backend, tab, json!({"action": "key", "text": "Enter"})).await?;
    assert_eq!(js(&backend, tab, "submitted").await?, "1");
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "key", "text": "ctrl+nope"}),
        )
        .await?;
    assert!(e.contains("Unknown key \"nope\""), "{e}");

    // Drag with intermediate moves.
    let (dx, dy) = centre(&backend, tab, "drag").await?;
    computer(&backend, tab, json!({"action": "left_click_drag", "start_coordinate": [dx, dy], "coordinate": [dx + 150.0, dy + 50.0]})).await?;
    let pos = js(
        &backend,
        tab,
        "[drag.offsetLeft, drag.offsetTop, dragMoves].join()",
    )
    .await?;
    assert_eq!(pos, "170,450,10");

    // zoom: the region, scaled up.
    let out = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": [20, 20, 140, 60]}),
        )
        .await?;
    assert_eq!(images(&out).len(), 1);
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": [0, 0, 99999, 10]}),
        )
        .await?;
    assert!(e.contains("leaves the viewport"), "{e}");

    // upload_image: a screenshot as a File in a file input, and dropped on a drop zone.
    let (_, _, id) = screenshot(&backend, tab).await?;
    let file = backend
        .text("find", json!({"tabId": tab, "query": "File"}))
        .await?;
    let line = file
        .lines()
        .find(|l| l.starts_with("[ref_") && l.contains("\"File\""))
        .expect("file input");
    let r = &line[1..line.find(']').unwrap()];
    let out = backend
        .text(
            "upload_image",
            json!({"tabId": tab, "imageId": id, "ref": r, "filename": "shot.png"}),
        )
        .await?;
    assert!(out.contains("via file input"), "{out}");
    // Setting the input may have scrolled it into view: bring the drop zone into the viewport,
    // as an agent would after a screenshot, before dropping at its point.
    js(
        &backend,
        tab,
        "document.getElementById('drop').scrollIntoView({block: 'center'}); 'ok'",
    )
    .await?;
    let (px, py) = centre(&backend, tab, "drop").await?;
    backend
        .text(
            "upload_image",
            json!({"tabId": tab, "imageId": id, "coordinate": [px, py]}),
        )
        .await?;
    let files = js(
        &backend,
        tab,
        "files.map((f) => f.split(':').slice(0, 2).join(':')).join()",
    )
    .await?;
    assert_eq!(files, "input:shot.png,drop:image.png");
    let e = backend
        .error(
            "upload_image",
            json!({"tabId": tab, "imageId": "nope", "ref": r}),
        )
        .await?;
    assert!(e.contains("Unknown imageId"), "{e}");

    // Scroll: a scrollable div under the point, then the page; a screenshot comes back.
    let (cx, cy) = centre(&backend, tab, "scroller").await?;
    let out = backend
        .command("computer", json!({"tabId": tab, "action": "scroll", "coordinate": [cx, cy], "scroll_direction": "down", "scroll_amount": 2}))
        .await?;
    assert_eq!(images(&out).len(), 1);
    assert!(
        js(&backend, tab, "scroller.scrollTop")
            .await?
            .parse::<f64>()
            .unwrap()
            > 0.0
    );
    computer(
        &backend,
        tab,
        json!({"action": "scroll", "coordinate": [100, 100], "scroll_direction": "down"}),
    )
    .await?;
    assert!(js(&backend, tab, "scrollY").await?.parse::<f64>().unwrap() >= 100.0);
    let out = computer(&backend, tab, json!({"action": "wait", "duration": 0.2})).await?;
    assert_eq!(out, "Waited for 0.2 second(s)");
    Ok(())
}

#[tokio::test]
async fn dialogs_popups_resizing_and_leaving_the_group() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected(BrowserOptions::default()).await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("dialogs.html")}),
        )
        .await?;
    let (ax, ay) = centre(&backend, tab, "alert").await?;
    let out = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": [ax, ay]}),
        )
        .await?;
    let text = format!("{out:?}");
    assert!(
        text.contains("A JavaScript alert dialog is open") && text.contains("Hello alert"),
        "{text}"
    );
    let e = backend.error("read_page", json!({"tabId": tab})).await?;
    assert!(
        e.contains("alert dialog is open") && e.contains("handle_dialog"),
        "{e}"
    );
    let out = backend
        .text("handle_dialog", json!({"tabId": tab, "accept": true}))
        .await?;
    assert_eq!(out, "Accepted the alert dialog \"Hello alert\"");
    assert_eq!(
        js(&backend, tab, "document.body.dataset.after").await?,
        "alert"
    );
    let (cx, cy) = centre(&backend, tab, "confirm").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [cx, cy]}),
    )
    .await?;
    backend
        .text("handle_dialog", json!({"tabId": tab, "accept": false}))
        .await?;
    assert_eq!(
        js(&backend, tab, "document.body.dataset.confirm").await?,
        "false"
    );
    let (px, py) = centre(&backend, tab, "prompt").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [px, py]}),
    )
    .await?;
    let out = backend
        .text(
            "handle_dialog",
            json!({"tabId": tab, "accept": true, "promptText": "Ada"}),
        )
        .await?;
    assert!(out.contains("with \"Ada\""), "{out}");
    assert_eq!(
        js(&backend, tab, "document.body.dataset.prompt").await?,
        "Ada"
    );
    let e = backend
        .error("handle_dialog", json!({"tabId": tab, "accept": true}))
        .await?;
    assert!(e.contains("No JavaScript dialog is open"), "{e}");

    // A tab that window.open opens joins the group.
    let (ox, oy) = centre(&backend, tab, "open").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [ox, oy]}),
    )
    .await?;
    let mut tabs = Vec::new();
    for _ in 0..50 {
        tabs = context_tabs(&backend.text("tabs_context_mcp", json!({})).await?);
        if tabs.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(tabs.len(), 2, "{tabs:?}");
    let popup = *tabs.iter().find(|t| **t != tab).unwrap();
    for _ in 0..50 {
        if js(&backend, popup, "location.search")
            .await
            .unwrap_or_default()
            == "?opened"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        js(&backend, popup, "document.title").await?,
        "Fixture: hello"
    );

    // A tab dragged out of the group stops accepting commands.
    let worker = browser.worker().await?;
    worker
        .eval(&format!("chrome.tabs.ungroup({popup}).then(() => 'ok')"))
        .await?;
    let e = backend
        .error("javascript_tool", json!({"tabId": popup, "text": "1"}))
        .await?;
    assert!(e.contains("is not in the automation tab group"), "{e}");

    // resize_window: the tab's window takes the size.
    let out = backend
        .text(
            "resize_window",
            json!({"tabId": tab, "width": 900, "height": 700}),
        )
        .await?;
    assert!(
        out.starts_with("Resized the window to 900x700; the viewport is now "),
        "{out}"
    );
    let bounds = worker
        .eval(&format!("chrome.tabs.get({tab}).then((t) => chrome.windows.get(t.windowId)).then((w) => w.width + 'x' + w.height)"))
        .await?;
    assert_eq!(bounds, json!("900x700"));
    Ok(())
}

/// Whether this extension's debugger (or any client) is attached to each page target, from
/// the worker: `[tab's state, any page attached]`.
async fn debugger_state(worker: &browser_operator_e2e::Session, tab: i64) -> Result<(bool, bool)> {
    let v = worker
        .eval(&format!(
            "chrome.debugger.getTargets().then((ts) => [ts.some((t) => t.tabId === {tab} && t.attached), ts.some((t) => t.type === 'page' && t.attached)])"
        ))
        .await?;
    Ok((v[0] == json!(true), v[1] == json!(true)))
}

async fn wait_detached(worker: &browser_operator_e2e::Session, tab: i64) -> Result<()> {
    for _ in 0..200 {
        if debugger_state(worker, tab).await? == (false, false) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("tab {tab} was not detached within 20 s of idleness");
}

async fn wait_title(worker: &browser_operator_e2e::Session, tab: i64, title: &str) -> Result<()> {
    let mut seen = Value::Null;
    for _ in 0..100 {
        seen = worker
            .eval(&format!("chrome.tabs.get({tab}).then((t) => t.title)"))
            .await?;
        if seen == json!(title) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("tab {tab}'s title stayed {seen}, never {title:?}");
}

/// Another window of the fixture's origin, which tells the idle tab what to do (BroadcastChannel)
/// without touching its debugger.
async fn tell_idle_page(
    worker: &browser_operator_e2e::Session,
    fixtures: &FixtureServer,
    what: &str,
) -> Result<()> {
    let url = fixtures.url(&format!("idle.html?send={what}"));
    worker
        .eval(&format!(
            "chrome.windows.create({{url: {url:?}, focused: false}}).then((w) => w.id)"
        ))
        .await?;
    Ok(())
}

#[tokio::test]
async fn idle_tabs_are_detached_and_recording_stays_coherent() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected(BrowserOptions::default()).await?;
    let worker = browser.worker().await?;
    let group = worker
        .eval(&format!("chrome.tabs.get({tab}).then((t) => t.groupId)"))
        .await?;

    // The setting, through the Options page: whole minutes, checked by the worker.
    let options = browser.options_page().await?;
    options.type_into("#idleMinutes", "-1").await?;
    options.click("#saveSettings").await?;
    options
        .wait_for(
            "document.querySelector('#idleMinutes-error').textContent.includes('whole number of minutes')",
            Duration::from_secs(5),
        )
        .await?;
    options.type_into("#idleMinutes", "7").await?;
    options.click("#saveSettings").await?;
    options
        .wait_for(
            "document.querySelector('#settings-status').textContent === 'Saved.'",
            Duration::from_secs(5),
        )
        .await?;
    options.close().await?;
    let stored = worker
        .eval("chrome.storage.local.get('debuggerIdleSeconds').then((s) => s.debuggerIdleSeconds)")
        .await?;
    assert_eq!(stored, json!(420));
    // Seconds for the test (the Options page offers whole minutes only).
    worker.set_idle_seconds(2).await?;

    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("idle.html")}),
        )
        .await?;
    assert!(debugger_state(&worker, tab).await?.0);
    wait_detached(&worker, tab).await?;

    // While detached, the page logs and fetches.
    tell_idle_page(&worker, &fixtures, "log").await?;
    wait_title(&worker, tab, "fetched while detached").await?;
    assert_eq!(debugger_state(&worker, tab).await?, (false, false));

    // The next command attaches again; console messages come back, each once.
    let started = std::time::Instant::now();
    let console = backend
        .text("read_console_messages", json!({"tabId": tab}))
        .await?;
    eprintln!(
        "first command after idle (re-attach, enable, replay): {:?}",
        started.elapsed()
    );
    assert!(debugger_state(&worker, tab).await?.0);
    assert_eq!(
        console.matches("logged before idle").count(),
        1,
        "{console}"
    );
    assert_eq!(
        console.matches("logged while detached").count(),
        1,
        "{console}"
    );
    // Requests then were not seen by the debugger: said, and filled from resource timing.
    let network = backend
        .text("read_network_requests", json!({"tabId": tab}))
        .await?;
    let gap = network
        .lines()
        .find(|l| l.starts_with("Not recorded from "))
        .unwrap_or_else(|| panic!("no gap line in {network}"));
    assert!(
        gap.contains("the debugger was detached while the tab was idle"),
        "{network}"
    );
    let Some(filled) = network
        .lines()
        .find(|l| l.contains("hello.html?while=detached"))
    else {
        let entries = js(&backend, tab, "JSON.stringify([Date.now(), performance.getEntriesByType('resource').map((e) => [e.name, performance.timeOrigin + e.startTime])])").await?;
        panic!("the fetch made while detached is not listed: {network}\n{entries}");
    };
    assert!(
        filled.contains("200") && filled.contains("from resource timing"),
        "{filled}"
    );
    let page_line = network.find("idle.html").expect("the page's own request");
    assert!(
        page_line < network.find("Not recorded").unwrap(),
        "{network}"
    );

    // A dialog that opens while detached: the next command says so at once, handle_dialog
    // dismisses it and the page goes on.
    wait_detached(&worker, tab).await?;
    tell_idle_page(&worker, &fixtures, "alert").await?;
    wait_title(&worker, tab, "alert coming").await?;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let e = backend
        .error("javascript_tool", json!({"tabId": tab, "text": "1"}))
        .await?;
    assert!(
        e.contains("does not respond") && e.contains("opened while the debugger was detached"),
        "{e}"
    );
    let out = backend
        .text("handle_dialog", json!({"tabId": tab, "accept": true}))
        .await?;
    assert!(
        out.starts_with(
            "Dismissed the JavaScript dialog that opened while the debugger was detached"
        ) && out.contains("could not be accepted"),
        "{out}"
    );
    assert_eq!(js(&backend, tab, "document.title").await?, "alert closed");

    // The tab stayed in the group throughout.
    let now = worker
        .eval(&format!("chrome.tabs.get({tab}).then((t) => t.groupId)"))
        .await?;
    assert_eq!(now, group);
    assert!(context_tabs(&backend.text("tabs_context_mcp", json!({})).await?).contains(&tab));
    Ok(())
}

async fn viewport(backend: &Backend, tab: i64) -> Result<(f64, f64)> {
    let v: Vec<f64> =
        serde_json::from_str(&js(backend, tab, "[innerWidth, innerHeight]").await?).expect("size");
    Ok((v[0], v[1]))
}

/// resize_window changes the viewport (a maximized window is restored first), the screenshot
/// follows, and clicks at screenshot positions still land; screenshots in between leave no
/// device-metrics override behind that would freeze the viewport.
async fn resize_follows(
    opts: BrowserOptions,
    maximize_first: bool,
) -> Result<(FixtureServer, Backend, Browser, i64)> {
    let (fixtures, backend, browser, tab) = connected(opts).await?;
    let worker = browser.worker().await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("input.html")}),
        )
        .await?;
    let window = |prop: &str| {
        format!("chrome.tabs.get({tab}).then((t) => chrome.windows.get(t.windowId)).then((w) => {prop})")
    };
    if maximize_first {
        // A maximized window is restored to take the size.
        let state = worker
            .eval(&window(
                "chrome.windows.update(w.id, {state: 'maximized'})).then((w) => w.state",
            ))
            .await?;
        assert_eq!(state, json!("maximized"));
    }
    let mut frames = Vec::new();
    for (w, h) in [(1100.0, 800.0), (820.0, 560.0)] {
        let out = backend
            .text(
                "resize_window",
                json!({"tabId": tab, "width": w as i64, "height": h as i64}),
            )
            .await?;
        let (vw, vh) = viewport(&backend, tab).await?;
        assert_eq!(
            out,
            format!("Resized the window to {w}x{h}; the viewport is now {vw}x{vh}")
                .replace(".0", "")
        );
        let outer = worker.eval(&window("[w.width, w.height, w.state]")).await?;
        assert_eq!(outer, json!([w as i64, h as i64, "normal"]));
        assert!(
            vw <= w && vh < h && vw > w - 40.0 && vh > h - 200.0,
            "{vw}x{vh} in {w}x{h}"
        );
        // The window's frame (toolbar, tab strip) keeps its size: the viewport took the rest.
        frames.push((w - vw, h - vh));
        let (sw, sh, _) = screenshot(&backend, tab).await?;
        assert_eq!((sw, sh), (vw, vh), "the screenshot follows the viewport");
        for id in ["b1", "b3"] {
            let (x, y) = centre(&backend, tab, id).await?;
            computer(
                &backend,
                tab,
                json!({"action": "left_click", "coordinate": [x.round(), y.round()]}),
            )
            .await?;
            let e = last_event(&backend, tab, "click").await?;
            assert_eq!(e["id"], id, "{e} after resizing to {w}x{h}");
        }
    }
    assert_eq!(frames[0], frames[1], "{frames:?}");
    Ok((fixtures, backend, browser, tab))
}

#[tokio::test]
async fn resize_window_moves_the_viewport_headless() -> Result<()> {
    resize_follows(BrowserOptions::default(), true).await?;
    Ok(())
}

/// The same in a windowed Chromium on a virtual display (Xvfb; it has no window manager, so no
/// maximized window there); and there, the debugging bar goes when the idle tab is detached.
#[tokio::test]
async fn resize_window_moves_the_viewport_in_a_real_window() -> Result<()> {
    let display = browser_operator_e2e::VirtualDisplay::start()?;
    let (_fixtures, backend, browser, tab) = resize_follows(
        BrowserOptions {
            headless: false,
            display: Some(display.name().to_string()),
            ..Default::default()
        },
        false,
    )
    .await?;

    // Chrome's "is debugging this browser" bar takes height from every tab while the debugger
    // is attached: the tab's content area grows once the idle tab is detached (Chrome closes
    // the bar a few seconds after the last detach) and shrinks when a command attaches again.
    let worker = browser.worker().await?;
    worker.set_idle_seconds(2).await?;
    let content_height = || async {
        worker
            .eval(&format!("chrome.tabs.get({tab}).then((t) => t.height)"))
            .await
            .map(|v| v.as_f64().unwrap_or(0.0))
    };
    js(&backend, tab, "1").await?;
    let with_bar = content_height().await?;
    wait_detached(&worker, tab).await?;
    let detached = std::time::Instant::now();
    let mut height = with_bar;
    while height <= with_bar && detached.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        height = content_height().await?;
    }
    assert!(
        height > with_bar,
        "the debugging bar stayed ({with_bar} px high tab)"
    );
    eprintln!(
        "the bar went {:?} after the detach; the tab grew from {with_bar} to {height} px",
        detached.elapsed()
    );
    // The next command attaches again, and the bar comes back.
    assert_eq!(
        js(&backend, tab, "document.title").await?,
        "Fixture: input events"
    );
    let mut again = height;
    for _ in 0..100 {
        again = content_height().await?;
        if again < height {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again, with_bar, "the bar is back once the debugger is");
    Ok(())
}

/// A worker that Chrome restarts while a group tab stays attached does not know the tab: the
/// `debugger-idle` alarm (every minute while tabs are attached; fired at once here) makes it
/// find the tab and detach it one idle period later.
#[tokio::test]
async fn an_attached_tab_is_detached_after_a_worker_restart() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected(BrowserOptions::default()).await?;
    let worker = browser.worker().await?;
    worker.set_idle_seconds(3).await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("hello.html")}),
        )
        .await?;
    let alarm = worker
        .eval("chrome.alarms.get('debugger-idle').then((a) => a ? a.periodInMinutes : null)")
        .await?;
    assert_eq!(
        alarm,
        json!(1),
        "the backstop alarm runs while a tab is attached"
    );
    // A test's session on the worker would keep its target across the stop.
    worker.detach().await?;
    browser.stop_worker().await?;
    // Any extension event wakes it: the Options page asks for the state.
    browser.options_page().await?.close().await?;
    browser.wait_worker(Duration::from_secs(10)).await?;
    let worker = browser.worker().await?;
    assert!(
        debugger_state(&worker, tab).await?.0,
        "the debugger stays attached across the restart"
    );
    worker
        .eval("chrome.alarms.create('debugger-idle', {when: Date.now()}).then(() => 1)")
        .await?;
    wait_detached(&worker, tab).await?;
    // And the tab works as before.
    assert_eq!(js(&backend, tab, "document.title").await?, "Fixture: hello");
    Ok(())
}

/// A download in progress keeps the debugger: the tab is detached only once it has finished.
#[tokio::test]
async fn a_download_in_progress_keeps_the_tab_attached() -> Result<()> {
    use std::io::{Read, Write};
    let (fixtures, backend, browser, tab) = connected(BrowserOptions::default()).await?;
    // A server that sends the start of a file, then the rest when told to.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        let mut request = [0u8; 4096];
        let _ = conn.read(&mut request);
        let body = vec![b'x'; 200_000];
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=slow.bin\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(&body[..1000]);
        let _ = conn.flush();
        let _ = started_tx.send(());
        let _ = finish_rx.recv_timeout(Duration::from_secs(60));
        let _ = conn.write_all(&body[1000..]);
    });
    let worker = browser.worker().await?;
    worker.set_idle_seconds(2).await?;
    backend
        .text(
            "navigate",
            json!({"tabId": tab, "url": fixtures.url("hello.html")}),
        )
        .await?;
    js(
        &backend,
        tab,
        &format!("const a = document.createElement('a'); a.href = 'http://127.0.0.1:{port}/slow.bin'; document.body.append(a); a.click(); 1"),
    )
    .await?;
    tokio::task::spawn_blocking(move || started.recv_timeout(Duration::from_secs(20)))
        .await
        .expect("join")
        .expect("the download started");
    // Twice the idle period with the download going: still attached.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        debugger_state(&worker, tab).await?.0,
        "the tab was detached during a download"
    );
    finish.send(()).expect("the server thread waits");
    wait_detached(&worker, tab).await?;
    Ok(())
}

/// The text of a result and its one image, decoded: (text, mime, width, height).
fn shot_of(r: &protocol::CommandResult) -> (String, String, u32, u32) {
    let text = match &r.outcome {
        protocol::Outcome::Result { result } => result.joined_text(),
        protocol::Outcome::Error { error } => panic!("{error}"),
    };
    let imgs = images(r);
    assert_eq!(imgs.len(), 1, "{text}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(imgs[0].0)
        .expect("base64");
    let (w, h) = image_size(&bytes).unwrap_or_else(|| panic!("undecodable image: {text}"));
    (text, imgs[0].1.to_string(), w, h)
}

/// scroll_to centres the ref's element; zoom scales its region up to the screenshot's size
/// (within the image budget) and says so; screenshots and zooms are JPEG (one capture,
/// scaled by Chrome), which decode to the size the text gives. At DPR 2 in a window whose
/// screenshot the budget scales down.
#[tokio::test]
async fn scroll_to_zoom_and_jpeg_screenshots() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected(BrowserOptions {
        device_scale_factor: Some(2.0),
        window_size: Some((1700, 1000)),
        ..Default::default()
    })
    .await?;
    backend.navigate(tab, &fixtures.url("long.html")).await?;

    // scroll_to: by ref, the element ends up in the middle of the viewport.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "Bottom button"}))
        .await?;
    let line = found
        .lines()
        .find(|l| l.contains("button \"Bottom button\""))
        .unwrap_or_else(|| panic!("{found}"));
    let r = &line[1..line.find(']').expect("ref")];
    assert_eq!(js(&backend, tab, "scrollY").await?, "0");
    const PLACE: &str = "const b = bottom.getBoundingClientRect(); [b.top, b.bottom, innerHeight, scrollY, document.documentElement.scrollHeight - innerHeight]";
    let mut place: Vec<f64> = Vec::new();
    // Chrome's debugging bar can come late on a loaded machine (the worker waits for it, up to
    // a bound) and shrink the viewport after the scroll: then the layout scroll_to measured is
    // gone, and it is asked again, in the layout that stays.
    for _ in 0..2 {
        let before = js(&backend, tab, "innerHeight").await?;
        let out = computer(&backend, tab, json!({"action": "scroll_to", "ref": r})).await?;
        assert_eq!(out, format!("Scrolled {r} into view"));
        place = serde_json::from_str(&js(&backend, tab, PLACE).await?).expect("numbers");
        if before == place[2].to_string() {
            break;
        }
    }
    let (top, bottom, height, scrolled, most) = (place[0], place[1], place[2], place[3], place[4]);
    assert!(scrolled > 4000.0, "{place:?}");
    assert!(top >= 0.0 && bottom <= height, "not in view: {place:?}");
    // Centred, as far as the page can scroll (the button is near its end).
    assert!(
        ((top + bottom) / 2.0 - height / 2.0).abs() <= 2.0 || (scrolled - most).abs() < 1.0,
        "not centred: {place:?}"
    );
    // Back up to the top button: centring it would scroll above the page, so the page's top.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "Top button"}))
        .await?;
    let line = found
        .lines()
        .find(|l| l.contains("button \"Top button\""))
        .unwrap_or_else(|| panic!("{found}"));
    let top_ref = &line[1..line.find(']').expect("ref")];
    computer(
        &backend,
        tab,
        json!({"action": "scroll_to", "ref": top_ref}),
    )
    .await?;
    assert_eq!(js(&backend, tab, "scrollY").await?, "0");
    let e = backend
        .error("computer", json!({"tabId": tab, "action": "scroll_to"}))
        .await?;
    assert!(e.contains("`ref`"), "{e}");
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "scroll_to", "ref": "ref_99_99"}),
        )
        .await?;
    assert!(e.contains("ref_99_99"), "{e}");

    // The screenshot is scaled down by the budget; zoom scales its region up.
    let (sw, sh, _) = screenshot(&backend, tab).await?;
    let css_width: f64 = js(&backend, tab, "innerWidth")
        .await?
        .parse()
        .expect("width");
    let scale = sw / css_width;
    assert!(
        scale < 0.99,
        "the budget did not scale the screenshot: {scale}"
    );
    let region = [100.0, 80.0, 500.0, 380.0];
    let r = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": region}),
        )
        .await?;
    let (text, _, w, h) = shot_of(&r);
    assert!(
        text.starts_with(&format!(
            "Successfully captured zoomed screenshot of region (100,80) to (500,380) - {w}x{h} pixels - ID: "
        )),
        "{text}"
    );
    // Scaled up: the region (400x300 screenshot px) fitted into the screenshot's size, its
    // aspect kept (here the height binds).
    let fit = (sw / 400.0).min(sh / 300.0);
    assert!(fit > 1.5, "{sw}x{sh}");
    let (ew, eh) = (400.0 * fit, 300.0 * fit);
    assert!(
        (f64::from(w) - ew).abs() <= 2.0 && (f64::from(h) - eh).abs() <= 2.0,
        "{w}x{h}, expected {ew:.0}x{eh:.0}"
    );
    // The whole screenshot's region at full resolution exceeds the budget: scaled into it.
    let r = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": [0, 0, sw, sh]}),
        )
        .await?;
    let (text, _, w, h) = shot_of(&r);
    assert!(w.max(h) <= 1568, "{text}");
    assert!(
        f64::from(w) * f64::from(h) <= 1568.0 * 784.0 + 1568.0,
        "{text}: over the image-token budget"
    );
    // The budget binds as it does for the screenshot of the same viewport.
    assert!(
        (f64::from(w) - sw).abs() <= 1.0 && (f64::from(h) - sh).abs() <= 1.0,
        "{text}: the screenshot is {sw}x{sh}"
    );
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": [50, 50, 10, 10]}),
        )
        .await?;
    assert!(e.contains("`region`") && e.contains("x1 > x0"), "{e}");

    // A photographic page: a JPEG too.
    js(
        &backend,
        tab,
        "const c = document.createElement('canvas'); c.width = innerWidth * devicePixelRatio; c.height = innerHeight * devicePixelRatio; \
         c.style = 'position: fixed; inset: 0; width: 100vw; height: 100vh'; \
         const g = c.getContext('2d'); const img = g.createImageData(c.width, c.height); \
         for (let i = 0; i < img.data.length; i += 4) { \
           img.data[i] = Math.random() * 256; img.data[i + 1] = Math.random() * 256; img.data[i + 2] = Math.random() * 256; img.data[i + 3] = 255; } \
         g.putImageData(img, 0, 0); document.body.append(c); 1",
    )
    .await?;
    let r = backend
        .command("computer", json!({"tabId": tab, "action": "screenshot"}))
        .await?;
    let (text, mime, w, h) = shot_of(&r);
    assert_eq!(mime, "image/jpeg", "{text}");
    assert!(
        text.starts_with(&format!(
            "Successfully captured screenshot ({w}x{h}, jpeg) - ID: "
        )),
        "{text}"
    );
    assert_eq!(f64::from(w), sw, "{text}");
    let r = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": region}),
        )
        .await?;
    let (text, mime, _, _) = shot_of(&r);
    assert_eq!(mime, "image/jpeg", "{text}");
    Ok(())
}

/// The coordinate space and the kept images outlive the worker: in a window whose screenshot
/// the image budget scales down (DPR 2, 1700x1000), a click at screenshot coordinates after a
/// worker restart lands on its element, and upload_image takes an image from before it.
#[tokio::test]
async fn screenshot_coordinates_and_images_survive_a_worker_restart() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected(BrowserOptions {
        device_scale_factor: Some(2.0),
        window_size: Some((1700, 1000)),
        ..Default::default()
    })
    .await?;
    backend.navigate(tab, &fixtures.url("input.html")).await?;
    let (_, _, image) = screenshot(&backend, tab).await?;
    backend.navigate(tab, &fixtures.url("corner.html")).await?;
    let (w, _, _) = screenshot(&backend, tab).await?;
    let css_width: f64 = js(&backend, tab, "innerWidth")
        .await?
        .parse()
        .expect("width");
    let ratio = w / css_width;
    assert!(ratio < 0.95, "the screenshot is not scaled: {ratio}");
    let (cx, cy) = centre(&backend, tab, "corner").await?;
    let (sx, sy) = ((cx * ratio).round(), (cy * ratio).round());

    let held = backend.connections().await?;
    browser.stop_worker().await?;
    backend
        .wait_reconnected(&held, Duration::from_secs(60))
        .await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [sx, sy]}),
    )
    .await?;
    assert_eq!(
        js(&backend, tab, "clicks.join()").await?,
        "corner",
        "a click at ({sx}, {sy}) of the screenshot missed after the restart"
    );

    backend.navigate(tab, &fixtures.url("input.html")).await?;
    let file = backend
        .text("find", json!({"tabId": tab, "query": "File"}))
        .await?;
    let line = file
        .lines()
        .find(|l| l.starts_with("[ref_") && l.contains("\"File\""))
        .expect("file input");
    let r = &line[1..line.find(']').unwrap()];
    let out = backend
        .text(
            "upload_image",
            json!({"tabId": tab, "imageId": image, "ref": r, "filename": "before.png"}),
        )
        .await?;
    assert!(out.contains("via file input"), "{out}");
    assert_eq!(
        js(
            &backend,
            tab,
            "files.map((f) => f.split(':').slice(0, 2).join(':')).join()"
        )
        .await?,
        "input:before.png"
    );
    Ok(())
}

/// Polls `js` on the tab until it returns `want` (bounded).
async fn until_js(backend: &Backend, tab: i64, code: &str, want: &str) -> Result<String> {
    let mut got = String::new();
    for _ in 0..100 {
        got = js(backend, tab, code).await?;
        if got == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(got)
}

/// The browser toolset's input members, as a person's hand would do them, at device pixel
/// ratio 2: the screenshot is the viewport's CSS size (so a coordinate read off it is a CSS
/// point); middle_click on a link opens it in a new tab (mousedown, mouseup and auxclick with
/// button 1, no click) and elsewhere carries modifiers; the left button held across calls drags
/// a range slider and a pointer-captured box (moves with buttons 1, the page sees the button
/// down between calls), with clear errors for up without down, down while down, a click while
/// down, and the button kept across a reload and forgotten with its closed tab; hold_key holds
/// a key with auto-repeat, then releases it (order and the page's own timestamps); navigate
/// "reload" loads the page again; zoom scales its region up.
#[tokio::test]
async fn middle_click_held_mouse_hold_key_reload_and_zoom_at_dpr_2() -> Result<()> {
    // A CSS viewport of about 900x600 at DPR 2 (1800x1200 device pixels).
    let (fixtures, backend, browser, tab) = connected(BrowserOptions {
        device_scale_factor: Some(2.0),
        window_size: Some((900, 760)),
        ..Default::default()
    })
    .await?;
    let page = fixtures.url("held.html");
    backend.navigate(tab, &page).await?;

    // Screenshots in viewport CSS pixels at DPR 2: the image is the CSS viewport's size.
    assert_eq!(js(&backend, tab, "devicePixelRatio").await?, "2");
    let (w, h, _) = screenshot(&backend, tab).await?;
    let css: Vec<f64> =
        serde_json::from_str(&js(&backend, tab, "[innerWidth, innerHeight]").await?).expect("size");
    // (A viewport of an odd number of device pixels is half a CSS pixel more than innerHeight.)
    assert!(
        (w - css[0]).abs() <= 1.0 && (h - css[1]).abs() <= 1.0,
        "the screenshot is {w}x{h}, not the CSS viewport {css:?}"
    );

    // middle_click on a link: the page sees button 1 (no click), and the link opens in a new
    // tab as a person's middle click does; the tab itself stays.
    let (lx, ly) = centre(&backend, tab, "link").await?;
    let out = computer(
        &backend,
        tab,
        json!({"action": "middle_click", "coordinate": [lx.round(), ly.round()]}),
    )
    .await?;
    assert_eq!(
        out,
        format!("Middle-clicked at ({}, {})", lx.round(), ly.round())
    );
    let seen: Value = serde_json::from_str(
        &js(
            &backend,
            tab,
            "log.filter((e) => e.id === 'link').map((e) => [e.type, e.button, e.buttons])",
        )
        .await?,
    )
    .expect("events");
    assert_eq!(
        seen,
        json!([
            ["pointerdown", 1, 4],
            ["mousedown", 1, 4],
            ["pointerup", 1, 0],
            ["mouseup", 1, 0],
            ["auxclick", 1, 0]
        ]),
        "{seen}"
    );
    let opened = format!("{}?opened", fixtures.url("hello.html"));
    let worker = browser.worker().await?;
    let mut urls = Value::Null;
    for _ in 0..100 {
        urls = worker
            .eval("chrome.tabs.query({}).then((t) => t.map((t) => t.url || t.pendingUrl))")
            .await?;
        if urls.as_array().is_some_and(|u| u.contains(&json!(opened))) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        urls.as_array().is_some_and(|u| u.contains(&json!(opened))),
        "no tab opened the link: {urls}"
    );
    assert_eq!(js(&backend, tab, "location.href").await?, page);
    // By ref, with modifiers.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "Middle"}))
        .await?;
    let line = found
        .lines()
        .find(|l| l.starts_with("[ref_") && l.contains("button \"Middle\""))
        .unwrap_or_else(|| panic!("{found}"));
    let mid = &line[1..line.find(']').expect("ref")];
    computer(
        &backend,
        tab,
        json!({"action": "middle_click", "ref": mid, "modifiers": "shift"}),
    )
    .await?;
    let e = last_event(&backend, tab, "auxclick").await?;
    assert_eq!(
        (e["id"].as_str(), e["button"].as_i64(), e["shift"].as_bool()),
        (Some("mid"), Some(1), Some(true)),
        "{e}"
    );

    // Up without down: an error, nothing sent.
    let before = js(&backend, tab, "log.length").await?;
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_mouse_up", "coordinate": [10, 10]}),
        )
        .await?;
    assert!(
        e.contains("not down") && e.contains("left_mouse_down"),
        "{e}"
    );
    assert_eq!(js(&backend, tab, "log.length").await?, before);

    // The slider, dragged across calls: down on its thumb, moved halfway (the page sees the
    // button down and the value follow while it is held), on, then up.
    let rect: Vec<f64> = serde_json::from_str(
        &js(
            &backend,
            tab,
            "const r = slider.getBoundingClientRect(); [r.left, r.top + r.height / 2, r.width]",
        )
        .await?,
    )
    .expect("rect");
    let (sx, sy, sw) = (rect[0], rect[1], rect[2]);
    let out = computer(
        &backend,
        tab,
        json!({"action": "left_mouse_down", "coordinate": [sx + 6.0, sy]}),
    )
    .await?;
    assert!(out.contains("stays down until left_mouse_up"), "{out}");
    let out = computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [sx + sw / 2.0, sy]}),
    )
    .await?;
    assert!(out.ends_with("with the left button down"), "{out}");
    let half: f64 = js(&backend, tab, "slider.value")
        .await?
        .parse()
        .expect("value");
    assert!((40.0..=60.0).contains(&half), "halfway: {half}");
    assert_eq!(
        js(&backend, tab, "changes").await?,
        "0",
        "released too early"
    );
    // Down while down, and a click while down: refused, naming the way out.
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_mouse_down", "coordinate": [10, 10]}),
        )
        .await?;
    assert!(e.contains("is down") && e.contains("left_mouse_up"), "{e}");
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": [10, 10]}),
        )
        .await?;
    assert!(
        e.contains("is down") && e.contains("before left_click"),
        "{e}"
    );
    // Other actions go on meanwhile: a screenshot.
    screenshot(&backend, tab).await?;
    computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [sx + sw * 0.75, sy]}),
    )
    .await?;
    let out = computer(
        &backend,
        tab,
        json!({"action": "left_mouse_up", "coordinate": [sx + sw * 0.75, sy]}),
    )
    .await?;
    assert!(
        out.starts_with("Released the left mouse button at"),
        "{out}"
    );
    let end: f64 = js(&backend, tab, "slider.value")
        .await?
        .parse()
        .expect("value");
    assert!((65.0..=85.0).contains(&end), "three quarters: {end}");
    assert_eq!(js(&backend, tab, "changes").await?, "1");

    // A pointer-captured box: moves with the button down (buttons 1), released where it ends.
    let (bx, by) = centre(&backend, tab, "box").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_down", "coordinate": [bx, by]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [bx + 100.0, by]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_up", "coordinate": [bx + 100.0, by + 40.0]}),
    )
    .await?;
    let moved: Value = serde_json::from_str(
        &js(
            &backend,
            tab,
            "[box.offsetLeft, box.offsetTop, boxMoves.length, boxMoves.every((b) => b === 1)]",
        )
        .await?,
    )
    .expect("box");
    assert_eq!(
        (moved[0].clone(), moved[1].clone()),
        (json!(120), json!(190)),
        "{moved}"
    );
    assert!(
        moved[2].as_u64().unwrap_or(0) >= 5 && moved[3] == true,
        "{moved}"
    );
    // HTML5 drag and drop across calls: dragstart, drop with its data, dragend.
    let (dx, dy) = centre(&backend, tab, "source").await?;
    let (tx, ty) = centre(&backend, tab, "target").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_down", "coordinate": [dx, dy]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [dx, dy + 40.0]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [tx, ty]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_up", "coordinate": [tx, ty]}),
    )
    .await?;
    let dnd = until_js(&backend, tab, "dnd.join()", "dragstart,drop:moved,dragend").await?;
    assert_eq!(dnd, "dragstart,drop:moved,dragend");

    // navigate "reload": the page loads again (a new document, a reload navigation).
    js(&backend, tab, "window.marker = 1; 1").await?;
    let out = backend.navigate(tab, "reload").await?;
    // A reload is a load of its own: its status is reported.
    assert_eq!(
        out.lines().take(2).collect::<Vec<_>>(),
        [
            format!("Navigated to {page}"),
            "HTTP status: 200".to_string()
        ],
        "{out}"
    );
    assert_eq!(
        js(
            &backend,
            tab,
            "[typeof marker, performance.getEntriesByType('navigation')[0].type].join()"
        )
        .await?,
        "undefined,reload"
    );

    // The button stays down across a navigation: up after a reload still releases it there.
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_down", "coordinate": [600, 30]}),
    )
    .await?;
    backend.navigate(tab, "reload").await?;
    computer(
        &backend,
        tab,
        json!({"action": "mouse_move", "coordinate": [610, 40]}),
    )
    .await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_mouse_up", "coordinate": [610, 40]}),
    )
    .await?;
    let e = last_event(&backend, tab, "mouseup").await?;
    assert_eq!(
        (e["x"].as_f64(), e["button"].as_i64()),
        (Some(610.0), Some(0)),
        "{e}"
    );

    // A tab closed with its button down: nothing of it is kept.
    let other = backend.new_tab().await?;
    backend.navigate(other, &page).await?;
    computer(
        &backend,
        other,
        json!({"action": "left_mouse_down", "coordinate": [30, 30]}),
    )
    .await?;
    let options = browser.options_page().await?;
    let kept = |t: i64| {
        format!("chrome.runtime.sendMessage({{type: 'getState', tab: {t}}}).then((s) => s.kept)")
    };
    let held = options.eval(&kept(other)).await?;
    assert!(
        held.as_array()
            .is_some_and(|k| k.contains(&json!("held mouse button"))),
        "{held}"
    );
    backend
        .text("tabs_close_mcp", json!({"tabId": other}))
        .await?;
    let mut after = Value::Null;
    for _ in 0..100 {
        after = options.eval(&kept(other)).await?;
        if after == json!([]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(after, json!([]), "a closed tab's held button is kept");
    options.close().await?;

    // hold_key: the key goes down once, repeats while held (keydown with repeat set), and comes
    // up after the duration, by the page's own clock; what it typed matches the repeats.
    let (kx, ky) = centre(&backend, tab, "keys").await?;
    computer(
        &backend,
        tab,
        json!({"action": "left_click", "coordinate": [kx, ky]}),
    )
    .await?;
    let out = computer(
        &backend,
        tab,
        json!({"action": "hold_key", "text": "shift+a", "duration": 1.2}),
    )
    .await?;
    assert!(out.starts_with("Held shift+a for 1.2 second(s) ("), "{out}");
    let repeats: usize = out
        .rsplit('(')
        .next()
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(repeats >= 1, "{out}");
    let keys: Vec<Value> = serde_json::from_str(&js(&backend, tab, "keys").await?).expect("keys");
    let kinds: Vec<String> = keys
        .iter()
        .map(|k| {
            format!(
                "{}:{}:{}",
                k["type"].as_str().unwrap_or(""),
                k["key"].as_str().unwrap_or(""),
                k["repeat"]
            )
        })
        .collect();
    let mut want = vec![
        "keydown:Shift:false".to_string(),
        "keydown:A:false".to_string(),
    ];
    want.extend(std::iter::repeat_n("keydown:A:true".to_string(), repeats));
    want.extend(["keyup:A:false".to_string(), "keyup:Shift:false".to_string()]);
    assert_eq!(kinds, want);
    let t = |i: usize| keys[i]["t"].as_f64().unwrap_or(f64::NAN);
    let (down, first_repeat, up) = (t(1), t(2), t(keys.len() - 2));
    assert!(
        first_repeat - down >= 400.0,
        "the first repeat came early: {keys:?}"
    );
    assert!(up - down >= 900.0, "released before the duration: {keys:?}");
    assert_eq!(
        js(&backend, tab, "document.getElementById('keys').value").await?,
        "A".repeat(repeats + 1)
    );
    // A lone modifier: down and up, no repeats.
    js(&backend, tab, "keys.length = 0; 1").await?;
    let out = computer(
        &backend,
        tab,
        json!({"action": "hold_key", "text": "ctrl", "duration": 0.1}),
    )
    .await?;
    assert_eq!(out, "Held ctrl for 0.1 second(s)");
    assert_eq!(
        js(
            &backend,
            tab,
            "keys.map((k) => k.type + ':' + k.key).join()"
        )
        .await?,
        "keydown:Control,keyup:Control"
    );
    // Bad input: clear errors, nothing held.
    for (args, says) in [
        (
            json!({"action": "hold_key", "text": "a", "duration": 31}),
            "duration",
        ),
        (json!({"action": "hold_key", "text": "a"}), "`duration`"),
        (
            json!({"action": "hold_key", "text": "a b", "duration": 1}),
            "one key or chord",
        ),
        (
            json!({"action": "hold_key", "text": "hyper+a", "duration": 1}),
            "Unknown modifier",
        ),
        (json!({"action": "hold_key", "duration": 1}), "`text`"),
    ] {
        let mut args = args;
        args["tabId"] = json!(tab);
        let e = backend.error("computer", args.clone()).await?;
        assert!(e.contains(says), "{args}: {e}");
    }

    // zoom: the region scaled up to fit the screenshot's size (aspect kept).
    let r = backend
        .command(
            "computer",
            json!({"tabId": tab, "action": "zoom", "region": [20, 20, 120, 70]}),
        )
        .await?;
    let (text, _, zw, zh) = shot_of(&r);
    let fit = (w / 100.0).min(h / 50.0).min(8.0);
    assert!(
        (f64::from(zw) - 100.0 * fit).abs() <= 1.0 && (f64::from(zh) - 50.0 * fit).abs() <= 1.0,
        "{text}: {zw}x{zh}, expected {}x{}",
        100.0 * fit,
        50.0 * fit
    );
    assert!(f64::from(zw) >= 300.0, "{text}: not scaled up");
    // The extension still serves.
    assert_eq!(js(&backend, tab, "1 + 1").await?, "2");
    worker.detach().await?;
    Ok(())
}
