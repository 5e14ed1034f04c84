//! The real reference server, in-process on a random loopback port, and the calls a backend
//! makes to it: commands through `POST /commands` (the same client as `browser-operator call`)
//! and `GET /status`. Each server has its own config directory for per-target tokens
//! (`tokens.json`, also where /pair keeps the tokens it issues), kept across `start_again`.

use crate::{Error, Result};
use browser_operator_server::call::{self, Call, CallError};
use browser_operator_server::target_tokens::{TokenStore, TOKENS_FILE};
use browser_operator_server::{RunningServer, ServerConfig};
use protocol::{CommandResult, ContentBlock, Outcome};
use serde_json::{Map, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Backend {
    server: Option<RunningServer>,
    addr: SocketAddr,
    token: String,
    config_dir: PathBuf,
}

impl Backend {
    /// A server with a fresh random token on a free port.
    pub async fn start() -> Result<Backend> {
        let token = format!("e2e-{:016x}{:016x}", rand_u64(), rand_u64());
        Self::start_at("127.0.0.1:0".parse().expect("address"), token).await
    }

    pub async fn start_at(addr: SocketAddr, token: String) -> Result<Backend> {
        let config_dir = std::env::temp_dir().join(format!("bo-e2e-backend-{:016x}", rand_u64()));
        let server = Self::serve(addr, &token, &config_dir).await?;
        Ok(Backend {
            addr: server.addr(),
            server: Some(server),
            token,
            config_dir,
        })
    }

    async fn serve(addr: SocketAddr, token: &str, config_dir: &Path) -> Result<RunningServer> {
        let mut config = ServerConfig::new(addr, token);
        config.tokens = TokenStore::at(config_dir.join(TOKENS_FILE));
        RunningServer::start(config)
            .await
            .map_err(|e| Error::new(format!("starting the server on {addr}: {e}")))
    }

    /// The server's config directory (`BROWSER_OPERATOR_CONFIG_DIR` for the command line's
    /// `token list|revoke`); created when the first per-target token is issued.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Where the server listens (the same across `start_again`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server URL a user types into Options for `transport` (`ws://…/ws` for "websocket",
    /// `http://…` for the HTTP transports).
    pub fn url_for(&self, transport: &str) -> String {
        if transport == "websocket" {
            self.ws_url()
        } else {
            self.http_url()
        }
    }

    /// What a user pastes into Options.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server (every connection dropped); `start_again` brings it back on the same port.
    pub async fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }

    /// Starts the server again on the same port, with the same token and config directory.
    pub async fn start_again(&mut self) -> Result<()> {
        self.stop().await;
        self.server = Some(Self::serve(self.addr, &self.token, &self.config_dir).await?);
        Ok(())
    }

    /// A handle that sends commands to this server's address, usable from other tasks while
    /// the server is stopped and started again.
    pub fn caller(&self) -> Caller {
        Caller {
            url: self.http_url(),
            token: self.token.clone(),
            agent: None,
        }
    }

    /// `POST /disconnect`: the server tells the browser of `target` (or the only one) to stop.
    pub async fn disconnect(&self, target: Option<&str>) -> Result<Value> {
        let url = format!("{}/disconnect", self.http_url());
        let token = self.token.clone();
        let body = match target {
            Some(t) => serde_json::json!({ "target": t }),
            None => serde_json::json!({}),
        };
        tokio::task::spawn_blocking(move || -> Result<Value> {
            let mut response = ureq::post(&url)
                .header("Authorization", format!("Bearer {token}"))
                .send_json(&body)
                .map_err(|e| Error::new(format!("POST /disconnect: {e}")))?;
            let text = response
                .body_mut()
                .read_to_string()
                .map_err(|e| Error::new(format!("POST /disconnect body: {e}")))?;
            Ok(serde_json::from_str(&text)?)
        })
        .await
        .map_err(|e| Error::new(format!("the disconnect task failed: {e}")))?
    }

    /// Runs a tool in the browser; the command result, or the HTTP error.
    pub async fn command(&self, tool: &str, args: Value) -> Result<CommandResult> {
        self.caller().command(tool, args).await
    }

    /// The text of a successful result; an error result fails the test with its message.
    pub async fn text(&self, tool: &str, args: Value) -> Result<String> {
        match self.command(tool, args.clone()).await?.outcome {
            Outcome::Result { result } => Ok(result.joined_text()),
            Outcome::Error { error } => Err(Error::new(format!("{tool} {args} failed: {error}"))),
        }
    }

    /// The error message of a result that must be an error.
    pub async fn error(&self, tool: &str, args: Value) -> Result<String> {
        match self.command(tool, args.clone()).await?.outcome {
            Outcome::Error { error } => Ok(error),
            Outcome::Result { result } => Err(Error::new(format!(
                "{tool} {args} should have failed but returned: {}",
                result.joined_text()
            ))),
        }
    }

    /// `javascript_tool` in `tab`: what `code` evaluated to, as text (an error fails).
    pub async fn js(&self, tab: i64, code: &str) -> Result<String> {
        self.text(
            "javascript_tool",
            serde_json::json!({"tabId": tab, "text": code}),
        )
        .await
    }

    /// `navigate` in `tab`: the tool's answer ("Navigated to …").
    pub async fn navigate(&self, tab: i64, url: &str) -> Result<String> {
        self.text("navigate", serde_json::json!({"tabId": tab, "url": url}))
            .await
    }

    /// `tabs_create_mcp`: the new tab's id.
    pub async fn new_tab(&self) -> Result<i64> {
        created_tab_id(&self.text("tabs_create_mcp", serde_json::json!({})).await?)
    }

    /// `tabs_context_mcp` with `createIfEmpty: true`: the automation group's first tab id and
    /// the group id.
    pub async fn first_tab(&self) -> Result<(i64, i64)> {
        let text = self
            .text(
                "tabs_context_mcp",
                serde_json::json!({"createIfEmpty": true}),
            )
            .await?;
        let ctx = tabs_context(&text);
        match (
            ctx["availableTabs"][0]["tabId"].as_i64(),
            ctx["tabGroupId"].as_i64(),
        ) {
            (Some(tab), Some(group)) => Ok((tab, group)),
            _ => Err(Error::new(format!(
                "no tab in the automation group: {text}"
            ))),
        }
    }

    /// `GET /status`.
    pub async fn status(&self) -> Result<Value> {
        let url = format!("{}/status", self.http_url());
        let token = self.token.clone();
        tokio::task::spawn_blocking(move || -> Result<Value> {
            let mut response = ureq::get(&url)
                .header("Authorization", format!("Bearer {token}"))
                .call()
                .map_err(|e| Error::new(format!("GET /status: {e}")))?;
            let body = response
                .body_mut()
                .read_to_string()
                .map_err(|e| Error::new(format!("GET /status body: {e}")))?;
            Ok(serde_json::from_str(&body)?)
        })
        .await
        .map_err(|e| Error::new(format!("the status task failed: {e}")))?
    }

    /// Number of browsers connected now.
    pub async fn browsers(&self) -> Result<usize> {
        Ok(self.status().await?["browsers"]
            .as_array()
            .map_or(0, Vec::len))
    }

    /// The connections the server holds now: each browser's target and when it connected
    /// (Unix ms). Taken before stopping a worker, for [`Backend::wait_reconnected`].
    pub async fn connections(&self) -> Result<Vec<(String, u64)>> {
        Ok(connections_of(&self.status().await?))
    }

    /// Waits until every browser of `before` is connected again on a newer connection (a
    /// stopped worker's old connection can still be listed for a moment after the stop, so
    /// counting browsers would not tell the two apart); the time it took.
    pub async fn wait_reconnected(
        &self,
        before: &[(String, u64)],
        timeout: Duration,
    ) -> Result<Duration> {
        let start = Instant::now();
        loop {
            let now = self.connections().await?;
            let renewed = before
                .iter()
                .all(|(target, since)| now.iter().any(|(t, at)| t == target && at > since));
            if renewed && now.len() == before.len() {
                return Ok(start.elapsed());
            }
            if start.elapsed() > timeout {
                return Err(Error::new(format!(
                    "the browsers {before:?} did not connect again within {timeout:?}: {}",
                    self.status().await?
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `n` browsers are connected; the time it took.
    pub async fn wait_browsers(&self, n: usize, timeout: Duration) -> Result<Duration> {
        let start = Instant::now();
        loop {
            if self.browsers().await? == n {
                return Ok(start.elapsed());
            }
            if start.elapsed() > timeout {
                return Err(Error::new(format!(
                    "the server did not see {n} browser(s) within {timeout:?}: {}",
                    self.status().await?
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.config_dir);
    }
}

/// Sends commands to a server's address (see [`Backend::caller`]).
#[derive(Clone)]
pub struct Caller {
    url: String,
    token: String,
    agent: Option<String>,
}

impl Caller {
    /// The same caller, its commands sent for `agent` (`agent` of `POST /commands`: the
    /// browser drives its own tab group for it).
    pub fn as_agent(mut self, agent: &str) -> Caller {
        self.agent = Some(agent.to_string());
        self
    }

    /// Runs a tool in the browser; the command result, or the HTTP error.
    pub async fn command(&self, tool: &str, args: Value) -> Result<CommandResult> {
        let request = Call {
            url: self.url.clone(),
            token: self.token.clone(),
            tool: tool.to_string(),
            args: args.as_object().cloned().unwrap_or_else(Map::new),
            target: None,
            timeout: Some(Duration::from_secs(60)),
            agent: self.agent.clone(),
            id: None,
        };
        let answer = tokio::task::spawn_blocking(move || call::call(&request))
            .await
            .map_err(|e| Error::new(format!("the call task failed: {e}")))?;
        answer.map(|a| a.result).map_err(|e| {
            Error::new(match e {
                CallError::Http { status, message } => format!("{tool}: HTTP {status}: {message}"),
                other => format!("{tool}: {other:?}"),
            })
        })
    }

    /// [`Caller::command`], sent again every 20 ms while the server answers that no browser is
    /// connected (a worker starting, a connection being remade), for at most `within`. A command
    /// refused that way never reached a browser.
    pub async fn command_when_connected(
        &self,
        tool: &str,
        args: Value,
        within: Duration,
    ) -> Result<CommandResult> {
        let deadline = Instant::now() + within;
        loop {
            match self.command(tool, args.clone()).await {
                Err(e) if e.to_string().contains("No browser is connected") => {
                    if Instant::now() > deadline {
                        return Err(e.context(format!("no browser connected within {within:?}")));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => return other,
            }
        }
    }
}

/// The new tab's id in a `tabs_create_mcp` result ("… Tab ID: 123 …").
pub fn created_tab_id(text: &str) -> Result<i64> {
    text.split("Tab ID: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| Error::new(format!("no new tab id in {text}")))
}

/// The JSON first line of a `tabs_context_mcp` result (`Null` when it is not JSON, e.g. "No
/// automation tab group exists…").
pub fn tabs_context(text: &str) -> Value {
    serde_json::from_str(text.lines().next().unwrap_or("")).unwrap_or(Value::Null)
}

/// Width and height of a decoded image: a PNG's IHDR or a JPEG's first SOF marker.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.starts_with(b"\x89PNG") {
        let w = u32::from_be_bytes(b[16..20].try_into().ok()?);
        let h = u32::from_be_bytes(b[20..24].try_into().ok()?);
        return Some((w, h));
    }
    let mut i = 2;
    while i + 9 < b.len() {
        let (marker, len) = (b[i + 1], usize::from(b[i + 2]) << 8 | usize::from(b[i + 3]));
        if (0xC0..=0xC3).contains(&marker) {
            let h = u32::from(b[i + 5]) << 8 | u32::from(b[i + 6]);
            let w = u32::from(b[i + 7]) << 8 | u32::from(b[i + 8]);
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// The image blocks of a result.
pub fn images(result: &CommandResult) -> Vec<(&str, &str)> {
    match &result.outcome {
        Outcome::Result { result } => result
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Image { data, mime_type } => {
                    Some((data.as_str(), mime_type.as_str()))
                }
                ContentBlock::Text { .. } => None,
            })
            .collect(),
        Outcome::Error { .. } => Vec::new(),
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// The `browsers` of a `/status` answer as (target, connectedAt).
fn connections_of(status: &Value) -> Vec<(String, u64)> {
    status["browsers"]
        .as_array()
        .map(|browsers| {
            browsers
                .iter()
                .filter_map(|b| {
                    Some((
                        b["target"].as_str()?.to_string(),
                        b["connectedAt"].as_u64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}
