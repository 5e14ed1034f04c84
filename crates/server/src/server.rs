//! A server in this process: [`RunningServer`] binds, serves every route (the relay's
//! transports, the command API, `/pair`, MCP at `/mcp`) and shuts down.

use crate::config::ServerConfig;
use crate::fleet::Fleet;
use crate::mcp::OwnServer;
use crate::relay::Relay;
use crate::state::{AppState, LiveSessions};
use crate::throttle::AuthThrottle;
use crate::{api, guard, http, listen, mcp, pair, ws};
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpSocket;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long shutdown waits for connections to finish before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Connections open at once (each browser holds one or two).
pub const MAX_CONNECTIONS: usize = 2048;

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
    fleet: Option<Arc<Fleet>>,
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
        let mut tokens = config.tokens;
        let fleet = match &config.fleet {
            Some(fleet) => {
                let fleet = Fleet::start(fleet, &relay, addr).await?;
                // A fleet's per-target tokens are the ones in Redis.
                tokens = fleet.token_store();
                Some(fleet)
            }
            None => None,
        };
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
            tokens,
            http: Arc::default(),
            throttle: Arc::new(AuthThrottle::new(config.auth_failure_delay)),
            group_per_session: config.group_per_session,
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
            fleet,
        })
    }

    /// Starts a server as the MCP forwarding side's own, once it took the port over
    /// ([`mcp::StartServer`], given to [`mcp::Forward::new`]).
    pub fn start_own(
        config: ServerConfig,
    ) -> Pin<Box<dyn Future<Output = io::Result<OwnServer>> + Send>> {
        Box::pin(async move {
            let server = RunningServer::start(config).await?;
            Ok(OwnServer {
                relay: Arc::clone(&server.relay),
                stop: Box::pin(server.shutdown()),
            })
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
        if let Some(fleet) = self.fleet.take() {
            fleet.shutdown().await;
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.relay.close();
        self.stop.send_replace(true);
        if let Some(fleet) = &self.fleet {
            fleet.stop_tasks();
        }
    }
}

fn router(app: AppState, loopback: bool, mcp_stop: tokio_util::sync::CancellationToken) -> Router {
    let mcp = mcp::router(app.clone(), mcp_stop);
    let guarded = Router::new()
        .route("/ws", get(ws::upgrade))
        .route(
            "/commands",
            post(api::command).layer(DefaultBodyLimit::max(api::MAX_COMMAND_BODY)),
        )
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
