//! Page understanding, end to end: read_page, find, form_input, get_page_text, javascript_tool,
//! console and network recording, in headless Chromium with the built extension, driven through
//! the real server as a backend would.

use browser_operator_e2e::{Backend, Browser, FixtureServer, Result};
use futures_util::StreamExt;
use protocol::Outcome;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

async fn connected() -> Result<(FixtureServer, Backend, Browser, i64)> {
    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let (tab, _) = backend.first_tab().await?;
    Ok((fixtures, backend, browser, tab))
}

async fn open(backend: &Backend, tab: i64, url: &str) -> Result<()> {
    let nav = backend
        .text("navigate", json!({"tabId": tab, "url": url}))
        .await?;
    assert!(nav.starts_with("Navigated to"), "{nav}");
    Ok(())
}

async fn js(backend: &Backend, tab: i64, code: &str) -> Result<String> {
    backend
        .text("javascript_tool", json!({"tabId": tab, "text": code}))
        .await
}

/// The line of `text` that contains `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

/// The ref on the line that contains `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    let line = line_with(text, needle);
    let start = line
        .find("[ref_")
        .unwrap_or_else(|| panic!("no ref in {line:?}"))
        + 1;
    let end = start + line[start..].find(']').expect("closing bracket");
    line[start..end].to_string()
}

#[tokio::test]
async fn read_page_find_and_form_input_on_a_login_form() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("login.html")).await?;

    let tree = backend.text("read_page", json!({"tabId": tab})).await?;
    // Roles and names as Chrome computes them, with refs and the attributes an agent needs.
    assert!(
        tree.starts_with("document \"Fixture: login\" [ref_"),
        "{tree}"
    );
    assert!(
        line_with(&tree, "link \"Home\"").contains("href=\""),
        "{tree}"
    );
    line_with(&tree, "heading \"Sign in\"");
    line_with(&tree, "textbox \"Email address\"");
    line_with(&tree, "textbox \"Password\"");
    assert!(line_with(&tree, "checkbox \"Remember me\"").contains("checked=false"));
    line_with(&tree, "combobox \"Country\"");
    line_with(&tree, "option \"Germany\"");
    assert!(line_with(&tree, "radio \"Free\"").contains(" checked"));
    assert!(line_with(&tree, "button \"Disabled action\"").contains("disabled"));
    assert!(
        line_with(&tree, "More options").contains("expanded=false"),
        "{tree}"
    );
    let vp = viewport(&backend, tab).await?;
    assert!(
        tree.trim_end().ends_with(&format!("Viewport: {vp}")),
        "{vp}\n{tree}"
    );
    // Wrappers without a name are gone: no generic lines.
    assert!(!tree.contains("generic"), "{tree}");
    // Indented one space per level.
    assert!(line_with(&tree, "heading \"Sign in\"").starts_with(' '));

    // The same element keeps its ref; find agrees with read_page.
    let again = backend.text("read_page", json!({"tabId": tab})).await?;
    let email = ref_of(&tree, "textbox \"Email address\"");
    assert_eq!(ref_of(&again, "textbox \"Email address\""), email);
    assert_eq!(
        ref_of(&again, "button \"Sign in\""),
        ref_of(&tree, "button \"Sign in\"")
    );
    let found = backend
        .text(
            "find",
            json!({"tabId": tab, "query": "email address field"}),
        )
        .await?;
    let first = found.lines().nth(1).expect("a result");
    assert!(
        first.starts_with(&format!("[{email}] textbox \"Email address\" at (")),
        "{found}"
    );
    let found = backend
        .text("find", json!({"tabId": tab, "query": "sign in button"}))
        .await?;
    assert!(
        found
            .lines()
            .nth(1)
            .unwrap_or("")
            .contains("button \"Sign in\""),
        "{found}"
    );
    // The point find gives is on the element.
    let help = backend
        .text("find", json!({"tabId": tab, "query": "help"}))
        .await?;
    let (x, y) = point(line_with(&help, "link \"Help\""));
    let hit = js(
        &backend,
        tab,
        &format!("document.elementFromPoint({x}, {y}).textContent"),
    )
    .await?;
    assert_eq!(hit, "Help");
    let none = backend
        .text("find", json!({"tabId": tab, "query": "zebra unicorn"}))
        .await?;
    assert!(none.starts_with("No elements match"), "{none}");

    // form_input on every kind of field; the page's listeners see input and change.
    let set = |r: String, v: Value| {
        let backend = &backend;
        async move {
            backend
                .text("form_input", json!({"tabId": tab, "ref": r, "value": v}))
                .await
        }
    };
    let out = set(email.clone(), json!("ada@example.com")).await?;
    assert_eq!(
        out,
        format!("Set {email} (email) from \"\" to \"ada@example.com\"")
    );
    let out = set(email.clone(), json!("grace@example.com")).await?;
    assert!(
        out.contains("from \"ada@example.com\" to \"grace@example.com\""),
        "{out}"
    );
    let remember = ref_of(&tree, "checkbox \"Remember me\"");
    let out = set(remember.clone(), json!(true)).await?;
    assert!(out.contains("from \"false\" to \"true\""), "{out}");
    let country = ref_of(&tree, "combobox \"Country\"");
    let out = set(country.clone(), json!("Germany")).await?;
    assert!(out.contains("to \"Germany\""), "{out}");
    assert_eq!(js(&backend, tab, "country.value").await?, "de");
    set(country.clone(), json!("fr")).await?;
    assert_eq!(js(&backend, tab, "country.value").await?, "fr");
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": country, "value": "Spain"}),
        )
        .await?;
    assert!(
        e.contains("no option \"Spain\"") && e.contains("\"Germany\" (value \"de\")"),
        "{e}"
    );
    let pro = ref_of(&tree, "radio \"Pro\"");
    set(pro, json!(true)).await?;
    set(ref_of(&tree, "Birthday"), json!("2024-02-29")).await?;
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": ref_of(&tree, "Birthday"), "value": "tomorrow"}),
        )
        .await?;
    assert!(e.contains("YYYY-MM-DD"), "{e}");
    set(ref_of(&tree, "Quantity"), json!(3)).await?;
    set(ref_of(&tree, "Volume"), json!(8)).await?;
    set(ref_of(&tree, "About you"), json!("Line one\nLine two")).await?;
    let out = set(ref_of(&tree, "Notes"), json!("Edited text")).await?;
    assert!(
        out.contains("(contenteditable) from \"\" to \"Edited text\""),
        "{out}"
    );
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": remember, "value": "maybe"}),
        )
        .await?;
    assert!(e.contains("true or false"), "{e}");
    // A heading has no ref in the tree (nothing acts on it); find gives one.
    let heading = ref_of(
        &backend
            .text("find", json!({"tabId": tab, "query": "Sign in heading"}))
            .await?,
        "heading \"Sign in\"",
    );
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": heading, "value": "x"}),
        )
        .await?;
    assert!(
        e.contains("not a form field") && e.contains("checkboxes"),
        "{e}"
    );
    let state = js(
        &backend,
        tab,
        "[email.value, remember.checked, country.value, document.querySelector('[name=plan]:checked').value, born.value, qty.value, vol.value, bio.value, notes.innerText].join('|')",
    )
    .await?;
    assert_eq!(
        state,
        "grace@example.com|true|fr|pro|2024-02-29|3|8|Line one\nLine two|Edited text"
    );
    let events = js(
        &backend,
        tab,
        "document.getElementById('events').textContent",
    )
    .await?;
    for e in [
        "input:email",
        "change:email",
        "change:remember",
        "change:country",
        "input:bio",
        "input:notes",
    ] {
        assert!(events.contains(e), "{e} missing from {events}");
    }

    // Refs: bad, unknown and stale ones get clear errors.
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": "email", "value": "x"}),
        )
        .await?;
    assert!(e.contains("Invalid ref \"email\""), "{e}");
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": "ref_999999", "value": "x"}),
        )
        .await?;
    assert!(e.contains("Unknown ref ref_999999"), "{e}");
    js(&backend, tab, "document.getElementById('notes').remove()").await?;
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": ref_of(&tree, "Notes"), "value": "x"}),
        )
        .await?;
    assert!(e.starts_with("Stale ref"), "{e}");
    open(&backend, tab, &fixtures.url("login.html")).await?;
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": email, "value": "x"}),
        )
        .await?;
    assert!(
        e.starts_with(&format!("Stale ref {email}")) && e.contains("navigated"),
        "{e}"
    );
    let fresh = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_ne!(ref_of(&fresh, "textbox \"Email address\""), email);
    // The new page numbers its elements above the last one's: the old ref stays stale, never
    // another element of the new page.
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": email, "value": "x"}),
        )
        .await?;
    assert!(
        e.starts_with(&format!("Stale ref {email}")) && e.contains("navigated"),
        "{e}"
    );
    Ok(())
}

