//! The Browser Operator reference backend: a relay that browsers running the extension connect
//! to over WebSocket, an HTTP command API that sends them tools to run, and the
//! `browser-operator` command line (`serve`, `call`, `token`).
//!
//! Start it in-process with [`RunningServer::start`]; stop it with [`RunningServer::shutdown`].

pub mod api;
pub mod call;
pub mod cli;
pub mod guard;
pub mod http;
pub mod listen;
pub mod main_token;
pub mod mcp;
pub mod pair;
pub mod relay;
pub mod target_tokens;
pub mod ws;

use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use relay::Relay;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpSocket;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Default port of `browser-operator serve`.
pub const DEFAULT_PORT: u16 = 8787;
/// How long a command waits for its result unless the request says otherwise: the extension's
/// bound on every command plus the delivery margin (`protocol::bounds`), so the server never
/// gives up before the browser does. A tool that declares a longer limit gets that (see
/// [`relay::wait_for`]).
pub const DEFAULT_COMMAND_TIMEOUT: Duration =
    Duration::from_millis(protocol::bounds::BACKEND_WAIT_MS as u64);
/// How long a new WebSocket may take to send its auth frame.
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for connections to finish before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// A request's head must arrive within this (a slow or silent client is cut off).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once (each browser holds one or two).
pub const MAX_CONNECTIONS: usize = 2048;

/// What a server needs to start.
#[derive(Clone)]
pub struct ServerConfig {
    /// Where to listen; port 0 picks a free port (see [`RunningServer::addr`]).
    pub addr: SocketAddr,
    /// The shared secret browsers and API clients present.
    pub token: String,
    pub command_timeout: Duration,
    pub auth_timeout: Duration,
    /// How long a request's head may take to arrive.
    pub header_timeout: Duration,
    /// How long a failed authentication waits for its answer once failures pile up (see
    /// [`guard::AuthThrottle`]).
    pub auth_failure_delay: Duration,
    /// Per-target tokens browsers may also connect with, and where the /pair page keeps the
    /// tokens it issues (none by default: pairing then says it has nowhere to keep them).
    pub tokens: target_tokens::TokenStore,
}

impl ServerConfig {
    /// A config with the default timeouts.
    pub fn new(addr: SocketAddr, token: impl Into<String>) -> Self {
        ServerConfig {
            addr,
            token: token.into(),
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            auth_timeout: DEFAULT_AUTH_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            auth_failure_delay: guard::DEFAULT_FAILURE_DELAY,
            tokens: target_tokens::TokenStore::none(),
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("addr", &self.addr)
            .field("token", &"<hidden>")
            .field("command_timeout", &self.command_timeout)
            .field("auth_timeout", &self.auth_timeout)
            .field("header_timeout", &self.header_timeout)
            .field("auth_failure_delay", &self.auth_failure_delay)
            .finish()
    }
}

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) relay: Arc<Relay>,
    pub(crate) token: Arc<str>,
    pub(crate) command_timeout: Duration,
    pub(crate) auth_timeout: Duration,
    pub(crate) addr: SocketAddr,
    /// Becomes true when the server shuts down.
    pub(crate) shutdown: watch::Receiver<bool>,
    pub(crate) live: LiveSessions,
    pub(crate) tokens: target_tokens::TokenStore,
    pub(crate) http: Arc<http::HttpState>,
    pub(crate) throttle: Arc<guard::AuthThrottle>,
}

/// Counts the WebSocket sessions still running, so shutdown can wait for them: axum's
/// graceful shutdown doesn't track connections once they are upgraded.
#[derive(Clone)]
pub(crate) struct LiveSessions(Arc<watch::Sender<usize>>);

pub(crate) struct LiveGuard(LiveSessions);

impl LiveSessions {
    fn new() -> Self {
        LiveSessions(Arc::new(watch::channel(0).0))
    }

    pub(crate) fn enter(&self) -> LiveGuard {
        self.0.send_modify(|n| *n += 1);
        LiveGuard(self.clone())
    }

