//! The relay between command senders and browsers: which browsers are connected under which
//! target, the commands waiting for a result, routing a command to its browser and its result
//! back, disconnecting browsers on the server's initiative, and the counters `/status` reports.

use protocol::{CommandResult, ServerFrame};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot, watch};

/// Target of a browser whose auth frame named none.
pub const DEFAULT_TARGET: &str = "default";
/// At most this many commands wait for a result at once; more are refused.
pub const MAX_PENDING: usize = 1024;

/// Identifies one WebSocket connection, so a closing connection only unregisters itself.
pub type ConnectionId = u64;

/// Who a browser is, as far as the server can tell: the target it connected as and the token
/// it presented (`None`: the main token; else the per-target token's id). A command's result
/// is accepted only from the same identity, on whatever connection it arrives (a browser that
/// reconnected, or redelivers its outbox after a restart, is still itself); never from
/// another target or another token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    pub target: String,
    pub token_id: Option<String>,
}

impl Identity {
    pub fn new(target: impl Into<String>, token_id: Option<&str>) -> Self {
        Identity {
            target: target.into(),
            token_id: token_id.map(str::to_string),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.token_id {
            None => write!(f, "target '{}' (main token)", self.target),
            Some(id) => write!(f, "target '{}' (token {id})", self.target),
        }
    }
}

/// What became of a result handed to [`Relay::deliver`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// It answered the command waiting for it.
    Accepted,
    /// No command with that id is waiting (unknown, already answered or timed out): ignored,
    /// as the protocol asks for a repeated result.
    Unknown,
    /// The command was sent to another browser: refused, and the command keeps waiting for
    /// that browser's result.
    NotYours {
        /// The browser the command was sent to.
        owner: Identity,
    },
}

/// Which bound a command's wait hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitBound {
    /// The server's command timeout (`ServerConfig::command_timeout`).
    Server,
    /// The `timeoutMs` the request asked for.
    Request,
    /// The tool's own declared limit (e.g. `btcp_run_script`'s `timeoutMs`) plus the delivery
    /// margin.
    Tool,
}

impl WaitBound {
    fn describe(self) -> String {
        let worker = protocol::bounds::COMMAND_MS / 1000;
        match self {
            WaitBound::Server => format!(
                "the server's command timeout; the extension answers every command within {worker} s, so the browser, its connection or its service worker is stuck"
            ),
            WaitBound::Request => {
                "the request's timeoutMs; ask for more time to let the tool finish".to_string()
            }
            WaitBound::Tool => format!(
                "the tool's own time limit plus {} s for the result to arrive",
                protocol::bounds::DELIVERY_MARGIN_MS / 1000
            ),
        }
    }
}

/// How long to wait for a command's result: at least what the tool itself may take plus the
/// delivery margin, whatever `base` (the server's timeout, or the request's) says.
pub fn wait_for(
    tool: &str,
    args: &Map<String, Value>,
    base: Duration,
    base_bound: WaitBound,
) -> (Duration, WaitBound) {
    match protocol::bounds::declared_ms(tool, args) {
        Some(ms) => {
            let needed = Duration::from_millis(
                u64::from(ms) + u64::from(protocol::bounds::DELIVERY_MARGIN_MS),
            );
            if needed > base {
                (needed, WaitBound::Tool)
            } else {
                (base, base_bound)
            }
        }
        None => (base, base_bound),
    }
}

/// A connected browser as `/status` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserInfo {
    pub target: String,
    /// Unix time in milliseconds.
    pub connected_at: u64,
}