/// The tree says what an agent needs in few characters: running text is one line under its
/// element (inline formatting folded in, links and controls on lines of their own below it),
/// names and text are cut at 100 characters with the cut marked, addresses of the page's own
/// origin are paths, the top document's refs carry no document number, and lines of text and
/// structure carry no ref while every link and control has one that acts on it (headings and
/// landmarks have one where the depth leaves their content out), and the document's content is
/// not indented under the document's line.
#[tokio::test]
async fn the_tree_is_short_and_says_what_agents_need() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("prose.html")).await?;
    let tree = backend.text("read_page", json!({"tabId": tab})).await?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let long = line_with(&tree, "paragraph \"A paragraph that goes on and on with emphasis and a link to hello in the middle");
    let quoted = &long[long.find('"').expect("a name") + 1..long.rfind('"').expect("a name")];
    assert!(
        quoted.ends_with('…') && quoted.chars().count() == 101 && !long.contains("THE END"),
        "{long}"
    );
    assert!(!long.contains("[ref_"), "{long}");
    let link = line_with(&tree, "link \"link to hello\"");
    assert!(link.ends_with(" href=\"/hello.html#top\""), "{link}");
    assert_eq!(indent(link), indent(long) + 1, "{tree}");
    line_with(&tree, "paragraph \"Plain bold and italic code words.\"");
    // Inline formatting has no line of its own.
    for role in ["strong", "emphasis", "code", "generic", "text \"and on"] {
        assert!(
            !tree.lines().any(|l| l.trim_start().starts_with(role)),
            "{role}:\n{tree}"
        );
    }
    assert!(
        line_with(&tree, "link \"Elsewhere\"").ends_with(" href=\"https://example.com/x?y=1\""),
        "{tree}"
    );
    assert!(
        line_with(&tree, "link \"Relative\"").ends_with(" href=\"/page.html?q=2\""),
        "{tree}"
    );
    // A list item shows its own text, not only its link's.
    line_with(&tree, "listitem \"Relative and its note\"");
    // Text loose in a wrapper: the runs between its controls, one line each.
    line_with(&tree, "text \"Loose text and strong words\"");
    line_with(&tree, "text \"after.\"");
    let doc = ref_of(&tree, "document \"Fixture: prose\"");
    let press = ref_of(&tree, "button \"Press\"");
    assert_eq!(tree.lines().nth(1), Some("main"), "{tree}");
    assert_eq!(indent(line_with(&tree, "heading \"Prose\"")), 1, "{tree}");
    assert!(
        !line_with(&tree, "heading \"Prose\"").contains("[ref_"),
        "{tree}"
    );
    // At the depth limit a landmark shows its ref, to read what is under it by ref_id.
    let shallow = backend
        .text("read_page", json!({"tabId": tab, "depth": 2}))
        .await?;
    let main = ref_of(&shallow, "main");
    assert!(!shallow.contains("Prose"), "{shallow}");
    let under = backend
        .text("read_page", json!({"tabId": tab, "ref_id": main}))
        .await?;
    assert!(
        under.starts_with(&format!("main [{main}]\n heading \"Prose\" level=1\n")),
        "{under}"
    );
    for r in [&doc, &press, &ref_of(&tree, "link \"Relative\""), &main] {
        assert!(
            r.strip_prefix("ref_")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())),
            "{r}"
        );
    }
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": press}),
        )
        .await?;
    let after = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(ref_of(&after, "button \"Pressed\""), press, "{after}");
    // find names the same elements with the same refs.
    let found = backend
        .text("find", json!({"tabId": tab, "query": "link to hello"}))
        .await?;
    assert!(
        found.lines().nth(1).unwrap_or("").starts_with(&format!(
            "[{}] link \"link to hello\"",
            ref_of(&tree, "link \"link to hello\"")
        )),
        "{found}"
    );
    Ok(())
}

async fn viewport(backend: &Backend, tab: i64) -> Result<String> {
    js(backend, tab, "innerWidth + 'x' + innerHeight").await
}

/// `(x, y)` from a find result line `… at (x, y)`.
fn point(line: &str) -> (i64, i64) {
    let at = line
        .rfind(" at (")
        .unwrap_or_else(|| panic!("no point in {line}"));
    let inner = line[at + 5..].trim_end_matches(')');
    let mut it = inner
        .split(", ")
        .map(|n| n.parse::<i64>().expect("integer"));
    (it.next().expect("x"), it.next().expect("y"))
}

#[tokio::test]
async fn a_react_style_controlled_input_sees_form_input() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("react.html")).await?;
    // Plain assignment is invisible to the value tracker: the control proves the fixture works.
    js(&backend, tab, "const i = document.getElementById('name'); i.value = 'plain'; i.dispatchEvent(new Event('input', {bubbles: true})); 0").await?;
    assert_eq!(
        js(
            &backend,
            tab,
            "document.getElementById('state').textContent"
        )
        .await?,
        "state: "
    );
    let found = backend
        .text("find", json!({"tabId": tab, "query": "your name"}))
        .await?;
    let r = ref_of(&found, "textbox \"Your name\"");
    let out = backend
        .text(
            "form_input",
            json!({"tabId": tab, "ref": r, "value": "Grace"}),
        )
        .await?;
    assert!(out.contains("to \"Grace\""), "{out}");
    assert_eq!(
        js(
            &backend,
            tab,
            "document.getElementById('state').textContent"
        )
        .await?,
        "state: Grace"
    );
    Ok(())
}

#[tokio::test]
async fn shadow_roots_and_iframes_are_covered() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    let other = FixtureServer::start();
    let cross = other.url("frame.html?name=Cross");
    let url = format!("{}?cross={}", fixtures.url("frames.html"), cross);
    open(&backend, tab, &url).await?;
    // Wait for both frames to load.
    for _ in 0..50 {
        let t = backend.text("read_page", json!({"tabId": tab})).await?;
        if t.contains("Cross frame heading") && t.contains("Same frame heading") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let tree = backend.text("read_page", json!({"tabId": tab})).await?;
    line_with(&tree, "button \"Open shadow button\"");
    line_with(&tree, "button \"Closed shadow button\"");
    line_with(&tree, "heading \"Same frame heading\"");
    line_with(&tree, "heading \"Cross frame heading\"");
    // The frame's document hangs under its iframe, one level deeper.
    let iframe_line = line_with(&tree, "iframe \"Cross origin frame\"");
    let heading = line_with(&tree, "heading \"Cross frame heading\"");
    let indent = |l: &str| l.len() - l.trim_start().len();
    assert!(indent(heading) > indent(iframe_line), "{tree}");

    // Refs inside closed shadow roots and both frames work in form_input.
    let closed_input = ref_of(&tree, "textbox \"Closed shadow input\"");
    backend
        .text(
            "form_input",
            json!({"tabId": tab, "ref": closed_input, "value": "in the dark"}),
        )
        .await?;
    assert_eq!(
        js(&backend, tab, "closedInputValue()").await?,
        "in the dark"
    );
    let fields: Vec<String> = tree
        .lines()
        .filter(|l| l.contains("textbox \"Frame field\""))
        .map(|l| ref_of(l, "Frame field"))
        .collect();
    assert_eq!(fields.len(), 2, "{tree}");
    for (i, r) in fields.iter().enumerate() {
        backend
            .text(
                "form_input",
                json!({"tabId": tab, "ref": r, "value": format!("frame {i}")}),
            )
            .await?;
    }
    let same = js(
        &backend,
        tab,
        "document.getElementById('same').contentDocument.getElementById('field').value",
    )
    .await?;
    assert_eq!(same, "frame 0");

    // find reaches into shadow roots and frames, with points inside them.
    let found = backend
        .text(
            "find",
            json!({"tabId": tab, "query": "closed shadow button"}),
        )
        .await?;
    let first = found.lines().nth(1).unwrap_or("");
    assert!(first.contains("button \"Closed shadow button\""), "{found}");
    let found = backend
        .text("find", json!({"tabId": tab, "query": "frame button"}))
        .await?;
    assert_eq!(
        found
            .lines()
            .filter(|l| l.contains("button \"Frame button\""))
            .count(),
        2,
        "{found}"
    );

    // The same refs come back on a second snapshot.
    let again = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(
        ref_of(&again, "Closed shadow input"),
        ref_of(&tree, "Closed shadow input")
    );
    let fields_again: Vec<String> = again
        .lines()
        .filter(|l| l.contains("textbox \"Frame field\""))
        .map(|l| ref_of(l, "Frame field"))
        .collect();
    assert_eq!(fields_again, fields, "{again}");
    Ok(())
}

