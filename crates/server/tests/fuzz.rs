//! The server's HTTP, WebSocket and MCP handling under random input: the real server runs
//! in-process on 127.0.0.1 and each target throws random requests, headers, bodies and frames at
//! it for `FUZZ_SECONDS` (a quick pass by default; `./build.sh fuzz` runs long ones; `FUZZ_SEED`
//! replays). Every request must be answered with a status (or, for bytes that are not HTTP, the
//! connection closed) within a bound, and the server must keep serving throughout: a real
//! extension connection still gets its commands and `/status` still answers.

mod common;

use browser_operator_server::{RunningServer, ServerConfig};
use common::{connect, local, Ws, TOKEN};
use futures_util::{SinkExt, StreamExt};
use protocol::fuzzing::{budget, seed, Rng};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

/// The longest any answer may take (the server is idle otherwise).
const ANSWER: Duration = Duration::from_secs(10);

async fn start() -> RunningServer {
    RunningServer::start(ServerConfig {
        command_timeout: Duration::from_secs(2),
        auth_timeout: Duration::from_secs(2),
        // Random requests mostly carry wrong tokens: throttling them would only slow the fuzzer.
        auth_failure_delay: Duration::ZERO,
        ..ServerConfig::new(local(), TOKEN)
    })
    .await
    .expect("server starts")
}

fn report(name: &str, inputs: u64, start: Instant, seed: u64) {
    let s = start.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {name}: {inputs} inputs in {s:.1} s ({:.0}/s), seed {seed}",
        inputs as f64 / s.max(1e-9)
    );
}

/// Sends `request` on a fresh connection; returns the status, or `None` when the server closed
/// the connection without one. Reads only the head (an event stream never ends).
async fn exchange(addr: SocketAddr, request: &[u8]) -> Option<u16> {
    exchange_then(addr, request, false).await
}

/// [`exchange`]; with `eof`, the request is followed by the end of the stream (bytes whose
/// framing was broken may promise a body that never comes: the server may wait for it).
async fn exchange_then(addr: SocketAddr, request: &[u8], eof: bool) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    // The server may answer (and close) before it has read everything.
    let _ = stream.write_all(request).await;
    if eof {
        let _ = stream.shutdown().await;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = tokio::time::timeout(ANSWER, async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "no answer within {ANSWER:?} to {:?}",
        String::from_utf8_lossy(&request[..request.len().min(300)])
    );
    let text = String::from_utf8_lossy(&buf);
    if text.is_empty() {
        return None;
    }
    assert!(text.starts_with("HTTP/1.1 "), "not HTTP: {text:?}");
    Some(text[9..12].parse().expect("a status code"))
}

async fn still_serving(addr: SocketAddr) {
    let request = format!(
        "GET /status HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(exchange(addr, request.as_bytes()).await, Some(200));
}

const PATHS: &[&str] = &[
    "/",
    "/commands",
    "/status",
    "/disconnect",
    "/browser/events",
    "/browser/result",
    "/browser/work/events",
    "/browser/work/result",
    "/browser/../status",
    "/pair",
    "/pair/offer",
    "/pair/status",
    "/mcp",
    "/ws",
    "/%00",
    "/browser/%2e%2e/result",
    "//status",
    "/status?x=1",
];

fn bodies(rng: &mut Rng) -> Vec<u8> {
    let seeds = [
        json!({"tool": "navigate", "args": {"tabId": 1, "url": "https://a.example"}}),
        json!({"tool": "tabs_context_mcp", "args": {}, "target": "work"}),
        json!({"commandId": "c1", "result": {"content": [{"type": "text", "text": "ok"}]}}),
        json!({"commandId": "c1", "error": "no"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "navigate", "arguments": {"url": "x"}}}),
        json!({"origin": "http://127.0.0.1", "target": "t"}),
    ];
    let mut body = if rng.one_in(5) {
        rng.bytes(2000)
    } else {
        let mut v = rng.pick(&seeds).clone();
        for _ in 0..rng.below(3) {
            rng.mutate_json(&mut v, 3);
        }
        v.to_string().into_bytes()
    };
    if rng.one_in(3) {
        rng.mutate_bytes(&mut body);
    }
    body
}