/// Why a command got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    NoBrowser,
    /// Several browsers are connected and the command named no target.
    TargetRequired {
        connected: Vec<String>,
    },
    UnknownTarget {
        target: String,
        connected: Vec<String>,
    },
    TooManyPending {
        limit: usize,
    },
    Timeout {
        after: Duration,
        id: String,
        tool: String,
        bound: WaitBound,
    },
    ShuttingDown,
    /// The operating system gave no randomness for an unguessable command id.
    NoRandomness(String),
    /// The caller's command id is already waiting for another browser's result.
    IdInUse {
        id: String,
        owner: String,
    },
    /// A command for a browser connected to another instance of the fleet could not be
    /// routed, or its instance failed it (see [`Remote`]); `status` is the HTTP status to
    /// answer with.
    Fleet {
        status: u16,
        message: String,
    },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::NoBrowser => f.write_str(
                "No browser is connected. Load the extension, paste the token into its Options page and click Save & connect.",
            ),
            CommandError::TargetRequired { connected } => write!(
                f,
                "Several browsers are connected; say which one with \"target\". Connected targets: {}.",
                quoted(connected)
            ),
            CommandError::UnknownTarget { target, connected } => write!(
                f,
                "No browser is connected with target '{target}'. Connected targets: {}.",
                quoted(connected)
            ),
            CommandError::TooManyPending { limit } => write!(
                f,
                "Too many commands are waiting for the browser (limit {limit}); wait for some to finish and retry."
            ),
            CommandError::Timeout {
                after,
                id,
                tool,
                bound,
            } => write!(
                f,
                "The browser did not answer within {} s (command {id}, tool {tool}); the bound hit: {}.",
                seconds(*after),
                bound.describe()
            ),
            CommandError::ShuttingDown => f.write_str("The server is shutting down."),
            CommandError::NoRandomness(why) => write!(
                f,
                "The server could not draw a random command id ({why}); the command was not sent."
            ),
            CommandError::IdInUse { id, owner } => write!(
                f,
                "Command id {id} is already waiting for the result of {owner}; a retry must name the same target, or use another id."
            ),
            CommandError::Fleet { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for CommandError {}

fn quoted(targets: &[String]) -> String {
    targets
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whole seconds when whole, else with up to three decimals ("60", "0.25").
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}", d.as_secs())
    } else {
        format!("{}", d.as_secs_f64())
    }
}

/// Why a browser could not register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterError {
    /// Another connection already holds this target.
    TargetTaken(String),
    ShuttingDown,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::TargetTaken(t) => write!(
                f,
                "Target '{t}' is already connected from another browser; disconnect it first or set a different target in Options."
            ),
            RegisterError::ShuttingDown => f.write_str("The server is shutting down."),
        }
    }
}

impl std::error::Error for RegisterError {}

/// A command for [`Relay::run_request`].
pub struct Request<'a> {
    pub tool: &'a str,
    pub args: Map<String, Value>,
    /// `None`: the only browser (of the fleet, in a fleet).
    pub target: Option<&'a str>,
    /// How long to wait at least (see [`wait_for`]), and which bound that is.
    pub base: Duration,
    pub base_bound: WaitBound,
    pub agent: Option<&'a str>,
    /// The caller's id for the command (`None`: a new random one). A retry with the same id
    /// runs at most once: the browser answers a repeated id with its first result, and a
    /// retry while the first still waits joins it.
    pub id: Option<&'a str>,
}

/// A future the [`Remote`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A command the relay hands its fleet: for a browser another instance holds.
#[derive(Debug, Clone)]
pub struct Routed {
    pub id: String,
    pub tool: String,
    pub args: Map<String, Value>,
    pub target: String,
    pub agent: Option<String>,
    /// How long the caller waits for the result, and which bound that is.
    pub wait: Duration,
    pub bound: WaitBound,
}

/// A browser of the fleet, wherever it is connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetBrowser {
    pub target: String,
    /// Unix time in milliseconds.
    pub connected_at: u64,
    /// The instance holding its connection.
    pub instance: String,
    /// The per-target token id it connected with (`None`: the main token).
    pub token_id: Option<String>,
}

/// The other instances of a fleet, as the relay sees them (implemented by `crate::fleet`,
/// above the relay). Without one, the relay is a single process.
pub trait Remote: Send + Sync {
    /// A browser registered here (it holds `target` now).
    fn registered(&self, target: &str, token_id: Option<&str>, connected_at: u64);
    /// The browser of `target` left this instance.
    fn unregistered(&self, target: &str);
    /// Every browser of the fleet, this instance's included; `Err` says why the fleet could
    /// not be asked.
    fn browsers(&self) -> BoxFuture<'_, Result<Vec<FleetBrowser>, String>>;
    /// Runs a command in the browser of `command.target`, which this instance does not hold.
    fn run(&self, command: Routed) -> BoxFuture<'_, Result<CommandResult, CommandError>>;
    /// Asks every instance to disconnect the browser of `target`, or those using the token
    /// `token_id`, telling them `reason`.
    fn disconnect<'a>(
        &'a self,
        target: Option<&'a str>,
        token_id: Option<&'a str>,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<(), String>>;
    /// This instance's name in the fleet.
    fn instance(&self) -> &str;
    /// Why the fleet is degraded now (Redis unreachable, the subscription lost), if it is.
    fn degraded(&self) -> Option<String>;
}

struct Browser {
    connection: ConnectionId,
    /// Unbounded, but never longer than the pending commands (at most `max_pending`).
    frames: mpsc::UnboundedSender<ServerFrame>,
    connected_at: u64,
    /// The per-target token it authenticated with (`None`: the main token).
    token_id: Option<String>,
    /// Set to the reason when the server disconnects it (see [`Relay::disconnect`]).
    kick: watch::Sender<Option<String>>,
}

