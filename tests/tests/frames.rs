//! Frames of another site (out-of-process iframes), end to end: read_page walks them in their
//! own debugger session, their refs work in form_input and computer, clicks by coordinate reach
//! them, refs go stale when the frame navigates or goes, nesting works, and a worker restart
//! keeps it all. The top page is served on 127.0.0.1, the frame on `localhost`: two sites, so
//! Chromium puts the frame in another renderer process (checked through the harness's own CDP
//! connection: the frame is a target of its own).

use browser_operator_e2e::{percent_encode, Backend, Browser, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::Duration;

async fn connected() -> Result<(FixtureServer, FixtureServer, Backend, Browser, i64)> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let other = FixtureServer::start();
    let (tab, _) = backend.first_tab().await?;
    Ok((fixtures, other, backend, browser, tab))
}

/// `url` of `server` with the host `localhost`: another site than 127.0.0.1.
fn other_site(server: &FixtureServer, path: &str) -> String {
    server.url(path).replace("127.0.0.1", "localhost")
}

/// Opens oopif.html with `frame_url` in its iframe and waits until read_page shows `expect`.
async fn open_with_frame(
    fixtures: &FixtureServer,
    backend: &Backend,
    tab: i64,
    frame_url: &str,
    expect: &str,
) -> Result<String> {
    let url = format!(
        "{}?src={}",
        fixtures.url("oopif.html"),
        percent_encode(frame_url)
    );
    let nav = backend
        .text("navigate", json!({"tabId": tab, "url": url}))
        .await?;
    assert!(nav.starts_with("Navigated to"), "{nav}");
    wait_tree(backend, tab, expect).await
}

