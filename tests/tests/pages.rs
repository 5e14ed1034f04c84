//! Page understanding, end to end: read_page, find, form_input, get_page_text, javascript_tool,
//! console and network recording, in headless Chromium with the built extension, driven through
//! the real server as a backend would.

use browser_operator_e2e::{Backend, Browser, BrowserOptions, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::Duration;

const CONNECT: Duration = Duration::from_secs(20);

async fn connected() -> Result<(FixtureServer, Backend, Browser, i64)> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&backend.ws_url(), backend.token(), None)
        .await?;
    backend.wait_browsers(1, CONNECT).await?;
    browser.wait_status("connected", CONNECT).await?;
    let ctx = backend
        .text("tabs_context_mcp", json!({"createIfEmpty": true}))
        .await?;
    let ctx: Value = serde_json::from_str(ctx.lines().next().unwrap_or("")).expect("JSON line");
    let tab = ctx["availableTabs"][0]["tabId"].as_i64().expect("a tab");
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
    let e = backend
        .error(
            "form_input",
            json!({"tabId": tab, "ref": ref_of(&tree, "heading \"Sign in\""), "value": "x"}),
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
    assert_eq!(
        ref_of(&again, "Cross frame heading"),
        ref_of(&tree, "Cross frame heading")
    );
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
    let section = ref_of(&all, "region \"Section 7\"");
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
    browser.stop_worker().await?;
    backend.wait_browsers(1, Duration::from_secs(60)).await?;
    let after = backend.text("read_page", json!({"tabId": tab})).await?;
    assert_eq!(ref_of(&after, "Bottom button"), bottom);
    backend
        .text(
            "form_input",
            json!({"tabId": tab, "ref": bottom, "value": "x"}),
        )
        .await
        .err();
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
