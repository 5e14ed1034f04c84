//! Where an MCP session's tool calls go: this process's relay, or — when `browser-operator mcp`
//! finds another server on its port — that server's `POST /commands` ([`Backend::Forward`]).
//! When that server goes away, the forwarding side takes the port over and runs the relay
//! itself.

use crate::call::{self, Call, CallError};
use crate::config::ServerConfig;
use crate::relay::Relay;
use protocol::CommandResult;
use serde_json::{Map, Value};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Where tool calls go.
#[derive(Clone)]
pub enum Backend {
    /// The relay of a server running in this process.
    Relay(Arc<Relay>),
    /// Another Browser Operator server, through its command API.
    Forward(Arc<Forward>),
}

/// Forwarding to the server on `config.addr`, and taking its place when it stops.
pub struct Forward {
    url: String,
    config: ServerConfig,
    start: StartServer,
    own: tokio::sync::Mutex<Option<OwnServer>>,
}

/// Starts a server in this process with a config, to take the port over:
/// `RunningServer::start_own`, handed to [`Forward::new`] by the command line (the server, which
/// serves this MCP face at `/mcp`, sits above it).
pub type StartServer =
    fn(ServerConfig) -> Pin<Box<dyn Future<Output = io::Result<OwnServer>> + Send>>;

/// The server this process started after taking over: its relay, and its shutdown (it stops
/// when that is awaited, or dropped).
pub struct OwnServer {
    pub relay: Arc<Relay>,
    pub stop: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Forward {
    /// Forwards to the server listening on `config.addr` with `config.token`; `config` is also
    /// what this process serves with (started by `start`) if it takes over.
    pub fn new(config: ServerConfig, start: StartServer) -> Self {
        Forward {
            url: format!("http://{}", config.addr),
            config,
            start,
            own: tokio::sync::Mutex::new(None),
        }
    }

    /// The relay of the server this process started after taking over, if it did.
    async fn own_relay(&self) -> Option<Arc<Relay>> {
        self.own.lock().await.as_ref().map(|s| Arc::clone(&s.relay))
    }

    /// Starts serving on the port the other server left.
    async fn take_over(&self) -> Result<(), String> {
        let mut own = self.own.lock().await;
        if own.is_some() {
            return Ok(());
        }
        let server = (self.start)(self.config.clone())
            .await
            .map_err(|e| format!("The Browser Operator server at {} stopped and its port cannot be taken over ({e}).", self.url))?;
        crate::log::line(format_args!(
            "the server at {} stopped: this MCP server now runs the relay there",
            self.url
        ));
        *own = Some(server);
        Ok(())
    }

    /// Stops the server this process started after taking over, if any.
    pub async fn shutdown(&self) {
        if let Some(server) = self.own.lock().await.take() {
            server.stop.await;
        }
    }

    fn took_over(&self) -> String {
        format!(
            "The Browser Operator server at {} stopped, so this MCP server now runs the relay there itself. The extension reconnects within a few seconds: retry then.",
            self.url
        )
    }
}

/// Whom a command is for: the browser (`target`, or the only one) and the agent within it
/// (`agent`: this MCP session's own tab group, when it has one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Whom {
    pub target: Option<String>,
    pub agent: Option<String>,
}

/// What a call does when it finds the server it forwards to gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IfGone {
    /// Take the port over, and say so in the call's answer (a client's call).
    TakeOver,
    /// Leave that to the next client call, so that call reports it (the server's own reads:
    /// page tools).
    Leave,
}

impl Backend {
    /// Runs `tool` in the browser of `whom.target` (or the only one), for `whom.agent`.
    pub(super) async fn run(
        &self,
        tool: &str,
        args: Map<String, Value>,
        whom: Whom,
        timeout: Duration,
        if_gone: IfGone,
    ) -> Result<CommandResult, String> {
        match self {
            Backend::Relay(relay) => run_in(relay, tool, args, whom, timeout).await,
            Backend::Forward(forward) => {
                if let Some(relay) = forward.own_relay().await {
                    return run_in(&relay, tool, args, whom, timeout).await;
                }
                let request = Call {
                    url: forward.url.clone(),
                    token: forward.config.token.clone(),
                    tool: tool.to_string(),
                    args,
                    target: whom.target,
                    timeout: Some(timeout),
                    agent: whom.agent,
                    id: None,
                };
                let answer = tokio::task::spawn_blocking(move || call::call(&request))
                    .await
                    .map_err(|e| format!("The forwarding task failed: {e}"))?;
                match answer {
                    Ok(answer) => Ok(answer.result),
                    Err(CallError::Unreachable { .. }) if if_gone == IfGone::TakeOver => {
                        forward.take_over().await?;
                        Err(forward.took_over())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// Targets of the connected browsers, sorted.
    pub(super) async fn browsers(&self) -> Result<Vec<String>, String> {
        match self {
            Backend::Relay(relay) => Ok(relay.reachable_targets().await),
            Backend::Forward(forward) => {
                if let Some(relay) = forward.own_relay().await {
                    return Ok(relay.reachable_targets().await);
                }
                let (url, token) = (forward.url.clone(), forward.config.token.clone());
                let status = tokio::task::spawn_blocking(move || call::status(&url, &token))
                    .await
                    .map_err(|e| format!("The forwarding task failed: {e}"))?;
                match status {
                    Ok(status) => Ok(status["browsers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|b| b["target"].as_str().map(str::to_string))
                        .collect()),
                    Err(CallError::Unreachable { .. }) => {
                        forward.take_over().await?;
                        Err(forward.took_over())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }
}

async fn run_in(
    relay: &Relay,
    tool: &str,
    args: Map<String, Value>,
    whom: Whom,
    timeout: Duration,
) -> Result<CommandResult, String> {
    relay
        .run_command_bounded(
            tool,
            args,
            whom.target.as_deref(),
            timeout,
            crate::relay::WaitBound::Server,
            whom.agent.as_deref(),
        )
        .await
        .map_err(|e| e.to_string())
}