    async fn wait_idle(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so this only returns once the count is zero.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0 .0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A server started by [`RunningServer::start`]. Dropping it without [`shutdown`] also asks
/// it to stop, without waiting.
///
/// [`shutdown`]: RunningServer::shutdown
pub struct RunningServer {
    addr: SocketAddr,
    relay: Arc<Relay>,
    stop: watch::Sender<bool>,
    live: LiveSessions,
    serve: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// Binds `config.addr`, starts serving in the background and returns.
    pub async fn start(config: ServerConfig) -> io::Result<RunningServer> {
        if config.token.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the server needs a non-empty token",
            ));
        }
        let socket = if config.addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        // Lets a restarted server take the port while old connections sit in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(config.addr)?;
        let listener = socket.listen(1024)?;
        let addr = listener.local_addr()?;

        let relay = Arc::new(Relay::new());
        let (stop, stop_rx) = watch::channel(false);
        let live = LiveSessions::new();
        let app = AppState {
            relay: Arc::clone(&relay),
            token: config.token.into(),
            command_timeout: config.command_timeout,
            auth_timeout: config.auth_timeout,
            addr,
            shutdown: stop_rx.clone(),
            live: live.clone(),
            tokens: config.tokens,
            http: Arc::default(),
            throttle: Arc::new(guard::AuthThrottle::new(config.auth_failure_delay)),
        };
        let limits = listen::Limits {
            header_timeout: config.header_timeout,
            max_connections: MAX_CONNECTIONS,
            grace: SHUTDOWN_GRACE,
        };
        let mcp_stop = tokio_util::sync::CancellationToken::new();
        let router = router(app, addr.ip().is_loopback(), mcp_stop.clone());
        let mut signal = stop_rx.clone();
        tokio::spawn(async move {
            let _ = signal.wait_for(|stop| *stop).await;
            mcp_stop.cancel();
        });
        let serve = tokio::spawn(listen::serve(listener, router, limits, stop_rx));
        Ok(RunningServer {
            addr,
            relay,
            stop,
            live,
            serve: Some(serve),
        })
    }

    /// The address the server listens on (with the real port when started with port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The relay: connected browsers and pending commands (what `browser-operator mcp` runs
    /// its stdio MCP calls through).
    pub fn relay(&self) -> &Arc<Relay> {
        &self.relay
    }

    /// Stops accepting, fails waiting commands, closes every WebSocket and frees the port.
    pub async fn shutdown(mut self) {
        self.relay.close();
        self.stop.send_replace(true);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.live.wait_idle()).await;
        if let Some(mut serve) = self.serve.take() {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut serve)
                .await
                .is_err()
            {
                serve.abort();
                let _ = serve.await;
            }
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.relay.close();
        self.stop.send_replace(true);
    }
}

fn router(app: AppState, loopback: bool, mcp_stop: tokio_util::sync::CancellationToken) -> Router {
    let mcp = mcp::router(app.clone(), mcp_stop);
    let guarded = Router::new()
        .route("/ws", get(ws::upgrade))
        .route("/commands", post(api::command))
        .route("/status", get(api::status))
        .route("/disconnect", post(api::disconnect))
        .route("/browser/events", get(http::events_default))
        .route(
            "/browser/result",
            post(http::result).layer(DefaultBodyLimit::max(http::MAX_RESULT_SIZE)),
        )
        .route("/browser/{target}/events", get(http::events_target))
        .route(
            "/browser/{target}/result",
            post(http::result_target).layer(DefaultBodyLimit::max(http::MAX_RESULT_SIZE)),
        )
        .merge(mcp)
        .route_layer(middleware::from_fn(guard::reject_web_origin));
    Router::new()
        .route("/", get(api::index))
        .route("/pair", get(pair::page))
        .route("/pair/offer", post(pair::offer))
        .route("/pair/status", post(pair::status))
        .merge(guarded)
        .layer(middleware::from_fn_with_state(
            loopback,
            guard::require_loopback_host,
        ))
        .with_state(app)
}

/// One log line on stderr, with the UTC time. Never given the token.
pub(crate) fn log(args: fmt::Arguments<'_>) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    eprintln!("{h:02}:{m:02}:{s:02} {args}");
}
