//! One tab group per agent: two backends connected to one browser at once (the first through
//! Options, the second by accepting its pair offer in the popup), each with its own named,
//! coloured group; each sees and drives only its own tabs, is refused on the other's, and both
//! drive at once without touching each other's tabs; each one's `set_policy` holds only its own
//! group's tabs, across a worker restart, and goes when its connection is removed. Options
//! lists both; removing one leaves the other working. And MCP client sessions that ask get
//! groups of their own.

use browser_operator_e2e::mcp::{error_of, text_of, HttpMcp};
use browser_operator_e2e::{
    percent_encode, tabs_context, Backend, Browser, FixtureServer, Page, Result,
};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Pairs `browser` with `backend` as a person does: its /pair page, Connect, then Accept in
/// the popup (a real click).
async fn pair(browser: &Browser, backend: &Backend) -> Result<()> {
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
    let popup = browser.popup_page().await?;
    popup
        .wait_for("!document.querySelector('#offer').hidden", WAIT)
        .await?;
    popup.click("#accept").await?;
    backend.wait_browsers(1, WAIT).await?;
    // With two connections the popup lists each one's status.
    popup
        .wait_for(
            "document.querySelectorAll('#connections li[data-state=\"connected\"]').length === 2",
            WAIT,
        )
        .await?;
    popup.close().await?;
    pair.close().await?;
    Ok(())
}

/// `chrome.tabGroups.get(group)` as an extension page reads it: `[title, color]`, the title
/// without the activity sign ("● " while a command runs on one of its tabs, and briefly after;
/// tests/tests/control.rs checks the sign).
async fn group_look(page: &Page, group: i64) -> Result<Value> {
    page.eval(&format!(
        "chrome.tabGroups.get({group}).then(g => [g.title.replace(/^\\u25CF /, ''), g.color])"
    ))
    .await
}

