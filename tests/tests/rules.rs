//! Issue 17, parts 3 and 4, driven as a person would: the person's site rules set in Options
//! (blocked, allowed, "ask first" sites), enforced in the browser with the backend's URL policy
//! and winning over it; approvals answered in the popup with real mouse clicks (Allow once,
//! Deny, Always on this site, a timeout), "always" still in force after a worker restart and
//! revocable in Options, and no content script able to answer one.

use browser_operator_e2e::{
    connected, connected_with, percent_encode, until, Backend, Browser, BrowserOptions, Caller,
    Error, FixtureServer, Page, Result, Session,
};
use protocol::{CommandResult, Outcome};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// The changes waiting for the next state report (not drained).
async fn pending(worker: &Session) -> Result<Vec<Value>> {
    let v = worker.eval("self.browserOperator.pendingChanges()").await?;
    Ok(v.as_array().cloned().unwrap_or_default())
}

/// Whether the fixture server was asked for `path` on `host` (`localhost:4321`).
fn asked(fixtures: &FixtureServer, host: &str, path: &str) -> bool {
    fixtures
        .requests()
        .iter()
        .any(|r| r.starts_with(&format!("{host} ")) && r.contains(path))
}

/// Types the person's site rules into Options and clicks Save; fails on an error shown.
async fn save_site_rules(
    browser: &Browser,
    blocked: &str,
    allowed: &str,
    ask: &str,
    seconds: Option<u32>,
) -> Result<Page> {
    let options = browser.options_page().await?;
    options
        .wait_for(
            "document.getElementById('site-rules').dataset.ready === 'true'",
            WAIT,
        )
        .await?;
    options.type_into("#blockedSites", blocked).await?;
    options.type_into("#allowedSites", allowed).await?;
    options.type_into("#askSites", ask).await?;
    if let Some(s) = seconds {
        options
            .type_into("#approvalSeconds", &s.to_string())
            .await?;
    }
    options.click("#saveSiteRules").await?;
    options
        .wait_for(
            "document.getElementById('siteRules-status').textContent === 'Saved.' || document.getElementById('siteRules-error').textContent !== ''",
            WAIT,
        )
        .await?;
    let error = options
        .eval("document.getElementById('siteRules-error').textContent")
        .await?;
    if error != "" {
        return Err(Error::new(format!(
            "Options refused the site rules: {error}"
        )));
    }
    Ok(options)
}

async fn set_policy(backend: &Backend, policy: Value) -> Result<()> {
    backend.text("set_policy", policy).await.map(drop)
}

/// The ref of the first element `find` reports with `needle` in its line.
async fn ref_of(backend: &Backend, tab: i64, query: &str, needle: &str) -> Result<String> {
    let found = backend
        .text("find", json!({"tabId": tab, "query": query}))
        .await?;
    let line = found
        .lines()
        .find(|l| l.starts_with("[ref_") && l.contains(needle))
        .ok_or_else(|| Error::new(format!("no {needle} in {found}")))?;
    Ok(line[1..line.find(']').unwrap_or(1)].to_string())
}