/// read_page until its tree contains `needle` (frames load after the page), at most 10 s.
async fn wait_tree(backend: &Backend, tab: i64, needle: &str) -> Result<String> {
    let mut tree = String::new();
    for _ in 0..100 {
        tree = backend.text("read_page", json!({"tabId": tab})).await?;
        if tree.contains(needle) {
            return Ok(tree);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("read_page never showed {needle:?}; last:\n{tree}");
}

/// The line of `text` that contains `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

fn ref_in(line: &str) -> String {
    let start = line
        .find("[ref_")
        .unwrap_or_else(|| panic!("no ref in {line:?}"))
        + 1;
    let end = start + line[start..].find(']').expect("closing bracket");
    line[start..end].to_string()
}

/// The ref on the line that contains `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    ref_in(line_with(text, needle))
}

/// The document number D of a frame's ref `ref_D_N`; "" for the top document's `ref_N`.
fn doc_of(r: &str) -> &str {
    let rest = r.strip_prefix("ref_").expect("a ref");
    rest.rsplit_once('_').map_or("", |(d, _)| d)
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The `iframe` target (a renderer of its own) whose URL contains `url_part`.
async fn frame_target(browser: &Browser, url_part: &str) -> Result<String> {
    for _ in 0..50 {
        let targets = browser.targets().await?;
        if let Some(t) = targets
            .iter()
            .find(|t| t.kind == "iframe" && t.url.contains(url_part))
        {
            return Ok(t.id.clone());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all: Vec<String> = browser
        .targets()
        .await?
        .iter()
        .map(|t| format!("{} {}", t.kind, t.url))
        .collect();
    panic!("no iframe target with {url_part:?} among {all:?}");
}

/// Evaluates `expr` inside the frame whose target URL contains `url_part`, through the
/// harness's own CDP connection (not the extension).
async fn in_frame(browser: &Browser, url_part: &str, expr: &str) -> Result<Value> {
    let target = frame_target(browser, url_part).await?;
    let cdp = browser.cdp();
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )
        .await?;
    let session = attached["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let out = cdp
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        )
        .await;
    let _ = cdp
        .call("Target.detachFromTarget", json!({"sessionId": session}))
        .await;
    Ok(out?
        .pointer("/result/value")
        .cloned()
        .unwrap_or(Value::Null))
}

/// Waits until `expr` inside the frame gives `want` (the frame handles input asynchronously).
async fn frame_shows(browser: &Browser, url_part: &str, expr: &str, want: &str) -> Result<()> {
    let mut last = Value::Null;
    for _ in 0..50 {
        last = in_frame(browser, url_part, expr).await?;
        if last.as_str() == Some(want) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("in the frame {url_part}, {expr} is {last}, not {want:?}");
}

/// The point of a `computer` answer "Clicked at (x, y)".
fn clicked_at(answer: &str) -> [f64; 2] {
    let inner = answer
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(p, _)| p)
        .unwrap_or_else(|| panic!("no point in {answer:?}"));
    let mut it = inner
        .split(',')
        .map(|n| n.trim().parse::<f64>().expect("a number"));
    [it.next().expect("x"), it.next().expect("y")]
}

const CLICKS: &str = "document.getElementById('clicks').textContent";
const FIELD: &str = "document.getElementById('field').value";

#[tokio::test]
async fn a_cross_site_frame_is_read_and_acted_on_like_any_other() -> Result<()> {
    let (fixtures, other, backend, browser, tab) = connected().await?;
    let frame_url = other_site(&other, "site-frame.html?name=Cross");
    let tree = open_with_frame(&fixtures, &backend, tab, &frame_url, "Cross site heading").await?;
    // The frame really is in another process: a target of its own.
    let part = format!("localhost:{}/site-frame.html", other.addr().port());
    frame_target(&browser, &part).await?;

    // Its document hangs under its iframe line, one level deeper, with refs of its own document
    // (the document's content is not indented under the document's own line).
    assert!(!tree.contains("(not read"), "{tree}");
    let iframe = line_with(&tree, "iframe \"Other site frame\"");
    let document = line_with(&tree, "document \"Site frame\"");
    let heading = line_with(&tree, "heading \"Cross site heading\"");
    assert!(
        indent(document) == indent(iframe) + 1 && indent(heading) == indent(document),
        "{tree}"
    );
    let top = ref_of(&tree, "document \"Fixture: a frame of another site\"");
    let field = ref_of(&tree, "textbox \"Site field\"");
    let button = ref_of(&tree, "button \"Site button\"");
    let closed = ref_of(&tree, "button \"Hidden site button\"");
    // The top document's refs carry no document number; a frame's do.
    assert_eq!(doc_of(&top), "", "{tree}");
    assert_ne!(doc_of(&field), "", "{tree}");
    assert_eq!(doc_of(&field), doc_of(&closed), "{tree}");

    // The same refs on a second snapshot.
    let again = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(again, tree);

    // form_input by ref sets the field inside the frame.
    let set = backend
        .text(
            "form_input",
            json!({"tabId": tab, "ref": field, "value": "typed across sites"}),
        )
        .await?;
    assert!(set.contains("typed across sites"), "{set}");
    frame_shows(&browser, &part, FIELD, "typed across sites").await?;

    // A click by ref (the iframe is below the fold: scrolled into view first) reaches the
    // button's click handler inside the frame.
    let clicked = backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": button}),
        )
        .await?;
    frame_shows(&browser, &part, CLICKS, "clicks: 1").await?;
    // The same point as a screenshot coordinate: the top session's input reaches the frame.
    let at = clicked_at(&clicked);
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": at}),
        )
        .await?;
    frame_shows(&browser, &part, CLICKS, "clicks: 2").await?;
    // A button in a closed shadow root inside the frame.
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": closed}),
        )
        .await?;
    frame_shows(&browser, &part, CLICKS, "closed clicked").await?;

    // find lists the frame's elements with the same refs, at points in the top viewport.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "site button"}))
        .await?;
    let hit = line_with(&found, "button \"Site button\"");
    assert_eq!(ref_in(hit), button, "{found}");
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "coordinate": clicked_at(hit)}),
        )
        .await?;
    frame_shows(&browser, &part, CLICKS, "clicks: 3").await?;

    // upload_image by ref: a screenshot as a File in the frame's file input.
    let shot = backend
        .text("computer", json!({"tabId": tab, "action": "screenshot"}))
        .await?;
    let image = shot.rsplit("ID: ").next().expect("an image id").trim();
    let file = ref_of(&tree, "\"Site file\"");
    let out = backend
        .text(
            "upload_image",
            json!({"tabId": tab, "imageId": image, "ref": file, "filename": "shot.png"}),
        )
        .await?;
    assert!(out.contains("via file input"), "{out}");
    frame_shows(
        &browser,
        &part,
        "document.getElementById('file').files[0]?.name || ''",
        "shot.png",
    )
    .await?;

    // read_page from a ref inside the frame.
    let sub = backend
        .text("read_page", json!({"tabId": tab, "ref_id": field}))
        .await?;
    assert!(sub.starts_with("textbox \"Site field\""), "{sub}");

    // The frame navigates: its old refs are stale, its new document is read.
    in_frame(
        &browser,
        &part,
        "location.href = location.href.replace('Cross', 'Moved'); 1",
    )
    .await?;
    let moved = wait_tree(&backend, tab, "Moved site heading").await?;
    assert_ne!(
        doc_of(&ref_of(&moved, "textbox \"Site field\"")),
        doc_of(&field)
    );
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": field, "value": "late"}),
        )
        .await?;
    assert!(e.starts_with(&format!("Stale ref {field}")), "{e}");
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": button}),
        )
        .await?;
    assert!(e.starts_with(&format!("Stale ref {button}")), "{e}");

    // The frame's console messages and requests are the tab's.
    in_frame(
        &browser,
        "site-frame.html",
        "console.error('the site frame complains'); fetch('/missing-in-the-site-frame'); 1",
    )
    .await?;
    let mut requests = String::new();
    for _ in 0..50 {
        requests = backend
            .text(
                "read_network_requests",
                json!({"tabId": tab, "urlPattern": "missing-in-the-site-frame"}),
            )
            .await?;
        if requests.contains("404") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        requests.contains("missing-in-the-site-frame") && requests.contains("404"),
        "{requests}"
    );
    let errors = backend
        .text(
            "read_console_messages",
            json!({"tabId": tab, "onlyErrors": true, "pattern": "site frame"}),
        )
        .await?;
    assert_eq!(
        errors.matches("the site frame complains").count(),
        1,
        "{errors}"
    );

    // The iframe is removed: its refs are stale too.
    let fresh = ref_of(&moved, "button \"Site button\"");
    backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.getElementById('site').remove(); 'gone'"}),
        )
        .await?;
    let e = backend
        .error(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": fresh}),
        )
        .await?;
    assert!(e.starts_with(&format!("Stale ref {fresh}")), "{e}");
    let after = backend.text("read_page", json!({"tabId": tab})).await?;
    assert!(
        !after.contains("Site frame") && !after.contains("(not read"),
        "{after}"
    );
    Ok(())
}