/// A random request: method, path, the headers that matter (right, wrong and odd), a body.
fn request(rng: &mut Rng, addr: SocketAddr) -> (Vec<u8>, bool) {
    let method = *rng.pick(&[
        "GET", "POST", "POST", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH", "BREW",
    ]);
    let path = if rng.one_in(6) {
        let s = rng.string(40);
        let enc: String = s
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'/' {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!("/{enc}")
    } else {
        rng.pick(PATHS).to_string()
    };
    let body = bodies(rng);
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    let host = match rng.below(6) {
        0 => "evil.example".to_string(),
        1 => format!("localhost:{}", addr.port()),
        2 => "".to_string(),
        _ => addr.to_string(),
    };
    head.push_str(&format!("Host: {host}\r\n"));
    let optional: [(&str, Vec<String>); 6] = [
        (
            "Authorization",
            vec![
                format!("Bearer {TOKEN}"),
                "Bearer wrong".into(),
                "Basic eA==".into(),
                "Bearer ".into(),
                format!("bearer {TOKEN}"),
            ],
        ),
        (
            "Origin",
            vec![
                "https://evil.example".into(),
                "null".into(),
                "chrome-extension://abcdefghijklmnopabcdefghijklmnop".into(),
                format!("http://{addr}"),
                "http://127.0.0.1.evil.example".into(),
            ],
        ),
        (
            "Content-Type",
            vec![
                "application/json".into(),
                "text/plain".into(),
                "application/json; charset=utf-8".into(),
                "multipart/form-data; boundary=x".into(),
            ],
        ),
        (
            "Accept",
            vec![
                "application/json, text/event-stream".into(),
                "text/event-stream".into(),
                "*/*".into(),
            ],
        ),
        (
            "Mcp-Session-Id",
            vec!["nope".into(), "".into(), "x".repeat(300)],
        ),
        (
            "Sec-Fetch-Site",
            vec!["cross-site".into(), "same-origin".into(), "none".into()],
        ),
    ];
    for (name, values) in &optional {
        if rng.one_in(2) {
            head.push_str(&format!("{name}: {}\r\n", rng.pick(values)));
        }
    }
    // Garbage that is not HTTP framing: the server may close without an answer.
    let mut garbage = false;
    if rng.one_in(10) {
        let value: String = rng
            .string(30)
            .chars()
            .filter(|c| *c != '\r' && *c != '\n')
            .collect();
        head.push_str(&format!("X-{}: {value}\r\n", rng.below(100)));
        garbage = true;
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = head.into_bytes();
    bytes.extend(body);
    if rng.one_in(12) {
        rng.mutate_bytes(&mut bytes);
        garbage = true;
    }
    (bytes, garbage)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_http_requests_are_each_answered_and_the_server_keeps_serving() {
    let server = start().await;
    let addr = server.addr();
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (start, budget) = (Instant::now(), budget());
    let mut inputs = 0u64;
    let mut statuses = std::collections::BTreeMap::<u16, u64>::new();
    while inputs < 100 || start.elapsed() < budget {
        let (bytes, garbage) = request(&mut rng, addr);
        match exchange_then(addr, &bytes, garbage).await {
            Some(code) => {
                if code == 500 && std::env::var_os("FUZZ_SHOW_500").is_some() {
                    eprintln!("500 for {:?}", String::from_utf8_lossy(&bytes));
                }
                *statuses.entry(code).or_default() += 1
            }
            None => assert!(
                garbage,
                "closed without a status: {:?} (FUZZ_SEED={seed})",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ),
        }
        inputs += 1;
        if inputs.is_multiple_of(50) {
            still_serving(addr).await;
        }
    }
    still_serving(addr).await;
    report("server http", inputs, start, seed);
    eprintln!("  statuses: {statuses:?}");
    server.shutdown().await;
}

async fn authed(addr: SocketAddr, target: &str) -> Ws {
    let mut s = connect(addr).await;
    s.send(Message::text(
        json!({"type": "auth", "token": TOKEN, "target": target}).to_string(),
    ))
    .await
    .expect("auth sent");
    s
}

/// The next command frame on a real extension connection.
async fn next_command(s: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(ANSWER, s.next())
            .await
            .expect("a frame in time")
            .expect("open")
            .expect("no error");
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(t.as_str()).expect("JSON");
            if v["type"] == "command" {
                return v;
            }
        }
    }
}

/// A real extension keeps getting (and answering) commands while random connections throw
/// random frames at the same server.
async fn the_real_extension_still_works(addr: SocketAddr, real: &mut Ws) {
    let body = json!({"tool": "tabs_context_mcp", "args": {}, "target": "real"}).to_string();
    let request = format!(
        "POST /commands HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let call = tokio::spawn(async move { exchange(addr, request.as_bytes()).await });
    let cmd = next_command(real).await;
    let answer = json!({"type": "result", "commandId": cmd["id"], "result": {"content": [{"type": "text", "text": "ok"}]}});
    real.send(Message::text(answer.to_string()))
        .await
        .expect("result sent");
    assert_eq!(call.await.expect("joined"), Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_websocket_frames_never_break_the_server() {
    let server = start().await;
    let addr = server.addr();
    let mut real = authed(addr, "real").await;
    let seed = seed();
    let mut rng = Rng::new(seed);
    let seeds = [
        json!({"type": "auth", "token": TOKEN}),
        json!({"type": "auth", "token": "wrong", "target": "x"}),
        json!({"type": "result", "commandId": "c1", "result": {"content": [{"type": "text", "text": "ok"}]}}),
        json!({"type": "result", "commandId": "c1", "error": "no"}),
        json!({"type": "pong"}),
    ];
    let (start, budget) = (Instant::now(), budget());
    let mut inputs = 0u64;
    while inputs < 100 || start.elapsed() < budget {
        let mut s = if rng.one_in(2) {
            authed(addr, &format!("t{}", rng.below(4))).await
        } else {
            connect(addr).await
        };
        for _ in 0..1 + rng.below(4) {
            let msg = match rng.below(6) {
                0 => Message::binary(rng.bytes(500)),
                1 => Message::Ping(rng.bytes(100).into()),
                2 => Message::text(rng.string(200)),
                _ => {
                    let mut v = rng.pick(&seeds).clone();
                    for _ in 0..rng.below(3) {
                        rng.mutate_json(&mut v, 3);
                    }
                    Message::text(v.to_string())
                }
            };
            if s.send(msg).await.is_err() {
                break;
            }
            inputs += 1;
        }
        // Whatever the server answers (error frames, a close), it does so without hanging.
        let _ = tokio::time::timeout(Duration::from_millis(20), s.next()).await;
        drop(s);
        if inputs % 40 < 4 {
            the_real_extension_still_works(addr, &mut real).await;
        }
    }
    the_real_extension_still_works(addr, &mut real).await;
    still_serving(addr).await;
    report("server websocket", inputs, start, seed);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_mcp_requests_are_each_answered() {
    let server = start().await;
    let addr = server.addr();
    let post = |session: Option<&str>, body: &[u8]| {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        if let Some(s) = session {
            head.push_str(&format!(
                "Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
            ));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    };
    // A real session, so that random requests reach the MCP handlers and not only the checks.
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(&post(None, init)).await.expect("sent");
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(ANSWER, stream.read(&mut chunk))
            .await
            .expect("initialize answered")
            .expect("read");
        assert!(n > 0, "closed");
        head.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let session = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {head}"));
    drop(stream);
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert!(exchange(addr, &post(Some(&session), initialized))
        .await
        .is_some());

    let tools: Vec<String> = protocol::catalog()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (start, budget) = (Instant::now(), budget());
    let mut inputs = 0u64;
    while inputs < 100 || start.elapsed() < budget {
        let mut v = match rng.below(5) {
            0 => json!({"jsonrpc": "2.0", "id": rng.below(1000), "method": "tools/list"}),
            1 => {
                json!({"jsonrpc": "2.0", "id": rng.below(1000), "method": "tools/call", "params": {"name": rng.pick(&tools), "arguments": Value::Object(rng.object(2, &["tabId", "url", "text", "action"]))}})
            }
            2 => {
                json!({"jsonrpc": "2.0", "id": rng.string(10), "method": rng.string(20), "params": rng.json(3)})
            }
            3 => {
                json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}])
            }
            _ => json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": rng.json(2)}),
        };
        if rng.one_in(3) {
            rng.mutate_json(&mut v, 3);
        }
        let mut body = v.to_string().into_bytes();
        if rng.one_in(6) {
            rng.mutate_bytes(&mut body);
        }
        let which = if rng.one_in(5) {
            None
        } else {
            Some(session.as_str())
        };
        let code = exchange(addr, &post(which, &body)).await;
        assert!(
            code.is_some(),
            "no status for {:?} (FUZZ_SEED={seed})",
            String::from_utf8_lossy(&body)
        );
        inputs += 1;
        if inputs.is_multiple_of(50) {
            still_serving(addr).await;
        }
    }
    let list = br#"{"jsonrpc":"2.0","id":99,"method":"tools/list"}"#;
    assert_eq!(exchange(addr, &post(Some(&session), list)).await, Some(200));
    still_serving(addr).await;
    report("server mcp", inputs, start, seed);
    server.shutdown().await;
}
