//! Client-defined tools end to end: a todo web app registers a BTCP provider and a WebMCP tool;
//! a backend discovers and calls them over the protocol (WebSocket transport, real server) and
//! runs code-mode scripts; escape attempts fail cleanly while the worker keeps serving.

use browser_operator_e2e::{connected_over, Backend, Browser, FixtureServer, Result};
use serde_json::{json, Value};
use std::time::Duration;

struct Setup {
    fixtures: FixtureServer,
    backend: Backend,
    browser: Browser,
    tab: i64,
}

/// A connected browser whose automation group has one tab on the todo app.
async fn todo_app() -> Result<Setup> {
    todo_app_over("websocket").await
}

/// The same, connected over `transport` ("websocket", "sse-http", "http-poll", …).
async fn todo_app_over(transport: &str) -> Result<Setup> {
    let (fixtures, backend, browser) = connected_over(transport).await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("todo.html")).await?;
    Ok(Setup {
        fixtures,
        backend,
        browser,
        tab,
    })
}

impl Setup {
    async fn json(&self, tool: &str, args: Value) -> Result<Value> {
        Ok(serde_json::from_str(&self.backend.text(tool, args).await?)?)
    }

    /// Evaluates in the app's page (as the page itself would).
    async fn page(&self, expr: &str) -> Result<String> {
        self.backend.js(self.tab, expr).await
    }

    async fn call(&self, namespace: &str, method: &str, args: Value) -> Result<Value> {
        self.json(
            "btcp_call",
            json!({"tabId": self.tab, "namespace": namespace, "method": method, "args": args}),
        )
        .await
    }

    async fn call_error(&self, namespace: &str, method: &str, args: Value) -> Result<String> {
        self.backend
            .error(
                "btcp_call",
                json!({"tabId": self.tab, "namespace": namespace, "method": method, "args": args}),
            )
            .await
    }

    async fn script(&self, script: &str) -> Result<Value> {
        self.json(
            "btcp_run_script",
            json!({"tabId": self.tab, "script": script}),
        )
        .await
    }

    /// The first line of a failing script's error (the rest is the console and call trace).
    async fn script_error(&self, script: &str, timeout_ms: u32) -> Result<String> {
        eprintln!("script: {script}");
        let e = self
            .backend
            .error(
                "btcp_run_script",
                json!({"tabId": self.tab, "script": script, "timeoutMs": timeout_ms}),
            )
            .await?;
        let first = e.lines().next().unwrap_or("").to_string();
        eprintln!("  → {first}");
        Ok(first)
    }

    async fn namespaces(&self) -> Result<Vec<String>> {
        let all = self
            .json("btcp_interfaces", json!({"tabId": self.tab}))
            .await?;
        Ok(all["namespaces"]
            .as_array()
            .expect("namespaces")
            .iter()
            .map(|n| n["namespace"].as_str().unwrap_or("").to_string())
            .collect())
    }

    /// A trivial command still answers.
    async fn still_serving(&self) -> Result<()> {
        let ctx = self.backend.text("tabs_context_mcp", json!({})).await?;
        assert!(ctx.contains(&format!("\"tabId\":{}", self.tab)), "{ctx}");
        Ok(())
    }
}

