//! The MCP endpoint (`/mcp`, streamable HTTP), per-target tokens and their revocation, and the
//! server's refusals, driven in-process by a fake extension over a real WebSocket and by raw
//! HTTP and MCP JSON-RPC requests.

mod common;

use browser_operator_server::target_tokens::TokenStore;
use browser_operator_server::{RunningServer, ServerConfig};
use common::{
    closed, connect, extension, extension_with, http, local, next_frame, send, status, token_store,
    wait_until, Ws, BEARER, TOKEN, WAIT,
};
use futures_util::SinkExt;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

async fn start(tokens: TokenStore) -> RunningServer {
    let mut config = ServerConfig::new(local(), TOKEN);
    config.command_timeout = Duration::from_secs(20);
    config.auth_timeout = Duration::from_secs(2);
    config.tokens = tokens;
    RunningServer::start(config).await.expect("server starts")
}

/// A minimal MCP client over streamable HTTP (blocking; call it from `spawn_blocking`).
#[derive(Clone)]
struct Mcp {
    url: String,
    token: String,
    session: String,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// The JSON-RPC messages of a response body: plain JSON or an SSE stream.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return vec![v];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

impl Mcp {
    fn post(&self, body: &Value) -> ureq::http::Response<ureq::Body> {
        let mut req = agent()
            .post(&self.url)
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        if !self.session.is_empty() {
            req = req.header("Mcp-Session-Id", &self.session);
        }
        req.send(body.to_string()).expect("POST /mcp")
    }

    fn connect(addr: SocketAddr) -> Mcp {
        Self::connect_as(addr, "test", json!({}))
    }

    /// A session of the client `name`, announcing `capabilities`.
    fn connect_as(addr: SocketAddr, name: &str, capabilities: Value) -> Mcp {
        let mut mcp = Mcp {
            url: format!("http://{addr}/mcp"),
            token: TOKEN.into(),
            session: String::new(),
        };
        let mut response = mcp.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": name, "version": "1"}}}));
        assert_eq!(response.status().as_u16(), 200);
        mcp.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = response.body_mut().read_to_string().unwrap();
        let init = messages(&body);
        assert_eq!(
            init[0]["result"]["serverInfo"]["name"], "browser-operator",
            "{body}"
        );
        let r = mcp.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(r.status().is_success(), "{}", r.status());
        mcp
    }

    /// The response to request `id` (notifications before it are skipped).
    fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let mut response =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let body = response.body_mut().read_to_string().unwrap();
        messages(&body)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response to {method} in {body}"))
    }

    fn call(&self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }
}

/// The catalog's tools an MCP client is shown (all but the backend's own).
fn listed_catalog_len() -> usize {
    protocol::catalog()
        .iter()
        .filter(|t| !t.backend_only)
        .count()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Whether `cmd` is the MCP server reading the page tools of the group on its own (for
/// tools/list and its change checks): `tabs_context_mcp {createIfEmpty: false}` or
/// `btcp_interfaces`.
fn is_page_tools_read(cmd: &Value) -> bool {
    cmd["type"] == "command"
        && (cmd["tool"] == "btcp_interfaces"
            || (cmd["tool"] == "tabs_context_mcp"
                && cmd["args"] == json!({"createIfEmpty": false})))
}

/// The next text frame, answering the server's own page-tools reads on the way (this fake
/// extension has no group).
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let v = next_frame(ws).await;
        if !is_page_tools_read(&v) {
            return v;
        }
        send(
            ws,
            json!({"type": "result", "commandId": v["id"], "error": "No automation group."}),
        )
        .await;
    }
}

/// The close code the server sends next, and the text frames before it (but the server's own
/// page-tools reads).
async fn close_code(ws: &mut Ws) -> (Option<u16>, Vec<Value>) {
    let (code, mut frames) = closed(ws).await;
    frames.retain(|v| !is_page_tools_read(v));
    (code, frames)
}