/// Which connections [`Relay::disconnect`] closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disconnect {
    /// The browser registered under this target.
    Target(String),
    /// Every browser that authenticated with this per-target token id.
    TokenId(String),
}

/// A command waiting for its result, and the browser it was sent to. A caller retrying a
/// command with the same id while it waits joins it: each waiter gets the one result.
struct Pending {
    waiters: Vec<oneshot::Sender<CommandResult>>,
    owner: Identity,
}

#[derive(Default)]
struct State {
    browsers: HashMap<String, Browser>,
    pending: HashMap<String, Pending>,
    /// Connections removed by [`Relay::disconnect`]: their transport tells the browser to stop
    /// (close 4001, `event: disconnect`, 401) instead of just ending.
    kicked: HashSet<ConnectionId>,
    /// Targets whose person paused them (Stop in the popup), with the Unix time in ms of the
    /// first paused answer: set by a result that says `paused`, cleared by one that does not.
    paused: HashMap<String, u64>,
    closed: bool,
}

/// Shared by the WebSocket endpoint (registers browsers, delivers results) and the command
/// API (sends commands and waits).
pub struct Relay {
    state: Mutex<State>,
    /// The fleet this server is part of (`serve --redis`), set once at start; `None`: a single
    /// process, which is all the relay is without it.
    remote: OnceLock<Arc<dyn Remote>>,
    next_connection: AtomicU64,
    ws_connections: AtomicU64,
    http_requests: AtomicU64,
    auth_failures: AtomicU64,
    max_pending: usize,
}

/// A registered browser; unregisters when dropped (only if the registry still holds this
/// connection).
pub struct Registration {
    relay: Arc<Relay>,
    target: String,
    connection: ConnectionId,
    identity: Identity,
    kicked: watch::Receiver<Option<String>>,
}

impl Registration {
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Who this browser is: results it sends are accepted for the commands sent to it.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Resolves with the reason once the server disconnects this browser (token revoked,
    /// `POST /disconnect`); pending forever otherwise. The transport closes the connection
    /// and tells the browser why (WebSocket: close 4001 with the reason).
    pub async fn disconnected(&mut self) -> String {
        let reason = match self.kicked.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone(),
            Err(_) => None,
        };
        match reason {
            Some(reason) => reason,
            // The sender lives in the registry entry; gone without a reason never ends a
            // live connection.
            None => std::future::pending().await,
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut state = self.relay.lock();
        if state
            .browsers
            .get(&self.target)
            .is_some_and(|b| b.connection == self.connection)
        {
            state.browsers.remove(&self.target);
            drop(state);
            if let Some(remote) = self.relay.remote.get() {
                remote.unregistered(&self.target);
            }
        }
    }
}

/// Removes a pending command when its waiter finishes or is dropped (client went away).
struct PendingGuard<'a> {
    relay: &'a Relay,
    id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.relay.lock();
        // Other callers may wait for the same id (a retry that joined): the entry goes with
        // its last waiter.
        if let Some(pending) = state.pending.get_mut(&self.id) {
            pending.waiters.retain(|w| !w.is_closed());
            if pending.waiters.is_empty() {
                state.pending.remove(&self.id);
            }
        }
    }
}

impl Relay {
    pub fn new() -> Self {
        Self::with_limit(MAX_PENDING)
    }

    pub fn with_limit(max_pending: usize) -> Self {
        Relay {
            state: Mutex::new(State::default()),
            remote: OnceLock::new(),
            next_connection: AtomicU64::new(1),
            ws_connections: AtomicU64::new(0),
            http_requests: AtomicU64::new(0),
            auth_failures: AtomicU64::new(0),
            max_pending,
        }
    }

