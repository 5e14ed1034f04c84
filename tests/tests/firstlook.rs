//! The first look at a tab: Chrome's "… started debugging this browser" bar comes 130–200 ms
//! after the debugger first attaches (and that long after a tab is created while it shows) and
//! takes the viewport's bottom 43–56 px. What the first commands on a new tab measure (a
//! screenshot, its coordinate scale, read_page's viewport, find's points) must be the layout
//! that stays, not the one about to change.

use browser_operator_e2e::{images, tabs_context, Backend, BrowserOptions, Error, Page, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The centre of the magenta pixels of an image (the fixture's corner button), found by
/// decoding it in a page of the test's own: where an agent looking at the screenshot would
/// click.
const LOCATE_MAGENTA: &str = r#"(async (data, mime) => {
  const blob = await (await fetch(`data:${mime};base64,${data}`)).blob();
  const bmp = await createImageBitmap(blob);
  const canvas = new OffscreenCanvas(bmp.width, bmp.height);
  const g = canvas.getContext("2d");
  g.drawImage(bmp, 0, 0);
  const px = g.getImageData(0, 0, bmp.width, bmp.height).data;
  let n = 0, sx = 0, sy = 0;
  for (let y = 0; y < bmp.height; y++) for (let x = 0; x < bmp.width; x++) {
    const i = (y * bmp.width + x) * 4;
    if (px[i] > 200 && px[i + 1] < 90 && px[i + 2] > 200) { n++; sx += x; sy += y; }
  }
  return n ? [sx / n, sy / n, bmp.width, bmp.height] : null;
})"#;

/// An error (not a panic) when `ok` is false, so that the test can tell what the worker saw of
/// the debugging bar before it fails.
fn check(ok: bool, message: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::new(message()))
    }
}

struct Shot {
    width: u32,
    height: u32,
    data: String,
    mime: String,
}

async fn screenshot(backend: &Backend, tab: i64) -> Result<Shot> {
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
    let inner = &text[text.find('(').expect("(") + 1..text.find(')').expect(")")];
    let size = inner.split(", ").next().expect("size");
    let (w, h) = size.split_once('x').expect("WxH");
    let imgs = images(&r);
    assert_eq!(imgs.len(), 1, "{text}");
    Ok(Shot {
        width: w.parse().expect("width"),
        height: h.parse().expect("height"),
        data: imgs[0].0.to_string(),
        mime: imgs[0].1.to_string(),
    })
}

/// `(x, y)` of a find result line `… at (x, y)`.
fn point(line: &str) -> (i64, i64) {
    let at = line.rfind(" at (").expect("a point");
    let inner = line[at + 5..].trim_end_matches(')');
    let mut it = inner
        .split(", ")
        .map(|n| n.parse::<i64>().expect("integer"));
    (it.next().expect("x"), it.next().expect("y"))
}

async fn click(backend: &Backend, tab: i64, x: f64, y: f64) -> Result<String> {
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": [x.round(), y.round()]}),
        )
        .await?;
    backend.js(tab, "clicks.join()").await
}

/// The first commands on a new tab: navigate, screenshot, find, read_page. One second later
/// the viewport is measured again; what the first look said must still hold, and clicks at its
/// points must land.
async fn first_look(backend: &Backend, harness: &Page, tab: i64, url: &str) -> Result<String> {
    let nav = backend.navigate(tab, url).await?;
    assert!(nav.starts_with("Navigated to"), "{nav}");
    let shot = screenshot(backend, tab).await?;
    let found = backend
        .text("find", json!({"tabId": tab, "query": "Corner"}))
        .await?;
    let tree = backend.text("read_page", json!({"tabId": tab})).await?;
    let looked = Instant::now();
    let seen: Value = harness
        .eval(&format!(
            "{LOCATE_MAGENTA}({}, {})",
            Value::from(shot.data.as_str()),
            Value::from(shot.mime.as_str())
        ))
        .await?;
    let seen: Vec<f64> = serde_json::from_value(seen.clone())
        .map_err(|_| Error::new(format!("no corner button in the screenshot: {seen}")))?;
    check(
        (seen[2], seen[3]) == (f64::from(shot.width), f64::from(shot.height)),
        || {
            format!(
                "the image is {}x{}, its answer says {}x{}",
                seen[2], seen[3], shot.width, shot.height
            )
        },
    )?;
    let footer = tree.lines().last().unwrap_or("").to_string();
    if let Some(rest) = Duration::from_secs(1).checked_sub(looked.elapsed()) {
        tokio::time::sleep(rest).await;
    }

    let viewport = backend.js(tab, "innerWidth + 'x' + innerHeight").await?;
    check(footer == format!("Viewport: {viewport}"), || {
        format!("tab {tab}: read_page's first viewport ({footer}) is not the viewport a second later ({viewport})")
    })?;
    // A click where the first screenshot shows the button, in its coordinates.
    let hits = click(backend, tab, seen[0], seen[1]).await?;
    check(hits == "corner", || {
        format!(
            "tab {tab}: a click at ({:.0}, {:.0}) of the first screenshot ({}x{}) missed the button (clicks: {hits:?}; viewport {viewport} a second later)",
            seen[0], seen[1], shot.width, shot.height
        )
    })?;
    // find's point, given at the first look.
    let line = found
        .lines()
        .find(|l| l.contains("button \"Corner\""))
        .ok_or_else(|| Error::new(format!("no Corner button in find's answer: {found}")))?;
    let (fx, fy) = point(line);
    let hits = click(backend, tab, fx as f64, fy as f64).await?;
    check(hits == "corner,corner", || {
        format!("tab {tab}: find's first point ({fx}, {fy}) missed the button (clicks: {hits:?})")
    })?;
    let again = screenshot(backend, tab).await?;
    check(
        (shot.width, shot.height) == (again.width, again.height),
        || {
            format!(
            "tab {tab}: the first screenshot's size ({}x{}) is not the one a second later ({}x{}, viewport {viewport})",
            shot.width, shot.height, again.width, again.height
        )
        },
    )?;
    Ok(viewport)
}

