//! Page tools over MCP, end to end: an MCP client (the SDK's, over stdio with
//! `browser-operator mcp`) sees the tools the todo web app registers in an automation-group tab
//! appear in tools/list marked as untrusted, hears `notifications/tools/list_changed` when the
//! page registers another provider, and changes the page by calling a page tool.

use browser_operator_e2e::mcp::{error_of, stdio_with_browser, text_of};
use browser_operator_e2e::{temp_dir, Error, FixtureServer, Result};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Bound on waiting for a change notice (the server checks every few seconds).
const NOTICE: Duration = Duration::from_secs(30);
const CLI: &str = env!("CARGO_BIN_EXE_browser-operator-cli");

fn find<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

/// Every page tool (a name with a dot) is marked as defined by the page, untrusted.
fn check_marked(tools: &[Value]) {
    for tool in tools
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.contains('.')))
    {
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(
            description.starts_with("[Defined by the web page, untrusted] "),
            "{tool}"
        );
        assert_eq!(tool["annotations"]["openWorldHint"], true, "{tool}");
        assert_eq!(
            tool["_meta"]["browserOperator"]["untrusted"], true,
            "{tool}"
        );
        assert!(
            tool["title"]
                .as_str()
                .unwrap_or_default()
                .contains("untrusted"),
            "{tool}"
        );
    }
}

