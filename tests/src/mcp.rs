//! MCP clients for the tests: `browser-operator mcp` spawned as a child process and spoken to
//! over stdio with the official SDK's client, and a small streamable-HTTP JSON-RPC client for a
//! server's `/mcp` endpoint.

use crate::{Browser, BrowserOptions, Error, Result};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `browser-operator mcp` on `port`, driven over stdio by the SDK's client.
pub struct StdioMcp {
    client: RunningService<RoleClient, ClientEvents>,
    tools_changed: tokio::sync::watch::Receiver<u64>,
}

/// The client's handler: counts the server's `notifications/tools/list_changed`.
pub struct ClientEvents {
    tools_changed: tokio::sync::watch::Sender<u64>,
}

impl ClientHandler for ClientEvents {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.send_modify(|n| *n += 1);
    }
}

impl StdioMcp {
    /// Spawns `<cli> mcp --port <port>` with `token` and its own config directory, and
    /// initializes the MCP session. Its stderr (the log) goes to `log`. `cli` is the built
    /// command line: `env!("CARGO_BIN_EXE_browser-operator-cli")` in a test of this crate.
    pub async fn spawn(
        cli: &str,
        port: u16,
        token: &str,
        config_dir: &Path,
        log: &Path,
    ) -> Result<StdioMcp> {
        let mut cmd = tokio::process::Command::new(cli);
        cmd.args(["mcp", "--port", &port.to_string()])
            .env("BROWSER_OPERATOR_TOKEN", token)
            .env("BROWSER_OPERATOR_CONFIG_DIR", config_dir);
        let log = std::fs::File::create(log)
            .map_err(|e| Error::new(format!("creating {}: {e}", log.display())))?;
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| Error::new(format!("spawning {cli} mcp: {e}")))?;
        let (tools_changed, changes) = tokio::sync::watch::channel(0);
        let client = ClientEvents { tools_changed }
            .serve(transport)
            .await
            .map_err(|e| Error::new(format!("initializing the MCP session over stdio: {e}")))?;
        Ok(StdioMcp {
            client,
            tools_changed: changes,
        })
    }

    /// How many `notifications/tools/list_changed` the server sent so far.
    pub fn tools_changed(&self) -> u64 {
        *self.tools_changed.borrow()
    }

    /// Waits (at most `timeout`) until more than `seen` tools/list_changed notifications came.
    pub async fn wait_tools_changed(&self, seen: u64, timeout: Duration) -> Result<u64> {
        let mut changes = self.tools_changed.clone();
        let wait = tokio::time::timeout(timeout, changes.wait_for(|n| *n > seen)).await;
        match wait {
            Ok(Ok(n)) => Ok(*n),
            Ok(Err(_)) => Err(Error::new("the MCP session ended")),
            Err(_) => Err(Error::new(format!(
                "no notifications/tools/list_changed within {timeout:?} (seen {seen})"
            ))),
        }
    }

    pub async fn tools(&self) -> Result<Vec<Tool>> {
        self.client
            .list_all_tools()
            .await
            .map_err(|e| Error::new(format!("tools/list: {e}")))
    }

    /// tools/list, each tool as the JSON the server sent.
    pub async fn tools_json(&self) -> Result<Vec<Value>> {
        self.tools()
            .await?
            .into_iter()
            .map(|t| Ok(serde_json::to_value(t)?))
            .collect()
    }

    /// `tools/call`, as the JSON the client received.
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value> {
        let args = args.as_object().cloned().unwrap_or_default();
        let result: CallToolResult = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
            .await
            .map_err(|e| Error::new(format!("tools/call {tool}: {e}")))?;
        Ok(serde_json::to_value(result)?)
    }

    /// `tools/call`'s text; an error result fails with its message.
    pub async fn text(&self, tool: &str, args: Value) -> Result<String> {
        text_of(&self.call(tool, args).await?)
    }

    /// `tabs_context_mcp` with `createIfEmpty: true`: the automation group's first tab id.
    pub async fn first_tab(&self) -> Result<i64> {
        let text = self
            .text("tabs_context_mcp", json!({"createIfEmpty": true}))
            .await?;
        crate::tabs_context(&text)["availableTabs"][0]["tabId"]
            .as_i64()
            .ok_or_else(|| Error::new(format!("no tab in {text}")))
    }

    /// `tabs_create_mcp`: the new tab's id.
    pub async fn new_tab(&self) -> Result<i64> {
        crate::created_tab_id(&self.text("tabs_create_mcp", json!({})).await?)
    }

    /// `navigate` in `tab`: the tool's answer.
    pub async fn navigate(&self, tab: i64, url: &str) -> Result<String> {
        self.text("navigate", json!({"tabId": tab, "url": url}))
            .await
    }

    /// Closes stdin, which ends the `mcp` process.
    pub async fn close(self) -> Result<()> {
        self.client
            .cancel()
            .await
            .map(|_| ())
            .map_err(|e| Error::new(format!("closing the MCP session: {e}")))
    }
}

