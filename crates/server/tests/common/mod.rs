//! What the server's integration tests share: the server's token, raw HTTP/1.1 requests, a fake
//! extension over a real WebSocket, temporary directories and token stores of their own, and the
//! built binary. Each test file uses part of it (`mod common;`).

#![allow(dead_code)]

pub mod redis;

use browser_operator_server::target_tokens::{TokenStore, TOKENS_FILE};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The main token of the servers the tests start.
pub const TOKEN: &str = "test-token-0123";
/// The header that authorizes a request with [`TOKEN`].
pub const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123");
/// How long a test waits for a frame or a close.
pub const WAIT: Duration = Duration::from_secs(10);
/// How long a test waits for an HTTP answer (some wait for a command to time out first).
pub const ANSWER: Duration = Duration::from_secs(30);
/// The built `browser-operator` binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_browser-operator");

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// 127.0.0.1 on a port the system picks.
pub fn local() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A fresh, empty path for this test binary's `name` (`bo-<test file>-<name>-<pid>` in the
/// temporary directory), so that no test reads or writes the user's config or another test's.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "bo-{}-{name}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A fresh per-target token store in [`temp_dir`]`(name)`.
pub fn token_store(name: &str) -> (PathBuf, TokenStore) {
    let dir = temp_dir(name);
    let store = TokenStore::at(dir.join(TOKENS_FILE));
    (dir, store)
}

/// Bytes a child process wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One HTTP/1.1 request over a fresh connection (with `Host` unless `headers` has one);
/// returns the status and the body.
pub async fn http(
    addr: SocketAddr,
    head: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut request = format!("{head} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut response = Vec::new();
    tokio::time::timeout(ANSWER, stream.read_to_end(&mut response))
        .await
        .expect("response in time")
        .expect("response read");
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response[9..12].parse().expect("a status code");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// `GET /status` with [`TOKEN`]: its JSON.
pub async fn status(addr: SocketAddr) -> Value {
    let (code, body) = http(addr, "GET /status", &[BEARER], "").await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).expect("JSON status")
}

/// Polls `/status` until `check` holds (at most 200 times, 25 ms apart).
pub async fn wait_until(addr: SocketAddr, what: &str, check: impl Fn(&Value) -> bool) {
    for _ in 0..200 {
        if check(&status(addr).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened: {}", status(addr).await);
}

/// A WebSocket to `/ws`, not yet authenticated.
pub async fn connect(addr: SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .expect("upgrade")
        .0
}

pub async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).await.expect("sent");
}

/// The next text frame as JSON (pings and pongs skipped).
pub async fn next_frame(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame in time")
            .expect("socket open")
            .expect("no error");
        match msg {
            Message::Text(t) => return serde_json::from_str(t.as_str()).expect("JSON frame"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("expected a text frame, got {other:?}"),
        }
    }
}

/// The close code the server sends next (`None`: the connection ended without one), and the
/// text frames before it.
pub async fn closed(ws: &mut Ws) -> (Option<u16>, Vec<Value>) {
    let mut frames = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("close in time")
        {
            Some(Ok(Message::Close(frame))) => {
                // Reading on sends our reply, so the server need not wait for it.
                let _ = tokio::time::timeout(WAIT, ws.next()).await;
                return (frame.map(|f| u16::from(f.code)), frames);
            }
            Some(Ok(Message::Text(t))) => frames
                .push(serde_json::from_str(t.as_str()).unwrap_or_else(|_| Value::from(t.as_str()))),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return (None, frames),
        }
    }
}

/// A fake extension that authenticated with `token` (as `target`, if given) and got `auth_ok`.
pub async fn extension_with(addr: SocketAddr, token: &str, target: Option<&str>) -> Ws {
    let mut ws = connect(addr).await;
    let mut auth = json!({"type": "auth", "token": token});
    if let Some(t) = target {
        auth["target"] = json!(t);
    }
    send(&mut ws, auth).await;
    assert_eq!(next_frame(&mut ws).await, json!({"type": "auth_ok"}));
    ws
}

/// [`extension_with`] the main token.
pub async fn extension(addr: SocketAddr, target: Option<&str>) -> Ws {
    extension_with(addr, TOKEN, target).await
}

/// The built binary with `args`, its config directory `config` (never the user's), no token in
/// its environment and nothing on stdin.
pub fn binary(args: &[&str], config: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env("BROWSER_OPERATOR_CONFIG_DIR", config)
        .env_remove("BROWSER_OPERATOR_TOKEN")
        .stdin(Stdio::null());
    command
}