#[tokio::test]
async fn pages_offer_tools_that_agents_discover_and_call() -> Result<()> {
    let s = todo_app().await?;

    // Discovery: the page's namespaces after the built-in "browser".
    let all = s.json("btcp_interfaces", json!({"tabId": s.tab})).await?;
    assert_eq!(s.namespaces().await?, ["browser", "todo", "webmcp", "lab"]);
    let todo = &all["namespaces"][1];
    assert_eq!(todo["source"], "btcp");
    assert_eq!(todo["interface"]["version"], "1.0.0");
    let methods: Vec<&str> = todo["interface"]["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(methods, ["list", "add", "complete", "remove"]);
    assert_eq!(all["namespaces"][2]["source"], "webmcp");
    assert_eq!(
        all["namespaces"][2]["interface"]["methods"][0]["annotations"]["readOnlyHint"],
        true
    );
    let browser_methods = all["namespaces"][0]["interface"]["methods"].to_string();
    assert!(
        browser_methods.contains("\"navigate\""),
        "{browser_methods}"
    );

    // One namespace, as declarations a model reads, and as JSON.
    let ts = s
        .backend
        .text(
            "btcp_get_interface",
            json!({"tabId": s.tab, "namespace": "todo"}),
        )
        .await?;
    assert!(
        ts.starts_with(
            "/** Todo list v1.0.0. The todo items of this page. */\ndeclare namespace todo {"
        ),
        "{ts}"
    );
    assert!(
        ts.contains("  /** Add a todo. */\n  function add(args: {\n    /** What needs doing. */\n    text: string;\n  }): Promise<{\n    id?: number;\n  }>;"),
        "{ts}"
    );
    assert!(
        ts.contains(
            "function list(args?: {\n    filter?: \"all\" | \"open\" | \"done\";\n  }): Promise<{"
        ),
        "{ts}"
    );
    let json_iface = s
        .json(
            "btcp_get_interface",
            json!({"tabId": s.tab, "namespace": "webmcp", "format": "json"}),
        )
        .await?;
    assert_eq!(json_iface["methods"][0]["name"], "search_todos");
    let e = s
        .backend
        .error(
            "btcp_get_interface",
            json!({"tabId": s.tab, "namespace": "gmail"}),
        )
        .await?;
    assert_eq!(
        e,
        "This tab has no tool namespace \"gmail\". Namespaces: browser, todo, webmcp, lab."
    );

    // Calls change the app, as the user sees it.
    assert_eq!(
        s.call("todo", "add", json!({"text": "Buy milk"})).await?,
        json!({"id": 1})
    );
    assert_eq!(
        s.call("todo", "add", json!({"text": "Walk the dog"}))
            .await?,
        json!({"id": 2})
    );
    assert_eq!(
        s.call("todo", "complete", json!({"id": 2})).await?,
        json!({"id": 2, "done": true})
    );
    assert_eq!(
        s.page("[...document.querySelectorAll('#items li')].map(li => li.textContent + (li.className ? ' (' + li.className + ')' : '')).join(', ')")
            .await?,
        "Buy milk, Walk the dog (done)"
    );
    assert_eq!(
        s.call("webmcp", "search_todos", json!({"query": "milk"}))
            .await?,
        json!(["Buy milk"])
    );
    // The built-in tools are a namespace too; tabId defaults to the tab.
    assert_eq!(
        s.backend
            .text(
                "btcp_call",
                json!({"tabId": s.tab, "namespace": "browser", "method": "javascript_tool", "args": {"text": "document.title"}}),
            )
            .await?,
        "Fixture: todo"
    );

    // Arguments are checked against the method's schema before the page sees them.
    assert_eq!(
        s.call_error("todo", "add", json!({})).await?,
        "todo.add: Missing required argument `text` (string)."
    );
    assert_eq!(
        s.call_error("todo", "add", json!({"text": 5})).await?,
        "todo.add: Invalid argument `text`: expected string, got 5."
    );
    assert_eq!(
        s.call_error("todo", "rename", json!({})).await?,
        "The namespace todo has no method \"rename\". Methods: list, add, complete, remove."
    );
    assert_eq!(
        s.call_error("todo", "complete", json!({"id": 99})).await?,
        "todo.complete failed: No todo with id 99"
    );
    assert_eq!(
        s.call_error("lab", "boom", json!({})).await?,
        "lab.boom failed: the lab exploded"
    );
    assert_eq!(
        s.backend
            .error("btcp_call", json!({"tabId": s.tab, "namespace": "todo"}))
            .await?,
        "Missing required argument `method` (string)."
    );
    assert_eq!(
        s.page("document.querySelectorAll('#items li').length")
            .await?,
        "2"
    );

    // Registration follows the user's state: signing in adds a namespace, signing out removes it.
    let before = s.json("btcp_interfaces", json!({"tabId": s.tab})).await?["revision"]
        .as_u64()
        .expect("revision");
    s.page("document.getElementById('signin').click()").await?;
    assert_eq!(
        s.namespaces().await?,
        ["browser", "todo", "webmcp", "lab", "account"]
    );
    let after = s.json("btcp_interfaces", json!({"tabId": s.tab})).await?["revision"]
        .as_u64()
        .expect("revision");
    assert!(after > before, "{before} → {after}");
    assert_eq!(
        s.call("account", "whoami", json!({})).await?,
        json!({"user": "ada"})
    );
    let webmcp = s
        .backend
        .text(
            "btcp_get_interface",
            json!({"tabId": s.tab, "namespace": "webmcp"}),
        )
        .await?;
    assert!(
        webmcp.contains("  /** Sign the user out. */\n  // call as webmcp[\"account.sign_out\"](args)\n  const \"account.sign_out\": (args?: {}) => Promise<unknown>;"),
        "{webmcp}"
    );
    // Signing out through the page's own WebMCP tool aborts its signal: the tool goes too.
    assert_eq!(
        s.backend
            .text(
                "btcp_call",
                json!({"tabId": s.tab, "namespace": "webmcp", "method": "account.sign_out"}),
            )
            .await?,
        "undefined"
    );
    assert_eq!(
        s.page("document.getElementById('user').textContent")
            .await?,
        "Signed out"
    );
    assert_eq!(s.namespaces().await?, ["browser", "todo", "webmcp", "lab"]);
    let webmcp = s
        .json(
            "btcp_get_interface",
            json!({"tabId": s.tab, "namespace": "webmcp", "format": "json"}),
        )
        .await?;
    assert_eq!(
        webmcp["methods"].as_array().map(Vec::len),
        Some(1),
        "{webmcp}"
    );
    assert_eq!(
        s.call_error("account", "whoami", json!({})).await?,
        "This tab has no tool namespace \"account\". Namespaces: browser, todo, webmcp, lab."
    );

    // A method answers the same whether it answers at once or through a promise (or any
    // thenable); a value that is not JSON fails the same way on both paths.
    s.page(
        r#"window.oddHandle = btcp.registerProvider({namespace: 'odd', getInterface: () => ({name: 'Odd', version: '1', methods: ['now', 'later', 'thenable', 'bigNow', 'bigLater', 'nothing'].map((name) => ({name, description: name, inputSchema: {type: 'object'}}))}), getAPI: () => ({now: () => ({a: [1]}), later: async () => ({a: [1]}), thenable: () => ({then(r) { r(7); }}), bigNow: () => 1n, bigLater: async () => 1n, nothing: () => undefined})}); 'ok'"#,
    )
    .await?;
    assert_eq!(s.call("odd", "now", json!({})).await?, json!({"a": [1]}));
    assert_eq!(s.call("odd", "later", json!({})).await?, json!({"a": [1]}));
    assert_eq!(s.call("odd", "thenable", json!({})).await?, json!(7));
    assert_eq!(
        s.backend
            .text(
                "btcp_call",
                json!({"tabId": s.tab, "namespace": "odd", "method": "nothing"})
            )
            .await?,
        "undefined"
    );
    for method in ["bigNow", "bigLater"] {
        let e = s.call_error("odd", method, json!({})).await?;
        assert!(
            e.starts_with(&format!(
                "odd.{method} failed: odd.{method} returned a value that is not JSON ("
            )),
            "{e}"
        );
    }
    let report = s
        .script("const a = await odd.now(); const b = await odd.thenable(); return [a, b];")
        .await?;
    assert_eq!(report["result"], json!([{"a": [1]}, 7]));
    assert_eq!(s.page("oddHandle.unregister()").await?, "true");

    // Other page scripts can't take over or swap a registered provider.
    let tamper = s
        .page(
            r#"const out = [];
            todoApi.add = () => ({id: 'evil'});
            try { btcp.registerProvider({namespace: 'todo', getInterface: () => ({name: 'x', version: '1', methods: [{name: 'add', description: 'x', inputSchema: {type: 'object'}}]}), getAPI: () => ({add: () => 'evil'})}); out.push('re-registered'); } catch (e) { out.push(e.message); }
            out.push(btcp.unregisterProvider({namespace: 'todo'}));
            const original = window.btcp, invoke = btcp.__invoke;
            window.btcp = {}; delete window.btcp; btcp.__invoke = () => 1;
            out.push(window.btcp === original && btcp.__invoke === invoke ? 'btcp unchanged' : 'btcp changed');
            try { document.modelContext.registerTool({name: 'search_todos', description: 'x', execute() {}}); out.push('dup'); } catch (e) { out.push(e.message); }
            out.push(navigator.modelContext === document.modelContext);
            out"#,
        )
        .await?;
    let tamper: Value = serde_json::from_str(&tamper)?;
    assert_eq!(
        tamper,
        json!([
            "btcp: namespace todo is already registered",
            false,
            "btcp unchanged",
            "registerTool: a tool named search_todos is already registered",
            true
        ])
    );
    assert_eq!(
        s.call("todo", "add", json!({"text": "Still real"})).await?,
        json!({"id": 3})
    );
    assert_eq!(
        s.page("document.querySelector('#items li:last-child').textContent")
            .await?,
        "Still real"
    );

    // Nor by patching the built-ins the registry uses after it loaded.
    s.page("Map.prototype.get = () => undefined; Map.prototype.forEach = () => {}; Map.prototype.has = () => false; JSON.stringify = () => '{}'; JSON.parse = () => ({}); Array.prototype[Symbol.iterator] = function* () {}; Reflect.apply = () => 'evil'; setTimeout = () => 0; 'patched'")
        .await?;
    assert_eq!(s.namespaces().await?, ["browser", "todo", "webmcp", "lab"]);
    assert_eq!(
        s.call("todo", "add", json!({"text": "After patching"}))
            .await?,
        json!({"id": 4})
    );
    Ok(())
}

#[tokio::test]
async fn code_mode_runs_a_ten_step_workflow_in_one_command() -> Result<()> {
    let s = todo_app().await?;
    s.call("todo", "add", json!({"text": "Buy milk"})).await?;

    let out = s
        .script(
            r#"
            const names = Object.keys(__interfaces);
            const addDoc = __getToolInterface('todo').methods.find(m => m.name === 'add').description;
            const open = await todo.list({filter: 'open'});                       // 1
            for (const text of ['Write report', 'Call Bob', 'Buy milk']) {        // 2, 3
                if (!open.some(i => i.text === text)) await todo.add({text});
            }
            const items = await todo.list();                                      // 4
            for (const i of items) {                                              // 5, 6
                if (i.text.startsWith('Call') || i.text.startsWith('Buy')) await todo.complete({id: i.id});
            }
            const found = await webmcp.search_todos({query: 'report'});           // 7
            const title = await browser.javascript_tool({text: 'document.title'}); // 8
            const shown = await browser.javascript_tool({text: "document.querySelectorAll('#items li.done').length"}); // 9
            const done = await todo.list({filter: 'done'});                       // 10
            console.log('completed', done.length, 'of', items.length);
            console.warn({found});
            return {names, addDoc, found, title, shown: Number(shown), done: done.map(d => d.text)};
            "#,
        )
        .await?;
    assert_eq!(
        out["result"],
        json!({
            "names": ["browser", "todo", "webmcp", "lab"],
            "addDoc": "Add a todo.",
            "found": ["Write report"],
            "title": "Fixture: todo",
            "shown": 2,
            "done": ["Buy milk", "Call Bob"]
        })
    );
    assert_eq!(
        out["console"],
        json!(["completed 2 of 3", "warn: {\"found\":[\"Write report\"]}"])
    );
    let calls: Vec<&str> = out["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["call"].as_str())
        .collect();
    assert_eq!(
        calls,
        [
            "todo.list",
            "todo.add",
            "todo.add",
            "todo.list",
            "todo.complete",
            "todo.complete",
            "webmcp.search_todos",
            "browser.javascript_tool",
            "browser.javascript_tool",
            "todo.list"
        ]
    );
    assert_eq!(out["calls"][1]["args"], json!({"text": "Write report"}));
    assert!(out["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .all(|c| c["ok"] == true));
    // The app changed as the user sees it.
    assert_eq!(
        s.page("[...document.querySelectorAll('#items li')].map(li => li.textContent + (li.className ? '*' : '')).join(', ')")
            .await?,
        "Buy milk*, Write report, Call Bob*"
    );

    // A failing call inside a script is an exception the script can handle; a schema mistake
    // names the method and argument.
    let out = s
        .script("try { await todo.add({}); } catch (e) { return e.message; }")
        .await?;
    assert_eq!(
        out["result"],
        "todo.add: Missing required argument `text` (string)."
    );
    let out = s.script("console.log('nothing to return');").await?;
    assert!(out.get("result").is_none(), "{out}");
    assert_eq!(out["console"], json!(["nothing to return"]));
    Ok(())
}

#[tokio::test]
async fn escape_attempts_fail_cleanly_and_the_worker_keeps_serving() -> Result<()> {
    let s = todo_app().await?;
    let t = 20_000;

    // Nothing of the browser is in scope.
    let out = s
        .script("return [typeof window, typeof document, typeof chrome, typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof WebAssembly, typeof setTimeout, Object.keys(globalThis)]")
        .await?;
    assert_eq!(
        out["result"],
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            [
                "browser",
                "todo",
                "webmcp",
                "lab",
                "__interfaces",
                "__getToolInterface",
                "console"
            ]
        ])
    );
    let cases: &[(&str, &str)] = &[
        (
            "return document.title",
            "ReferenceError: document is not defined (line 1)",
        ),
        (
            "return window.location.href",
            "ReferenceError: window is not defined (line 1)",
        ),
        (
            "return chrome.runtime.id",
            "ReferenceError: chrome is not defined (line 1)",
        ),
        (
            "return globalThis.chrome.runtime",
            "TypeError: cannot read property 'runtime' of undefined (line 1)",
        ),
        (
            "return todo.add.constructor('return this')()",
            "TypeError: Creating code from strings is not allowed in the sandbox. (line 1)",
        ),
        (
            "return (async () => {}).constructor('return 1')",
            "TypeError: Creating code from strings is not allowed in the sandbox. (line 1)",
        ),
        (
            "return Function('return 1')()",
            "TypeError: Creating code from strings is not allowed in the sandbox. (line 1)",
        ),
        (
            "return eval('1 + 1')",
            "ReferenceError: eval is not defined (line 1)",
        ),
        (
            "return (0, globalThis.eval)('1')",
            "TypeError: not a function (line 1)",
        ),
        (
            "return await fetch('http://127.0.0.1:1/')",
            "ReferenceError: fetch is not defined (line 1)",
        ),
        (
            "return new WebSocket('ws://127.0.0.1:1/')",
            "ReferenceError: WebSocket is not defined (line 1)",
        ),
        (
            "return WebAssembly.compile(new Uint8Array(8))",
            "ReferenceError: WebAssembly is not defined (line 1)",
        ),
        (
            "todo.add = async () => ({id: 'evil'})",
            "TypeError: 'add' is read-only (line 1)",
        ),
        (
            "Object.setPrototypeOf(todo, {list: () => 1})",
            "TypeError: object is not extensible (line 1)",
        ),
        (
            "Object.prototype.list = () => 'polluted'",
            "TypeError: object is not extensible (line 1)",
        ),
        (
            "__interfaces.todo.methods.push({name: 'x'})",
            "TypeError: object is not extensible (line 1)",
        ),
    ];
    for (script, expected) in cases {
        assert_eq!(&s.script_error(script, t).await?, expected, "{script}");
    }
    let e = s
        .script_error("return await import('http://127.0.0.1:1/x.js')", t)
        .await?;
    assert!(e.contains("could not load module"), "{e}");

    // Limits: each stops the script with a message that names the limit.
    // An endless loop is stopped; a command sent meanwhile is answered (once the step ends).
    let (e, served) = tokio::join!(s.script_error("while (true) {}", t), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        s.still_serving().await
    });
    served?;
    assert_eq!(e?, "The script ran for more than 1000 ms without waiting on a tool call (an endless loop?) and was stopped.");
    let e = s
        .script_error(
            "await todo.list(); for (;;) { try { while (true) {} } catch (e) {} }",
            t,
        )
        .await?;
    assert!(e.contains("was stopped"), "{e}");
    let e = s
        .script_error("function f(n) { return f(n + 1) + 1; } return f(0);", t)
        .await?;
    assert!(e.contains("recursion too deep"), "{e}");
    // Recursion through the engine's native paths ends the script too, whichever stack runs
    // out first (the engine's own limit, or the browser's, which ends the isolate).
    for script in [
        "const o = {toString() { return '' + o; }}; return '' + o;",
        "const p = new Proxy({}, {get: (t, k) => p[k]}); return p.x;",
        "let a = []; for (let i = 0; i < 200000; i++) a = [a]; return JSON.stringify(a).length;",
    ] {
        let e = s.script_error(script, t).await?;
        // Building and walking 200,000 levels can outlast the script's 1 s budget on a loaded
        // machine before any stack runs out (seen on a fresh CI run): then the watchdog ends it.
        let deep = script.contains("200000");
        assert!(
            e.contains("stack") || (deep && e.contains("was stopped")),
            "{script}: {e}"
        );
        assert_eq!(s.script("return 1 + 1").await?["result"], 2);
    }
    // Recursion within the limit works and the limit is an exception the script can catch.
    let depth = s
        .script(
            "let d = 0; function f() { d++; f(); } try { f(); } catch (e) { return [d, e.name]; }",
        )
        .await?;
    assert!(depth["result"][0].as_u64().unwrap_or(0) > 100, "{depth}");
    assert_eq!(depth["result"][1], "RangeError");
    let e = s
        .script_error(
            "const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);",
            t,
        )
        .await?;
    assert!(e.contains("memory limit of 32 MB"), "{e}");
    let e = s.script_error("return 'x'.repeat(500000)", t).await?;
    assert_eq!(e, "The return value is 500002 characters of JSON; the limit is 100000. Return less (e.g. a summary or a slice).");
    let e = s
        .script_error("for (let i = 0; ; i++) await todo.list();", t)
        .await?;
    assert!(e.contains("at most 200 tool calls"), "{e}");

    // A tab outside the automation group: refused, from a script as from a command.
    let outside_page = s.browser.open_page(&s.fixtures.url("todo.html")).await?;
    let worker = s.browser.worker().await?;
    let ids = worker
        .eval("chrome.tabs.query({}).then(ts => ts.filter(t => t.groupId === -1).map(t => t.id))")
        .await?;
    worker.detach().await?;
    let outside = ids[0].as_i64().expect("a tab outside the group");
    let e = s
        .script_error(
            &format!("return await browser.javascript_tool({{tabId: {outside}, text: 'document.title = \"owned\"'}})"),
            t,
        )
        .await?;
    assert!(
        e.starts_with(&format!(
            "Error: Tab {outside} is not in the automation tab group."
        )),
        "{e}"
    );
    let e = s
        .backend
        .error(
            "btcp_run_script",
            json!({"tabId": outside, "script": "return await todo.list()"}),
        )
        .await?;
    assert!(
        e.starts_with(&format!(
            "Tab {outside} is not in the automation tab group."
        )),
        "{e}"
    );
    let e = s
        .backend
        .error(
            "btcp_call",
            json!({"tabId": outside, "namespace": "todo", "method": "add", "args": {"text": "x"}}),
        )
        .await?;
    assert!(
        e.starts_with(&format!(
            "Tab {outside} is not in the automation tab group."
        )),
        "{e}"
    );
    assert_eq!(outside_page.eval("document.title").await?, "Fixture: todo");
    assert_eq!(
        outside_page
            .eval("document.querySelectorAll('#items li').length")
            .await?,
        0
    );

    // A page method that never answers: the script is stopped at its time limit, and other
    // commands are answered while it waits.
    let hanging = s.backend.command(
        "btcp_run_script",
        json!({"tabId": s.tab, "script": "await todo.list(); return await lab.hang();", "timeoutMs": 4000}),
    );
    let meanwhile = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let added = s
            .call("todo", "add", json!({"text": "while waiting"}))
            .await?;
        s.still_serving().await?;
        Result::Ok(added)
    };
    let (hung, added) = tokio::join!(hanging, meanwhile);
    assert_eq!(added?, json!({"id": 1}));
    let hung = match hung?.outcome {
        protocol::Outcome::Error { error } => error,
        other => panic!("the hanging script should fail: {other:?}"),
    };
    assert!(hung.contains("lab.hang"), "{hung}");
    assert!(
        hung.contains("\"call\":\"todo.list\""),
        "the trace comes with it: {hung}"
    );

    // Through all of it, the worker kept serving and the app still works.
    s.still_serving().await?;
    assert_eq!(
        s.call("todo", "list", json!({})).await?,
        json!([{"id": 1, "text": "while waiting", "done": false}])
    );
    Ok(())
}