#[tokio::test]
async fn bounds_filters_subtrees_and_page_text() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("large.html")).await?;
    let count: usize = js(&backend, tab, "document.body.dataset.count")
        .await?
        .parse()
        .expect("count");
    assert!(count > 9_000, "{count}");
    let e = backend.error("read_page", json!({"tabId": tab})).await?;
    assert!(
        e.contains("over max_chars (50000)") && e.contains("smaller depth") && e.contains("ref_id"),
        "{e}"
    );
    let all = backend
        .text("read_page", json!({"tabId": tab, "max_chars": 1_000_000}))
        .await?;
    line_with(&all, "button \"Buy 599\"");
    line_with(&all, "textbox \"Note for 250\"");
    let shallow = backend
        .text("read_page", json!({"tabId": tab, "depth": 2}))
        .await?;
    assert!(
        shallow.len() < 20_000 && !shallow.contains("Buy 599"),
        "{shallow}"
    );
    // A region's ref: in the error's list of landmarks, and where the depth cuts what is under
    // it (a whole tree shows none on it).
    assert!(!line_with(&all, "region \"Section 7\"").contains("[ref_"));
    let at = e
        .find("region \"Section 7\" [")
        .unwrap_or_else(|| panic!("{e}"));
    let section = ref_of(&e[at..], "Section 7");
    let cut = backend
        .text("read_page", json!({"tabId": tab, "depth": 3}))
        .await?;
    assert_eq!(ref_of(&cut, "region \"Section 7\""), section, "{cut}");
    assert!(!cut.contains("Buy 7"), "{cut}");
    let sub = backend
        .text("read_page", json!({"tabId": tab, "ref_id": section}))
        .await?;
    assert!(
        sub.starts_with(&format!("region \"Section 7\" [{section}]")),
        "{sub}"
    );
    assert!(
        sub.contains("button \"Buy 7\"") && !sub.contains("Buy 8"),
        "{sub}"
    );
    // The 10,000-element page's refs stay the same across snapshots.
    let again = backend
        .text("read_page", json!({"tabId": tab, "max_chars": 1_000_000}))
        .await?;
    assert_eq!(
        ref_of(&again, "button \"Buy 599\""),
        ref_of(&all, "button \"Buy 599\"")
    );
    let found = backend
        .text("find", json!({"tabId": tab, "query": "buy"}))
        .await?;
    assert!(
        found.starts_with("Found 600 elements matching \"buy\"; the best 20"),
        "{found}"
    );
    assert_eq!(found.lines().count(), 21);

    // interactive: what can be acted on, in or near the viewport only.
    open(&backend, tab, &fixtures.url("long.html")).await?;
    let near = backend
        .text("read_page", json!({"tabId": tab, "filter": "interactive"}))
        .await?;
    line_with(&near, "button \"Top button\"");
    assert!(
        !near.contains("Bottom button") && !near.contains("heading"),
        "{near}"
    );
    // What is fixed to the viewport is listed, also inside a container far from it (the walk
    // skips such containers), and so is a popover shown in the top layer; what is hidden there,
    // or merely far, is not.
    js(
        &backend,
        tab,
        r#"document.body.insertAdjacentHTML('beforeend', `<div id="far-end"><p>Far footer</p>
          <div style="position: fixed; right: 8px; bottom: 8px"><span><button>Chat with us</button></span></div>
          <div style="position: fixed; top: 0; display: none"><button>Hidden fixed</button></div>
          <div popover id="far-popover"><button>Popover button</button></div>
          <button>Far end button</button></div>`);
        document.getElementById('far-popover').showPopover(); 1"#,
    )
    .await?;
    let fixed = backend
        .text("read_page", json!({"tabId": tab, "filter": "interactive"}))
        .await?;
    for control in ["Top button", "Chat with us", "Popover button"] {
        line_with(&fixed, &format!("button \"{control}\""));
    }
    assert!(
        !fixed.contains("Hidden fixed")
            && !fixed.contains("Far end button")
            && !fixed.contains("Bottom button"),
        "{fixed}"
    );
    js(
        &backend,
        tab,
        "document.getElementById('far-end').remove(); 1",
    )
    .await?;
    let e = backend
        .error("read_page", json!({"tabId": tab, "filter": "some"}))
        .await?;
    assert!(e.contains("`filter`"), "{e}");

    let text = backend.text("get_page_text", json!({"tabId": tab})).await?;
    let expected_head = format!(
        "Title: Fixture: long page\nURL: {}\n\nThe article\n",
        fixtures.url("long.html")
    );
    assert!(text.starts_with(&expected_head), "{text}");
    assert!(
        text.contains("It has extra spaces.") && !text.contains("Top button"),
        "{text}"
    );

    // Refs survive a worker restart.
    let bottom = ref_of(
        &backend.text("read_page", json!({"tabId": tab})).await?,
        "Bottom button",
    );
    let held = backend.connections().await?;
    browser.stop_worker().await?;
    backend
        .wait_reconnected(&held, Duration::from_secs(60))
        .await?;
    let after = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(ref_of(&after, "Bottom button"), bottom);
    // The kept ref still resolves after the restart: form_input reaches the element (a
    // button, which it refuses by name), rather than calling the ref stale.
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": bottom, "value": "x"}),
        )
        .await?;
    assert!(
        e.contains("The element is a <button>") && e.contains("not a form field"),
        "{e}"
    );
    assert!(!e.contains("Stale ref"), "{e}");

    // get_page_text of nested regions: the outer one (it holds the inner one's text), not the
    // navigation beside it nor a short region; whitespace collapsed (tabs, no-break spaces,
    // runs of spaces, blank lines, indents of preformatted text, wide spaces after a line
    // break, form feeds, a table's cells).
    js(
        &backend,
        tab,
        r#"document.body.innerHTML = `<nav>Site nav</nav><main><h1>Main   title</h1><article><p>${'Inner article text. '.repeat(12)}</p></article><p>After\t\u00a0 the\u00a0article.</p><pre>  line one\n\n\n    line two  \n\u2003\u2003line three\fand\vend \u00a0\n</pre><table><tr><td>cell one</td><td>cell two</td></tr></table></main><div role="main">short</div>`; 1"#,
    )
    .await?;
    let text = backend.text("get_page_text", json!({"tabId": tab})).await?;
    let body = text.split_once("\n\n").map_or("", |(_, b)| b);
    let inner = ["Inner article text."; 12].join(" ");
    assert_eq!(
        body,
        format!(
            "Main title\n{inner}\nAfter the article.\nline one\nline two\nline three and end\ncell one cell two"
        ),
        "{text}"
    );

    // Beyond the bound (50,000 characters), with an emoji across the cut: the text ends before
    // it (never half of it, which is no text at all) and says how much was left out; the title
    // and address come first as always.
    js(
        &backend,
        tab,
        "document.body.innerHTML = `<p>${'a'.repeat(49999)}\u{1F600}${'b'.repeat(100)}</p>`; 1",
    )
    .await?;
    let text = backend.text("get_page_text", json!({"tabId": tab})).await?;
    let (head, body) = text.split_once("\n\n").unwrap_or_default();
    assert_eq!(
        head,
        format!(
            "Title: Fixture: long page\nURL: {}",
            fixtures.url("long.html")
        )
    );
    let expected = format!("{}\n… (truncated: 102 more characters)", "a".repeat(49999));
    assert!(
        body == expected,
        "the end of the answer: {:?}",
        body.get(body.len().saturating_sub(80)..).unwrap_or(body)
    );

    // The page's own scripts cannot change how its text is read (the reader runs in the
    // extension's world): innerText redefined by the page changes nothing of the answer.
    let seen = js(
        &backend,
        tab,
        "document.body.innerHTML = `<p>The real text of the page.</p>`; Object.defineProperty(HTMLElement.prototype, 'innerText', {get() { return 'spoofed'; }}); document.body.innerText",
    )
    .await?;
    assert_eq!(
        seen, "spoofed",
        "the page's scripts see their own innerText"
    );
    let text = backend.text("get_page_text", json!({"tabId": tab})).await?;
    assert!(text.ends_with("\n\nThe real text of the page."), "{text}");

    // The worker keeps a port to the page's content script: questions asked at once each get
    // their own answer, and after a navigation the new page answers, not the old one.
    let (a, b, c) = tokio::join!(
        backend.text("get_page_text", json!({"tabId": tab})),
        backend.text("get_page_text", json!({"tabId": tab})),
        backend.text("get_page_text", json!({"tabId": tab})),
    );
    assert_eq!((a?, b?), (text.clone(), text.clone()));
    assert_eq!(c?, text);
    backend.navigate(tab, &fixtures.url("hello.html")).await?;
    let hello = backend.text("get_page_text", json!({"tabId": tab})).await?;
    assert!(hello.starts_with("Title: Fixture: hello\n"), "{hello}");

    // A page the content script does not run in (about:blank, as a new tab opens): the same
    // answer, read over CDP.
    let blank = backend.new_tab().await?;
    js(
        &backend,
        blank,
        "document.title = 'Blank'; document.body.innerHTML = `<main>${'Blank page text. '.repeat(20)}</main>`; 1",
    )
    .await?;
    let text = backend
        .text("get_page_text", json!({"tabId": blank}))
        .await?;
    assert_eq!(
        text,
        format!(
            "Title: Blank\nURL: about:blank\n\n{}",
            ["Blank page text."; 20].join(" ")
        )
    );
    Ok(())
}

#[tokio::test]
async fn console_and_network_are_recorded_from_the_start() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("console.html")).await?;
    for _ in 0..50 {
        if js(&backend, tab, "[document.body.dataset.ok, document.body.dataset.missing, document.body.dataset.failed].join()").await? == "1,1,1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = backend
        .text("read_console_messages", json!({"tabId": tab}))
        .await?;
    assert!(
        line_with(&log, "[log] hello from the page 42").contains("console.html:"),
        "{log}"
    );
    line_with(&log, "[warning] careful now");
    line_with(&log, "[error] something broke");
    line_with(&log, "[error] Uncaught Error: uncaught on purpose");
    assert_eq!(log.matches("something broke").count(), 1, "{log}");
    let errors = backend
        .text(
            "read_console_messages",
            json!({"tabId": tab, "onlyErrors": true}),
        )
        .await?;
    assert!(
        !errors.contains("careful now") && errors.contains("something broke"),
        "{errors}"
    );
    let matched = backend
        .text(
            "read_console_messages",
            json!({"tabId": tab, "pattern": "CAREFUL|hello"}),
        )
        .await?;
    assert!(matched.starts_with("2 console message(s):"), "{matched}");
    let limited = backend
        .text("read_console_messages", json!({"tabId": tab, "limit": 1}))
        .await?;
    assert_eq!(limited.lines().count(), 2, "{limited}");
    let e = backend
        .error(
            "read_console_messages",
            json!({"tabId": tab, "pattern": "("}),
        )
        .await?;
    assert!(e.contains("`pattern`"), "{e}");

    let net = backend
        .text("read_network_requests", json!({"tabId": tab}))
        .await?;
    assert!(
        line_with(&net, "console.html").contains("→ 200 (Document)"),
        "{net}"
    );
    assert!(
        line_with(&net, "hello.html?from=fetch").starts_with("GET "),
        "{net}"
    );
    assert!(
        line_with(&net, "hello.html?from=fetch").contains("→ 200 (Fetch)"),
        "{net}"
    );
    assert!(
        line_with(&net, "missing-file.json").contains("→ 404 (Fetch)"),
        "{net}"
    );
    assert!(
        line_with(&net, "127.0.0.1:1/refused").contains("failed: net::ERR_"),
        "{net}"
    );
    let only = backend
        .text(
            "read_network_requests",
            json!({"tabId": tab, "urlPattern": "missing"}),
        )
        .await?;
    assert!(only.starts_with("1 request(s):"), "{only}");

    // clear empties the buffers; new messages arrive without a call in between.
    backend
        .text(
            "read_console_messages",
            json!({"tabId": tab, "clear": true}),
        )
        .await?;
    js(&backend, tab, "console.info('after clear'); 0").await?;
    let log = backend
        .text("read_console_messages", json!({"tabId": tab}))
        .await?;
    assert!(
        log.starts_with("1 console message(s):") && log.contains("[info] after clear"),
        "{log}"
    );

    // Another site: the network list starts again.
    let other = FixtureServer::start();
    let url = other.url("hello.html").replace("127.0.0.1", "localhost");
    open(&backend, tab, &url).await?;
    let net = backend
        .text("read_network_requests", json!({"tabId": tab}))
        .await?;
    assert!(
        !net.contains("missing-file") && net.contains("localhost"),
        "{net}"
    );
    Ok(())
}

#[tokio::test]
async fn javascript_plan_and_reserved_tools() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("hello.html")).await?;
    assert_eq!(
        js(&backend, tab, "document.querySelector('h1')").await?,
        "h1"
    );
    assert_eq!(js(&backend, tab, "undefined").await?, "undefined");
    assert_eq!(
        js(&backend, tab, "new Error('made')").await?.lines().next(),
        Some("Error: made")
    );
    let big = js(&backend, tab, "'x'.repeat(60000)").await?;
    assert!(
        big.ends_with("… (truncated: 10000 more characters)"),
        "{}",
        &big[big.len() - 60..]
    );
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "let a = 1;\n\nthrow new TypeError('bad ' + a)"}),
        )
        .await?;
    assert_eq!(e, "TypeError: bad 1 (line 3)");
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "await new Promise(() => {})"}),
        )
        .await?;
    assert!(e.contains("did not finish within 10 s"), "{e}");
    // The tab still answers afterwards.
    assert_eq!(js(&backend, tab, "1 + 1").await?, "2");
    // What REPL mode gives holds whether or not a text is run in it (it is asked for only
    // where a declaration or `await` may need it): a `let` declared again in a later call, a
    // global a plain script reads, a promise that is the last value, a plain script's error
    // with its line, a plain script that never ends stopped at the bound.
    assert_eq!(js(&backend, tab, "let seen = 1; seen").await?, "1");
    assert_eq!(js(&backend, tab, "let seen = 2; seen").await?, "2");
    assert_eq!(js(&backend, tab, "seen * 10").await?, "20");
    assert_eq!(
        js(
            &backend,
            tab,
            "new Promise(r => setTimeout(() => r(7), 10))"
        )
        .await?,
        "7"
    );
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "1;\nPromise.reject(new RangeError('no'))"}),
        )
        .await?;
    assert!(e.contains("RangeError: no"), "{e}");
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "1;\nundefinedThing.x"}),
        )
        .await?;
    assert_eq!(e, "ReferenceError: undefinedThing is not defined (line 2)");
    let e = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "for (;;) {}"}),
        )
        .await?;
    assert!(e.contains("did not finish within 10 s"), "{e}");
    assert_eq!(js(&backend, tab, "document.title").await?, "Fixture: hello");

    let plan = backend
        .text(
            "update_plan",
            json!({"domains": ["example.com"], "approach": ["Open it", "Read it"]}),
        )
        .await?;
    assert_eq!(
        plan,
        "Plan approved automatically.\nDomains: example.com\nApproach:\n1. Open it\n2. Read it"
    );
    for tool in [
        "gif_creator",
        "shortcuts_list",
        "shortcuts_execute",
        "switch_browser",
    ] {
        let t = backend.text(tool, json!({})).await?;
        assert!(t.contains("not available in this extension"), "{t}");
    }
    Ok(())
}

/// Chrome's names for roles that are not ARIA's (its internal ones), as read_page names them.
fn chrome_role(role: &str) -> &str {
    match role {
        "RootWebArea" => "document",
        "LabelText" => "label",
        "Legend" => "legend",
        "DescriptionList" => "list",
        "Date" => "date",
        "DateTime" => "datetime",
        "InputTime" => "time",
        "ColorWell" => "color",
        "DisclosureTriangle" => "button",
        "Abbr" => "abbr",
        "Figcaption" => "figcaption",
        "Canvas" => "canvas",
        "Video" => "video",
        "Audio" => "audio",
        "Iframe" | "IframePresentational" => "iframe",
        other => other,
    }
}

/// Roles whose text read_page folds into the text around it (inline formatting).
const FOLDED: &[&str] = &[
    "strong",
    "emphasis",
    "code",
    "abbr",
    "mark",
    "subscript",
    "superscript",
    "insertion",
    "deletion",
    "time",
];

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// read_page's lines of one document (refs `{prefix}N`): ref → (role, quoted text).
fn read_lines(tree: &str, prefix: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for line in tree.lines() {
        let l = line.trim_start();
        let Some(at) = l.find(&format!(" [{prefix}")) else {
            continue;
        };
        let end = at + 2 + l[at + 2..].find(']').expect("closing bracket");
        let r = l[at + 2..end].to_string();
        if !r[prefix.len()..].chars().all(|c| c.is_ascii_digit()) {
            // Another document's ref.
            continue;
        }
        let head = &l[..at];
        let (role, name) = match head.split_once(" \"") {
            Some((role, quoted)) => (
                role.to_string(),
                quoted
                    .trim_end_matches('"')
                    .replace("\\\"", "\"")
                    .replace("\\\\", "\\"),
            ),
            None => (head.to_string(), String::new()),
        };
        out.push((r, role, name));
    }
    out
}

/// A CDP session of the test's own (not through the extension) on the page target showing
/// `url`; detach it with `Target.detachFromTarget` when done.
async fn attach_to_page(browser: &Browser, url: &str) -> Result<String> {
    let target = browser
        .page_targets()
        .await?
        .into_iter()
        .find(|t| t.url == url)
        .unwrap_or_else(|| panic!("no page at {url}"));
    let attached = browser
        .cdp()
        .call(
            "Target.attachToTarget",
            json!({"targetId": target.id, "flatten": true}),
        )
        .await?;
    Ok(attached["sessionId"].as_str().expect("session").to_string())
}

/// [`attach_to_page`], and the execution context of the worker's isolated world in the page's
/// main frame (the same world name finds the same world from any session): the session and
/// the context id.
async fn attach_to_worker_world(browser: &Browser, url: &str) -> Result<(String, Value)> {
    let session = attach_to_page(browser, url).await?;
    let cdp = browser.cdp();
    let frames = cdp
        .call_session(&session, "Page.getFrameTree", json!({}))
        .await?;
    let world = cdp
        .call_session(
            &session,
            "Page.createIsolatedWorld",
            json!({"frameId": frames["frameTree"]["frame"]["id"], "worldName": "browser-operator"}),
        )
        .await?;
    Ok((session, world["executionContextId"].clone()))
}

/// The walk read_page makes of the main document of the tab showing `url`, with a ref on every
/// line (`document` is the number of the document's own ref): asked of the worker's isolated
/// world directly.
async fn walk_with_every_ref(browser: &Browser, url: &str, document: &str) -> Result<String> {
    let (session, context) = attach_to_worker_world(browser, url).await?;
    let cdp = browser.cdp();
    let out = cdp
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({
                "contextId": context,
                "expression": format!("(() => {{ const S = globalThis.__browserOperator; return S.run.call(undefined, 'tree', {{depth: 15, level: 0, interactive: false, root: {document}, prefix: 'ref_', allRefs: true}}, S).text; }})()"),
                "returnByValue": true,
            }),
        )
        .await?;
    cdp.call("Target.detachFromTarget", json!({"sessionId": session}))
        .await?;
    Ok(out["result"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("the walk gave no text: {out}"))
        .to_string())
}

/// Chrome's accessibility tree of the main document of the tab showing `url` (its first `limit`
/// nodes), each node with the ref read_page gave its element (if any), the text of its static
/// text descendants, and whether it is inside a form control's own shadow tree.
async fn chrome_nodes(
    browser: &Browser,
    url: &str,
    prefix: &str,
    limit: usize,
) -> Result<Vec<(Option<String>, String, String, String, bool)>> {
    let (session, context) = attach_to_worker_world(browser, url).await?;
    let cdp = browser.cdp();
    let tree = cdp
        .call_session(&session, "Accessibility.getFullAXTree", json!({}))
        .await?;
    let nodes = tree["nodes"].as_array().cloned().unwrap_or_default();
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|n| Some((n["nodeId"].as_str()?, n)))
        .collect();
    fn text_of(n: &Value, by_id: &HashMap<&str, &Value>, out: &mut String) {
        if n["role"]["value"] == "StaticText" {
            out.push_str(n["name"]["value"].as_str().unwrap_or(""));
            return;
        }
        for c in n["childIds"].as_array().into_iter().flatten() {
            if let Some(child) = c.as_str().and_then(|c| by_id.get(c)) {
                text_of(child, by_id, out);
            }
        }
    }
    // The nodes compared, in the tree's order (a parent before its children), and each one's
    // id in read_page's table and tag, looked up through CDP many at a time (one after the
    // other, a thousand nodes take two thousand round trips).
    let picked: Vec<(&Value, &str, String, i64)> = nodes
        .iter()
        .filter_map(|n| {
            let role = chrome_role(n["role"]["value"].as_str().unwrap_or(""));
            let name = squash(n["name"]["value"].as_str().unwrap_or(""));
            let skip = matches!(
                role,
                "StaticText"
                    | "InlineTextBox"
                    | "ListMarker"
                    | "LineBreak"
                    | "MenuListPopup"
                    | "none"
            ) || (role == "generic" && name.is_empty());
            let backend = n["backendDOMNodeId"].as_i64()?;
            (!skip && n["ignored"].as_bool() != Some(true)).then_some((n, role, name, backend))
        })
        .take(limit)
        .collect();
    let looked_up: Vec<Value> = futures_util::stream::iter(picked.iter().map(|&(_, _, _, backend)| {
        let (cdp, session, context) = (&cdp, &session, &context);
        async move {
            let resolved = cdp
                .call_session(
                    session,
                    "DOM.resolveNode",
                    json!({"backendNodeId": backend, "executionContextId": context}),
                )
                .await?;
            cdp.call_session(
                session,
                "Runtime.callFunctionOn",
                json!({
                    "objectId": resolved["object"]["objectId"],
                    // The element's id in read_page's table, and its tag.
                    "functionDeclaration": "function () { const S = globalThis.__browserOperator; const id = S && S.ids.get(this); return [id === undefined ? null : String(id), this.nodeName]; }",
                    "returnByValue": true,
                }),
            )
            .await
        }
    }))
    .buffered(32)
    .collect::<Vec<Result<Value>>>()
    .await
    .into_iter()
    .collect::<Result<_>>()?;
    let mut out = Vec::new();
    let mut tags: HashMap<&str, String> = HashMap::new();
    for (&(n, role, ref name, _), id) in picked.iter().zip(&looked_up) {
        let mut text = String::new();
        text_of(n, &by_id, &mut text);
        let r = id["result"]["value"][0]
            .as_str()
            .map(|id| format!("{prefix}{id}"));
        tags.insert(
            n["nodeId"].as_str().unwrap_or(""),
            id["result"]["value"][1].as_str().unwrap_or("").to_string(),
        );
        // Inside a form control or media element: part of its own (user-agent) shadow tree.
        let mut inside_control = false;
        let mut up = n["parentId"].as_str();
        while let Some(p) = up {
            if tags.get(p).is_some_and(|t| {
                matches!(
                    t.as_str(),
                    "INPUT" | "METER" | "PROGRESS" | "SELECT" | "TEXTAREA" | "VIDEO" | "AUDIO"
                )
            }) {
                inside_control = true;
            }
            up = by_id.get(p).and_then(|n| n["parentId"].as_str());
        }
        out.push((
            r,
            role.to_string(),
            name.clone(),
            squash(&text),
            inside_control,
        ));
    }
    cdp.call("Target.detachFromTarget", json!({"sessionId": session}))
        .await?;
    Ok(out)
}

#[tokio::test]
async fn roles_and_names_agree_with_chrome() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected().await?;
    let mut compared = 0;
    let mut agreed = 0;
    let mut by_design = 0;
    let mut differences = Vec::new();
    for page in [
        "roles.html",
        "login.html",
        "hello.html",
        "todo.html",
        "long.html",
        "react.html",
        "dialogs.html",
        "input.html",
        "frames.html",
        "large.html",
    ] {
        let url = fixtures.url(page);
        open(&backend, tab, &url).await?;
        let shown = backend
            .text("read_page", json!({"tabId": tab, "max_chars": 1_000_000}))
            .await?;
        let first = shown.lines().next().unwrap_or("");
        let start = first.find("[ref_").expect("the document's ref") + 1;
        let doc = &first[start..first.len() - 1];
        let prefix = "ref_";
        assert!(
            doc[prefix.len()..].chars().all(|c| c.is_ascii_digit()),
            "the top document's refs are ref_N: {first}"
        );
        // Lines of text and structure (paragraphs, lists…) carry no ref: the same walk with a
        // ref on every line maps each line to its element. Its lines are read_page's, refs aside.
        let tree = walk_with_every_ref(&browser, &url, &doc[prefix.len()..]).await?;
        let shown_lines: std::collections::HashSet<&str> = shown.lines().collect();
        for l in tree.lines().filter(|l| !l.starts_with('\u{1}')) {
            let bare = match l.find(" [ref_") {
                Some(a) => match l[a..].find(']') {
                    Some(b) => format!("{}{}", &l[..a], &l[a + b + 1..]),
                    None => l.to_string(),
                },
                None => l.to_string(),
            };
            assert!(
                shown_lines.contains(l) || shown_lines.contains(bare.as_str()),
                "{page}: {l:?} is not read_page's line:\n{shown}"
            );
        }
        let ours = read_lines(&tree, prefix);
        // The large page: its first thousand nodes (each is looked up on its own).
        let chrome = chrome_nodes(&browser, &url, prefix, 1000).await?;
        let mut seen = std::collections::HashSet::new();
        for (r, role, name, text, inside_control) in &chrome {
            let line = r
                .as_ref()
                .and_then(|r| ours.iter().find(|(o, _, _)| o == r));
            let Some((r, our_role, our_name)) = line else {
                if matches!(role.as_str(), "label" | "legend")
                    || FOLDED.contains(&role.as_str())
                    || *inside_control
                {
                    // Label and legend text is their control's name; inline formatting is
                    // part of the text around it; the parts of a date field or of a file or
                    // image button are the field itself.
                    by_design += 1;
                } else {
                    compared += 1;
                    differences.push(format!("{page}: Chrome {role} {name:?}: not listed"));
                }
                continue;
            };
            seen.insert(r.clone());
            compared += 1;
            // Names and text over 100 characters are cut, with an ellipsis.
            let cut = our_name.ends_with('…');
            let our_name = our_name.trim_end_matches('…');
            // A line shows the text of an element without a name in its place.
            let same_name = squash(our_name) == *name
                || (name.is_empty() && squash(our_name) == *text)
                || (cut && name.starts_with(our_name))
                || (cut && name.is_empty() && text.starts_with(&squash(our_name)));
            if our_role == role && same_name {
                agreed += 1;
            } else {
                differences.push(format!(
                    "{page}: Chrome {role} {name:?}, read_page {our_role} {our_name:?} [{r}]"
                ));
            }
        }
        for (r, role, name) in &ours {
            // Chrome's whole tree was looked at (not so on the large page): what read_page lists
            // beyond it.
            if chrome.len() < 1000 && !seen.contains(r) {
                compared += 1;
                differences.push(format!(
                    "{page}: read_page {role} {name:?} [{r}]: not in Chrome's tree"
                ));
            }
        }
    }
    let rate = agreed as f64 / compared as f64;
    println!(
        "roles and names: {agreed} of {compared} elements agree with Chrome ({:.1}%), {by_design} left out by design",
        rate * 100.0
    );
    for d in &differences {
        println!("  {d}");
    }
    assert!(compared > 500, "{compared}");
    assert!(rate >= 0.95, "{:.3}:\n{}", rate, differences.join("\n"));
    Ok(())
}

#[tokio::test]
async fn find_points_land_on_their_elements_in_frames() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    let url = format!(
        "{}?cross={}",
        fixtures.url("frames.html"),
        fixtures.url("frame.html?name=Other")
    );
    open(&backend, tab, &url).await?;
    for _ in 0..50 {
        let t = backend.text("read_page", json!({"tabId": tab})).await?;
        if t.contains("Other frame heading") && t.contains("Same frame heading") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let found = backend
        .text("find", json!({"tabId": tab, "query": "frame field"}))
        .await?;
    let fields: Vec<&str> = found
        .lines()
        .filter(|l| l.contains("textbox \"Frame field\""))
        .collect();
    assert_eq!(fields.len(), 2, "{found}");
    // Each point is inside its own frame: the page sees its <iframe> there, and the same-origin
    // frame sees its field at that point of its own viewport.
    let mut frames = Vec::new();
    for line in fields {
        let (x, y) = point(line);
        let frame = js(
            &backend,
            tab,
            &format!("document.elementFromPoint({x}, {y}).id"),
        )
        .await?;
        if frame == "same" {
            let inside = js(
                &backend,
                tab,
                &format!("const f = document.getElementById('same'); const r = f.getBoundingClientRect(); f.contentDocument.elementFromPoint({x} - r.left - f.clientLeft, {y} - r.top - f.clientTop).id"),
            )
            .await?;
            assert_eq!(inside, "field", "{line}");
        }
        frames.push(frame);
        backend
            .text(
                "form_input",
                json!({"tabId": tab, "ref": ref_of(line, "Frame field"), "value": "found"}),
            )
            .await?;
    }
    frames.sort();
    assert_eq!(frames, ["cross", "same"]);
    let value = js(
        &backend,
        tab,
        "document.getElementById('same').contentDocument.getElementById('field').value",
    )
    .await?;
    assert_eq!(value, "found");
    Ok(())
}

/// A page keeps its last whole tree and gives it again while nothing it was made from changed:
/// every kind of change still shows in the next read_page, those no DOM mutation reports
/// included (a value or checkedness set by script, a selection, a style sheet edited through
/// the CSSOM, a shadow root a custom element attaches on upgrade, text inside a shadow root).
/// `find` keeps its candidates the same way.
#[tokio::test]
async fn every_change_shows_in_the_next_read_page() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("changes.html")).await?;
    let read = || backend.text("read_page", json!({"tabId": tab}));
    let first = read().await?;
    assert!(!first.contains("Menu item"), "{first}");
    assert!(
        line_with(&first, "textbox \"Name\"")
            .find("value=")
            .is_none(),
        "{first}"
    );
    // Nothing changed: the same text, refs and all.
    assert_eq!(read().await?, first);
    let find = |query: &'static str| backend.text("find", json!({"tabId": tab, "query": query}));
    for _ in 0..2 {
        let found = find("menu item").await?;
        assert!(!found.contains("button \"Menu item\""), "{found}");
    }

    type Shows = fn(&str) -> bool;
    let steps: [(&str, Shows); 7] = [
        ("value", |t| {
            line_with(t, "textbox \"Name\"").contains("value=\"Ada\"")
        }),
        ("checked", |t| {
            line_with(t, "checkbox \"Agree\"").contains(" checked")
                && !line_with(t, "checkbox \"Agree\"").contains("checked=false")
        }),
        ("selected", |t| {
            line_with(t, "combobox \"Size\"").contains("value=\"Large\"")
        }),
        ("css", |t| t.contains("button \"Menu item\"")),
        ("upgrade", |t| {
            t.contains("button \"Late shadow button\"") && !t.contains("Light text")
        }),
        ("shadowText", |t| {
            t.contains("Shadow says two") && !t.contains("Shadow says one")
        }),
        ("text", |t| {
            t.contains("Second note") && !t.contains("First note")
        }),
    ];
    // The document's own ref asks for a walk that is neither kept nor sent as a difference: the
    // answer after each change must be the same text.
    let document = ref_of(&first, "document \"Fixture: a page that changes\"");
    let walked = || backend.text("read_page", json!({"tabId": tab, "ref_id": document}));
    let mut before = first.clone();
    for (change, shows) in steps {
        assert!(
            !shows(&before),
            "{change} shows before it was made:\n{before}"
        );
        js(&backend, tab, &format!("changes.{change}()")).await?;
        let after = read().await?;
        assert!(shows(&after), "{change} does not show:\n{after}");
        assert_eq!(after, walked().await?, "after {change}");
        before = after;
    }
    // Refs stay what they were through all of it, and find sees what read_page sees.
    assert_eq!(
        ref_of(&before, "textbox \"Name\""),
        ref_of(&first, "textbox \"Name\"")
    );
    let found = find("menu item").await?;
    assert!(found.contains("button \"Menu item\""), "{found}");
    let found = find("late shadow button").await?;
    assert!(found.contains("button \"Late shadow button\""), "{found}");

    // A restarted worker has lost its copy; the page gives the whole text again.
    let held = backend.connections().await?;
    browser.stop_worker().await?;
    backend
        .wait_reconnected(&held, Duration::from_secs(60))
        .await?;
    assert_eq!(read().await?, before);
    Ok(())
}

/// The kept tree and the answers sent as differences are checked against a walk that is neither
/// (read_page with the document's ref_id), after each of a run of seeded changes to a page with
/// every kind of role and name: text, `hidden`, classes that hide (display and visibility),
/// labels, roles, added and removed elements, and values and checkedness set by script.
#[tokio::test]
async fn kept_and_spliced_trees_match_a_fresh_walk_under_changes() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("roles.html")).await?;
    let first = backend.text("read_page", json!({"tabId": tab})).await?;
    let document = ref_of(&first, "document \"Fixture: roles and names\"");
    for round in 1..=30 {
        let what = js(
            &backend,
            tab,
            &format!(
                "(() => {{
                  let seed = {round} * 7919;
                  const rnd = (n) => {{ seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n; }};
                  const all = [...document.body.querySelectorAll('*')].filter((e) => e.localName !== 'script');
                  let el = all[rnd(all.length)];
                  // Text replaced and elements removed only where no element is under them:
                  // the page keeps enough of itself for every kind of change to matter.
                  const leaves = all.filter((e) => !e.firstElementChild);
                  const kind = {round} % 10;
                  if (kind === 0 || kind === 6) el = leaves[rnd(leaves.length)];
                  switch (kind) {{
                    case 0: el.textContent = 'changed {round}'; break;
                    case 1: el.toggleAttribute('hidden'); break;
                    case 2: el.classList.toggle('gone'); break;
                    case 3: el.classList.toggle('ghost'); break;
                    case 4: el.setAttribute('aria-label', 'label {round}'); break;
                    case 5: {{ const b = document.createElement('button'); b.textContent = 'added {round}'; el.appendChild(b); break; }}
                    case 6: el.remove(); break;
                    // Properties that no mutation reports: text fields' values, checkedness.
                    case 7: for (const i of document.querySelectorAll('input:not([type]), input[type=text], input[type=search], input[type=email], textarea')) i.value = 'typed {round}'; break;
                    case 8: el.setAttribute('role', 'button'); break;
                    case 9: for (const c of document.querySelectorAll('input[type=checkbox], input[type=radio]')) c.checked = !c.checked; break;
                  }}
                  return kind + ' on ' + el.localName;
                }})()"
            ),
        )
        .await?;
        let kept = backend.text("read_page", json!({"tabId": tab})).await?;
        let walked = backend
            .text("read_page", json!({"tabId": tab, "ref_id": document}))
            .await?;
        assert_eq!(kept, walked, "round {round}: change {what}");
        // Unchanged since: the kept answer again.
        let again = backend.text("read_page", json!({"tabId": tab})).await?;
        assert_eq!(again, walked, "round {round}, read again");
    }
    Ok(())
}

/// Evaluates `expr` in a page target of the test's own (attached by the test, not through the
/// extension), found by its URL.
async fn in_page(browser: &Browser, url: &str, expr: &str) -> Result<Value> {
    let session = attach_to_page(browser, url).await?;
    let cdp = browser.cdp();
    let out = cdp
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
        )
        .await?;
    let _ = cdp
        .call("Target.detachFromTarget", json!({"sessionId": session}))
        .await;
    Ok(out.pointer("/result/value").cloned().unwrap_or(Value::Null))
}

/// A tab that joins the group without a command (created and grouped by a script, as a person
/// dragging it in would) is recorded from that moment: what its page logs and fetches then is in
/// read_console_messages and read_network_requests. After a worker restart it is recorded again
/// without waiting for a command.
#[tokio::test]
async fn a_tab_that_joins_the_group_is_recorded_from_then() -> Result<()> {
    let (fixtures, backend, browser, _first) = connected().await?;
    let (_, group) = backend.first_tab().await?;
    let worker = browser.worker().await?;
    let url = fixtures.url("hello.html");
    let tab = worker
        .eval(&format!(
            "chrome.tabs.create({{url: {}}}).then((t) => t.id)",
            browser_operator_e2e::js_string(&url)
        ))
        .await?
        .as_i64()
        .expect("tab id");
    let loaded = format!(
        "new Promise((done) => {{ const check = () => chrome.tabs.get({tab}).then((t) => t.status === 'complete' ? done(1) : setTimeout(check, 50)); check(); }})"
    );
    worker.eval(&loaded).await?;
    // The page fetches every 50 ms from before it joins until told to stop.
    in_page(
        &browser,
        &url,
        "window.n = 0; window.loop = setInterval(() => { n++; console.log('tick ' + n); fetch('/hello.html?joined=' + n); }, 50); 1",
    )
    .await?;
    // The fetches made so far were made outside the group: none of them may be recorded.
    let before_join = in_page(&browser, &url, "n").await?.as_i64().expect("n");
    worker
        .eval(&format!(
            "chrome.tabs.group({{tabIds: [{tab}], groupId: {group}}}).then(() => 1)"
        ))
        .await?;
    // Recording starts without a command: the extension's debugger attaches.
    let attached = format!(
        "chrome.debugger.getTargets().then((ts) => ts.some((t) => t.tabId === {tab} && t.attached))"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while worker.eval(&attached).await? != Value::Bool(true) {
        assert!(
            std::time::Instant::now() < deadline,
            "tab {tab} joined the group and was not recorded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Twenty more fetches, then the page stops: all before the tab's first command.
    let joined_at = in_page(&browser, &url, "n").await?.as_i64().expect("n");
    let stopped = in_page(
        &browser,
        &url,
        &format!("new Promise((done) => {{ const check = () => n >= {joined_at} + 20 ? (clearInterval(loop), done(n)) : setTimeout(check, 20); check(); }})"),
    )
    .await?
    .as_i64()
    .expect("n");
    let network = backend
        .text("read_network_requests", json!({"tabId": tab}))
        .await?;
    let recorded: Vec<i64> = (1..=stopped)
        .filter(|k| network.contains(&format!("hello.html?joined={k} ")))
        .collect();
    // Nothing from before the tab joined, and every fetch made once the attach was seen (the
    // last may still be on its way). How long after the join the attach is seen depends on the
    // machine's load, so the first fetches after the join may or may not be recorded.
    let after_attach: Vec<i64> = (joined_at + 1..stopped).collect();
    assert!(
        recorded.iter().all(|k| *k > before_join)
            && after_attach.iter().all(|k| recorded.contains(k)),
        "fetches after {before_join} were made after the tab joined, and {joined_at}..{stopped} \
         after it was seen recorded; recorded: {recorded:?}\n{network}"
    );
    let console = backend
        .text("read_console_messages", json!({"tabId": tab}))
        .await?;
    assert!(console.contains(&format!("tick {stopped}")), "{console}");

    // A worker restart: the tab is recorded again at once.
    worker.detach().await?;
    let held = backend.connections().await?;
    browser.stop_worker().await?;
    backend
        .wait_reconnected(&held, Duration::from_secs(60))
        .await?;
    let fetched = in_page(
        &browser,
        &url,
        "console.log('after the restart'); fetch('/hello.html?after=restart').then((r) => r.status)",
    )
    .await?;
    assert_eq!(fetched, json!(200));
    let network = backend
        .text("read_network_requests", json!({"tabId": tab}))
        .await?;
    assert!(network.contains("hello.html?after=restart"), "{network}");
    Ok(())
}

/// A tab id that names no tab (negative, zero, past any tab, a tab just closed) is an error
/// that says so, for every kind of tool, and the tab that exists still answers afterwards.
#[tokio::test]
async fn tab_ids_that_name_no_tab_are_errors() -> Result<()> {
    let (fixtures, backend, _browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("hello.html")).await?;
    let closed = backend.new_tab().await?;
    backend
        .text("tabs_close_mcp", json!({"tabId": closed}))
        .await
        .or(Ok::<_, browser_operator_e2e::Error>(String::new()))?;
    for id in [-1, 0, 2_147_483_647, closed] {
        for (tool, extra) in [
            ("javascript_tool", json!({"text": "1+1"})),
            ("get_page_text", json!({})),
            ("read_page", json!({})),
            ("computer", json!({"action": "screenshot"})),
            ("navigate", json!({"url": fixtures.url("hello.html")})),
            ("find", json!({"query": "button"})),
        ] {
            let mut args = extra;
            args["tabId"] = json!(id);
            let started = std::time::Instant::now();
            let e =
                tokio::time::timeout(Duration::from_secs(20), backend.error(tool, args.clone()))
                    .await
                    .map_err(|_| {
                        browser_operator_e2e::Error::new(format!("{tool} {args}: no answer"))
                    })??;
            assert!(
                e.to_lowercase().contains("tab"),
                "{tool} {args}: {e} (after {:?})",
                started.elapsed()
            );
        }
    }
    assert_eq!(js(&backend, tab, "document.title").await?, "Fixture: hello");
    Ok(())
}

/// Chrome refuses arguments its schema rejects by throwing at once, not by a rejected promise
/// (`chrome.tabs.get(-1)`). Such a throw ends the command with Chrome's message, never leaves it
/// unanswered, and the next commands run. The throw is made here by replacing the API in the
/// worker for a moment, since every argument the worker passes is one Chrome accepts.
#[tokio::test]
async fn an_extension_api_that_throws_at_once_is_an_error_not_a_hang() -> Result<()> {
    let (fixtures, backend, browser, tab) = connected().await?;
    open(&backend, tab, &fixtures.url("hello.html")).await?;
    let worker = browser.worker().await?;
    let refuse = |api: &str| {
        format!(
            "(() => {{ const api = {api}; const [o, n] = [api.slice(0, api.lastIndexOf('.')), \
             api.slice(api.lastIndexOf('.') + 1)]; const obj = eval(o); \
             self.__saved = self.__saved || {{}}; self.__saved[api] = obj[n]; \
             obj[n] = function () {{ throw new Error('Error in invocation of ' + api + ': refused'); }}; \
             return true; }})()"
        )
    };
    let restore = |api: &str| {
        format!(
            "(() => {{ const api = {api}; const obj = eval(api.slice(0, api.lastIndexOf('.'))); \
             obj[api.slice(api.lastIndexOf('.') + 1)] = self.__saved[api]; return true; }})()"
        )
    };
    let bounded = |tool: &'static str, args: Value| {
        let backend = &backend;
        async move {
            tokio::time::timeout(Duration::from_secs(20), backend.command(tool, args))
                .await
                .map_err(|_| browser_operator_e2e::Error::new(format!("{tool}: no answer")))?
        }
    };

    // The call the tool's work goes through: the command fails with Chrome's message.
    worker
        .eval(&refuse("'chrome.debugger.sendCommand'"))
        .await?;
    let out = bounded("javascript_tool", json!({"tabId": tab, "text": "1+1"})).await?;
    // get_page_text asks the page's content script on its port, without CDP.
    let text = bounded("get_page_text", json!({"tabId": tab})).await?;
    worker
        .eval(&restore("'chrome.debugger.sendCommand'"))
        .await?;
    assert!(
        matches!(&text.outcome, Outcome::Result { result }
            if result.joined_text().starts_with("Title: Fixture: hello")),
        "{text:?}"
    );
    match out.outcome {
        Outcome::Error { error } => assert!(
            error.contains("Error in invocation of chrome.debugger.sendCommand: refused"),
            "{error}"
        ),
        Outcome::Result { result } => panic!("should have failed: {}", result.joined_text()),
    }
    assert_eq!(js(&backend, tab, "1 + 1").await?, "2");

    // No port to the content script: get_page_text reads the page over CDP instead.
    worker.eval(&refuse("'chrome.tabs.connect'")).await?;
    let out = bounded("get_page_text", json!({"tabId": tab})).await?;
    worker.eval(&restore("'chrome.tabs.connect'")).await?;
    match out.outcome {
        Outcome::Result { result } => {
            assert!(
                result.joined_text().starts_with("Title: Fixture: hello"),
                "{result:?}"
            )
        }
        Outcome::Error { error } => panic!("get_page_text: {error}"),
    }

    // The delivery ledger's write refused: the command is still answered.
    worker.eval(&refuse("'chrome.storage.session.set'")).await?;
    let out = bounded("javascript_tool", json!({"tabId": tab, "text": "2+2"})).await;
    worker
        .eval(&restore("'chrome.storage.session.set'"))
        .await?;
    let out = out?;
    assert!(
        matches!(&out.outcome, Outcome::Result { result } if result.joined_text() == "4")
            || matches!(&out.outcome, Outcome::Error { error } if error.contains("refused")),
        "{out:?}"
    );
    assert_eq!(js(&backend, tab, "document.title").await?, "Fixture: hello");
    Ok(())
}