/// Answers the next command with `result` (a tool result) and returns the command.
async fn answer(ws: &mut Ws, result: Value) -> Value {
    let cmd = next_json(ws).await;
    assert_eq!(cmd["type"], "command", "{cmd}");
    send(
        ws,
        json!({"type": "result", "commandId": cmd["id"], "result": result}),
    )
    .await;
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_lists_the_catalog_and_maps_results() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mcp = blocking(move || Mcp::connect(addr)).await;

    let m = mcp.clone();
    let list = blocking(move || m.request(1, "tools/list", json!({}))).await;
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    // set_policy is the backend's alone: not listed to MCP clients.
    assert!(!tools.iter().any(|t| t["name"] == "set_policy"), "{list}");
    for spec in protocol::catalog().into_iter().filter(|t| !t.backend_only) {
        let tool = tools
            .iter()
            .find(|t| t["name"] == spec.name)
            .unwrap_or_else(|| panic!("{} listed", spec.name));
        assert_eq!(tool["inputSchema"], spec.input_schema);
        assert_eq!(tool["description"], spec.description);
    }
    assert!(tools.iter().any(|t| t["name"] == "select_browser"));

    // No browser: an error result that says what to do, not a protocol error.
    let m = mcp.clone();
    let r = blocking(move || m.call(2, "tabs_context_mcp", json!({}))).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("No browser is connected"));

    let mut ext = extension(addr, None).await;
    // Nor forwarded from them: refused here, and the next command the browser sees is the
    // screenshot below.
    let m = mcp.clone();
    let r = blocking(move || m.call(30, "set_policy", json!({"allowedHosts": []}))).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("set by the backend that drives the browser, not by MCP clients"));
    let m = mcp.clone();
    let call = tokio::spawn(blocking(move || {
        m.call(3, "computer", json!({"action": "screenshot", "tabId": 7}))
    }));
    let cmd = answer(
        &mut ext,
        json!({"content": [{"type": "text", "text": "shot"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}),
    )
    .await;
    assert_eq!(cmd["tool"], "computer");
    assert_eq!(cmd["args"], json!({"action": "screenshot", "tabId": 7}));
    let r = call.await.unwrap();
    assert_eq!(r["isError"], false);
    assert_eq!(r["content"][0], json!({"type": "text", "text": "shot"}));
    assert_eq!(
        r["content"][1],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );

    let m = mcp.clone();
    let call = tokio::spawn(blocking(move || m.call(4, "navigate", json!({"tabId": 1}))));
    let cmd = next_json(&mut ext).await;
    send(
        &mut ext,
        json!({"type": "result", "commandId": cmd["id"], "error": "Invalid arguments: 'url' is required"}),
    )
    .await;
    let r = call.await.unwrap();
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "Invalid arguments: 'url' is required"
    );

    let m = mcp.clone();
    let r = blocking(move || m.call(5, "no_such_tool", json!({}))).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Unknown tool 'no_such_tool'"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_browsers_are_chosen_per_session() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mut a = extension(addr, Some("a")).await;
    let mut b = extension(addr, Some("b")).await;
    let mcp = blocking(move || Mcp::connect(addr)).await;

    let m = mcp.clone();
    let r = blocking(move || m.call(1, "tabs_context_mcp", json!({}))).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Connected targets: 'a', 'b'"));

    let m = mcp.clone();
    let r = blocking(move || m.call(2, "list_connected_browsers", json!({}))).await;
    let listed: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        listed,
        json!({"browsers": [{"target": "a", "selected": false}, {"target": "b", "selected": false}], "selected": null})
    );

    let m = mcp.clone();
    let r = blocking(move || m.call(3, "select_browser", json!({"target": "nope"}))).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("No browser is connected with target 'nope'"));

    let m = mcp.clone();
    let r = blocking(move || m.call(4, "select_browser", json!({"target": "b"}))).await;
    assert_eq!(r["isError"], false, "{r}");
    let m = mcp.clone();
    let call = tokio::spawn(blocking(move || m.call(5, "tabs_context_mcp", json!({}))));
    answer(
        &mut b,
        json!({"content": [{"type": "text", "text": "from b"}]}),
    )
    .await;
    assert_eq!(call.await.unwrap()["content"][0]["text"], "from b");

    // Another session has its own choice.
    let other = blocking(move || Mcp::connect(addr)).await;
    let o = other.clone();
    let r = blocking(move || o.call(1, "select_browser", json!({"target": "a"}))).await;
    assert_eq!(r["isError"], false);
    let o = other.clone();
    let call = tokio::spawn(blocking(move || o.call(2, "tabs_context_mcp", json!({}))));
    answer(
        &mut a,
        json!({"content": [{"type": "text", "text": "from a"}]}),
    )
    .await;
    assert_eq!(call.await.unwrap()["content"][0]["text"], "from a");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_reported_and_cancelling_frees_the_pending_command() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mut ext = extension(addr, None).await;
    let mcp = blocking(move || Mcp::connect(addr)).await;

    // A call with a progress token hears progress while the browser works.
    let m = mcp.clone();
    let (saw_progress, got_progress) = std::sync::mpsc::channel();
    let call = tokio::spawn(blocking(move || {
        let mut response = m.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "computer", "arguments": {"action": "wait"}, "_meta": {"progressToken": "p1"}}}));
        let reader = BufReader::new(response.body_mut().as_reader());
        for line in reader.lines() {
            let line = line.unwrap();
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let Ok(msg) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if msg["method"] == "notifications/progress" {
                assert_eq!(msg["params"]["progressToken"], "p1");
                let _ = saw_progress.send(msg["params"]["message"].clone());
            }
            if msg["id"] == 1 {
                return msg["result"].clone();
            }
        }
        panic!("the stream ended without a result");
    }));
    let cmd = next_json(&mut ext).await;
    let note = blocking(move || {
        got_progress
            .recv_timeout(WAIT)
            .expect("a progress notification")
    })
    .await;
    assert!(
        note.as_str()
            .unwrap()
            .contains("computer: waiting for the browser"),
        "{note}"
    );
    send(&mut ext, json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "done"}]}})).await;
    assert_eq!(call.await.unwrap()["content"][0]["text"], "done");

    // A cancelled call stops waiting: its pending slot is freed while the browser still works.
    let m = mcp.clone();
    let _abandoned = std::thread::spawn(move || {
        let mut r = m.post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "computer", "arguments": {"action": "wait"}}}),
        );
        let mut sink = Vec::new();
        let _ = r.body_mut().as_reader().read_to_end(&mut sink);
    });
    let cmd = next_json(&mut ext).await;
    assert_eq!(status(addr).await["pendingCommands"], 1);
    let m = mcp.clone();
    blocking(move || {
        let r = m.post(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "user stopped"}}));
        assert!(r.status().is_success(), "{}", r.status());
    })
    .await;
    wait_until(addr, "the cancelled command leaving", |s| {
        s["pendingCommands"] == 0
    })
    .await;
    // Its late result is ignored and the connection keeps serving.
    send(
        &mut ext,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    let m = mcp.clone();
    let call = tokio::spawn(blocking(move || m.call(3, "tabs_context_mcp", json!({}))));
    answer(
        &mut ext,
        json!({"content": [{"type": "text", "text": "still here"}]}),
    )
    .await;
    assert_eq!(call.await.unwrap()["content"][0]["text"], "still here");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_refuses_foreign_hosts_web_origins_and_wrong_tokens() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let accept = ("Accept", "application/json, text/event-stream");
    let json_type = ("Content-Type", "application/json");

    let (code, body) = http(
        addr,
        "POST /mcp",
        &[("Host", "evil.example:8787"), BEARER, accept, json_type],
        init,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = http(
        addr,
        "POST /mcp",
        &[
            ("Origin", "https://evil.example"),
            BEARER,
            accept,
            json_type,
        ],
        init,
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("requests from web pages are not accepted"),
        "{body}"
    );
    let (code, _) = http(
        addr,
        "POST /mcp",
        &[("Origin", "null"), BEARER, accept, json_type],
        init,
    )
    .await;
    assert_eq!(code, 403);
    let (code, _) = http(addr, "POST /mcp", &[accept, json_type], init).await;
    assert_eq!(code, 401);
    let (code, _) = http(
        addr,
        "POST /mcp",
        &[
            ("Authorization", "Bearer test-token-0124"),
            accept,
            json_type,
        ],
        init,
    )
    .await;
    assert_eq!(code, 401);
    // Still serving the right requests.
    let (code, body) = http(addr, "POST /mcp", &[BEARER, accept, json_type], init).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("browser-operator"), "{body}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_target_tokens_connect_only_as_their_target_and_revoking_disconnects() {
    let (dir, store) = token_store("tokens");
    let work = store.issue("work").unwrap();
    let server = start(store.clone()).await;
    let addr = server.addr();

    // Without a target it connects as its own; another target is refused.
    let mut browser = extension_with(addr, &work.token, None).await;
    let mut main = extension(addr, Some("home")).await;
    let mut wrong = connect(addr).await;
    send(
        &mut wrong,
        json!({"type": "auth", "token": work.token, "target": "home2"}),
    )
    .await;
    let (code, frames) = close_code(&mut wrong).await;
    assert_eq!(code, Some(1008));
    assert!(frames[0]["message"]
        .as_str()
        .unwrap()
        .contains("This token is for target 'work'"));
    let targets = |s: &Value| {
        s["browsers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["target"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(targets(&status(addr).await), ["home", "work"]);

    // Revoking: the store forgets it, the server closes its connection with 4001 and says why.
    store.revoke(&work.id).unwrap();
    let body = json!({"tokenId": work.id, "reason": "token revoked"}).to_string();
    let (code, reply) = http(addr, "POST /disconnect", &[BEARER], &body).await;
    assert_eq!(code, 200, "{reply}");
    assert_eq!(
        serde_json::from_str::<Value>(&reply).unwrap(),
        json!({"disconnected": 1, "targets": ["work"]})
    );
    let (code, frames) = close_code(&mut browser).await;
    assert_eq!(code, Some(4001));
    assert_eq!(
        frames,
        [json!({"type": "error", "message": "Disconnected by the server: token revoked"})]
    );
    assert_eq!(targets(&status(addr).await), ["home"]);

    // The revoked token can't come back; a wrong one neither; the rest keeps working.
    for token in [work.token.as_str(), "not-a-token"] {
        let mut again = connect(addr).await;
        send(&mut again, json!({"type": "auth", "token": token})).await;
        assert_eq!(close_code(&mut again).await.0, Some(4001));
    }
    let (code, _) = http(addr, "POST /disconnect", &[], &body).await;
    assert_eq!(code, 401);
    let call = tokio::spawn(async move {
        http(
            addr,
            "POST /commands",
            &[BEARER],
            r#"{"tool":"tabs_context_mcp"}"#,
        )
        .await
    });
    answer(&mut main, json!({"content": []})).await;
    assert_eq!(call.await.unwrap().0, 200);
    server.shutdown().await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_closes_only_that_connection() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mut big = extension(addr, Some("big")).await;
    let mut other = extension(addr, Some("other")).await;
    let huge = "x".repeat(browser_operator_server::ws::MAX_MESSAGE_SIZE + 1);
    let _ = big.send(Message::text(huge)).await;
    let (code, _) = close_code(&mut big).await;
    assert!(matches!(code, None | Some(1009)), "{code:?}");
    wait_until(addr, "the oversized connection leaving", |s| {
        s["browsers"].as_array().is_some_and(|b| b.len() == 1)
    })
    .await;
    let call = tokio::spawn(async move {
        http(
            addr,
            "POST /commands",
            &[BEARER],
            r#"{"tool":"tabs_context_mcp"}"#,
        )
        .await
    });
    answer(&mut other, json!({"content": []})).await;
    assert_eq!(call.await.unwrap().0, 200);
    // An oversized MCP request body is refused too, and the server keeps serving.
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "y".repeat(5 << 20)
    );
    let (code, _) = http(
        addr,
        "POST /mcp",
        &[
            BEARER,
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
        ],
        &body,
    )
    .await;
    assert_eq!(code, 413);
    assert_eq!(status(addr).await["browsers"].as_array().unwrap().len(), 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_are_bounded() {
    use browser_operator_server::mcp::MAX_SESSIONS;
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let sessions = blocking(move || {
        (0..MAX_SESSIONS)
            .map(|_| Mcp::connect(addr))
            .collect::<Vec<_>>()
    })
    .await;
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let headers = [
        BEARER,
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
    ];
    let (code, body) = http(addr, "POST /mcp", &headers, init).await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("Too many MCP sessions"), "{body}");
    // The live sessions keep working.
    let first = sessions[0].clone();
    let list = blocking(move || first.request(1, "tools/list", json!({}))).await;
    assert!(list["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    server.shutdown().await;
}

/// The next command that is not one of the server's own page-tools reads (those are answered
/// by `group`: `tabs_context_mcp {createIfEmpty: false}` → one tab 7 on a todo page, and
/// `btcp_interfaces {tabId: 7}` → a namespace `todo` with a method `add`).
async fn next_command_with_group(ws: &mut Ws) -> Value {
    loop {
        let cmd = next_frame(ws).await;
        let text = match (cmd["tool"].as_str(), is_page_tools_read(&cmd)) {
            (Some("tabs_context_mcp"), true) => json!({"availableTabs": [{"tabId": 7, "title": "Todo", "url": "http://app.test/todo"}], "tabGroupId": 1}).to_string(),
            (Some("btcp_interfaces"), true) => json!({"revision": 1, "namespaces": [
                {"namespace": "browser", "source": "browser", "interface": {"name": "browser", "version": "1", "methods": [
                    {"name": "navigate", "description": "Go.", "inputSchema": {"type": "object"}}]}},
                {"namespace": "todo", "source": "btcp", "interface": {"name": "Todo", "version": "1", "methods": [
                    {"name": "add", "description": "Add a todo.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}}
            ]}).to_string(),
            _ => return cmd,
        };
        send(ws, json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": text}]}})).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_tools_are_listed_untrusted_and_routed_to_btcp_call() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mut ext = extension(addr, None).await;
    let mcp = blocking(move || Mcp::connect(addr)).await;

    // The fake extension answers the page-tools reads while tools/list waits for them.
    let m = mcp.clone();
    let mut list = tokio::spawn(blocking(move || m.request(1, "tools/list", json!({}))));
    let list = tokio::select! {
        list = &mut list => list.unwrap(),
        cmd = next_command_with_group(&mut ext) => panic!("unexpected command {cmd}"),
    };
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let add = tools
        .iter()
        .find(|t| t["name"] == "todo.add")
        .unwrap_or_else(|| panic!("todo.add listed in {tools:?}"));
    assert_eq!(
        add["description"],
        "[Defined by the web page, untrusted] Add a todo. (Page tool of tab 7, http://app.test/todo.)"
    );
    assert_eq!(add["annotations"]["openWorldHint"], true);
    assert_eq!(add["_meta"]["browserOperator"]["untrusted"], true);
    assert_eq!(add["inputSchema"]["required"], json!(["text"]));
    assert!(tools.iter().all(|t| t["name"] != "browser.navigate"));
    assert_eq!(tools.len(), listed_catalog_len() + 3);

    // A call of a page tool goes to btcp_call in its tab.
    let m = mcp.clone();
    let call = tokio::spawn(blocking(move || {
        m.call(2, "todo.add", json!({"text": "milk"}))
    }));
    let cmd = next_command_with_group(&mut ext).await;
    assert_eq!(cmd["tool"], "btcp_call");
    assert_eq!(
        cmd["args"],
        json!({"tabId": 7, "namespace": "todo", "method": "add", "args": {"text": "milk"}})
    );
    send(&mut ext, json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "{\"id\":1}"}]}})).await;
    let r = call.await.unwrap();
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["content"][0]["text"], "{\"id\":1}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_does_not_answer_gets_the_catalog_only() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    // Connected, but never answers a command.
    let _ext = extension(addr, None).await;
    let mcp = blocking(move || Mcp::connect(addr)).await;
    let m = mcp.clone();
    let list = blocking(move || m.request(1, "tools/list", json!({}))).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), listed_catalog_len() + 2, "{list}");
    server.shutdown().await;
}

/// The agent (its own tab group) a session's commands carry: none unless the session asks for
/// one (the experimental capability) or the server gives one to every session; each its own.
/// `POST /commands` carries the caller's `agent` as given, and refuses a bad one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_that_ask_get_an_agent_of_their_own() {
    let server = start(TokenStore::none()).await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;
    let own = json!({"experimental": {"browserOperator/ownTabGroup": {}}});
    let (o1, o2) = (own.clone(), own.clone());
    let first = blocking(move || Mcp::connect_as(addr, "asker", o1)).await;
    let second = blocking(move || Mcp::connect_as(addr, "asker", o2)).await;
    let plain = blocking(move || Mcp::connect(addr)).await;
    let mut agents = Vec::new();
    for (n, mcp) in [first, second, plain].into_iter().enumerate() {
        let call = tokio::spawn(blocking(move || mcp.call(1, "tabs_context_mcp", json!({}))));
        let cmd = answer(
            &mut ws,
            json!({"content": [{"type": "text", "text": "ok"}]}),
        )
        .await;
        assert_eq!(call.await.unwrap()["content"][0]["text"], "ok");
        agents.push(cmd["agent"].clone());
        if n < 2 {
            let name = cmd["agent"].as_str().unwrap_or_default();
            assert!(name.starts_with("asker "), "{cmd}");
        }
    }
    assert_ne!(agents[0], agents[1], "two sessions share an agent");
    assert_eq!(
        agents[2],
        Value::Null,
        "a session that did not ask got an agent"
    );

    // The command API passes the caller's agent on, and refuses one that is not a name.
    let body = json!({"tool": "tabs_context_mcp", "args": {}, "agent": "script-7"}).to_string();
    let post = tokio::spawn(async move {
        http(
            addr,
            "POST /commands",
            &[BEARER, ("Content-Type", "application/json")],
            &body,
        )
        .await
    });
    let cmd = answer(
        &mut ws,
        json!({"content": [{"type": "text", "text": "ok"}]}),
    )
    .await;
    assert_eq!(cmd["agent"], "script-7");
    assert_eq!(post.await.unwrap().0, 200);
    let bad = json!({"tool": "tabs_context_mcp", "agent": "a\u{7}b"}).to_string();
    let (code, text) = http(
        addr,
        "POST /commands",
        &[BEARER, ("Content-Type", "application/json")],
        &bad,
    )
    .await;
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("`agent`"), "{text}");
    server.shutdown().await;

    // With --group-per-session every session gets one.
    let mut config = ServerConfig::new(local(), TOKEN);
    config.group_per_session = true;
    let server = RunningServer::start(config).await.expect("server starts");
    let addr = server.addr();
    let mut ws = extension(addr, None).await;
    let plain = blocking(move || Mcp::connect(addr)).await;
    let call = tokio::spawn(blocking(move || {
        plain.call(1, "tabs_context_mcp", json!({}))
    }));
    let cmd = answer(
        &mut ws,
        json!({"content": [{"type": "text", "text": "ok"}]}),
    )
    .await;
    call.await.unwrap();
    assert!(
        cmd["agent"]
            .as_str()
            .unwrap_or_default()
            .starts_with("test "),
        "{cmd}"
    );
    server.shutdown().await;
}
