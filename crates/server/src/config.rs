//! What a server needs to start ([`ServerConfig`]) and the defaults `serve`, `mcp` and the tests
//! start with.

use crate::{fleet, target_tokens, throttle};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

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
/// A request's head must arrive within this (a slow or silent client is cut off).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
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
    /// [`AuthThrottle`](crate::throttle::AuthThrottle)).
    pub auth_failure_delay: Duration,
    /// Per-target tokens browsers may also connect with, and where the /pair page keeps the
    /// tokens it issues (none by default: pairing then says it has nowhere to keep them).
    pub tokens: target_tokens::TokenStore,
    /// Every MCP client session gets its own tab group in the browser (`agent` on its
    /// commands), not only the sessions that ask for one.
    pub group_per_session: bool,
    /// The fleet this server joins (`serve --redis`): its per-target tokens then live in
    /// Redis (`tokens` is not used) and commands reach browsers on every instance. `None`: a
    /// single process.
    pub fleet: Option<fleet::FleetConfig>,
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
            auth_failure_delay: throttle::DEFAULT_FAILURE_DELAY,
            tokens: target_tokens::TokenStore::none(),
            group_per_session: false,
            fleet: None,
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
            .field("fleet", &self.fleet)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default waits longer than the worker's own bound on any command.
    #[test]
    fn the_default_wait_outlasts_the_worker() {
        assert!(
            DEFAULT_COMMAND_TIMEOUT
                > Duration::from_millis(u64::from(protocol::bounds::COMMAND_MS))
        );
    }
}
