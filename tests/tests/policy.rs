//! The backend's browser-side policy (`set_policy`), end to end: the hosts a group tab may show
//! are enforced in the browser (a navigation outside them is refused before its request leaves,
//! whether the agent's navigate, a redirect, a link, a page's script, a frame, a new tab or a
//! person started it; each refusal reported), kept across worker restarts, and out of code
//! mode's reach; dialogs answered by the policy and reported, a dialog loop bounded; downloads
//! reported (finished with their size, failed, never finishing without a hang).

use browser_operator_e2e::{
    connected, js_string, until, Backend, Error, FixtureServer, Result, Session,
};
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

async fn set_policy(backend: &Backend, policy: Value) -> Result<Value> {
    let text = backend.text("set_policy", policy).await?;
    serde_json::from_str(&text).map_err(|e| Error::new(format!("set_policy answered {text}: {e}")))
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

/// Issue 16's URL policy: allowed and blocked hosts refuse a group tab's navigation before its
/// request leaves, however it was started, with an error naming the URL policy where a command
/// asked for it and a `navigation_refused` change each time; a tab showing a refused host is
/// refused to every tool but navigate; the policy survives a worker restart; code mode cannot
/// change it.
#[tokio::test]
async fn the_url_policy_refuses_hosts_before_their_requests_leave() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let port = fixtures.addr().port();
    let allowed = format!("127.0.0.1:{port}");
    let refused = format!("localhost:{port}");
    let page = |path: &str| format!("http://{allowed}/{path}");
    let away = |path: &str| format!("http://{refused}/{path}");
    backend.navigate(tab, &page("hello.html")).await?;
    let worker = browser.worker().await?;

    let policy = set_policy(&backend, json!({"allowedHosts": ["127.0.0.1"]})).await?;
    assert_eq!(
        policy,
        json!({"allowedHosts": ["127.0.0.1"], "blockedHosts": [], "dialogs": "ask", "downloadPaths": false})
    );
    let e = backend
        .error(
            "set_policy",
            json!({"allowedHosts": ["https://example.com/"]}),
        )
        .await?;
    assert!(e.contains("is not a host pattern: it is a URL"), "{e}");

    // The agent's navigate: refused with the rule, nothing sent.
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?direct")}),
        )
        .await?;
    assert!(
        e.contains("Refused: the URL policy refuses the host localhost (it is not among the allowed hosts)"),
        "{e}"
    );
    // A userinfo trick names the host after the '@'.
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": format!("http://127.0.0.1@{refused}/hello.html?userinfo")}),
        )
        .await?;
    assert!(e.contains("refuses the host localhost"), "{e}");

    // A redirect from an allowed page: refused on the way, the target never asked.
    let redirect = page(&format!(
        "__redirect?to={}",
        browser_operator_e2e::percent_encode(&away("hello.html?redirected"))
    ));
    let e = backend
        .error("navigate", json!({"tabId": tab, "url": redirect}))
        .await?;
    assert!(
        e.contains("was refused before its request left: it was redirected to")
            && e.contains("Refused: the URL policy refuses the host localhost"),
        "{e}"
    );
    // The tab shows the refused address: every tool but navigate is refused, saying why.
    let e = backend
        .error("get_page_text", json!({"tabId": tab}))
        .await?;
    assert!(
        e.contains(
            "which no tool may read or act on. Refused: the URL policy refuses the host localhost"
        ),
        "{e}"
    );

    // A link the agent clicks, a page's script, a frame of the page: refused in the browser.
    let start = page(&format!(
        "policy.html?to={}",
        browser_operator_e2e::percent_encode(&away("hello.html?linked"))
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
    let framed = page(&format!(
        "policy.html?frame={}",
        browser_operator_e2e::percent_encode(&away("hello.html?framed"))
    ));
    backend.navigate(tab, &framed).await?;
    until("the frame's navigation refused", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "navigation_refused"
                && c["url"].as_str().is_some_and(|u| u.contains("?framed"))
        }))
    })
    .await?;
    // The page holding the frame is allowed, and still served.
    assert_eq!(
        backend.js(tab, "document.title").await?,
        "Fixture: the URL policy"
    );

    // A new tab the page opens joins the group and is held to the policy from its first request.
    backend
        .js(
            tab,
            &format!(
                "window.open({}); 'opened'",
                js_string(&away("hello.html?popup"))
            ),
        )
        .await?;
    until("the new tab's navigation refused", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "navigation_refused"
                && c["url"].as_str().is_some_and(|u| u.contains("?popup"))
        }))
    })
    .await?;

    // A person typing the address into a group tab is refused too.
    worker
        .eval(&format!(
            "chrome.tabs.update({tab}, {{url: {}}}).then(() => true)",
            js_string(&away("hello.html?typed"))
        ))
        .await?;
    until("the typed navigation refused", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "navigation_refused"
                && c["url"].as_str().is_some_and(|u| u.contains("?typed"))
        }))
    })
    .await?;

    // Code mode cannot change the policy: set_policy is not among browser.* (listed or called).
    backend.navigate(tab, &page("hello.html")).await?;
    let e = backend
        .error(
            "btcp_run_script",
            json!({"tabId": tab, "script": "return await browser.set_policy({});"}),
        )
        .await?;
    assert!(e.contains("not a function"), "{e}");
    let seen = backend
        .text(
            "btcp_run_script",
            json!({"tabId": tab, "script": "return typeof browser.set_policy;"}),
        )
        .await?;
    assert!(seen.contains("undefined"), "{seen}");
    let e = backend
        .error(
            "btcp_call",
            json!({"tabId": tab, "namespace": "browser", "method": "set_policy", "args": {}}),
        )
        .await?;
    assert!(e.contains("set_policy"), "{e}");
    let listed = backend
        .text("btcp_interfaces", json!({"tabId": tab}))
        .await?;
    assert!(!listed.contains("set_policy"), "{listed}");

    // Kept across a worker restart: the browser's rules and the worker's checks alike.
    worker.detach().await?;
    let sockets = backend.status().await?["wsConnections"]
        .as_u64()
        .unwrap_or(0);
    browser.stop_worker().await?;
    until(
        "the restarted worker connected again",
        Duration::from_secs(60),
        || async { Ok(backend.status().await?["wsConnections"].as_u64() > Some(sockets)) },
    )
    .await?;
    let e = backend
        .caller()
        .command_when_connected(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?after-restart")}),
            WAIT,
        )
        .await?;
    let said = format!("{e:?}");
    assert!(said.contains("refuses the host localhost"), "{said}");
    let worker = browser.worker().await?;
    worker
        .eval(&format!(
            "chrome.tabs.update({tab}, {{url: {}}}).then(() => true)",
            js_string(&away("hello.html?typed-after-restart"))
        ))
        .await?;
    until(
        "the typed navigation refused after a restart",
        WAIT,
        || async {
            Ok(pending(&worker).await?.iter().any(|c| {
                c["type"] == "navigation_refused"
                    && c["url"]
                        .as_str()
                        .is_some_and(|u| u.contains("?typed-after-restart"))
            }))
        },
    )
    .await?;

    // Blocked hosts: refused even with every other host allowed.
    // Written as the browser's URL parser writes hosts: lowercase, no trailing dot, punycode.
    let policy = set_policy(
        &backend,
        json!({"blockedHosts": ["LOCALHOST.", "BÜCHER.example"]}),
    )
    .await?;
    assert_eq!(policy["allowedHosts"], Value::Null);
    assert_eq!(
        policy["blockedHosts"],
        json!(["localhost", "xn--bcher-kva.example"])
    );
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": "http://Bücher.example/"}),
        )
        .await?;
    assert!(
        e.contains("refuses the host xn--bcher-kva.example (it is a blocked host)"),
        "{e}"
    );
    backend
        .navigate(tab, &page("hello.html?blocked-list"))
        .await?;
    let e = backend
        .error(
            "navigate",
            json!({"tabId": tab, "url": away("hello.html?blocked")}),
        )
        .await?;
    assert!(
        e.contains("refuses the host localhost (it is a blocked host)"),
        "{e}"
    );

    // No request for a refused address ever reached the server, by any path.
    for path in [
        "?direct",
        "?userinfo",
        "?redirected",
        "?linked",
        "?scripted",
        "?framed",
        "?popup",
        "?typed",
        "?after-restart",
        "?typed-after-restart",
        "?blocked",
    ] {
        assert!(
            !asked(&fixtures, &refused, path),
            "{path} reached the server: {:?}",
            fixtures.requests()
        );
    }
    // An open policy again: the host loads.
    set_policy(&backend, json!({})).await?;
    backend.navigate(tab, &away("hello.html?open")).await?;
    assert!(asked(&fixtures, &refused, "?open"));
    Ok(())
}

