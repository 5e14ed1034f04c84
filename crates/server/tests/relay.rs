//! The server in-process, driven by a fake extension over a real WebSocket and by raw HTTP
//! requests: auth, routing, errors and their status codes, shutdown and restart.

mod common;

use browser_operator_server::api::MAX_COMMAND_BODY;
use browser_operator_server::target_tokens::TokenStore;
use browser_operator_server::{RunningServer, ServerConfig};
use common::{
    closed, connect, extension, http, local, next_frame, send, status, token_store, Ws, BEARER,
    TOKEN,
};
use futures_util::SinkExt;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

/// How long the raw-socket checks here wait for bytes or for a slow client to be cut off.
const WAIT: Duration = Duration::from_secs(5);

async fn start_with(addr: SocketAddr, command_timeout: Duration) -> RunningServer {
    RunningServer::start(ServerConfig {
        command_timeout,
        auth_timeout: Duration::from_secs(2),
        ..ServerConfig::new(addr, TOKEN)
    })
    .await
    .expect("server starts")
}

async fn start() -> RunningServer {
    start_with(local(), Duration::from_secs(10)).await
}

async fn command(addr: SocketAddr, body: Value) -> (u16, Value) {
    let (status, body) = http(addr, "POST /commands", &[BEARER], &body.to_string()).await;
    (status, serde_json::from_str(&body).expect("JSON body"))
}

/// The close code the server sends next (skipping text frames).
async fn close_code(ws: &mut Ws) -> Option<u16> {
    closed(ws).await.0
}