/// The tab ids `tabs_context_mcp` lists.
async fn listed(backend: &Backend) -> Result<Vec<i64>> {
    let text = backend.text("tabs_context_mcp", json!({})).await?;
    Ok(tabs_context(&text)["availableTabs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["tabId"].as_i64())
        .collect())
}

/// The policy marker of the backend's state report (`browser_state`'s `policy`).
async fn marker(backend: &Backend) -> Result<Value> {
    let text = backend.text("browser_state", json!({})).await?;
    let state: Value = serde_json::from_str(&text)?;
    Ok(state["policy"].clone())
}

/// Whether the fixture server was asked for an address on `host` with `needle` in it.
fn asked(fixtures: &FixtureServer, host: &str, needle: &str) -> bool {
    fixtures
        .requests()
        .iter()
        .any(|r| r.starts_with(&format!("{host} ")) && r.contains(needle))
}

/// Issue 17's one policy per agent, with the first backend's policy refusing `localhost` and
/// dismissing dialogs, and the second's not: the first's navigation there is refused before
/// its request leaves; the second's tab goes there by command, redirect and link (its requests
/// reach the server), though both groups' tabs show the same host; the first's dialog is
/// dismissed while the second's waits for handle_dialog; each report carries its own marker.
#[allow(clippy::too_many_arguments)]
async fn each_policy_holds_its_own_tabs(
    fixtures: &FixtureServer,
    (a, tab_a, marker_a): (&Backend, i64, &Value),
    (b, tab_b, marker_b): (&Backend, i64, &Value),
    round: &str,
) -> Result<()> {
    let refused = format!("localhost:{}", fixtures.addr().port());
    let away = |needle: &str| format!("http://{refused}/hello.html?{needle}");
    let needle = format!("a-{round}");
    let e = a
        .error("navigate", json!({"tabId": tab_a, "url": away(&needle)}))
        .await?;
    assert!(
        e.contains("Refused: the URL policy refuses the host localhost (it is not among the allowed hosts)"),
        "{e}"
    );
    let needle = format!("b-{round}");
    b.navigate(tab_b, &away(&needle)).await?;
    assert!(asked(fixtures, &refused, &needle), "the second's navigate");
    let needle = format!("b-redirect-{round}");
    let redirect = fixtures.url(&format!("__redirect?to={}", percent_encode(&away(&needle))));
    b.navigate(tab_b, &redirect).await?;
    assert!(asked(fixtures, &refused, &needle), "the second's redirect");
    let needle = format!("b-link-{round}");
    let start = fixtures.url(&format!(
        "policy.html?to={}",
        percent_encode(&away(&needle))
    ));
    b.navigate(tab_b, &start).await?;
    b.js(tab_b, "document.getElementById('away').click(); 'clicked'")
        .await?;
    browser_operator_e2e::until("the second's link reaches the server", WAIT, || async {
        Ok(asked(fixtures, &refused, &needle))
    })
    .await?;
    // The first's request log: nothing of its refused navigation.
    assert!(!asked(fixtures, &refused, &format!("a-{round}")));

    // Dialogs: the first's answered by its policy, the second's open until handle_dialog.
    assert_eq!(a.js(tab_a, "String(confirm('First?'))").await?, "false");
    b.navigate(tab_b, &fixtures.url("hello.html")).await?;
    b.js(
        tab_b,
        "setTimeout(() => { window.answered = String(confirm('Second?')); }, 0); 'asking'",
    )
    .await?;
    browser_operator_e2e::until("the second's dialog waits", WAIT, || async {
        let r = b
            .command("javascript_tool", json!({"tabId": tab_b, "text": "1"}))
            .await?;
        Ok(format!("{r:?}").contains("A JavaScript confirm dialog is open"))
    })
    .await?;
    let answered = b
        .text("handle_dialog", json!({"tabId": tab_b, "accept": true}))
        .await?;
    assert!(answered.contains("Second?"), "{answered}");
    assert_eq!(b.js(tab_b, "window.answered").await?, "true");

    assert_eq!(&marker(a).await?, marker_a);
    assert_eq!(&marker(b).await?, marker_b);
    Ok(())
}

#[tokio::test]
async fn two_backends_drive_their_own_groups_at_once() -> Result<()> {
    let (fixtures, a, browser) = browser_operator_e2e::connected().await?;
    let b = Backend::start().await?;
    pair(&browser, &b).await?;
    assert_eq!(a.browsers().await?, 1, "the first backend stays connected");

    // Each has its own group: the first keeps the product's, the second is named by its
    // pair offer's brand, in another colour.
    let (tab_a, group_a) = a.first_tab().await?;
    let (tab_b, group_b) = b.first_tab().await?;
    assert_ne!(group_a, group_b);
    let options = browser.options_page().await?;
    assert_eq!(
        group_look(&options, group_a).await?,
        json!(["Browser Operator", "blue"])
    );
    let look_b = group_look(&options, group_b).await?;
    assert_eq!(look_b[0], "Browser Operator server", "{look_b}");
    assert_ne!(look_b[1], "blue", "{look_b}");

    // Each lists only its own tabs, a new tab included.
    let tab_b2 = b.new_tab().await?;
    assert_eq!(listed(&a).await?, vec![tab_a]);
    let of_b = listed(&b).await?;
    assert!(
        of_b.contains(&tab_b) && of_b.contains(&tab_b2) && !of_b.contains(&tab_a),
        "{of_b:?}"
    );

    // Each is refused on the other's tabs, without a word of the other backend.
    for (backend, tab, other) in [(&a, tab_b, &b), (&b, tab_a, &a)] {
        let refused = backend
            .error("javascript_tool", json!({"tabId": tab, "text": "1"}))
            .await?;
        assert!(
            refused.contains(&format!("Tab {tab} belongs to another agent's tab group")),
            "{refused}"
        );
        let port = other.addr().port().to_string();
        assert!(
            !refused.contains(other.token()) && !refused.contains(&port),
            "{refused}"
        );
        let refused = backend
            .error("navigate", json!({"tabId": tab, "url": "about:blank"}))
            .await?;
        assert!(refused.contains("another agent's tab group"), "{refused}");
    }

    // A tab that a page of the second backend's group opens joins that group, not the first's.
    b.navigate(tab_b2, &fixtures.url("dialogs.html")).await?;
    let v = b
        .js(tab_b2, "const r = document.getElementById('open').getBoundingClientRect(); [r.x + r.width / 2, r.y + r.height / 2]")
        .await?;
    let point: Vec<f64> = serde_json::from_str(&v)?;
    b.text(
        "computer",
        json!({"tabId": tab_b2, "action": "left_click", "coordinate": [point[0], point[1]]}),
    )
    .await?;
    browser_operator_e2e::until("the opened tab joins the second group", WAIT, || async {
        Ok(listed(&b).await?.len() == 3)
    })
    .await?;
    let opened = *listed(&b)
        .await?
        .iter()
        .find(|t| ![tab_b, tab_b2].contains(t))
        .unwrap_or(&-1);
    let its_group = options
        .eval(&format!("chrome.tabs.get({opened}).then(t => t.groupId)"))
        .await?;
    assert_eq!(its_group, json!(group_b));
    assert_eq!(listed(&a).await?, vec![tab_a]);

    // One policy per agent: the first's set_policy is its own group's, not the second's (whose
    // report's marker it leaves alone), and the second's its own.
    a.navigate(tab_a, &fixtures.url("hello.html")).await?;
    assert_eq!(marker(&b).await?, Value::Null);
    a.text(
        "set_policy",
        json!({"allowedHosts": ["127.0.0.1"], "dialogs": "dismiss"}),
    )
    .await?;
    let marker_a = marker(&a).await?;
    assert!(marker_a.is_string(), "{marker_a}");
    assert_eq!(
        marker(&b).await?,
        Value::Null,
        "the first's policy set the second's marker"
    );
    b.text("set_policy", json!({"blockedHosts": ["elsewhere.test"]}))
        .await?;
    let marker_b = marker(&b).await?;
    assert!(marker_b.is_string() && marker_b != marker_a, "{marker_b}");
    each_policy_holds_its_own_tabs(
        &fixtures,
        (&a, tab_a, &marker_a),
        (&b, tab_b2, &marker_b),
        "set",
    )
    .await?;

    // Both drive at once, interleaved: each marks and reads its own tab only.
    a.navigate(tab_a, &fixtures.url("hello.html")).await?;
    b.navigate(tab_b, &fixtures.url("hello.html")).await?;
    let drive = |backend: &Backend, tab: i64, me: &'static str| {
        let caller = backend.caller();
        async move {
            let mut seen = Vec::new();
            for i in 0..6 {
                let code = format!("window.__n = (window.__n || 0) + 1; window.__who = '{me}{i}'; window.__who + '/' + window.__n");
                let r = caller
                    .command("javascript_tool", json!({"tabId": tab, "text": code}))
                    .await?;
                seen.push(serde_json::to_value(&r)?);
            }
            Ok::<_, browser_operator_e2e::Error>(seen)
        }
    };
    let (seen_a, seen_b) = tokio::join!(drive(&a, tab_a, "a"), drive(&b, tab_b, "b"));
    for (seen, me) in [(seen_a?, "a"), (seen_b?, "b")] {
        for (i, r) in seen.iter().enumerate() {
            let text = r.to_string();
            assert!(text.contains(&format!("{me}{i}/{}", i + 1)), "{me}: {text}");
        }
    }

    // After a worker restart both connections come back, each to its own group.
    browser.stop_worker().await?;
    for (backend, tab, me) in [(&a, tab_a, "a5"), (&b, tab_b, "b5")] {
        browser_operator_e2e::until("the backend drives its tab again", WAIT, || async move {
            Ok(backend.js(tab, "window.__who").await.ok().as_deref() == Some(me))
        })
        .await?;
    }
    let refused = b
        .error("javascript_tool", json!({"tabId": tab_a, "text": "1"}))
        .await?;
    assert!(refused.contains("another agent's tab group"), "{refused}");
    assert_eq!(listed(&a).await?, vec![tab_a]);
    // Both policies are still each one's own.
    each_policy_holds_its_own_tabs(
        &fixtures,
        (&a, tab_a, &marker_a),
        (&b, tab_b2, &marker_b),
        "restarted",
    )
    .await?;

    // Options lists both connections with their groups.
    options
        .wait_for(
            "document.querySelectorAll('#connections li').length === 2",
            WAIT,
        )
        .await?;
    let shown = options
        .eval("[...document.querySelectorAll('#connections li')].map(li => [li.dataset.state, li.querySelector('.connection-group').textContent])")
        .await?;
    assert_eq!(
        shown,
        json!([
            ["connected", "Browser Operator"],
            ["connected", "Browser Operator server"]
        ])
    );
    // The pages with the list pass the accessibility checker, light and dark.
    let popup = browser.popup_page().await?;
    popup
        .wait_for(
            "document.querySelectorAll('#connections li').length === 2",
            WAIT,
        )
        .await?;
    let mut found = options.accessibility_violations().await?;
    found.extend(popup.accessibility_violations().await?);
    assert!(found.is_empty(), "accessibility violations: {found:?}");
    popup.close().await?;

    // The second's policy is kept beside the first's (stored under its own key).
    let policies = || {
        options.eval(
            "chrome.storage.session.get('policies').then(v => (v.policies || []).map(p => p[0]))",
        )
    };
    assert_eq!(policies().await?.as_array().map(Vec::len), Some(1));

    // Removing the second (a real click) disconnects it; the first works on.
    options
        .click("#connections li:nth-child(2) .connection-remove")
        .await?;
    b.wait_browsers(0, WAIT).await?;
    // Its policy went with it; the first's stays.
    browser_operator_e2e::until("the removed connection's policy dropped", WAIT, || async {
        Ok(policies().await? == json!([]))
    })
    .await?;
    assert_eq!(marker(&a).await?, marker_a);
    // Back to one connection: Options is as it always was, without the list.
    options
        .wait_for(
            "document.querySelector('#connections-section').hidden",
            WAIT,
        )
        .await?;
    assert_eq!(a.js(tab_a, "window.__who").await?, "a5");
    assert_eq!(listed(&a).await?, vec![tab_a]);
    Ok(())
}