/// A link with `target=_blank` on a group page opens a tab whose first request leaves before
/// the worker can know the tab: the rules for tabs a group tab's page opens refuse it all the
/// same (each of ten attempts), and report it. A person's own tab on the same site is not held
/// to the policy: its link loads, and a new tab it opens that those rules caught before the
/// worker knew it is loaded again at once.
#[tokio::test]
async fn a_tab_a_group_page_opens_is_held_to_the_policy_from_its_first_request() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;
    let (tab, _) = backend.first_tab().await?;
    let port = fixtures.addr().port();
    let allowed = format!("127.0.0.1:{port}");
    let refused = format!("localhost:{port}");
    let page = |path: &str| format!("http://{allowed}/{path}");
    let away = |path: &str| format!("http://{refused}/{path}");
    let with_link = |to: &str| {
        page(&format!(
            "policy.html?to={}",
            browser_operator_e2e::percent_encode(to)
        ))
    };
    backend.navigate(tab, &page("hello.html")).await?;
    let worker = browser.worker().await?;
    set_policy(&backend, json!({"allowedHosts": ["127.0.0.1"]})).await?;

    let attempts = 10;
    let mut reached = Vec::new();
    for i in 0..attempts {
        let marker = format!("?blank-{i}");
        let to = away(&format!("hello.html{marker}"));
        if opened_from_link(&backend, &worker, &fixtures, tab, &with_link(&to), &marker).await? {
            reached.push(i);
        }
    }
    assert!(
        reached.is_empty(),
        "{} of {attempts} new tabs reached the refused host: attempts {reached:?}",
        reached.len()
    );
    // A blocked list: the same, with a trailing dot too (the browser's own domain matching).
    set_policy(&backend, json!({"blockedHosts": ["localhost"]})).await?;
    for (to, marker) in [
        (away("hello.html?blocked-blank"), "?blocked-blank"),
        (
            format!("http://localhost.:{port}/hello.html?dot-blank"),
            "?dot-blank",
        ),
    ] {
        let reached =
            opened_from_link(&backend, &worker, &fixtures, tab, &with_link(&to), marker).await?;
        assert!(!reached, "{to} reached the server");
    }

    // A person's tab on the same site: its own link loads, and a new tab it opens, caught by the
    // rules before the worker knew it, is loaded again and never reported as the policy's.
    let person = browser
        .open_window(&with_link(&away("hello.html?person-same")))
        .await?;
    person.click("#away").await?;
    until("the person's link loaded", WAIT, || async {
        Ok(asked(&fixtures, &refused, "?person-same"))
    })
    .await?;
    let person = browser
        .open_window(&with_link(&away("hello.html?person-blank")))
        .await?;
    // Which navigations a request rule refused, as the worker hears of them.
    worker
        .eval("self.refusedForTest = []; chrome.webNavigation.onErrorOccurred.addListener((d) => self.refusedForTest.push(d.url)); true")
        .await?;
    person.click("#blank").await?;
    until("the person's new tab loaded", WAIT, || async {
        Ok(asked(&fixtures, &refused, "?person-blank"))
    })
    .await?;
    // It was caught (its first request refused before the worker knew the tab), then loaded.
    let caught = worker.eval("self.refusedForTest").await?;
    assert!(
        caught.as_array().is_some_and(|c| c
            .iter()
            .any(|u| u.as_str().is_some_and(|u| u.contains("?person-blank")))),
        "the person's new tab was not caught by the rules, so its repair went untested: {caught}"
    );
    let changes = pending(&worker).await?;
    assert!(
        !changes
            .iter()
            .any(|c| c["url"].as_str().is_some_and(|u| u.contains("?person"))),
        "a person's navigation reported as refused: {changes:?}"
    );
    // The group tab's new tabs are still refused after all that.
    let to = away("hello.html?blank-after");
    let reached = opened_from_link(
        &backend,
        &worker,
        &fixtures,
        tab,
        &with_link(&to),
        "?blank-after",
    )
    .await?;
    assert!(!reached, "{to} reached the server");

    // The state report's policy marker: the policy's, 16 hex digits. The browser empties its
    // session storage when it quits, and the policy with it: the marker says so (a worker that
    // starts with no stored policy), and a driver sends it again.
    let set = marker(&backend).await?;
    assert!(
        set.as_str()
            .is_some_and(|m| m.len() == 16 && m.bytes().all(|b| b.is_ascii_hexdigit())),
        "{set}"
    );
    worker
        .eval("chrome.storage.session.remove('policy').then(() => true)")
        .await?;
    worker.detach().await?;
    browser.stop_worker().await?;
    backend
        .caller()
        .command_when_connected("browser_state", json!({}), Duration::from_secs(60))
        .await?;
    until("the marker says no policy", WAIT, || async {
        Ok(marker(&backend).await? == Value::Null)
    })
    .await?;
    set_policy(&backend, json!({"blockedHosts": ["localhost"]})).await?;
    assert_eq!(
        marker(&backend).await?,
        set,
        "the same policy, the same marker"
    );
    set_policy(&backend, json!({})).await?;
    let open = marker(&backend).await?;
    assert!(open.is_string() && open != set, "{open}");
    Ok(())
}