#[tokio::test]
async fn command_round_trip_through_the_extension() {
    let server = start().await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;

    let st = status(addr).await;
    assert_eq!(st["browsers"][0]["target"], "default");
    assert!(st["browsers"][0]["connectedAt"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(st["version"], env!("CARGO_PKG_VERSION"));

    let call = tokio::spawn(command(
        addr,
        json!({"tool": "navigate", "args": {"url": "https://example.com", "tabId": 3}}),
    ));
    let cmd = next_frame(&mut ws).await;
    assert_eq!(cmd["type"], "command");
    assert_eq!(cmd["tool"], "navigate");
    assert_eq!(
        cmd["args"],
        json!({"url": "https://example.com", "tabId": 3})
    );
    let id = cmd["id"].as_str().unwrap().to_string();
    assert_eq!(status(addr).await["pendingCommands"], 1);
    let content = json!([{"type": "text", "text": "done"}, {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"}]);
    send(
        &mut ws,
        json!({"type": "result", "commandId": id, "result": {"content": content}}),
    )
    .await;
    let (code, body) = call.await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(
        body,
        json!({"commandId": id, "result": {"content": content}})
    );

    // A tool error is a result too; commands without args get `{}`.
    let call = tokio::spawn(command(addr, json!({"tool": "tabs_create_mcp"})));
    let cmd = next_frame(&mut ws).await;
    assert_eq!(cmd["args"], json!({}));
    let id2 = cmd["id"].as_str().unwrap().to_string();
    assert_ne!(id2, id);
    send(
        &mut ws,
        json!({"type": "result", "commandId": id2, "error": "Unknown tool"}),
    )
    .await;
    assert_eq!(
        call.await.unwrap(),
        (200, json!({"commandId": id2, "error": "Unknown tool"}))
    );
    assert_eq!(status(addr).await["pendingCommands"], 0);
    server.shutdown().await;
}

/// A browser whose person clicked Stop answers with `"paused": true`: the caller gets it with
/// the result, and `GET /status` names the target as paused until an answer without it.
#[tokio::test]
async fn a_paused_browser_shows_in_the_status_until_it_answers_again() {
    let server = start().await;
    let addr = server.addr();
    let mut ws = extension(addr, Some("agent-a")).await;
    assert_eq!(status(addr).await["paused"], json!([]));
    let request = json!({"tool": "tabs_context_mcp", "target": "agent-a"});
    let call = tokio::spawn(command(addr, request.clone()));
    let id = next_frame(&mut ws).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let stopped = json!({"type": "result", "commandId": id, "error": "Stopped by the user: …", "paused": true});
    send(&mut ws, stopped).await;
    let (code, body) = call.await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(body["paused"], true, "{body}");
    assert_eq!(body["error"], "Stopped by the user: …");
    let st = status(addr).await;
    assert_eq!(st["paused"][0]["target"], "agent-a", "{st}");
    assert!(st["paused"][0]["since"].as_u64().unwrap() > 1_600_000_000_000);

    // Resumed: the next answer carries no `paused`, and the status clears.
    let call = tokio::spawn(command(addr, request));
    let id = next_frame(&mut ws).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ok = json!({"type": "result", "commandId": id, "result": {"content": []}});
    send(&mut ws, ok).await;
    let (_, body) = call.await.unwrap();
    assert!(body.get("paused").is_none(), "{body}");
    assert_eq!(status(addr).await["paused"], json!([]));
    server.shutdown().await;
}

/// `POST /commands` takes the largest command the extension reads: file_upload's largest files
/// and a page script of nearly 4 MiB reach the browser whole; one byte past the limit is
/// answered 413 with an error that names the limit, and nothing reaches the browser.
#[tokio::test]
async fn the_largest_command_passes_and_a_larger_one_is_refused_naming_the_limit() {
    let server = start().await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;
    let b64 = |bytes: usize| "QUJD".repeat(bytes.div_ceil(3));
    let upload = json!({"tool": "file_upload", "args": {"tabId": 1, "ref": "ref_1", "files": (0..20).map(|i| json!({"name": format!("file-{i}.bin"), "mimeType": "application/octet-stream", "data": b64(protocol::FILE_UPLOAD_MAX_BYTES / 20)})).collect::<Vec<_>>()}});
    let body = |text: String| json!({"tool": "javascript_tool", "args": {"action": "javascript_exec", "tabId": 1, "text": text}});
    let overhead = body(String::new()).to_string().len();
    let script = body("x".repeat(MAX_COMMAND_BODY - overhead));
    assert_eq!(script.to_string().len(), MAX_COMMAND_BODY);
    for request in [upload, script.clone()] {
        let call = tokio::spawn(command(addr, request.clone()));
        let cmd = next_frame(&mut ws).await;
        assert_eq!(cmd["args"], request["args"]);
        assert!(cmd.to_string().len() <= protocol::MAX_COMMAND_BYTES);
        send(
            &mut ws,
            json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
        )
        .await;
        assert_eq!(call.await.unwrap().0, 200);
    }
    // One byte more.
    let (code, answer) = command(addr, body("x".repeat(MAX_COMMAND_BODY - overhead + 1))).await;
    assert_eq!(code, 413, "{answer}");
    let said = answer["error"].as_str().unwrap_or_default();
    assert!(
        said.contains(&format!("larger than the {MAX_COMMAND_BODY} bytes (4 MiB less 4 KiB for the relay) a POST /commands body may have"))
            && said.contains("file_upload takes at most 1048576 bytes of files in all"),
        "{said}"
    );
    assert_eq!(status(addr).await["pendingCommands"], 0);
    // Without the token, the size is not the answer.
    let (code, _) = http(
        addr,
        "POST /commands",
        &[],
        &"x".repeat(MAX_COMMAND_BODY + 1),
    )
    .await;
    assert_eq!(code, 401);
    server.shutdown().await;
}

#[tokio::test]
async fn targets_route_commands_and_ids_cannot_be_guessed() {
    let server = start().await;
    let addr = server.addr();
    let _a = extension(addr, Some("a")).await;
    let mut b = extension(addr, Some("b")).await;

    let (code, body) = command(addr, json!({"tool": "t"})).await;
    assert_eq!(code, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("'a', 'b'"),
        "{body}"
    );
    let (code, body) = command(addr, json!({"tool": "t", "target": "c"})).await;
    assert_eq!(code, 409);
    assert!(body["error"].as_str().unwrap().contains("'c'"), "{body}");

    // Two ids in a row share nothing a browser could extrapolate from: 128 random bits each.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "b"})));
        let cmd = next_frame(&mut b).await;
        let id = cmd["id"].as_str().unwrap().to_string();
        send(
            &mut b,
            json!({"type": "result", "commandId": id, "result": {"content": []}}),
        )
        .await;
        assert_eq!(call.await.unwrap().0, 200);
        ids.push(id);
    }
    for id in &ids {
        let hex = id.strip_prefix("cmd-").expect("cmd- prefix");
        assert_eq!(hex.len(), 32, "{id}");
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
    }
    let common = ids[0]
        .bytes()
        .zip(ids[1].bytes())
        .take_while(|(x, y)| x == y)
        .count();
    assert!(common < 12, "sequential-looking ids: {ids:?}");
    server.shutdown().await;
}

/// An SSE command stream opened with `token` on `path`: the socket, past the response head.
async fn sse_stream(addr: SocketAddr, path: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_until(&mut stream, b"\r\n\r\n").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// Reads from `stream` until `end` has arrived; everything read, as text.
async fn read_until(stream: &mut TcpStream, end: &[u8]) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(end.len()).any(|w| w == end) {
        let n = tokio::time::timeout(WAIT, stream.read(&mut buf))
            .await
            .expect("bytes in time")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The next command event on an SSE stream.
async fn sse_command(stream: &mut TcpStream) -> Value {
    let mut text = String::new();
    loop {
        if let Some(at) = text.find("data: ") {
            if let Some(len) = text[at..].find("\n\n") {
                return serde_json::from_str(&text[at + 6..at + len]).expect("a JSON command");
            }
        }
        text.push_str(&read_until(stream, b"\n").await);
    }
}

/// `POST path` with a result for `id` (text `says`) and `token`; the status and body.
async fn post_result(
    addr: SocketAddr,
    path: &str,
    token: &str,
    id: &str,
    says: &str,
) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let body = json!({"commandId": id, "result": {"content": [{"type": "text", "text": says}]}});
    http(
        addr,
        &format!("POST {path}"),
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        &body.to_string(),
    )
    .await
}

fn said(body: &Value) -> &str {
    body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// A result counts only from the browser the command was sent to (its target and its token),
/// on every transport; the same browser on a new connection (a reconnect, an outbox
/// redelivered after a restart) still counts.
#[tokio::test]
async fn a_result_counts_only_from_the_browser_the_command_was_sent_to() {
    let (dir, store) = token_store("forged");
    let server = start_with_store(local(), &store).await;
    let addr = server.addr();
    let one = store.issue("one").expect("issue");
    let two = store.issue("two").expect("issue");

    // WebSocket: browser "a" answers for "b"'s command; it is told no, and b's answer stands.
    let mut a = extension(addr, Some("a")).await;
    let mut b = extension(addr, Some("b")).await;
    let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "b"})));
    let cmd = next_frame(&mut b).await;
    let forged = json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "forged"}]}});
    send(&mut a, forged).await;
    let refused = next_frame(&mut a).await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .starts_with("Result refused: command cmd-"),
        "{refused}"
    );
    assert_eq!(status(addr).await["pendingCommands"], 1, "still waiting");
    send(
        &mut b,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "real"}]}}),
    )
    .await;
    let (code, body) = call.await.unwrap();
    assert_eq!((code, said(&body)), (200, "real"), "{body}");

    // SSE + HTTP: "one" streams with its own token. "two"'s token, the main token, and the
    // main token on one's path are all refused with 403; the command keeps waiting.
    let mut stream = sse_stream(addr, "/browser/events", &one.token).await;
    let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "one"})));
    let cmd = sse_command(&mut stream).await;
    let id = cmd["id"].as_str().unwrap().to_string();
    for (path, token) in [
        ("/browser/result", two.token.as_str()),
        ("/browser/two/result", two.token.as_str()),
        ("/browser/result", TOKEN),
        ("/browser/one/result", TOKEN),
    ] {
        let (code, body) = post_result(addr, path, token, &id, "forged").await;
        assert_eq!(code, 403, "{path}: {body}");
        assert!(
            body.contains("Result refused") || body.contains("This token is for target"),
            "{body}"
        );
    }
    // The stream restarts (the extension reconnected, or its worker restarted and redelivers
    // its outbox): the same browser still answers, on its own path or the default one.
    drop(stream);
    let _stream = sse_stream(addr, "/browser/one/events", &one.token).await;
    let (code, body) = post_result(addr, "/browser/one/result", &one.token, &id, "real").await;
    assert_eq!(code, 204, "{body}");
    let (code, body) = call.await.unwrap();
    assert_eq!((code, said(&body)), (200, "real"), "{body}");
    // A repeat of an answered result is accepted without effect, as the protocol asks.
    assert_eq!(
        post_result(addr, "/browser/result", &one.token, &id, "again")
            .await
            .0,
        204
    );

    // Polling: "two" polls; "one" can't answer for it; two can.
    let bearer = format!("Bearer {}", two.token);
    let (code, _) = http(
        addr,
        "GET /browser/events?wait=0",
        &[("Authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(code, 200);
    let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "two"})));
    let mut cmd = Value::Null;
    for _ in 0..100 {
        let (_, body) = http(
            addr,
            "GET /browser/events?wait=1",
            &[("Authorization", &bearer)],
            "",
        )
        .await;
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(c) = v["commands"].get(0) {
            cmd = c.clone();
            break;
        }
    }
    let id = cmd["id"].as_str().expect("a polled command").to_string();
    assert_eq!(
        post_result(addr, "/browser/result", &one.token, &id, "forged")
            .await
            .0,
        403
    );
    assert_eq!(
        post_result(addr, "/browser/result", &two.token, &id, "real")
            .await
            .0,
        204
    );
    let (code, body) = call.await.unwrap();
    assert_eq!((code, said(&body)), (200, "real"), "{body}");

    // A WebSocket browser that reconnected (its old socket gone) delivers what it kept.
    let call = tokio::spawn(command(addr, json!({"tool": "t", "target": "b"})));
    let cmd = next_frame(&mut b).await;
    b.close(None).await.unwrap();
    drop(b);
    let mut again = None;
    for _ in 0..100 {
        let mut ws = connect(addr).await;
        send(
            &mut ws,
            json!({"type": "auth", "token": TOKEN, "target": "b"}),
        )
        .await;
        if next_frame(&mut ws).await["type"] == "auth_ok" {
            again = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut b = again.expect("b reconnects");
    // The other browser's answer on a socket is refused; b's on its new socket counts.
    send(
        &mut a,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(next_frame(&mut a).await["type"], "error");
    send(
        &mut b,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "kept"}]}}),
    )
    .await;
    let (code, body) = call.await.unwrap();
    assert_eq!((code, said(&body)), (200, "kept"), "{body}");
    server.shutdown().await;
    std::fs::remove_dir_all(dir).expect("cleanup");
}

