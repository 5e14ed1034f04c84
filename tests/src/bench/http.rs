//! The command API as a backend uses it: `POST /commands` on one kept-alive HTTP/1.1 connection
//! (TCP_NODELAY), so that a measured round trip is the server's work and the browser's, not a new
//! connection's handshake. The same connection measures the HTTP floor: the same request with a
//! target no browser holds, which the server refuses without the browser.

use crate::{Error, Result};
use protocol::CommandResult;
use serde_json::{json, Value};
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// The target the floor's requests name: no browser connects with it, so the server answers
/// `409` at once (after the same authentication, parsing and routing as a real command).
pub const FLOOR_TARGET: &str = "bench-http-floor";

/// One kept-alive connection to a server's API.
pub struct Api {
    addr: SocketAddr,
    token: String,
    conn: Mutex<Option<BufReader<TcpStream>>>,
}

/// An HTTP answer: status and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Api {
    pub fn new(addr: SocketAddr, token: &str) -> Api {
        Api {
            addr,
            token: token.to_string(),
            conn: Mutex::new(None),
        }
    }

    /// `POST path` with a JSON body; the connection is made again (once) when the kept one was
    /// closed by the server.
    pub async fn post(&self, path: &str, body: &str) -> Result<Answer> {
        self.request("POST", path, body).await
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Answer> {
        self.request("GET", path, "").await
    }

    async fn request(&self, method: &str, path: &str, body: &str) -> Result<Answer> {
        let mut conn = self.conn.lock().await;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            self.token,
            body.len()
        );
        let mut message = head.into_bytes();
        message.extend_from_slice(body.as_bytes());
        for attempt in 0..2 {
            let reused = conn.is_some();
            if conn.is_none() {
                let stream = TcpStream::connect(self.addr)
                    .await
                    .map_err(|e| Error::new(format!("connecting to {}: {e}", self.addr)))?;
                stream.set_nodelay(true)?;
                *conn = Some(BufReader::new(stream));
            }
            let Some(stream) = conn.as_mut() else {
                continue;
            };
            match exchange(stream, &message).await {
                Ok((answer, keep)) => {
                    if !keep {
                        *conn = None;
                    }
                    return Ok(answer);
                }
                // A kept connection the server closed meanwhile: once more on a new one.
                Err(e) if reused && attempt == 0 => {
                    let _ = e;
                    *conn = None;
                }
                Err(e) => {
                    *conn = None;
                    return Err(e.context(format!("{method} {path} on {}", self.addr)));
                }
            }
        }
        Err(Error::new(format!("{method} {path}: no connection")))
    }

    /// Runs `tool` in the browser: its result (an error result too), or the HTTP error.
    pub async fn command(&self, tool: &str, args: &Value) -> Result<CommandResult> {
        self.command_to(None, tool, args).await
    }

    /// [`Api::command`] for the browser connected as `target` (`None`: the default one).
    pub async fn command_to(
        &self,
        target: Option<&str>,
        tool: &str,
        args: &Value,
    ) -> Result<CommandResult> {
        let mut body = json!({"tool": tool, "args": args});
        if let Some(target) = target {
            body["target"] = target.into();
        }
        let body = body.to_string();
        let answer = self.post("/commands", &body).await?;
        if answer.status != 200 {
            return Err(Error::new(format!(
                "POST /commands {tool}: HTTP {}: {}",
                answer.status, answer.body
            )));
        }
        serde_json::from_str(&answer.body).map_err(|e| {
            Error::new(format!(
                "POST /commands {tool}: not a command result ({e}): {}",
                crate::error::abbreviate(&answer.body, 300)
            ))
        })
    }

    /// The text of a successful result; an error result is an error.
    pub async fn text(&self, tool: &str, args: &Value) -> Result<String> {
        self.text_to(None, tool, args).await
    }

    /// [`Api::text`] for the browser connected as `target`.
    pub async fn text_to(&self, target: Option<&str>, tool: &str, args: &Value) -> Result<String> {
        match self.command_to(target, tool, args).await?.outcome {
            protocol::Outcome::Result { result } => Ok(result.joined_text()),
            protocol::Outcome::Error { error } => {
                Err(Error::new(format!("{tool} {args} failed: {error}")))
            }
        }
    }

    /// The error message of a result that must be an error.
    pub async fn error(&self, tool: &str, args: &Value) -> Result<String> {
        self.error_to(None, tool, args).await
    }

    /// [`Api::error`] for the browser connected as `target`.
    pub async fn error_to(&self, target: Option<&str>, tool: &str, args: &Value) -> Result<String> {
        match self.command_to(target, tool, args).await?.outcome {
            protocol::Outcome::Error { error } => Ok(error),
            protocol::Outcome::Result { result } => Err(Error::new(format!(
                "{tool} {args} should have failed but returned: {}",
                crate::error::abbreviate(&result.joined_text(), 300)
            ))),
        }
    }

    /// The HTTP floor: the same `POST /commands` for [`FLOOR_TARGET`], refused by the server with
    /// `409` without the browser.
    pub async fn floor(&self, tool: &str, args: &Value) -> Result<()> {
        let body = json!({"tool": tool, "args": args, "target": FLOOR_TARGET}).to_string();
        let answer = self.post("/commands", &body).await?;
        if answer.status != 409 {
            return Err(Error::new(format!(
                "the HTTP floor's request should be refused with 409 (unknown target), got {}: {}",
                answer.status, answer.body
            )));
        }
        Ok(())
    }

    /// `GET /status` as JSON.
    pub async fn status(&self) -> Result<Value> {
        let answer = self.get("/status").await?;
        if answer.status != 200 {
            return Err(Error::new(format!(
                "GET /status: HTTP {}: {}",
                answer.status, answer.body
            )));
        }
        Ok(serde_json::from_str(&answer.body)?)
    }
}

/// Writes one request and reads its answer: the answer and whether the connection stays open.
async fn exchange(stream: &mut BufReader<TcpStream>, message: &[u8]) -> Result<(Answer, bool)> {
    stream.get_mut().write_all(message).await?;
    let mut line = String::new();
    if stream.read_line(&mut line).await? == 0 {
        return Err(Error::new("the server closed the connection"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::new(format!("not an HTTP status line: {line:?}")))?;
    let (mut length, mut chunked, mut keep) = (None, false, true);
    loop {
        line.clear();
        if stream.read_line(&mut line).await? == 0 {
            return Err(Error::new("the server closed the connection in the head"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse::<usize>().ok();
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.eq_ignore_ascii_case("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                keep = !value.eq_ignore_ascii_case("close");
            }
        }
    }
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            line.clear();
            stream.read_line(&mut line).await?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| Error::new(format!("bad chunk size {line:?}")))?;
            let mut chunk = vec![0; size + 2];
            stream.read_exact(&mut chunk).await?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
        body
    } else if let Some(n) = length {
        let mut body = vec![0; n];
        stream.read_exact(&mut body).await?;
        body
    } else {
        // Neither: the body runs to the end of the connection.
        let mut body = Vec::new();
        stream.read_to_end(&mut body).await?;
        keep = false;
        body
    };
    Ok((
        Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        },
        keep,
    ))
}