/// Page tools and code mode go through the one dispatch path, so every transport carries them:
/// discovered, called and scripted over SSE + HTTP and long and short polling, and called
/// in-process through the direct transport.
#[tokio::test]
async fn page_tools_work_over_every_transport() -> Result<()> {
    for transport in ["sse-http", "http-poll", "http-short-poll"] {
        let s = todo_app_over(transport).await?;
        let listed = s.json("btcp_interfaces", json!({"tabId": s.tab})).await?;
        assert!(
            listed.to_string().contains("\"todo\""),
            "{transport}: {listed}"
        );
        assert_eq!(
            s.call("todo", "add", json!({"text": "Buy milk"})).await?,
            json!({"id": 1}),
            "{transport}"
        );
        let out = s
            .script("const items = await todo.list(); return items.length;")
            .await?;
        assert_eq!(out["result"], 1, "{transport}: {out}");
        let worker = s.browser.worker().await?;
        let direct = worker
            .eval(&format!(
                "self.browserOperator.run({{id: 'd', tool: 'btcp_call', args: {{tabId: {}, namespace: 'todo', method: 'list', args: {{}}}}}})",
                s.tab
            ))
            .await?;
        worker.detach().await?;
        let text = direct["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(text.contains("Buy milk"), "direct: {direct}");
    }
    Ok(())
}

/// A page that registers past the bounds (thousands of methods, a multi-megabyte schema,
/// `__proto__` and other names that are not namespaces, more namespaces or registry than allowed)
/// gets an error naming the bound from registerProvider / registerTool, and everything it did
/// register within the bounds is still offered and called: nothing vanishes from the tab.
#[tokio::test]
async fn registrations_past_the_bounds_fail_on_the_page_and_the_other_tools_stay() -> Result<()> {
    let (fixtures, backend, _browser) = connected_over("websocket").await?;
    let (tab, _) = backend.first_tab().await?;
    backend
        .navigate(tab, &fixtures.url("greedy-tools.html"))
        .await?;
    let attempts: Value =
        serde_json::from_str(&backend.js(tab, "JSON.stringify(window.attempts)").await?)?;
    let expected = json!([
        ["shop", "ok"],
        ["3000 methods", "RangeError: btcp: thousands has too many methods (limit 256 methods, got 3000)"],
        ["3 MB schema", "RangeError: btcp: huge.methods[0].inputSchema is too large (limit 32768 characters of JSON, got 3145762)"],
        ["deep schema", "RangeError: btcp: deep.methods[0].inputSchema nests too deeply (limit 24 levels, got over 24)"],
        ["__proto__", "TypeError: btcp: namespace __proto__ is reserved: names starting with __ are reserved"],
        ["constructor", "TypeError: btcp: namespace constructor is reserved: it is a property of every JavaScript object"],
        ["prototype", "TypeError: btcp: namespace prototype is reserved: it is a property of every JavaScript object"],
        ["__secret", "TypeError: btcp: namespace __secret is reserved: names starting with __ are reserved"],
        ["browser", "TypeError: btcp: namespace browser is reserved: it is the extension's built-in tools"],
        ["webmcp", "TypeError: btcp: namespace webmcp is reserved: it holds the page's WebMCP tools (document.modelContext.registerTool)"],
        ["JSON", "TypeError: btcp: namespace JSON is reserved: it is a name the code-mode sandbox already uses"],
        ["method constructor", "TypeError: btcp: store.methods[0].name constructor is reserved: it is a property of every JavaScript object"],
        ["webmcp __proto__", "TypeError: btcp: webmcp.methods[0].name __proto__ is reserved: names starting with __ are reserved"],
        ["bulky providers", "17 fit, then RangeError: btcp: the page's tool registry would be too large with bulk17 (limit 524288 characters of JSON, got 543503)"],
        ["namespaces", "64 namespaces with shop, then RangeError: btcp: this page has too many namespaces to add ns63 (limit 64 namespaces, got 65)"],
        ["webmcp tool past the namespaces", "RangeError: btcp: this page has too many namespaces to add webmcp (limit 64 namespaces, got 65)"]
    ]);
    assert_eq!(attempts, expected);

    // What fit is offered, nothing was refused on the worker's side, and it all still answers.
    let all: Value = serde_json::from_str(
        &backend
            .text("btcp_interfaces", json!({"tabId": tab}))
            .await?,
    )?;
    let names: Vec<&str> = all["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter_map(|n| n["namespace"].as_str())
        .collect();
    assert_eq!(names.len(), 65, "browser + 64: {names:?}");
    assert_eq!(&names[..3], ["browser", "shop", "ns0"]);
    assert_eq!(names[64], "ns62");
    assert!(all.get("refused").is_none(), "{}", all["refused"]);
    let call = |ns: &str, method: &str| json!({"tabId": tab, "namespace": ns, "method": method, "args": {}});
    assert_eq!(
        backend.text("btcp_call", call("shop", "cart")).await?,
        "{\"items\":2}"
    );
    assert_eq!(
        backend.text("btcp_call", call("ns62", "ping")).await?,
        "\"pong 62\""
    );
    let e = backend.error("btcp_call", call("thousands", "m1")).await?;
    assert!(
        e.starts_with("This tab has no tool namespace \"thousands\"."),
        "{e}"
    );
    // Code mode sees the same namespaces, and none of the refused names.
    let out: Value = serde_json::from_str(
        &backend
            .text(
                "btcp_run_script",
                json!({"tabId": tab, "script": "return [Object.keys(globalThis).length, typeof thousands, await shop.cart()]"}),
            )
            .await?,
    )?;
    assert_eq!(out["result"], json!([68, "undefined", {"items": 2}]));
    Ok(())
}