/// MCP client sessions that ask (`browserOperator/ownTabGroup`) each get a group of their own
/// in the backend's browser; a session that does not ask drives the backend's group.
#[tokio::test]
async fn mcp_sessions_that_ask_get_their_own_groups() -> Result<()> {
    let (_fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    let own = json!({"experimental": {"browserOperator/ownTabGroup": {}}});
    let url = backend.http_url();
    let one = HttpMcp::connect_as(&url, backend.token(), "alpha", own.clone()).await?;
    let two = HttpMcp::connect_as(&url, backend.token(), "beta", own).await?;
    let plain = HttpMcp::connect(&url, backend.token()).await?;
    let first = |ctx: &str| -> (i64, i64) {
        let v = tabs_context(ctx);
        (
            v["availableTabs"][0]["tabId"].as_i64().unwrap_or(-1),
            v["tabGroupId"].as_i64().unwrap_or(-1),
        )
    };
    let create = json!({"createIfEmpty": true});
    let (tab1, group1) = first(&text_of(
        &one.call("tabs_context_mcp", create.clone()).await?,
    )?);
    let (tab2, group2) = first(&text_of(
        &two.call("tabs_context_mcp", create.clone()).await?,
    )?);
    let (tab0, group0) = first(&text_of(&plain.call("tabs_context_mcp", create).await?)?);
    assert!(tab1 >= 0 && tab2 >= 0 && tab0 >= 0);
    assert!(group1 != group2 && group1 != group0 && group2 != group0);

    let options = browser.options_page().await?;
    let look1 = group_look(&options, group1).await?;
    let look2 = group_look(&options, group2).await?;
    assert!(
        look1[0]
            .as_str()
            .unwrap_or("")
            .starts_with("Browser Operator · alpha "),
        "{look1}"
    );
    assert!(
        look2[0]
            .as_str()
            .unwrap_or("")
            .starts_with("Browser Operator · beta "),
        "{look2}"
    );
    assert_ne!(look1[1], look2[1]);
    assert_eq!(
        group_look(&options, group0).await?,
        json!(["Browser Operator", "blue"])
    );

    // Each session is refused on the other's tab, and the backend's own commands (no agent)
    // on both.
    let refused = error_of(
        &one.call("javascript_tool", json!({"tabId": tab2, "text": "1"}))
            .await?,
    )?;
    assert!(refused.contains("another agent's tab group"), "{refused}");
    let refused = error_of(
        &two.call("javascript_tool", json!({"tabId": tab1, "text": "1"}))
            .await?,
    )?;
    assert!(refused.contains("another agent's tab group"), "{refused}");
    let refused = backend
        .error("javascript_tool", json!({"tabId": tab1, "text": "1"}))
        .await?;
    assert!(refused.contains("another agent's tab group"), "{refused}");
    let mine = text_of(
        &one.call("javascript_tool", json!({"tabId": tab1, "text": "6*7"}))
            .await?,
    )?;
    assert!(mine.contains("42"), "{mine}");
    // The backend's own commands are the session without an agent's.
    assert_eq!(backend.js(tab0, "6*7").await?, "42");
    Ok(())
}

/// Pair offers accepted one after another add connections up to the bound, each with its own
/// group look; one more is refused in the popup with the bound named.
#[tokio::test]
async fn at_most_eight_connections_and_one_more_is_refused_clearly() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = browser_operator_e2e::FixtureServer::start();
    let browser = Browser::launch(browser_operator_e2e::BrowserOptions::default()).await?;
    let page = browser.open_page(&fixtures.url("hello.html")).await?;
    for n in 1..=9 {
        // Nothing listens there: each connection keeps retrying, which is all this needs.
        let port = browser_operator_e2e::free_port();
        page.eval(&format!(
            "window.postMessage({{__browserOperator: 'pair-offer', config: {{transport: 'websocket', serverUrl: 'ws://127.0.0.1:{port}/ws', token: 't{n}', target: 'target-{n}'}}, brand: {{name: 'Product {n}'}}}}, window.origin); true"
        ))
        .await?;
        let popup = browser.popup_page().await?;
        popup
            .wait_for(
                &format!("document.querySelector('#offer-brand').textContent === 'Product {n}' && !document.querySelector('#offer').hidden"),
                WAIT,
            )
            .await?;
        popup.click("#accept").await?;
        if n <= 8 {
            popup
                .wait_for("document.querySelector('#offer').hidden", WAIT)
                .await?;
        } else {
            popup
                .wait_for(
                    "document.querySelector('#offer-error').textContent !== ''",
                    WAIT,
                )
                .await?;
            let said = popup
                .eval("document.querySelector('#offer-error').textContent")
                .await?;
            assert_eq!(
                said,
                "This browser already keeps 8 connections, the most it keeps: remove one in Options, then accept again."
            );
        }
        popup.close().await?;
    }
    let options = browser.options_page().await?;
    options
        .wait_for(
            "document.querySelectorAll('#connections li').length === 8",
            WAIT,
        )
        .await?;
    let titles = options
        .eval("[...document.querySelectorAll('#connections .connection-group')].map(e => e.textContent)")
        .await?;
    // The first offer became the first connection (the product's group); each further one is
    // named by its brand.
    let mut want = vec![json!("Browser Operator")];
    want.extend((2..=8).map(|n| json!(format!("Product {n}"))));
    assert_eq!(titles, Value::Array(want));
    Ok(())
}