/// A command's wait covers the tool's own declared limit: a script allowed 100 ms is given
/// its stop time and the delivery margin, even on a server whose default is shorter.
#[tokio::test]
async fn the_server_waits_as_long_as_the_tool_may_take() {
    let server = start_with(local(), Duration::from_millis(300)).await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;
    let call = tokio::spawn(command(
        addr,
        json!({"tool": "btcp_run_script", "args": {"tabId": 1, "script": "return 1", "timeoutMs": 100}}),
    ));
    let cmd = next_frame(&mut ws).await;
    // Well past the server's own 0.3 s, well within the script's bound.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "late but in time"}]}}),
    )
    .await;
    let (code, body) = call.await.unwrap();
    assert_eq!((code, said(&body)), (200, "late but in time"), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_token_or_non_auth_first_frame_is_closed_with_4001() {
    let server = start().await;
    let addr = server.addr();
    assert_eq!(status(addr).await["authFailures"], 0);

    let mut ws = connect(addr).await;
    send(&mut ws, json!({"type": "auth", "token": "wrong"})).await;
    assert_eq!(close_code(&mut ws).await, Some(4001));
    let st = status(addr).await;
    assert_eq!(st["authFailures"], 1);
    assert_eq!(st["wsConnections"], 1);
    assert_eq!(st["browsers"], json!([]));

    let mut ws = connect(addr).await;
    send(
        &mut ws,
        json!({"type": "result", "commandId": "x", "error": "e"}),
    )
    .await;
    assert_eq!(close_code(&mut ws).await, Some(4001));
    let mut ws = connect(addr).await;
    ws.send(Message::text("not json")).await.unwrap();
    assert_eq!(close_code(&mut ws).await, Some(4001));
    let st = status(addr).await;
    assert_eq!(st["authFailures"], 3);
    assert_eq!(st["wsConnections"], 3);
    server.shutdown().await;
}

#[tokio::test]
async fn silent_socket_is_refused_after_the_auth_timeout() {
    let server = RunningServer::start(ServerConfig {
        auth_timeout: Duration::from_millis(200),
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .unwrap();
    let mut ws = connect(server.addr()).await;
    assert_eq!(close_code(&mut ws).await, Some(4001));
    assert_eq!(status(server.addr()).await["authFailures"], 1);
    server.shutdown().await;
}

#[tokio::test]
async fn http_errors() {
    let server = start().await;
    let addr = server.addr();

    let (code, body) = command(addr, json!({"tool": "t"})).await;
    assert_eq!(code, 503);
    assert_eq!(
        body["error"],
        "No browser is connected. Load the extension, paste the token into its Options page and click Save & connect."
    );

    for auth in [vec![], vec![("Authorization", "Bearer nope")]] {
        let (code, body) = http(addr, "POST /commands", &auth, r#"{"tool":"t"}"#).await;
        assert_eq!(code, 401);
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({"error": "Missing or wrong bearer token"})
        );
        assert_eq!(http(addr, "GET /status", &auth, "").await.0, 401);
    }

    for (bad, says) in [
        ("{", "not valid JSON"),
        ("{}", "missing field `tool`"),
        (r#"{"tool": 5}"#, "invalid type"),
    ] {
        let (code, body) = http(addr, "POST /commands", &[BEARER], bad).await;
        assert_eq!(code, 400, "{bad}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }

    let (code, body) = http(addr, "GET /", &[], "").await;
    assert_eq!(code, 200);
    assert!(body.contains(&format!("ws://{addr}/ws")), "{body}");
    assert!(!body.contains(TOKEN));
    server.shutdown().await;
}

#[tokio::test]
async fn unanswered_command_times_out_with_504() {
    let server = start_with(local(), Duration::from_millis(300)).await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;

    let call = tokio::spawn(command(addr, json!({"tool": "navigate"})));
    let cmd = next_frame(&mut ws).await;
    let (code, body) = call.await.unwrap();
    assert_eq!(code, 504);
    assert_eq!(
        body["error"],
        format!(
            "The browser did not answer within 0.3 s (command {}, tool navigate); the bound hit: the server's command timeout; the extension answers every command within 120 s, so the browser, its connection or its service worker is stuck.",
            cmd["id"].as_str().unwrap()
        )
    );
    assert_eq!(status(addr).await["pendingCommands"], 0);

    // timeoutMs overrides the default, and the error says so.
    let (code, body) = command(addr, json!({"tool": "x", "timeoutMs": 50})).await;
    assert_eq!(code, 504);
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("0.05 s"), "{body}");
    assert!(error.contains("the request's timeoutMs"), "{body}");
    let timed_out = next_frame(&mut ws).await;
    assert_eq!(timed_out["tool"], "x");

    // The late results are ignored without harm: a later command waiting at the same time is
    // answered only by its own result, the connection stays and nothing is left pending.
    let later = tokio::spawn(command(addr, json!({"tool": "later", "timeoutMs": 5000})));
    let cmd_later = next_frame(&mut ws).await;
    assert_eq!(cmd_later["tool"], "later");
    for late in [&cmd, &timed_out] {
        assert_ne!(late["id"], cmd_later["id"]);
        send(
            &mut ws,
            json!({"type": "result", "commandId": late["id"], "result": {"content": [{"type": "text", "text": "late"}]}}),
        )
        .await;
    }
    assert_eq!(
        status(addr).await["pendingCommands"],
        1,
        "the later one still waits"
    );
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd_later["id"], "result": {"content": [{"type": "text", "text": "mine"}]}}),
    )
    .await;
    let (code, body) = later.await.unwrap();
    assert_eq!((code, said(&body)), (200, "mine"), "{body}");
    assert_eq!(status(addr).await["pendingCommands"], 0);
    // No error frame came back for the late results: the next frame is the next command.
    let next = tokio::spawn(command(addr, json!({"tool": "next", "timeoutMs": 5000})));
    let cmd_next = next_frame(&mut ws).await;
    assert_eq!(cmd_next["tool"], "next", "{cmd_next}");
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd_next["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(next.await.unwrap().0, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_frames_get_an_error_and_the_connection_stays() {
    let server = start().await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;

    for bad in ["{nope", r#"{"type":"ping"}"#, r#"{"type":"result"}"#] {
        ws.send(Message::text(bad)).await.unwrap();
        let reply = next_frame(&mut ws).await;
        assert_eq!(reply["type"], "error", "{bad}");
        assert!(
            reply["message"]
                .as_str()
                .unwrap()
                .starts_with("Malformed frame: "),
            "{reply}"
        );
    }

    let call = tokio::spawn(command(addr, json!({"tool": "t"})));
    let cmd = next_frame(&mut ws).await;
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(call.await.unwrap().0, 200);
    server.shutdown().await;
}

#[tokio::test]
async fn second_connection_for_a_target_is_refused_with_4009() {
    let server = start().await;
    let addr = server.addr();
    let mut first = extension(addr, Some("work")).await;

    let mut second = connect(addr).await;
    send(
        &mut second,
        json!({"type": "auth", "token": TOKEN, "target": "work"}),
    )
    .await;
    assert_eq!(
        next_frame(&mut second).await,
        json!({"type": "error", "message": "Target 'work' is already connected from another browser; disconnect it first or set a different target in Options."})
    );
    assert_eq!(close_code(&mut second).await, Some(4009));

    // The first connection is kept and still works.
    let st = status(addr).await;
    assert_eq!(st["browsers"].as_array().unwrap().len(), 1);
    let call = tokio::spawn(command(addr, json!({"tool": "t"})));
    let cmd = next_frame(&mut first).await;
    send(
        &mut first,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(call.await.unwrap().0, 200);

    // Once it leaves, the target is free again.
    first.close(None).await.unwrap();
    drop(first);
    for _ in 0..50 {
        if status(addr).await["browsers"] == json!([]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    extension(addr, Some("work")).await;
    server.shutdown().await;
}

#[tokio::test]
async fn foreign_host_and_web_origins_are_forbidden() {
    let server = start().await;
    let addr = server.addr();

    let (code, body) = http(addr, "GET /status", &[("Host", "evil.example"), BEARER], "").await;
    assert_eq!(code, 403);
    assert!(body.contains("localhost"), "{body}");
    assert_eq!(
        http(addr, "GET /", &[("Host", "evil.example:80")], "")
            .await
            .0,
        403
    );
    for host in [
        "localhost",
        &format!("localhost:{}", addr.port()),
        "[::1]:1",
    ] {
        assert_eq!(
            http(addr, "GET /", &[("Host", host)], "").await.0,
            200,
            "{host}"
        );
    }

    for origin in ["https://evil.example", "http://localhost:8787", "null"] {
        let (code, _) = http(
            addr,
            "POST /commands",
            &[BEARER, ("Origin", origin)],
            r#"{"tool":"t"}"#,
        )
        .await;
        assert_eq!(code, 403, "{origin}");
        let (code, _) = http(addr, "GET /status", &[BEARER, ("Origin", origin)], "").await;
        assert_eq!(code, 403, "{origin}");

        let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
        request
            .headers_mut()
            .insert("Origin", origin.parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 403),
            other => panic!("{origin}: expected 403, got {other:?}"),
        }
    }

    // The extension's own origin is welcome.
    let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
    request.headers_mut().insert(
        "Origin",
        "chrome-extension://abcdefghijklmnopabcdefghijklmnop"
            .parse()
            .unwrap(),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    send(&mut ws, json!({"type": "auth", "token": TOKEN})).await;
    assert_eq!(next_frame(&mut ws).await["type"], "auth_ok");
    // Refused upgrades were never counted as connections.
    assert_eq!(status(addr).await["wsConnections"], 1);
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_closes_sockets_and_the_port_can_be_reused() {
    let server = start().await;
    let addr = server.addr();
    let mut ws = extension(addr, None).await;
    let pending = tokio::spawn(command(addr, json!({"tool": "t"})));
    next_frame(&mut ws).await;

    tokio::time::timeout(WAIT, server.shutdown())
        .await
        .expect("shutdown in time");
    assert_eq!(close_code(&mut ws).await, Some(1001));
    assert_eq!(pending.await.unwrap().0, 503);
    assert!(TcpStream::connect(addr).await.is_err(), "port still open");

    let server = start_with(addr, Duration::from_secs(10)).await;
    assert_eq!(server.addr(), addr);
    let mut ws = extension(addr, None).await;
    let call = tokio::spawn(command(addr, json!({"tool": "t"})));
    let cmd = next_frame(&mut ws).await;
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(call.await.unwrap().0, 200);
    assert_eq!(status(addr).await["wsConnections"], 1);
    server.shutdown().await;
}

async fn start_with_store(addr: SocketAddr, store: &TokenStore) -> RunningServer {
    let mut config = ServerConfig::new(addr, TOKEN);
    config.tokens = store.clone();
    RunningServer::start(config).await.expect("server starts")
}

/// `POST /pair/offer` as the /pair page sends it: the offer's target and token.
async fn pair_offer(addr: SocketAddr) -> (String, String) {
    let origin = format!("http://{addr}");
    let (code, body) = http(addr, "POST /pair/offer", &[("Origin", &origin)], "").await;
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON offer");
    let config = &v["offer"]["config"];
    assert_eq!(config["target"], v["target"]);
    let text = |v: &Value| v.as_str().expect("a string").to_string();
    (text(&v["target"]), text(&config["token"]))
}

#[tokio::test]
async fn a_paired_token_outlives_a_restart_and_is_revoked_like_any_other() {
    let (dir, store) = token_store("paired");
    let server = start_with_store(local(), &store).await;
    let addr = server.addr();
    let (target, token) = pair_offer(addr).await;
    let (code, _) = http(
        addr,
        "POST /pair/offer",
        &[("Origin", "http://evil.example")],
        "",
    )
    .await;
    assert_eq!(code, 403, "another site's page gets no offer");
    let listed = store.list().expect("list");
    assert_eq!(listed.len(), 1);
    assert!(listed[0].paired && listed[0].target == target);
    server.shutdown().await;

    // A restarted server on the same store accepts the paired browser as its target only.
    let server = start_with_store(addr, &store).await;
    let mut other = connect(addr).await;
    send(
        &mut other,
        json!({"type": "auth", "token": token, "target": "someone-else"}),
    )
    .await;
    assert_eq!(next_frame(&mut other).await["type"], "error");
    let mut ws = connect(addr).await;
    send(&mut ws, json!({"type": "auth", "token": token})).await;
    assert_eq!(next_frame(&mut ws).await, json!({"type": "auth_ok"}));
    assert_eq!(status(addr).await["browsers"][0]["target"], json!(target));

    // Revoking it (what `token revoke` does) refuses it and closes the live connection.
    let id = listed[0].id.clone();
    store.revoke(&id).expect("revoke");
    let body = json!({"tokenId": id, "reason": "token revoked"}).to_string();
    let (code, said) = http(addr, "POST /disconnect", &[BEARER], &body).await;
    assert_eq!(code, 200, "{said}");
    assert_eq!(close_code(&mut ws).await, Some(4001));
    let mut again = connect(addr).await;
    send(&mut again, json!({"type": "auth", "token": token})).await;
    assert_eq!(close_code(&mut again).await, Some(4001));

    // Over HTTP too: a paired token polls as its own target (the default path becomes it),
    // not as another.
    let (target, token) = pair_offer(addr).await;
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str())];
    let (code, body) = http(addr, "GET /browser/events?wait=0", &auth, "").await;
    assert_eq!((code, body.as_str()), (200, r#"{"commands":[]}"#));
    assert_eq!(status(addr).await["browsers"][0]["target"], json!(target));
    let (code, body) = http(addr, "GET /browser/elsewhere/events?wait=0", &auth, "").await;
    assert_eq!(code, 403);
    assert!(body.contains(&target), "{body}");
    server.shutdown().await;
    std::fs::remove_dir_all(dir).expect("cleanup");
}

#[tokio::test]
async fn pairing_without_a_token_store_says_why() {
    let server = start().await;
    let addr = server.addr();
    let origin = format!("http://{addr}");
    let (code, body) = http(addr, "POST /pair/offer", &[("Origin", &origin)], "").await;
    assert_eq!(code, 500);
    assert!(body.contains("no config directory"), "{body}");
    server.shutdown().await;
}

/// Raw bytes to a fresh connection; the whole answer once the server closes it (or what came
/// within `WAIT`).
async fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(WAIT, stream.read_to_end(&mut response)).await;
    String::from_utf8_lossy(&response).into_owned()
}

/// A request announcing a `len`-byte body, sent while the answer is read: the answer's head.
async fn oversized(addr: SocketAddr, head: &str, len: usize) -> String {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let request = format!(
        "{head} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    );
    let send = tokio::spawn(async move {
        let _ = writer.write_all(request.as_bytes()).await;
        let chunk = vec![b'a'; 1 << 16];
        for _ in 0..len / chunk.len() {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(WAIT, reader.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    send.abort();
    String::from_utf8_lossy(&got).into_owned()
}

/// Neighbours on the same machine: a request without Host (DNS rebinding can't be ruled out),
/// clients that trickle their headers or say nothing, oversized bodies and frames.
#[tokio::test]
async fn slow_silent_and_oversized_clients_are_cut_off_without_blocking_others() {
    let server = RunningServer::start(ServerConfig {
        header_timeout: Duration::from_millis(500),
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .unwrap();
    let addr = server.addr();

    let answer = raw(addr, b"GET /status HTTP/1.1\r\nAuthorization: Bearer test-token-0123\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("Host header"), "{answer}");

    // Slowloris: 50 connections that send half a request head and then dribble, and 50 that
    // send nothing. Meanwhile others are served, and the server cuts each slow one off.
    let mut slow = Vec::new();
    for i in 0..100 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 0 {
            stream
                .write_all(format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
                .await
                .unwrap();
        }
        slow.push(stream);
    }
    assert_eq!(status(addr).await["browsers"], json!([]));
    let mut ws = extension(addr, None).await;
    let call = tokio::spawn(command(addr, json!({"tool": "t"})));
    let cmd = next_frame(&mut ws).await;
    send(
        &mut ws,
        json!({"type": "result", "commandId": cmd["id"], "result": {"content": []}}),
    )
    .await;
    assert_eq!(call.await.unwrap().0, 200);
    for (i, mut stream) in slow.into_iter().enumerate() {
        let mut buf = [0u8; 1024];
        let mut got = Vec::new();
        let since = std::time::Instant::now();
        loop {
            assert!(
                since.elapsed() < WAIT,
                "connection {i} ({}) was never cut off",
                if i % 2 == 0 { "dribbling" } else { "silent" }
            );
            if i % 2 == 0 {
                // Still dribbling: one byte of the header value now and then.
                let _ = stream.write_all(b"x").await;
            }
            match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
            assert!(
                got.len() < 4096,
                "connection {i} answered: {}",
                String::from_utf8_lossy(&got)
            );
        }
    }

    // Oversized: a command body past its limit (about 4 MiB) gets 413; a result past 32 MB
    // gets 413; a WebSocket message past 32 MB closes the socket with 1009 (message too big).
    for (head, len) in [
        ("POST /commands", MAX_COMMAND_BODY + (64 << 10)),
        ("POST /browser/result", 33 << 20),
    ] {
        let answer = oversized(addr, head, len).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{head}: {answer}");
    }
    let _ = ws.send(Message::text("a".repeat(33 << 20))).await;
    assert_eq!(close_code(&mut ws).await, Some(1009));
    // And the server still serves.
    extension(addr, None).await;
    server.shutdown().await;
}

/// Token guessing: failures past the free allowance are answered only after the throttle's
/// delay (on every route), while the right token is answered at once, even from the same
/// address while a guesser is being held.
#[tokio::test]
async fn wrong_tokens_are_slowed_down_and_the_right_one_never_is() {
    let delay = Duration::from_secs(3);
    let server = RunningServer::start(ServerConfig {
        auth_failure_delay: delay,
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .unwrap();
    let addr = server.addr();
    static WRONG: [(&str, &str); 1] = [("Authorization", "Bearer guess")];
    let wrong = &WRONG;
    for _ in 0..10 {
        assert_eq!(http(addr, "GET /status", wrong, "").await.0, 401);
    }
    // The allowance is spent: each further failure is held for the delay, on every route.
    let held = std::time::Instant::now();
    for (head, body) in [
        ("GET /status", ""),
        ("POST /commands", r#"{"tool":"t"}"#),
        ("GET /browser/events?wait=0", ""),
        ("POST /browser/result", r#"{"commandId":"x","error":"e"}"#),
    ] {
        let started = std::time::Instant::now();
        assert_eq!(http(addr, head, wrong, body).await.0, 401, "{head}");
        assert!(
            started.elapsed() >= delay - Duration::from_millis(100),
            "{head} was not held"
        );
    }
    assert!(held.elapsed() >= delay * 4 - Duration::from_millis(400));
    let mut ws = connect(addr).await;
    let started = std::time::Instant::now();
    send(&mut ws, json!({"type": "auth", "token": "guess"})).await;
    assert_eq!(close_code(&mut ws).await, Some(4001));
    assert!(
        started.elapsed() >= delay - Duration::from_millis(100),
        "the WebSocket failure was not held"
    );

    // While a guess is being held, the real browser and client get in at once: both are
    // answered before the held guess is.
    let guess = tokio::spawn(http(addr, "GET /status", wrong, ""));
    let browser = extension(addr, None).await;
    assert_eq!(status(addr).await["browsers"][0]["target"], "default");
    assert!(
        !guess.is_finished(),
        "the right token waited behind the guess"
    );
    assert_eq!(guess.await.unwrap().0, 401);
    assert!(status(addr).await["authFailures"].as_u64().unwrap() >= 16);
    drop(browser);
    server.shutdown().await;
}