/// `browser-operator mcp` (the command line `cli`) on a free port with a fresh token and `dir` as
/// its config directory (its log in `dir/mcp.log`), and a browser configured through Options,
/// as a user does, to connect to the relay it runs. The token is returned too, e.g. to check
/// that it is never logged.
pub async fn stdio_with_browser(cli: &str, dir: &Path) -> Result<(StdioMcp, Browser, String)> {
    let port = crate::free_port();
    let token = browser_operator_server::main_token::generate()
        .map_err(|e| Error::new(format!("a random token: {e}")))?;
    let mcp = StdioMcp::spawn(cli, port, &token, dir, &dir.join("mcp.log")).await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&format!("ws://127.0.0.1:{port}/ws"), &token, None)
        .await?;
    browser
        .wait_status("connected", Duration::from_secs(30))
        .await?;
    Ok((mcp, browser, token))
}

/// A streamable-HTTP MCP session with a server's `/mcp` (plain JSON-RPC over HTTP POST).
#[derive(Clone)]
pub struct HttpMcp {
    inner: Arc<HttpInner>,
}

struct HttpInner {
    url: String,
    token: String,
    session: String,
    next_id: AtomicU64,
    agent: ureq::Agent,
}

/// The JSON-RPC messages of a response body: plain JSON or an SSE stream.
pub fn jsonrpc_messages(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        return vec![v];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

impl HttpInner {
    fn post(&self, session: &str, body: &Value) -> Result<(String, String)> {
        let mut req = self
            .agent
            .post(&self.url)
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        if !session.is_empty() {
            req = req.header("Mcp-Session-Id", session);
        }
        let mut response = req
            .send(body.to_string())
            .map_err(|e| Error::new(format!("POST {}: {e}", self.url)))?;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let text = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| Error::new(format!("reading the /mcp answer: {e}")))?;
        if !(200..300).contains(&status) {
            return Err(Error::new(format!("POST /mcp: HTTP {status}: {text}")));
        }
        Ok((session, text))
    }

    fn request(&self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (_, body) = self.post(
            &self.session,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )?;
        let answer = jsonrpc_messages(&body)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .ok_or_else(|| Error::new(format!("no answer to {method} in: {body}")))?;
        if !answer["error"].is_null() {
            return Err(Error::new(format!("{method}: {}", answer["error"])));
        }
        Ok(answer["result"].clone())
    }
}

impl HttpMcp {
    /// Initializes a session with `http://…/mcp`.
    pub async fn connect(base_url: &str, token: &str) -> Result<HttpMcp> {
        Self::connect_as(base_url, token, "browser-operator-e2e", json!({})).await
    }

    /// [`HttpMcp::connect`] as the client `name`, announcing `capabilities` in `initialize`.
    pub async fn connect_as(
        base_url: &str,
        token: &str,
        name: &str,
        capabilities: Value,
    ) -> Result<HttpMcp> {
        let name = name.to_string();
        let url = format!("{}/mcp", base_url.trim_end_matches('/'));
        let token = token.to_string();
        tokio::task::spawn_blocking(move || -> Result<HttpMcp> {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(90)))
                .build()
                .into();
            let mut inner = HttpInner {
                url,
                token,
                session: String::new(),
                next_id: AtomicU64::new(1),
                agent,
            };
            let (session, body) = inner.post(
                "",
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": capabilities,
                    "clientInfo": {"name": name, "version": "1"}}}),
            )?;
            let init = jsonrpc_messages(&body);
            if init.first().map(|m| &m["result"]["serverInfo"]["name"])
                != Some(&json!("browser-operator"))
            {
                return Err(Error::new(format!("unexpected initialize answer: {body}")));
            }
            inner.session = session;
            inner.post(
                &inner.session,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )?;
            Ok(HttpMcp {
                inner: Arc::new(inner),
            })
        })
        .await
        .map_err(|e| Error::new(format!("the MCP task failed: {e}")))?
    }

    async fn request(&self, method: &'static str, params: Value) -> Result<Value> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || inner.request(method, params))
            .await
            .map_err(|e| Error::new(format!("the MCP task failed: {e}")))?
    }

    /// `tools/list`: the tools as JSON.
    pub async fn tools(&self) -> Result<Vec<Value>> {
        let result = self.request("tools/list", json!({})).await?;
        Ok(result["tools"].as_array().cloned().unwrap_or_default())
    }

    /// `tools/call`: the result as JSON (`content`, `isError`).
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value> {
        let args = Value::Object(args.as_object().cloned().unwrap_or_else(Map::new));
        self.request("tools/call", json!({"name": tool, "arguments": args}))
            .await
    }
}

/// The text of a successful MCP tool result; an error result fails with its message.
pub fn text_of(result: &Value) -> Result<String> {
    let text: Vec<&str> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect();
    if result["isError"] == json!(true) {
        return Err(Error::new(format!("the tool failed: {}", text.join("\n"))));
    }
    Ok(text.join("\n"))
}

/// The error message of an MCP tool result that must be an error.
pub fn error_of(result: &Value) -> Result<String> {
    if result["isError"] != json!(true) {
        return Err(Error::new(format!(
            "expected an error result, got {result}"
        )));
    }
    Ok(result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}