/// Opens `start` in the group tab and clicks its `target=_blank` link, whose address carries
/// `marker`; waits until the new tab's navigation is refused or its request reaches the
/// fixture server, and answers whether it reached it. The other tabs are closed afterwards.
async fn opened_from_link(
    backend: &Backend,
    worker: &Session,
    fixtures: &FixtureServer,
    tab: i64,
    start: &str,
    marker: &str,
) -> Result<bool> {
    backend.navigate(tab, start).await?;
    let link = ref_of(backend, tab, "Open in a new tab link", "Open in a new tab").await?;
    backend
        .text(
            "computer",
            json!({"tabId": tab, "action": "left_click", "ref": link}),
        )
        .await?;
    let reached = || fixtures.requests().iter().any(|r| r.contains(marker));
    until("the new tab refused or its request sent", WAIT, || async {
        Ok(reached()
            || pending(worker).await?.iter().any(|c| {
                c["type"] == "navigation_refused"
                    && c["url"].as_str().is_some_and(|u| u.contains(marker))
            }))
    })
    .await?;
    let reached = reached();
    worker
        .eval(&format!(
            "chrome.tabs.query({{}}).then(ts => Promise.all(ts.filter(t => t.id !== {tab}).map(t => chrome.tabs.remove(t.id)))).then(() => true)"
        ))
        .await?;
    Ok(reached)
}