#[tokio::test]
async fn frames_nested_across_sites_are_read_and_acted_on() -> Result<()> {
    let (fixtures, other, backend, browser, tab) = connected().await?;
    // 127.0.0.1 → localhost → 127.0.0.1: the innermost frame is a process hop away from its
    // parent again.
    let inner = fixtures.url("site-frame.html?name=Inner");
    let middle = format!(
        "{}&inner={}",
        other_site(&other, "site-frame.html?name=Middle"),
        percent_encode(&inner)
    );
    let tree = open_with_frame(&fixtures, &backend, tab, &middle, "Inner site heading").await?;
    let inner_part = format!("{}/site-frame.html?name=Inner", fixtures.addr());
    frame_target(&browser, &inner_part).await?;
    let middle_part = format!("localhost:{}/site-frame.html", other.addr().port());

    let inner_iframe = line_with(&tree, "iframe \"Inner frame\"");
    let inner_heading = line_with(&tree, "heading \"Inner site heading\"");
    let middle_heading = line_with(&tree, "heading \"Middle site heading\"");
    assert!(indent(inner_iframe) == indent(middle_heading), "{tree}");
    assert!(indent(inner_heading) == indent(inner_iframe) + 1, "{tree}");
    let buttons: Vec<String> = tree
        .lines()
        .filter(|l| l.contains("button \"Site button\""))
        .map(ref_in)
        .collect();
    let fields: Vec<String> = tree
        .lines()
        .filter(|l| l.contains("textbox \"Site field\""))
        .map(ref_in)
        .collect();
    assert_eq!((buttons.len(), fields.len()), (2, 2), "{tree}");
    assert_ne!(doc_of(&fields[0]), doc_of(&fields[1]), "{tree}");

    // The innermost frame's refs: form_input and a click, each landing in that frame only.
    backend
        .text(
            "form_input",
            json!({"tabId": tab, "ref": fields[1], "value": "deep"}),
        )
        .await?;
    frame_shows(&browser, &inner_part, FIELD, "deep").await?;
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": buttons[1]}),
        )
        .await?;
    frame_shows(&browser, &inner_part, CLICKS, "clicks: 1").await?;
    frame_shows(&browser, &middle_part, CLICKS, "clicks: 0").await?;
    frame_shows(&browser, &middle_part, FIELD, "").await?;
    // And the middle one's.
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": buttons[0]}),
        )
        .await?;
    frame_shows(&browser, &middle_part, CLICKS, "clicks: 1").await?;

    // The frame moves to the top page's site (back into its process, its session ends): the
    // refs of both documents it held are stale, the new one is read like a same-site frame.
    let local = fixtures.url("site-frame.html?name=Local");
    backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": format!("document.getElementById('site').src = {local:?}; 'ok'")}),
        )
        .await?;
    let after = wait_tree(&backend, tab, "Local site heading").await?;
    assert!(
        !after.contains("(not read") && !after.contains("Inner"),
        "{after}"
    );
    for r in [&buttons[0], &buttons[1]] {
        let e = backend
            .error(
                "computer",
                json!({"tabId": tab, "action": "left_click", "ref": r}),
            )
            .await?;
        assert!(e.starts_with(&format!("Stale ref {r}")), "{e}");
    }
    let local_button = ref_of(&after, "button \"Site button\"");
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": local_button}),
        )
        .await?;
    let clicks = backend
        .text(
            "javascript_tool",
            json!({"tabId": tab, "text": "document.getElementById('site').contentDocument.getElementById('clicks').textContent"}),
        )
        .await?;
    assert_eq!(clicks, "clicks: 1");
    Ok(())
}

#[tokio::test]
async fn cross_site_frame_refs_survive_a_worker_restart() -> Result<()> {
    let (fixtures, other, backend, browser, tab) = connected().await?;
    let frame_url = other_site(&other, "site-frame.html?name=Cross");
    let tree = open_with_frame(&fixtures, &backend, tab, &frame_url, "Cross site heading").await?;
    let part = format!("localhost:{}/site-frame.html", other.addr().port());
    let button = ref_of(&tree, "button \"Site button\"");

    let held = backend.connections().await?;
    browser.stop_worker().await?;
    backend
        .wait_reconnected(&held, Duration::from_secs(60))
        .await?;

    // The new worker finds the frame's session again: same refs, and they act.
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": button}),
        )
        .await?;
    frame_shows(&browser, &part, CLICKS, "clicks: 1").await?;
    let after = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(ref_of(&after, "button \"Site button\""), button, "{after}");
    Ok(())
}