/// The worker's console lines about the debugging bar received so far.
fn bar_log(
    rx: &mut tokio::sync::broadcast::Receiver<browser_operator_e2e::Event>,
    session: &str,
) -> Vec<String> {
    let mut moved = Vec::new();
    loop {
        let e = match rx.try_recv() {
            Ok(e) => e,
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => break,
        };
        if e.session_id.as_deref() == Some(session) && e.method == "Runtime.consoleAPICalled" {
            let text = e.params.pointer("/args/0/value").and_then(Value::as_str);
            if let Some(t) = text.filter(|t| t.contains("debugging bar")) {
                moved.push(t.to_string());
            }
        }
    }
    moved
}

/// The group's tabs, closed one by one (the group and its window go with the last).
async fn close_group(backend: &Backend) -> Result<()> {
    let ctx = tabs_context(&backend.text("tabs_context_mcp", json!({})).await?);
    for t in ctx["availableTabs"].as_array().cloned().unwrap_or_default() {
        let id = t["tabId"].as_i64().expect("tabId");
        backend.text("tabs_close_mcp", json!({"tabId": id})).await?;
    }
    Ok(())
}

/// Waits until the test's own page (not in the group, attached only by the test) shows the
/// debugging bar (`bar`: its height is less than `free`, its height without the bar) or not.
async fn wait_bar(harness: &Page, free: f64, bar: bool) -> Result<f64> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let h = harness.eval("innerHeight").await?.as_f64().unwrap_or(0.0);
        if (bar && h < free) || (!bar && h == free) {
            return Ok(h);
        }
        assert!(
            Instant::now() < deadline,
            "the debugging bar did not {} (height {h}, without the bar {free})",
            if bar { "show" } else { "go" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_first_look_at_a_new_tab_is_the_layout_that_stays() -> Result<()> {
    let started = Instant::now();
    // At this size the image budget scales the screenshot by the viewport's area, so its scale
    // depends on the height too.
    let (fixtures, backend, browser) = browser_operator_e2e::connected_with(BrowserOptions {
        window_size: Some((1400, 1200)),
        ..Default::default()
    })
    .await?;
    let worker = browser.worker().await?;
    let mut logs = browser.cdp().events();
    worker.call("Runtime.enable", json!({})).await?;
    // A page of the test's own, opened before the extension attached anywhere: its height
    // without the bar, and a way to see the bar come and go.
    let harness = browser.open_page(&fixtures.url("hello.html")).await?;
    let free = harness.eval("innerHeight").await?.as_f64().expect("height");
    let url = fixtures.url("corner.html");

    let mut looks = 0;
    let mut moved = Vec::new();
    // Three rounds of four new tabs. Each round starts with no tab attached for longer than the
    // bar stays (its first attach shows the bar); the other tabs are created while it shows.
    for round in 0..3 {
        if round > 0 {
            close_group(&backend).await?;
            wait_bar(&harness, free, false).await?;
        }
        for k in 0..4 {
            let tab = if round == 0 && k == 0 {
                backend.first_tab().await?.0
            } else {
                backend.new_tab().await?
            };
            if k == 0 {
                // The bar was gone, and this tab's attach brought it.
                wait_bar(&harness, free, true).await?;
            }
            let look = first_look(&backend, &harness, tab, &url).await;
            moved.extend(bar_log(&mut logs, worker.session_id()));
            if let Err(e) = look {
                return Err(Error::new(format!(
                    "round {round}, new tab {k}, {:.1} s in: {e}\nthe worker saw of the debugging bar:\n{}",
                    started.elapsed().as_secs_f64(),
                    moved.join("\n")
                )));
            }
            looks += 1;
        }
    }
    assert_eq!(looks, 12);
    eprintln!(
        "without the bar: height {free}; {:.1} s; the worker saw:\n{}",
        started.elapsed().as_secs_f64(),
        moved.join("\n")
    );
    Ok(())
}