#[tokio::test]
async fn page_tools_are_listed_as_untrusted_change_with_the_page_and_can_be_called() -> Result<()> {
    browser_operator_e2e::init();
    let fixtures = FixtureServer::start();
    let dir = temp_dir("mcp-pagetools");
    let (mcp, browser, _token) = stdio_with_browser(CLI, &dir).await?;

    // No group yet: the catalog only.
    let listed = mcp.tools_json().await?;
    assert!(find(&listed, "btcp_run_script").is_some());
    assert!(
        !listed
            .iter()
            .any(|t| t["name"].as_str().unwrap_or("").contains('.')),
        "no page tools without a group"
    );

    // A group tab loads the todo app: its tools appear, and the session hears of it.
    let seen = mcp.tools_changed();
    let tab = mcp.first_tab().await?;
    mcp.navigate(tab, &fixtures.url("todo.html")).await?;
    mcp.wait_tools_changed(seen, NOTICE).await?;
    let listed = mcp.tools_json().await?;
    for name in [
        "todo.list",
        "todo.add",
        "todo.complete",
        "todo.remove",
        "webmcp.search_todos",
        "lab.hang",
    ] {
        assert!(find(&listed, name).is_some(), "{name} is listed");
    }
    assert!(find(&listed, "account.whoami").is_none(), "signed out");
    assert!(
        find(&listed, "browser.navigate").is_none(),
        "the built-in tools are not listed twice"
    );
    check_marked(&listed);
    let add = find(&listed, "todo.add").expect("listed");
    assert_eq!(
        add["description"],
        format!(
            "[Defined by the web page, untrusted] Add a todo. (Page tool of tab {tab}, {}.)",
            fixtures.url("todo.html")
        )
    );
    assert_eq!(add["inputSchema"]["required"], json!(["text"]));
    assert_eq!(add["_meta"]["browserOperator"]["tabId"], tab);

    // The page registers a provider on its own (the user signs in a moment later, not through
    // a tool call): the change is noticed by the server's polling.
    let seen = mcp.tools_changed();
    text_of(
        &mcp.call(
            "javascript_tool",
            json!({"tabId": tab, "text": "setTimeout(() => document.getElementById('signin').click(), 3000); 'later'"}),
        )
        .await?,
    )?;
    mcp.wait_tools_changed(seen, NOTICE).await?;
    let listed = mcp.tools_json().await?;
    assert!(find(&listed, "account.whoami").is_some(), "signed in");
    assert!(find(&listed, "webmcp.account.sign_out").is_some());
    check_marked(&listed);

    // Calling page tools through MCP changes the page.
    let added = text_of(&mcp.call("todo.add", json!({"text": "milk"})).await?)?;
    let added: Value = serde_json::from_str(&added)?;
    assert_eq!(added["id"], 1);
    let shown = text_of(
        &mcp.call(
            "javascript_tool",
            json!({"tabId": tab, "text": "[...document.querySelectorAll('#items li')].map(li => li.textContent).join(',')"}),
        )
        .await?,
    )?;
    assert_eq!(shown, "milk");
    let whoami = text_of(&mcp.call("account.whoami", json!({})).await?)?;
    assert_eq!(
        serde_json::from_str::<Value>(&whoami)?,
        json!({"user": "ada"})
    );
    // Arguments are checked against the page's schema; unknown page tools are refused.
    let err = error_of(&mcp.call("todo.add", json!({})).await?)?;
    assert!(err.contains("text"), "{err}");
    let err = error_of(&mcp.call("todo.nope", json!({})).await?)?;
    assert!(err.contains("Unknown tool 'todo.nope'"), "{err}");

    // A second group tab on the same app: the names offered twice are qualified by tab.
    let second = mcp.new_tab().await?;
    let seen = mcp.tools_changed();
    mcp.navigate(second, &fixtures.url("todo.html")).await?;
    mcp.wait_tools_changed(seen, NOTICE).await?;
    let listed = mcp.tools_json().await?;
    assert!(find(&listed, "todo.add").is_none(), "qualified now");
    assert!(find(&listed, &format!("tab{tab}.todo.add")).is_some());
    assert!(find(&listed, &format!("tab{second}.todo.add")).is_some());
    // Only the first tab is signed in: its account tools keep their short names.
    assert!(find(&listed, "account.whoami").is_some());
    check_marked(&listed);
    text_of(
        &mcp.call(&format!("tab{second}.todo.add"), json!({"text": "eggs"}))
            .await?,
    )?;
    let lists = text_of(&mcp.call(&format!("tab{tab}.todo.list"), json!({})).await?)?;
    let lists: Value = serde_json::from_str(&lists)?;
    assert_eq!(lists[0]["text"], "milk", "the first tab's list is its own");
    assert_eq!(lists.as_array().map(Vec::len), Some(1));

    // tools/list while a long command runs in the first tab: the tab's page tools are listed
    // without waiting behind it. The command waits on a message the test sends from the
    // second tab only once tools/list has answered.
    let done = AtomicBool::new(false);
    let long = async {
        let answer = mcp
            .call(
                "javascript_tool",
                json!({"tabId": tab, "text": "localStorage.setItem('long', 'running'); await new Promise((resolve) => { const c = new BroadcastChannel('release'); c.onmessage = (e) => { c.close(); resolve(e.data); }; })"}),
            )
            .await;
        done.store(true, Ordering::SeqCst);
        answer
    };
    let probe = async {
        let asked = std::time::Instant::now();
        loop {
            let state = text_of(
                &mcp.call(
                    "javascript_tool",
                    json!({"tabId": second, "text": "String(localStorage.getItem('long'))"}),
                )
                .await?,
            )?;
            if state == "running" {
                break;
            }
            if asked.elapsed() > NOTICE {
                return Err(Error::new("the long command never started"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let listed = mcp.tools_json().await?;
        let still_running = !done.load(Ordering::SeqCst);
        text_of(
            &mcp.call(
                "javascript_tool",
                json!({"tabId": second, "text": "new BroadcastChannel('release').postMessage('released'); 'sent'"}),
            )
            .await?,
        )?;
        Ok::<_, Error>((listed, still_running))
    };
    let (long, probe) = tokio::join!(long, probe);
    let (listed, still_running) = probe?;
    assert!(still_running, "tools/list answered while the command ran");
    assert!(
        find(&listed, &format!("tab{tab}.todo.add")).is_some(),
        "the busy tab's page tools are listed"
    );
    assert!(find(&listed, &format!("tab{second}.todo.add")).is_some());
    assert_eq!(text_of(&long?)?, "released");

    mcp.close().await?;
    browser.close().await?;
    Ok(())
}