/// The policy marker of a state report (`browser_state`'s `policy`).
async fn marker(backend: &Backend) -> Result<Value> {
    let text = backend.text("browser_state", json!({})).await?;
    let state: Value = serde_json::from_str(&text)
        .map_err(|e| Error::new(format!("browser_state answered {text}: {e}")))?;
    state
        .get("policy")
        .cloned()
        .ok_or_else(|| Error::new(format!("no policy marker in {text}")))
}

/// Issue 16's dialogs and downloads: "dismiss" and "accept" answer a dialog at once (the call it
/// blocked goes on) and report it; a page reopening dialogs in a loop gets a bounded number
/// answered, then the dialog stays open and commands say so at once; downloads are reported
/// started, finished (name, size, and the path only where the policy allows) and failed, and one
/// that never finishes holds nothing up.
#[tokio::test]
async fn dialogs_and_downloads_are_answered_and_reported_by_the_policy() -> Result<()> {
    let (fixtures, backend, browser) = connected().await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("policy.html")).await?;
    let worker = browser.worker().await?;

    set_policy(&backend, json!({"dialogs": "dismiss"})).await?;
    assert_eq!(
        backend.js(tab, "String(confirm('Really?'))").await?,
        "false"
    );
    set_policy(&backend, json!({"dialogs": "accept"})).await?;
    assert_eq!(backend.js(tab, "prompt('Name?', 'Ann')").await?, "Ann");
    until("both dialogs reported", WAIT, || async {
        let c = pending(&worker).await?;
        Ok(c.contains(&json!({"type": "dialog_dismissed", "tabId": tab, "kind": "confirm", "message": "Really?", "accepted": false}))
            && c.contains(&json!({"type": "dialog_dismissed", "tabId": tab, "kind": "prompt", "message": "Name?", "accepted": true})))
    })
    .await?;

    // A page that reopens its dialog forever: a bounded number answered, then it stays open and
    // the next command says so at once.
    backend
        .js(
            tab,
            "setTimeout(() => { for (let i = 0; i < 100000; i++) alert('loop ' + i); }, 0); 'looping'",
        )
        .await?;
    until("the dialog loop left a dialog open", WAIT, || async {
        let e = backend
            .command("javascript_tool", json!({"tabId": tab, "text": "1 + 1"}))
            .await?;
        Ok(format!("{e:?}").contains("A JavaScript alert dialog is open"))
    })
    .await?;
    // The confirm and the prompt above count too: 20 in 10 s on the tab.
    let answered = pending(&worker)
        .await?
        .iter()
        .filter(|c| c["type"] == "dialog_dismissed" && c["tabId"] == tab)
        .count();
    assert_eq!(
        answered, 20,
        "the policy answers at most 20 dialogs of a tab in 10 s"
    );
    backend
        .text("tabs_close_mcp", json!({"tabId": tab}))
        .await?;

    // Downloads: finished (with its size; the path only with downloadPaths), failed, stalled.
    let tab = backend.new_tab().await?;
    set_policy(&backend, json!({"downloadPaths": true})).await?;
    backend.navigate(tab, &fixtures.url("policy.html")).await?;
    // Each by a click on the link: Chrome holds a page's second download for the person's
    // permission unless the person (here, input events) interacted with the page.
    let download = |href: String| {
        let backend = &backend;
        async move {
            let set = format!(
                "document.getElementById('file').href = {}; 'set'",
                js_string(&href)
            );
            backend.js(tab, &set).await?;
            let link = ref_of(backend, tab, "Get the file link", "Get the file").await?;
            backend
                .text(
                    "computer",
                    json!({"tabId": tab, "action": "left_click", "ref": link}),
                )
                .await
                .map(drop)
        }
    };
    download(fixtures.url("__download?name=report.txt&size=1234")).await?;
    until("the download reported finished", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "download_completed"
                && c["fileName"] == "report.txt"
                && c["sizeBytes"] == 1234
                // "report (1).txt" where a report.txt exists.
                && c["path"]
                    .as_str()
                    .is_some_and(|p| p.contains("/report") && p.ends_with(".txt"))
        }))
    })
    .await?;
    let changes = pending(&worker).await?;
    assert!(
        changes
            .iter()
            .any(|c| c["type"] == "download_started" && c["fileName"] == "report.txt"),
        "{changes:?}"
    );
    set_policy(&backend, json!({})).await?;
    download(fixtures.url("__download?name=second.txt&size=10")).await?;
    until(
        "the second download reported without its path",
        WAIT,
        || async {
            Ok(pending(&worker).await?.iter().any(|c| {
                c["type"] == "download_completed"
                    && c["fileName"] == "second.txt"
                    && c.get("path").is_none()
            }))
        },
    )
    .await?;
    download(fixtures.url("__download-broken")).await?;
    until("the broken download reported failed", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "download_failed"
                && c["url"]
                    .as_str()
                    .is_some_and(|u| u.contains("__download-broken"))
        }))
    })
    .await?;
    download(fixtures.url("__download-404")).await?;
    until(
        "the download of a missing file reported failed",
        WAIT,
        || async {
            Ok(pending(&worker).await?.iter().any(|c| {
                c["type"] == "download_failed"
                    && c["url"]
                        .as_str()
                        .is_some_and(|u| u.contains("__download-404"))
            }))
        },
    )
    .await?;
    download(fixtures.url("__download-stalled")).await?;
    until("the stalled download reported started", WAIT, || async {
        Ok(pending(&worker).await?.iter().any(|c| {
            c["type"] == "download_started"
                && c["url"]
                    .as_str()
                    .is_some_and(|u| u.contains("__download-stalled"))
        }))
    })
    .await?;
    // It never finishes, and holds nothing up.
    assert_eq!(backend.js(tab, "6 * 7").await?, "42");
    let changes = pending(&worker).await?;
    assert!(
        !changes.iter().any(|c| c["type"] != "download_started"
            && c["url"]
                .as_str()
                .is_some_and(|u| u.contains("__download-stalled"))),
        "{changes:?}"
    );
    // What the downloads left on disk goes.
    worker
        .eval("chrome.downloads.search({}).then(items => Promise.all(items.map(i => chrome.downloads.cancel(i.id).catch(() => {}).then(() => chrome.downloads.removeFile(i.id)).catch(() => {})))).then(() => true)")
        .await?;

    // A dialog that opens while no command runs: Chrome reports it only to a debugger attached
    // when it opened, so while the policy answers dialogs the group's tabs stay attached (a
    // policy that starts answering them attaches them), and no dialog hangs a page. The page
    // opens its dialog when another page of its site (a person's tab) says so.
    let tab = backend.new_tab().await?;
    backend.navigate(tab, &fixtures.url("policy.html")).await?;
    backend
        .js(
            tab,
            "new BroadcastChannel('dialogs').onmessage = (e) => { window.answered = String(confirm(e.data)); }; 'listening'",
        )
        .await?;
    let attached = |want: bool| {
        let worker = &worker;
        async move {
            let v = worker
                .eval(&format!(
                    "chrome.debugger.getTargets().then(ts => ts.some(t => t.tabId === {tab} && t.attached))"
                ))
                .await?;
            Ok::<bool, Error>(v == json!(want))
        }
    };
    worker.set_idle_seconds(1).await?;
    set_policy(&backend, json!({})).await?;
    until("the idle tab detached", WAIT, || attached(false)).await?;
    set_policy(&backend, json!({"dialogs": "dismiss"})).await?;
    until("the tab attached for its dialogs", WAIT, || attached(true)).await?;
    let person = browser.open_page(&fixtures.url("hello.html")).await?;
    let say = |message: &'static str| {
        let person = &person;
        async move {
            person
                .eval(&format!(
                    "new BroadcastChannel('dialogs').postMessage({}); true",
                    js_string(message)
                ))
                .await
                .map(drop)
        }
    };
    let reported = |message: &'static str| {
        let worker = &worker;
        async move {
            Ok::<bool, Error>(pending(worker).await?.contains(&json!({"type": "dialog_dismissed", "tabId": tab, "kind": "confirm", "message": message, "accepted": false})))
        }
    };
    say("While idle?").await?;
    until("the dialog answered while idle", WAIT, || {
        reported("While idle?")
    })
    .await?;
    // Several idle periods later, no command since: still attached, and answered again.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert!(
        attached(true).await?,
        "an idle group tab detached while the policy answers dialogs"
    );
    say("Still?").await?;
    until("the dialog answered after idle periods", WAIT, || {
        reported("Still?")
    })
    .await?;
    assert_eq!(backend.js(tab, "window.answered").await?, "false");
    // Asking again (dialogs wait for handle_dialog): idle tabs are detached as before.
    set_policy(&backend, json!({})).await?;
    until("the idle tab detached again", WAIT, || attached(false)).await?;
    worker.set_idle_seconds(300).await?;
    Ok(())
}