/// Part 3: the person's blocked site is refused by command, redirect, link and script, before
/// its request leaves, even where the backend's policy allows it; a tool on a tab showing a
/// blocked page is refused naming the person's rule; the person's allowed list holds group tabs
/// to it, and the backend can narrow it but not widen it.
#[tokio::test]
async fn the_persons_blocked_sites_are_refused_however_the_navigation_starts() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let port = fixtures.addr().port();
    let allowed = format!("127.0.0.1:{port}");
    let refused = format!("localhost:{port}");
    let page = |path: &str| format!("http://{allowed}/{path}");
    let away = |path: &str| format!("http://{refused}/{path}");
    backend.navigate(tab, &page("hello.html")).await?;
    let worker = browser.worker().await?;
    // The backend allows both hosts explicitly; the person blocks one.
    set_policy(
        &backend,
        json!({"allowedHosts": ["localhost", "127.0.0.1"]}),
    )
    .await?;
    let options = save_site_rules(&browser, "LOCALHOST.", "", "", None).await?;
    // Stored canonical, as the Options page shows it again.
    assert_eq!(
        options
            .eval("document.getElementById('blockedSites').value")
            .await?,
        "localhost"
    );
    let person = "the person's site rules (the extension's Options) block the site localhost";

    // The agent's navigate: refused with the person's rule, nothing sent.
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?direct")}),
        )
        .await?;
    assert!(e.contains(person), "{e}");
    assert!(
        e.contains("Only the person can change their site rules"),
        "{e}"
    );
    // A redirect from an allowed page: refused on the way, the target never asked.
    let redirect = page(&format!(
        "__redirect?to={}",
        percent_encode(&away("hello.html?redirected"))
    ));
    let e = backend
        .error("navigate", json!({"tabId": tab, "url": redirect}))
        .await?;
    assert!(
        e.contains("was refused before its request left") && e.contains(person),
        "{e}"
    );
    // The tab shows the blocked address: tools are refused, saying whose rule.
    let e = backend
        .error("get_page_text", json!({"tabId": tab}))
        .await?;
    assert!(
        e.contains("which no tool may read or act on. Refused: ") && e.contains(person),
        "{e}"
    );
    assert!(e.contains("a site the person's rules allow"), "{e}");

    // A link the agent clicks and a page's script: refused in the browser.
    let start = page(&format!(
        "policy.html?to={}",
        percent_encode(&away("hello.html?linked"))
    ));
    backend.navigate(tab, &start).await?;
    let link = ref_of(&backend, tab, "Go away link", "Go away").await?;
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": link}),
        )
        .await
        .ok();
    until("the link's navigation refused", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "navigation_refused"
                && c["url"].as_str().is_some_and(|u| u.contains("?linked"))
        }))
    })
    .await?;
    backend
        .navigate(tab, &start.replace("linked", "scripted"))
        .await?;
    backend
        .js(tab, "document.getElementById('script').click(); 'clicked'")
        .await?;
    until("the script's navigation refused", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "navigation_refused"
                && c["url"].as_str().is_some_and(|u| u.contains("?scripted"))
        }))
    })
    .await?;
    // A target=_blank link: the new tab's first request leaves before the worker knows the
    // tab; the person's layer of the rules for tabs a group page opens refuses it all the same.
    backend
        .navigate(tab, &start.replace("linked", "blanked"))
        .await?;
    let link = ref_of(&backend, tab, "Open in a new tab link", "Open in a new tab").await?;
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": link}),
        )
        .await?;
    until("the new tab's navigation refused", WAIT, || async {
        Ok(asked(&fixtures, &refused, "?blanked")
            || pending(&worker).await?.iter().any(|c| {
                c["type"] == "navigation_refused"
                    && c["url"].as_str().is_some_and(|u| u.contains("?blanked"))
            }))
    })
    .await?;
    worker
        .eval(&format!(
            "chrome.tabs.query({{}}).then(ts => Promise.all(ts.filter(t => t.id !== {tab} && t.groupId !== -1).map(t => chrome.tabs.remove(t.id)))).then(() => true)"
        ))
        .await?;
    for path in ["?direct", "?redirected", "?linked", "?scripted", "?blanked"] {
        assert!(
            !asked(&fixtures, &refused, path),
            "the blocked site was asked for {path}: {:?}",
            fixtures.requests()
        );
    }

    // A page already shown when the person blocks its site: refused from the next command.
    backend.navigate(tab, &page("hello.html")).await?;
    options.close().await?;
    let options = save_site_rules(&browser, "127.0.0.1", "", "", None).await?;
    let e = backend
        .error("get_page_text", json!({"tabId": tab}))
        .await?;
    assert!(
        e.contains("the person's site rules (the extension's Options) block the site 127.0.0.1"),
        "{e}"
    );
    options.close().await?;

    // The person's allowed list: only those sites; the backend narrows it, never widens it.
    set_policy(&backend, json!({})).await?;
    let options = save_site_rules(&browser, "", "127.0.0.1", "", None).await?;
    backend.navigate(tab, &page("hello.html?mine")).await?;
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?not-mine")}),
        )
        .await?;
    assert!(
        e.contains("allow only their listed sites, and localhost is not among them"),
        "{e}"
    );
    set_policy(&backend, json!({"allowedHosts": ["localhost"]})).await?;
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": page("hello.html?narrowed")}),
        )
        .await?;
    assert!(
        e.contains("the URL policy refuses the host 127.0.0.1"),
        "{e}"
    );
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?widened")}),
        )
        .await?;
    assert!(e.contains("not among them"), "{e}");
    assert!(!asked(&fixtures, &refused, "?not-mine") && !asked(&fixtures, &refused, "?widened"));
    options.close().await?;
    let _ = worker.detach().await;
    Ok(())
}