    /// Makes this relay part of a fleet: commands for targets it does not hold go to
    /// `remote`, which hears of every browser that registers or leaves. Set once.
    pub fn join_fleet(&self, remote: Arc<dyn Remote>) -> Result<(), &'static str> {
        self.remote
            .set(remote)
            .map_err(|_| "this relay is already part of a fleet")
    }

    /// The targets of every browser a command can reach from here, sorted: in a fleet the
    /// fleet's (this instance's own when the fleet cannot be asked).
    pub async fn reachable_targets(&self) -> Vec<String> {
        if let Some(remote) = self.remote.get() {
            if let Ok(list) = remote.browsers().await {
                let mut targets: Vec<String> = list.into_iter().map(|b| b.target).collect();
                targets.sort();
                targets.dedup();
                return targets;
            }
        }
        self.browsers().into_iter().map(|b| b.target).collect()
    }

    /// The fleet, when this relay is part of one.
    pub fn fleet(&self) -> Option<&Arc<dyn Remote>> {
        self.remote.get()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain maps behind, still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a WebSocket upgrade and returns the new connection's id.
    pub fn connection_opened(&self) -> ConnectionId {
        self.ws_connections.fetch_add(1, Ordering::Relaxed);
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts a command-stream or poll request (SSE + HTTP, polling) and returns a new
    /// connection id for it.
    pub fn http_request(&self) -> ConnectionId {
        self.http_requests.fetch_add(1, Ordering::Relaxed);
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    pub fn http_requests(&self) -> u64 {
        self.http_requests.load(Ordering::Relaxed)
    }

    /// The connection holding `target`, if any.
    pub fn connection_of(&self, target: &str) -> Option<ConnectionId> {
        self.lock().browsers.get(target).map(|b| b.connection)
    }

    /// Removes `target`'s browser if `connection` still holds it, without telling the browser
    /// to stop (an HTTP connection replaced by the same browser's new one).
    pub fn evict(&self, target: &str, connection: ConnectionId) {
        let mut state = self.lock();
        if state
            .browsers
            .get(target)
            .is_some_and(|b| b.connection == connection)
        {
            state.browsers.remove(target);
            drop(state);
            if let Some(remote) = self.remote.get() {
                remote.unregistered(target);
            }
        }
    }

    /// The per-target token id each browser connected with, by target (`None`: the main
    /// token).
    pub fn token_ids(&self) -> Vec<(String, Option<String>)> {
        self.lock()
            .browsers
            .iter()
            .map(|(t, b)| (t.clone(), b.token_id.clone()))
            .collect()
    }

    /// Whether `connection` was removed by [`Relay::disconnect`] (asked once).
    pub fn take_kicked(&self, connection: ConnectionId) -> bool {
        self.lock().kicked.remove(&connection)
    }

    pub fn auth_failed(&self) {
        self.auth_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ws_connections(&self) -> u64 {
        self.ws_connections.load(Ordering::Relaxed)
    }

    pub fn auth_failures(&self) -> u64 {
        self.auth_failures.load(Ordering::Relaxed)
    }

    pub fn pending_commands(&self) -> usize {
        self.lock().pending.len()
    }

    /// Connected browsers, sorted by target.
    /// Targets whose person paused them, with when (Unix ms), by target: what the browser's
    /// last answer said (see `CommandResult::paused`).
    pub fn paused(&self) -> Vec<(String, u64)> {
        let mut list: Vec<_> = self
            .lock()
            .paused
            .iter()
            .map(|(t, since)| (t.clone(), *since))
            .collect();
        list.sort();
        list
    }

    pub fn browsers(&self) -> Vec<BrowserInfo> {
        let mut list: Vec<_> = self
            .lock()
            .browsers
            .iter()
            .map(|(target, b)| BrowserInfo {
                target: target.clone(),
                connected_at: b.connected_at,
            })
            .collect();
        list.sort_by(|a, b| a.target.cmp(&b.target));
        list
    }

    /// Registers a connection under `target`; commands for it arrive on `frames`. A target
    /// already held by a live connection is refused (the first connection keeps it).
    pub fn register(
        self: &Arc<Self>,
        target: &str,
        connection: ConnectionId,
        frames: mpsc::UnboundedSender<ServerFrame>,
    ) -> Result<Registration, RegisterError> {
        self.register_as(target, connection, frames, None)
    }

    /// [`register`](Self::register) for a browser that authenticated with the per-target
    /// token `token_id` (`None`: the main token), so revoking that token disconnects it.
    pub fn register_as(
        self: &Arc<Self>,
        target: &str,
        connection: ConnectionId,
        frames: mpsc::UnboundedSender<ServerFrame>,
        token_id: Option<&str>,
    ) -> Result<Registration, RegisterError> {
        let mut state = self.lock();
        if state.closed {
            return Err(RegisterError::ShuttingDown);
        }
        if let Some(existing) = state.browsers.get(target) {
            // A connection whose task has ended but not yet unregistered doesn't count.
            if !existing.frames.is_closed() {
                return Err(RegisterError::TargetTaken(target.to_string()));
            }
        }
        let (kick, kicked) = watch::channel(None);
        let connected_at = unix_ms();
        state.browsers.insert(
            target.to_string(),
            Browser {
                connection,
                frames,
                connected_at,
                token_id: token_id.map(str::to_string),
                kick,
            },
        );
        drop(state);
        if let Some(remote) = self.remote.get() {
            remote.registered(target, token_id, connected_at);
        }
        Ok(Registration {
            relay: Arc::clone(self),
            target: target.to_string(),
            connection,
            identity: Identity::new(target, token_id),
            kicked,
        })
    }

    /// Disconnects the browsers `which` selects, telling each `reason`: they leave the registry
    /// at once (no command is routed to them any more) and their transport closes the
    /// connection, telling the extension to stop (close 4001, `event: disconnect` or 401 by
    /// transport). Returns the targets that were connected. Commands already sent keep waiting
    /// for their result until their timeout, as with any disconnect.
    pub fn disconnect(&self, which: &Disconnect, reason: &str) -> Vec<String> {
        let mut state = self.lock();
        let chosen: Vec<String> = state
            .browsers
            .iter()
            .filter(|(target, b)| match which {
                Disconnect::Target(t) => *target == t,
                Disconnect::TokenId(id) => b.token_id.as_deref() == Some(id.as_str()),
            })
            .map(|(target, _)| target.clone())
            .collect();
        for target in &chosen {
            if let Some(browser) = state.browsers.remove(target) {
                state.kicked.insert(browser.connection);
                browser.kick.send_replace(Some(reason.to_string()));
                crate::log::line(format_args!(
                    "disconnecting target '{target}' (connection {}): {reason}",
                    browser.connection
                ));
            }
        }
        drop(state);
        if let Some(remote) = self.remote.get() {
            for target in &chosen {
                remote.unregistered(target);
            }
        }
        chosen
    }

    /// Sends a command to the browser of `target` (or the only browser) and waits up to
    /// `timeout` for its result. Disconnects don't fail it: a reconnecting extension may still
    /// deliver the result.
    pub async fn run_command(
        &self,
        tool: &str,
        args: Map<String, Value>,
        target: Option<&str>,
        timeout: Duration,
    ) -> Result<CommandResult, CommandError> {
        self.run_command_bounded(tool, args, target, timeout, WaitBound::Server, None)
            .await
    }

    /// [`run_command`](Self::run_command) waiting at least `base` (which is `base_bound`),
    /// longer when the tool declares a longer limit (see [`wait_for`]); `agent`: the agent the
    /// command acts for (its own tab group in the browser), when the caller names one.
    pub async fn run_command_bounded(
        &self,
        tool: &str,
        args: Map<String, Value>,
        target: Option<&str>,
        base: Duration,
        base_bound: WaitBound,
        agent: Option<&str>,
    ) -> Result<CommandResult, CommandError> {
        self.run_request(Request {
            tool,
            args,
            target,
            base,
            base_bound,
            agent,
            id: None,
        })
        .await
    }

    /// Runs `request` in the browser of its target: this process's own, or, in a fleet, the
    /// one another instance holds (through [`Remote::run`]).
    pub async fn run_request(&self, request: Request<'_>) -> Result<CommandResult, CommandError> {
        let Some(remote) = self.remote.get() else {
            return self.run_local(request).await;
        };
        let chosen = match request.target {
            Some(t) => t.to_string(),
            None => match self.choose_in_fleet(remote.as_ref()).await? {
                Some(t) => t,
                // The fleet could not be asked: this instance's own browsers decide.
                None => return self.run_local(request).await,
            },
        };
        if self.lock().browsers.contains_key(&chosen) {
            return self
                .run_local(Request {
                    target: Some(&chosen),
                    ..request
                })
                .await;
        }
        if self.lock().closed {
            return Err(CommandError::ShuttingDown);
        }
        let Request {
            tool,
            args,
            base,
            base_bound,
            agent,
            id,
            ..
        } = request;
        let (wait, bound) = wait_for(tool, &args, base, base_bound);
        let id = match id {
            Some(id) => id.to_string(),
            None => new_command_id()?,
        };
        let started = Instant::now();
        let outcome = remote
            .run(Routed {
                id: id.clone(),
                tool: tool.to_string(),
                args,
                target: chosen.clone(),
                agent: agent.map(str::to_string),
                wait,
                bound,
            })
            .await;
        let elapsed = started.elapsed().as_millis();
        let status = match &outcome {
            Ok(r) if matches!(r.outcome, protocol::Outcome::Result { .. }) => "ok",
            Ok(_) => "error",
            Err(CommandError::Timeout { .. }) => "timed out",
            Err(_) => "failed",
        };
        crate::log::line(format_args!(
            "command {id} {tool} for '{chosen}' (routed through the fleet): {status} in {elapsed} ms"
        ));
        outcome
    }

    /// The target a command that named none goes to, from every browser of the fleet;
    /// `None` when the fleet could not be asked.
    async fn choose_in_fleet(&self, remote: &dyn Remote) -> Result<Option<String>, CommandError> {
        let fleet = match remote.browsers().await {
            Ok(list) => list,
            Err(_) => return Ok(None),
        };
        let mut targets: Vec<String> = fleet.into_iter().map(|b| b.target).collect();
        targets.sort();
        targets.dedup();
        match targets.len() {
            0 => Err(CommandError::NoBrowser),
            1 => Ok(targets.pop()),
            _ => Err(CommandError::TargetRequired { connected: targets }),
        }
    }

    /// Runs `request` in a browser this process holds (what an instance of a fleet does with
    /// a command another instance routed to it).
    pub async fn run_local(&self, request: Request<'_>) -> Result<CommandResult, CommandError> {
        let Request {
            tool,
            args,
            target,
            base,
            base_bound,
            agent,
            id,
        } = request;
        let (timeout, bound) = wait_for(tool, &args, base, base_bound);
        let (id, receiver) = self.send_command(tool, args, target, agent, id)?;
        let guard = PendingGuard { relay: self, id };
        let started = Instant::now();
        let outcome = tokio::time::timeout(timeout, receiver).await;
        let elapsed = started.elapsed().as_millis();
        let id = guard.id.clone();
        drop(guard);
        match outcome {
            Ok(Ok(result)) => {
                let status = match &result.outcome {
                    protocol::Outcome::Result { .. } => "ok",
                    protocol::Outcome::Error { .. } => "error",
                };
                crate::log::line(format_args!(
                    "command {id} {tool}: {status} in {elapsed} ms"
                ));
                Ok(result)
            }
            Ok(Err(_)) => {
                crate::log::line(format_args!(
                    "command {id} {tool}: abandoned after {elapsed} ms (server shutting down)"
                ));
                Err(CommandError::ShuttingDown)
            }
            Err(_) => {
                crate::log::line(format_args!(
                    "command {id} {tool}: timed out after {elapsed} ms"
                ));
                Err(CommandError::Timeout {
                    after: timeout,
                    id,
                    tool: tool.to_string(),
                    bound,
                })
            }
        }
    }

    fn send_command(
        &self,
        tool: &str,
        args: Map<String, Value>,
        target: Option<&str>,
        agent: Option<&str>,
        given_id: Option<&str>,
    ) -> Result<(String, oneshot::Receiver<CommandResult>), CommandError> {
        let mut state = self.lock();
        if state.closed {
            return Err(CommandError::ShuttingDown);
        }
        let live: Vec<&String> = state
            .browsers
            .iter()
            .filter(|(_, b)| !b.frames.is_closed())
            .map(|(t, _)| t)
            .collect();
        let connected = || {
            let mut list: Vec<String> = live.iter().map(|t| t.to_string()).collect();
            list.sort();
            list
        };
        let chosen = match target {
            _ if live.is_empty() => return Err(CommandError::NoBrowser),
            Some(t) if live.iter().any(|l| l.as_str() == t) => t.to_string(),
            Some(t) => {
                return Err(CommandError::UnknownTarget {
                    target: t.to_string(),
                    connected: connected(),
                })
            }
            None if live.len() == 1 => live[0].clone(),
            None => {
                return Err(CommandError::TargetRequired {
                    connected: connected(),
                })
            }
        };
        let owner = match state.browsers.get(&chosen) {
            Some(b) => Identity::new(chosen.as_str(), b.token_id.as_deref()),
            None => return Err(CommandError::NoBrowser),
        };
        let joins = match given_id.and_then(|id| state.pending.get(id)) {
            Some(pending) if pending.owner != owner => {
                return Err(CommandError::IdInUse {
                    id: given_id.unwrap_or_default().to_string(),
                    owner: pending.owner.to_string(),
                })
            }
            Some(_) => true,
            None => false,
        };
        if !joins && state.pending.len() >= self.max_pending {
            return Err(CommandError::TooManyPending {
                limit: self.max_pending,
            });
        }
        let id = match given_id {
            Some(id) => id.to_string(),
            None => new_command_id()?,
        };
        let frame = ServerFrame::Command {
            id: id.clone(),
            tool: tool.to_string(),
            args,
            agent: agent.map(str::to_string),
        };
        let sent = state
            .browsers
            .get(&chosen)
            .is_some_and(|b| b.frames.send(frame).is_ok());
        if !sent {
            return Err(CommandError::NoBrowser);
        }
        // A retry of a waiting command is sent again (the browser runs each id once and
        // answers a repeat with the same result) and waits for the one result.
        let (waiter, receiver) = oneshot::channel();
        state
            .pending
            .entry(id.clone())
            .or_insert_with(|| Pending {
                waiters: Vec::new(),
                owner,
            })
            .waiters
            .push(waiter);
        Ok((id, receiver))
    }

    /// Delivers a result sent by the browser `from` to the command waiting for it: only the
    /// browser the command was sent to may answer it (on any of its connections).
    pub fn deliver(&self, result: CommandResult, from: &Identity) -> Delivery {
        let mut state = self.lock();
        let Some(pending) = state.pending.get(&result.command_id) else {
            return Delivery::Unknown;
        };
        if pending.owner != *from {
            return Delivery::NotYours {
                owner: pending.owner.clone(),
            };
        }
        let waiters = state
            .pending
            .remove(&result.command_id)
            .map(|p| p.waiters)
            .unwrap_or_default();
        if result.paused {
            state
                .paused
                .entry(from.target.clone())
                .or_insert_with(unix_ms);
        } else {
            state.paused.remove(&from.target);
        }
        drop(state);
        let mut accepted = false;
        for waiter in waiters {
            accepted |= waiter.send(result.clone()).is_ok();
        }
        if accepted {
            Delivery::Accepted
        } else {
            Delivery::Unknown
        }
    }

    /// Refuses new browsers and commands and fails the waiting ones.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.pending.clear();
    }
}

impl Default for Relay {
    fn default() -> Self {
        Self::new()
    }
}

/// A command id nobody can guess from the ids they saw: `cmd-` and 128 random bits from the
/// operating system's generator, in hex (36 characters of `[a-z0-9-]`).
fn new_command_id() -> Result<String, CommandError> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| CommandError::NoRandomness(e.to_string()))?;
    Ok(format!("cmd-{}", crate::main_token::hex(&random)))
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ToolResult;

    fn browser(
        relay: &Arc<Relay>,
        target: &str,
    ) -> (Registration, mpsc::UnboundedReceiver<ServerFrame>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let conn = relay.connection_opened();
        (relay.register(target, conn, tx).unwrap(), rx)
    }

    fn command_id(frame: ServerFrame) -> String {
        match frame {
            ServerFrame::Command { id, .. } => id,
            other => panic!("not a command: {other:?}"),
        }
    }

    #[tokio::test]
    async fn routes_command_and_result() {
        let relay = Arc::new(Relay::new());
        let (_reg, mut rx) = browser(&relay, "default");
        let r = Arc::clone(&relay);
        let answer = tokio::spawn(async move {
            let id = command_id(rx.recv().await.unwrap());
            let me = Identity::new("default", None);
            let other = Identity::new("other", None);
            let stolen = Identity::new("default", Some("tok_1"));
            for intruder in [&other, &stolen] {
                assert_eq!(
                    r.deliver(
                        CommandResult::ok(id.clone(), ToolResult::text("forged")),
                        intruder
                    ),
                    Delivery::NotYours { owner: me.clone() }
                );
            }
            assert_eq!(
                r.deliver(CommandResult::ok(id.clone(), ToolResult::text("hi")), &me),
                Delivery::Accepted
            );
            assert_eq!(
                r.deliver(CommandResult::ok(id, ToolResult::text("again")), &me),
                Delivery::Unknown
            );
        });
        let res = relay
            .run_command("t", Map::new(), None, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(
            res.outcome,
            CommandResult::ok("", ToolResult::text("hi")).outcome
        );
        answer.await.unwrap();
        assert_eq!(relay.pending_commands(), 0);
    }

    #[tokio::test]
    async fn target_selection_errors() {
        let relay = Arc::new(Relay::new());
        let run = |target: Option<&'static str>| {
            let relay = Arc::clone(&relay);
            async move {
                relay
                    .run_command("t", Map::new(), target, Duration::from_millis(10))
                    .await
            }
        };
        assert_eq!(run(None).await.unwrap_err(), CommandError::NoBrowser);
        assert_eq!(run(Some("x")).await.unwrap_err(), CommandError::NoBrowser);
        let (_a, _ra) = browser(&relay, "a");
        let (_b, _rb) = browser(&relay, "b");
        let both = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            run(None).await.unwrap_err(),
            CommandError::TargetRequired {
                connected: both.clone()
            }
        );
        assert_eq!(
            run(Some("c")).await.unwrap_err(),
            CommandError::UnknownTarget {
                target: "c".into(),
                connected: both
            }
        );
        assert!(matches!(
            run(Some("a")).await.unwrap_err(),
            CommandError::Timeout { .. }
        ));
        assert_eq!(relay.pending_commands(), 0);
    }

    #[test]
    fn duplicate_target_refused_and_only_owner_unregisters() {
        let relay = Arc::new(Relay::new());
        let (first, _rx) = browser(&relay, "t");
        let (tx, _rx2) = mpsc::unbounded_channel();
        assert_eq!(
            relay.register("t", 99, tx).err(),
            Some(RegisterError::TargetTaken("t".into()))
        );
        assert_eq!(relay.browsers().len(), 1);
        drop(first);
        assert!(relay.browsers().is_empty());
    }

    #[tokio::test]
    async fn disconnect_by_target_or_token_id_tells_the_reason() {
        let relay = Arc::new(Relay::new());
        let (tx, _rx_a) = mpsc::unbounded_channel();
        let mut a = relay.register_as("a", 1, tx, Some("tok_1")).unwrap();
        let (tx, _rx_b) = mpsc::unbounded_channel();
        let mut b = relay.register_as("b", 2, tx, None).unwrap();
        let (_c, _rx_c) = browser(&relay, "c");
        assert_eq!(
            relay
                .disconnect(&Disconnect::TokenId("tok_2".into()), "x")
                .len(),
            0
        );
        assert_eq!(
            relay
                .disconnect(&Disconnect::TokenId("tok_1".into()), "token revoked")
                .len(),
            1
        );
        assert_eq!(a.disconnected().await, "token revoked");
        assert_eq!(
            relay.disconnect(&Disconnect::Target("b".into()), "bye"),
            ["b"]
        );
        assert_eq!(b.disconnected().await, "bye");
        let left: Vec<_> = relay.browsers().into_iter().map(|b| b.target).collect();
        assert_eq!(left, ["c"]);
        // The freed targets can connect again.
        let (tx, _rx) = mpsc::unbounded_channel();
        assert!(relay.register("a", 4, tx).is_ok());
    }

    #[tokio::test]
    async fn pending_limit() {
        let relay = Arc::new(Relay::with_limit(1));
        let (_reg, _rx) = browser(&relay, "default");
        let r = Arc::clone(&relay);
        let first = tokio::spawn(async move {
            r.run_command("t", Map::new(), None, Duration::from_secs(5))
                .await
        });
        while relay.pending_commands() == 0 {
            tokio::task::yield_now().await;
        }
        let second = relay
            .run_command("t", Map::new(), None, Duration::from_secs(5))
            .await;
        assert_eq!(
            second.unwrap_err(),
            CommandError::TooManyPending { limit: 1 }
        );
        relay.close();
        assert_eq!(
            first.await.unwrap().unwrap_err(),
            CommandError::ShuttingDown
        );
    }

    #[test]
    fn messages() {
        let e = CommandError::Timeout {
            after: Duration::from_millis(250),
            id: "c1".into(),
            tool: "navigate".into(),
            bound: WaitBound::Request,
        };
        assert_eq!(
            e.to_string(),
            "The browser did not answer within 0.25 s (command c1, tool navigate); the bound hit: the request's timeoutMs; ask for more time to let the tool finish."
        );
        let e = CommandError::Timeout {
            after: Duration::from_secs(130),
            id: "c1".into(),
            tool: "navigate".into(),
            bound: WaitBound::Server,
        };
        let said = e.to_string();
        assert!(said.contains("within 130 s"), "{said}");
        assert!(said.contains("the server's command timeout"), "{said}");
        assert!(said.contains("within 120 s"), "{said}");
    }

    #[test]
    fn command_ids_are_random_and_follow_the_protocol() {
        let ids: HashSet<String> = (0..1000).map(|_| new_command_id().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), 36, "{id}");
            let hex = id.strip_prefix("cmd-").expect("prefix");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
    }

    #[test]
    fn the_wait_covers_what_the_tool_may_take() {
        let script = |ms: Option<u64>| {
            let mut args = Map::new();
            args.insert("tabId".into(), 1.into());
            args.insert("script".into(), "return 1".into());
            if let Some(ms) = ms {
                args.insert("timeoutMs".into(), ms.into());
            }
            args
        };
        let base = Duration::from_secs(60);
        // btcp_run_script may run 110 s (and 5 s to stop): the server waits that plus the
        // delivery margin.
        assert_eq!(
            wait_for(
                "btcp_run_script",
                &script(Some(110_000)),
                base,
                WaitBound::Server
            ),
            (Duration::from_secs(125), WaitBound::Tool)
        );
        // Shorter than the base: the base stands.
        assert_eq!(
            wait_for("btcp_run_script", &script(None), base, WaitBound::Request),
            (base, WaitBound::Request)
        );
        assert_eq!(
            wait_for("navigate", &Map::new(), base, WaitBound::Server),
            (base, WaitBound::Server)
        );
    }
}
