//! What every handler shares ([`AppState`], axum's state for every route), below the handlers:
//! it holds only what modules below them define.

use crate::http_state::HttpState;
use crate::relay::Relay;
use crate::target_tokens::TokenStore;
use crate::throttle::AuthThrottle;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

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
    pub(crate) tokens: TokenStore,
    pub(crate) http: Arc<HttpState>,
    pub(crate) throttle: Arc<AuthThrottle>,
    /// See `ServerConfig::group_per_session`.
    pub(crate) group_per_session: bool,
}

/// Counts the WebSocket sessions still running, so shutdown can wait for them: axum's
/// graceful shutdown doesn't track connections once they are upgraded.
#[derive(Clone)]
pub(crate) struct LiveSessions(Arc<watch::Sender<usize>>);

pub(crate) struct LiveGuard(LiveSessions);

impl LiveSessions {
    pub(crate) fn new() -> Self {
        LiveSessions(Arc::new(watch::channel(0).0))
    }

    pub(crate) fn enter(&self) -> LiveGuard {
        self.0.send_modify(|n| *n += 1);
        LiveGuard(self.clone())
    }

    pub(crate) async fn wait_idle(&self) {
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