/// Runs `tool` in the background; the handle answers its result.
fn spawn(
    caller: &Caller,
    tool: &str,
    args: Value,
) -> tokio::task::JoinHandle<Result<CommandResult>> {
    let caller = caller.clone();
    let tool = tool.to_string();
    tokio::spawn(async move {
        caller
            .command_when_connected(&tool, args, Duration::from_secs(30))
            .await
    })
}

async fn outcome(
    handle: tokio::task::JoinHandle<Result<CommandResult>>,
) -> Result<std::result::Result<String, String>> {
    let result = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .map_err(|_| Error::new("the command did not end"))?
        .map_err(|e| Error::new(format!("the command's task: {e}")))??;
    Ok(match result.outcome {
        Outcome::Result { result } => Ok(result.joined_text()),
        Outcome::Error { error } => Err(error),
    })
}

/// Waits until the popup's approval card shows an approval; its id.
async fn card(popup: &Page) -> Result<i64> {
    popup
        .wait_for("!document.getElementById('approval').hidden", WAIT)
        .await?;
    let id = popup
        .eval("Number(document.getElementById('approval').dataset.id)")
        .await?;
    id.as_i64()
        .ok_or_else(|| Error::new(format!("the card has no id: {id}")))
}

async fn text_of(popup: &Page, id: &str) -> Result<String> {
    let v = popup
        .eval(&format!("document.getElementById('{id}').textContent"))
        .await?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

/// An extension content script's isolated world in the page target showing `url`: the session
/// and the context id (found from the contexts Chrome reports when Runtime is enabled).
async fn content_script_world(browser: &Browser, url_start: &str) -> Result<(String, i64)> {
    let target = browser
        .page_targets()
        .await?
        .into_iter()
        .find(|t| t.url.starts_with(url_start))
        .ok_or_else(|| Error::new(format!("no page at {url_start}")))?;
    let cdp = browser.cdp();
    let mut events = cdp.events();
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({"targetId": target.id, "flatten": true}),
        )
        .await?;
    let session = attached["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    cdp.call_session(&session, "Runtime.enable", json!({}))
        .await?;
    let found = browser_operator_e2e::wait_event_on(
        &mut events,
        |e| {
            e.session_id.as_deref() == Some(session.as_str())
                && e.method == "Runtime.executionContextCreated"
                && e.params["context"]["origin"]
                    .as_str()
                    .is_some_and(|o| o.starts_with("chrome-extension://"))
        },
        WAIT,
    )
    .await?;
    let id = found.params["context"]["id"].as_i64().unwrap_or_default();
    Ok((session, id))
}

/// Part 4: an approval allowed once, denied, not answered in time; "Always on this site"
/// still in force after the worker restarts, listed and revoked in Options; an "ask first"
/// site asking for acting commands and not for a screenshot; the card shows the arguments with
/// invisible characters escaped; a content script's message cannot answer; the popup with a
/// card passes the accessibility checker.
#[tokio::test]
async fn approvals_are_answered_in_the_popup_and_always_lasts() -> Result<()> {
    let (fixtures, backend, browser) = connected_with(BrowserOptions {
        ask_before_scripts: true,
        ..Default::default()
    })
    .await?;
    let caller = backend.caller();
    let (tab, _) = backend.first_tab().await?;
    let port = fixtures.addr().port();
    let here = format!("http://127.0.0.1:{port}/hello.html");
    let ask_site = format!("http://localhost:{port}/hello.html");
    backend.navigate(tab, &here).await?;
    let options = save_site_rules(&browser, "", "", "localhost", Some(30)).await?;
    options.close().await?;
    let popup = browser.popup_page().await?;
    let js = |code: &str| json!({"tabId": tab, "text": code});

    // Allowed once: the card says exactly what, the command runs after the click.
    let running = spawn(
        &caller,
        "javascript_tool",
        js("'a\u{200B}b\u{202E}c'.length\n"),
    );
    let first = card(&popup).await?;
    assert_eq!(text_of(&popup, "approval-tool").await?, "javascript_tool");
    assert_eq!(text_of(&popup, "approval-site").await?, "127.0.0.1");
    let args = text_of(&popup, "approval-args").await?;
    assert!(
        args.contains("a\\u{200B}b\\u{202E}c") && args.contains(".length\\n"),
        "{args}"
    );
    assert!(
        !args.contains('\u{200B}') && !args.contains('\u{202E}'),
        "{args}"
    );
    let worker = browser.worker().await?;
    let badge = worker.eval("chrome.action.getBadgeText({})").await;
    let _ = worker.detach().await;
    assert_eq!(badge?, "1?");
    let violations = popup.accessibility_violations().await?;
    assert!(violations.is_empty(), "the popup's card: {violations:?}");
    popup.click("#approve-once").await?;
    assert_eq!(outcome(running).await?, Ok("5".to_string()));
    popup
        .wait_for("document.getElementById('approval').hidden", WAIT)
        .await?;

    // Denied.
    let running = spawn(
        &caller,
        "javascript_tool",
        js("document.title = 'ran-after-deny'"),
    );
    let second = card(&popup).await?;
    assert_ne!(first, second);
    popup.click("#approve-deny").await?;
    let e = outcome(running).await?.expect_err("denied");
    assert!(
        e.contains("The person denied javascript_tool on 127.0.0.1"),
        "{e}"
    );
    let tabs = backend.text("tabs_context_mcp", json!({})).await?;
    assert!(
        !tabs.contains("ran-after-deny"),
        "the denied script ran: {tabs}"
    );

    // A content script (the only extension context a page reaches) cannot answer.
    let running = spawn(&caller, "javascript_tool", js("1 + 1"));
    let third = card(&popup).await?;
    let (session, world) =
        content_script_world(&browser, &format!("http://127.0.0.1:{port}/")).await?;
    let answer = browser
        .cdp()
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({
                "expression": format!("chrome.runtime.sendMessage({{type: 'decideApproval', id: {third}, decision: 'always'}}).then((r) => r ?? null)"),
                "contextId": world,
                "awaitPromise": true,
                "returnByValue": true,
            }),
        )
        .await?;
    assert_eq!(answer["result"]["value"], Value::Null, "{answer}");
    // The page's own world has no way to the worker at all.
    let main = browser
        .cdp()
        .call_session(
            &session,
            "Runtime.evaluate",
            json!({"expression": "typeof chrome === 'undefined' || typeof chrome.runtime?.sendMessage", "returnByValue": true}),
        )
        .await?;
    assert_ne!(main["result"]["value"], "function", "{main}");
    let _ = browser
        .cdp()
        .call("Target.detachFromTarget", json!({"sessionId": session}))
        .await;
    // Still waiting: the worker lists it, the command has not ended.
    let waiting = popup
        .eval("chrome.runtime.sendMessage({type: 'getApprovals'}).then((r) => r.approvals.map((a) => a.id))")
        .await?;
    assert_eq!(waiting, json!([third]));
    assert!(!running.is_finished());
    assert_eq!(card(&popup).await?, third);
    // Always on this site.
    popup.click("#approve-always").await?;
    assert_eq!(outcome(running).await?, Ok("2".to_string()));

    // Still in force after the worker restarts: no card, the command runs.
    browser.stop_worker().await?;
    let after = caller
        .command_when_connected("javascript_tool", js("3 + 4"), WAIT)
        .await?;
    match after.outcome {
        Outcome::Result { result } => assert_eq!(result.joined_text(), "7"),
        Outcome::Error { error } => panic!("after the restart: {error}"),
    }

    // An "ask first" site: the navigation there asks (allowed once), a screenshot does not.
    let running = spawn(&caller, "navigate", json!({"tabId": tab, "url": ask_site}));
    card(&popup).await?;
    assert_eq!(text_of(&popup, "approval-site").await?, "localhost");
    assert!(text_of(&popup, "approval-reason")
        .await?
        .contains("\"ask first\" pattern localhost"));
    popup.click("#approve-once").await?;
    outcome(running).await?.map_err(Error::new)?;
    let shot = backend
        .command("computer", json!({"tabId": tab, "action": "screenshot"}))
        .await?;
    assert!(
        matches!(shot.outcome, Outcome::Result { .. }),
        "the screenshot asked"
    );

    // Options lists the grant; revoking it (a real click) asks again, and now times out.
    let options = save_site_rules(&browser, "", "", "localhost", Some(2)).await?;
    let listed = text_of(&options, "grants").await?;
    assert!(listed.contains("javascript_tool on 127.0.0.1"), "{listed}");
    options.click("#grants button").await?;
    options
        .wait_for("document.querySelectorAll('#grants li').length === 0", WAIT)
        .await?;
    options.close().await?;
    backend.navigate(tab, &here).await.ok();
    let running = spawn(&caller, "javascript_tool", js("'again'"));
    card(&popup).await?;
    let e = outcome(running).await?.expect_err("timed out");
    assert!(
        e.contains("javascript_tool on 127.0.0.1 was not approved within 2 s"),
        "{e}"
    );
    // The card goes with its command.
    popup
        .wait_for("document.getElementById('approval').hidden", WAIT)
        .await?;
    Ok(())
}
