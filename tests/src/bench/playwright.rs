//! Playwright MCP (`@playwright/mcp`, installed by `./build.sh bench` into
//! `.tools/playwright-mcp`) as a peer: spawned with the system Chromium (`--executable-path`,
//! `--headless`, no browser download) and spoken to in MCP's JSON-RPC over its stdio, one message
//! a line. Dropping it kills its process group (node and the Chromium it launched).

use crate::process::{tie_to_parent, Group};
use crate::{Error, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

/// How long one Playwright MCP call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

type Waiters = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

pub struct PlaywrightMcp {
    child: Child,
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiters: Waiters,
    next_id: AtomicU64,
    /// `@playwright/mcp`'s version, from its package.json.
    pub version: String,
    /// The Playwright library's version it reported (serverInfo).
    pub server_version: String,
    dir: PathBuf,
}

/// Where `./build.sh bench` installs it: `.tools/playwright-mcp/node_modules/@playwright/mcp`
/// (`BENCH_PLAYWRIGHT_MCP` names another package folder).
pub fn package_dir() -> PathBuf {
    match std::env::var_os("BENCH_PLAYWRIGHT_MCP") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => crate::repo_root().join(".tools/playwright-mcp/node_modules/@playwright/mcp"),
    }
}

/// A tool call's answer: its text (every text block joined) and its image blocks' base64 data.
#[derive(Debug, Default)]
pub struct ToolAnswer {
    pub text: String,
    pub images: Vec<String>,
    pub is_error: bool,
}

impl PlaywrightMcp {
    /// Starts it headless on `chromium` with a `width`x`height` viewport and initializes the MCP
    /// session.
    pub async fn start(
        package: &Path,
        chromium: &Path,
        viewport: (u32, u32),
    ) -> Result<PlaywrightMcp> {
        let cli = package.join("cli.js");
        if !cli.is_file() {
            return Err(Error::new(format!(
                "{} is missing: ./build.sh bench installs @playwright/mcp into .tools/playwright-mcp",
                cli.display()
            )));
        }
        let version = std::fs::read_to_string(package.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["version"].as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        let dir = crate::temp_dir("bench-playwright");
        let mut command = Command::new("node");
        command
            .arg(&cli)
            .args([
                "--headless",
                "--isolated",
                "--no-sandbox",
                "--executable-path",
            ])
            .arg(chromium)
            .arg("--viewport-size")
            .arg(format!("{}x{}", viewport.0, viewport.1))
            .arg("--output-dir")
            .arg(dir.join("out"))
            .current_dir(&dir)
            // Playwright never downloads a browser here: it is given the system's.
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(dir.join("stderr.log"))?))
            .kill_on_drop(true);
        // Its own process group, so that Drop also ends the Chromium it launched.
        tie_to_parent(command.as_std_mut(), Group::Own);
        let mut child = command
            .spawn()
            .map_err(|e| Error::new(format!("starting node {}: {e}", cli.display())))?;
        let stdin = child.stdin.take().ok_or_else(|| Error::new("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| Error::new("no stdout"))?;
        let waiters: Waiters = Arc::default();
        let route = waiters.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                // Answers have an id; notifications and the server's own requests are ignored.
                if message.get("method").is_some() {
                    continue;
                }
                if let Some(id) = message.get("id").and_then(Value::as_u64) {
                    if let Some(waiter) = route.lock().ok().and_then(|mut w| w.remove(&id)) {
                        let _ = waiter.send(message);
                    }
                }
            }
        });
        let mut mcp = PlaywrightMcp {
            child,
            stdin: tokio::sync::Mutex::new(stdin),
            waiters,
            next_id: AtomicU64::new(1),
            version,
            server_version: String::new(),
            dir,
        };
        let init = mcp
            .rpc(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "browser-operator-bench", "version": "1"}
                }),
            )
            .await?;
        mcp.server_version = init["serverInfo"]["version"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        mcp.notify("notifications/initialized").await?;
        Ok(mcp)
    }

    async fn send(&self, message: &Value) -> Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    }

    async fn notify(&self, method: &str) -> Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
            .await
    }

    /// One JSON-RPC request: its `result`, or its `error` as an error.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiters.lock() {
            w.insert(id, tx);
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let answer = tokio::time::timeout(CALL_TIMEOUT, rx)
            .await
            .map_err(|_| {
                Error::new(format!(
                    "Playwright MCP {method}: no answer within {CALL_TIMEOUT:?} (log: {})",
                    self.dir.join("stderr.log").display()
                ))
            })?
            .map_err(|_| Error::new(format!("Playwright MCP {method}: it exited")))?;
        if let Some(error) = answer.get("error") {
            return Err(Error::new(format!("Playwright MCP {method}: {error}")));
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// `tools/call`: the answer's text and images; a result marked `isError` is an error.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolAnswer> {
        let result = self
            .rpc("tools/call", json!({"name": tool, "arguments": args}))
            .await?;
        let mut answer = ToolAnswer {
            is_error: result["isError"].as_bool().unwrap_or(false),
            ..Default::default()
        };
        for block in result["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => {
                    if !answer.text.is_empty() {
                        answer.text.push('\n');
                    }
                    answer.text.push_str(block["text"].as_str().unwrap_or(""));
                }
                Some("image") => answer
                    .images
                    .push(block["data"].as_str().unwrap_or("").to_string()),
                _ => {}
            }
        }
        if answer.is_error {
            return Err(Error::new(format!(
                "Playwright MCP {tool} {args} failed: {}",
                crate::error::abbreviate(&answer.text, 500)
            )));
        }
        Ok(answer)
    }

    /// Ends the session: closes its browser, then its stdin, and waits a little for it to exit
    /// (Drop kills what is left).
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            self.call("browser_close", json!({})),
        )
        .await;
        {
            let mut stdin = self.stdin.lock().await;
            let _ = stdin.shutdown().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

impl Drop for PlaywrightMcp {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            // SAFETY: a plain syscall on the process group this child leads.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The ref Playwright's snapshot gives the first line with `role "name"` (`[ref=eN]`).
pub fn snapshot_ref(snapshot: &str, role: &str, name: &str) -> Option<String> {
    let wanted = format!("{role} \"{name}\"");
    snapshot
        .lines()
        .find(|l| l.contains(&wanted))
        .and_then(|l| {
            let start = l.find("[ref=")? + 5;
            let end = l[start..].find(']')? + start;
            Some(l[start..end].to_string())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_from_a_snapshot() {
        let snap = "- generic [ref=e1]:\n  - textbox \"Your name\" [ref=e7]\n  - button \"Send message\" [ref=e12] [cursor=pointer]";
        assert_eq!(
            snapshot_ref(snap, "button", "Send message").as_deref(),
            Some("e12")
        );
        assert_eq!(
            snapshot_ref(snap, "textbox", "Your name").as_deref(),
            Some("e7")
        );
        assert_eq!(snapshot_ref(snap, "link", "x"), None);
    }
}
