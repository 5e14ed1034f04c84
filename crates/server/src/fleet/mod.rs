//! Many servers, one fleet (`serve --redis`): the instances share per-target tokens and the
//! browsers' presence in Redis, and route a command for a browser another instance holds through
//! Redis itself (each instance reads its own pub/sub channel). Above the relay: the relay sees
//! only [`crate::relay::Remote`], which [`Fleet`] implements; without a fleet the relay is the
//! single process it always was.
//!
//! What lives in Redis, under the key prefix (see [`keys::Keys`] and docs/DEPLOY.md):
//! - `browser:<target>`: the instance holding that browser's connection, when it connected,
//!   the token id; expires after the presence TTL unless the instance refreshes it (every third
//!   of it), so a dead instance's browsers leave the fleet within the TTL;
//! - `instance:<id>`: an instance's heartbeat, with the same TTL;
//! - `tokens`: the per-target tokens (a hash, no expiry), and `meta`;
//! - channels `to:<id>` (commands and results for one instance) and `fleet` (notes for all).
//!
//! Faults: an instance keeps its own browsers whatever Redis does; while Redis is unreachable
//! or the subscription is lost, `/status` says the fleet is degraded and routed commands fail at
//! once with that reason; the instance reconnects by itself and writes its presence again.

pub mod keys;
pub mod tokens;
pub mod wire;

use crate::relay::{
    BoxFuture, CommandError, Disconnect, FleetBrowser, Relay, Remote, Request, Routed,
};
use crate::target_tokens::{IssuedToken, TokenStore};
use futures_util::StreamExt;
use keys::Keys;
use protocol::{CommandResult, ExtensionFrame};
use redis::aio::ConnectionManager;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokens::FleetTokens;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use wire::Message;

/// The default presence TTL (`--presence-ttl`).
pub const DEFAULT_PRESENCE_TTL: Duration = Duration::from_secs(10);
/// How long one Redis operation on a command's path may take.
const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// The most browsers `/status` lists from the fleet.
pub const MAX_LISTED: usize = 10_000;
/// How often a routing instance checks that the holding instance is still alive.
const ALIVE_CHECK: Duration = Duration::from_millis(500);
/// What a routing instance waits beyond the command's own wait, for the answer to travel.
const ROUTE_MARGIN: Duration = Duration::from_secs(2);
/// Pause between attempts to subscribe again after the subscription is lost.
const RESUBSCRIBE: Duration = Duration::from_millis(300);

/// How to join a fleet.
#[derive(Clone)]
pub struct FleetConfig {
    /// `redis://[:password@]host:port[/db]`, or `rediss://…` for TLS.
    pub url: String,
    /// A PEM file of the certificate authority that signed Redis's certificate (a private CA),
    /// instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Prefix of every key and channel (see [`keys::check_prefix`]).
    pub prefix: String,
    /// This instance's name in the fleet (default: `<host>-<random>`).
    pub instance: Option<String>,
    /// How long a browser's presence and an instance's heartbeat last unless refreshed.
    pub presence_ttl: Duration,
}

impl fmt::Debug for FleetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetConfig")
            .field("url", &redacted(&self.url))
            .field("ca_file", &self.ca_file)
            .field("prefix", &self.prefix)
            .field("instance", &self.instance)
            .field("presence_ttl", &self.presence_ttl)
            .finish()
    }
}

impl FleetConfig {
    pub fn new(url: impl Into<String>) -> Self {
        FleetConfig {
            url: url.into(),
            ca_file: None,
            prefix: keys::DEFAULT_PREFIX.to_string(),
            instance: None,
            presence_ttl: DEFAULT_PRESENCE_TTL,
        }
    }

    /// The Redis client this config names, checked (scheme, prefix, CA file).
    pub fn client(&self) -> io::Result<redis::Client> {
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        keys::check_prefix(&self.prefix).map_err(bad)?;
        if !(self.url.starts_with("redis://") || self.url.starts_with("rediss://")) {
            return Err(bad(format!(
                "--redis must be a redis:// or rediss:// URL (got {})",
                redacted(&self.url)
            )));
        }
        if self.presence_ttl < Duration::from_secs(1) {
            return Err(bad("the presence TTL must be at least 1 s".into()));
        }
        if self.url.starts_with("rediss://") {
            // rustls needs its crypto named once per process; already named is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = match &self.ca_file {
            Some(path) => {
                if !self.url.starts_with("rediss://") {
                    return Err(bad(
                        "--redis-ca needs a rediss:// URL (TLS); redis:// is plain TCP".into(),
                    ));
                }
                let pem = std::fs::read(path).map_err(|e| {
                    bad(format!(
                        "cannot read the Redis CA file {}: {e}",
                        path.display()
                    ))
                })?;
                redis::Client::build_with_tls(
                    self.url.as_str(),
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem),
                    },
                )
            }
            None => redis::Client::open(self.url.as_str()),
        };
        client.map_err(|e| {
            bad(format!(
                "--redis {} is not a usable Redis URL: {e}",
                redacted(&self.url)
            ))
        })
    }

    /// Where the fleet's data is, for messages: the URL without its password, and the prefix.
    pub fn describe(&self) -> String {
        format!(
            "Redis at {} (key prefix '{}')",
            redacted(&self.url),
            self.prefix
        )
    }

    /// The fleet's token store, for `token issue|list|revoke` (no instance needed).
    pub fn token_store(&self) -> io::Result<TokenStore> {
        let tokens = FleetTokens::new(self.client()?, Keys::new(&self.prefix), self.describe());
        Ok(TokenStore::shared(Arc::new(tokens)))
    }
}

/// `url` with any password replaced by `***`.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or("", |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_string(),
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What the presence task hears from the relay.
enum Presence {
    Up { target: String, value: String },
    Down { target: String },
}

/// A routed command's waiters on the instance that routed it.
type Waiters = Vec<oneshot::Sender<Result<CommandResult, CommandError>>>;

/// One instance's part in the fleet.
pub struct Fleet {
    instance: String,
    keys: Keys,
    describe: String,
    ttl: Duration,
    client: redis::Client,
    conn: ConnectionManager,
    relay: Weak<Relay>,
    tokens: Arc<FleetTokens>,
    presence: mpsc::UnboundedSender<Presence>,
    /// Commands this instance routed to another, waiting for their answer, by id.
    routed: Mutex<HashMap<String, Waiters>>,
    subscribed: AtomicBool,
    writes_ok: AtomicBool,
    last_error: Mutex<Option<String>>,
    stop: CancellationToken,
}

/// Refresh a browser's presence only while it names this instance (or is gone: Redis lost it).
const REFRESH: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then
  local ok, d = pcall(cjson.decode, v)
  if ok and d.instance ~= ARGV[2] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1
"#;

/// Remove a browser's presence only while it names this instance.
const RELEASE: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, d = pcall(cjson.decode, v)
if ok and d.instance == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"#;

impl Fleet {
    /// Joins the fleet `config` names with `relay`: connects to Redis (an unreachable Redis
    /// is no error: the instance starts degraded and keeps trying), loads the tokens, and
    /// starts the background tasks (subscription, presence). `addr` is where this instance
    /// listens (told in its heartbeat).
    pub async fn start(
        config: &FleetConfig,
        relay: &Arc<Relay>,
        addr: std::net::SocketAddr,
    ) -> io::Result<Arc<Fleet>> {
        let client = config.client()?;
        let keys = Keys::new(&config.prefix);
        let instance = match &config.instance {
            Some(name) => {
                protocol::config::check_target(name).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("invalid --instance name: {e}"),
                    )
                })?;
                name.clone()
            }
            None => {
                let mut random = [0u8; 4];
                getrandom::fill(&mut random).map_err(io::Error::other)?;
                format!("{}-{}", addr.port(), crate::main_token::hex(&random))
            }
        };
        let manager_config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)
            .map_err(|e| io::Error::other(format!("cannot set up the Redis connection: {e}")))?;
        let tokens = Arc::new(FleetTokens::new(
            client.clone(),
            keys.clone(),
            config.describe(),
        ));
        let (presence, presence_rx) = mpsc::unbounded_channel();
        let fleet = Arc::new(Fleet {
            instance,
            keys,
            describe: config.describe(),
            ttl: config.presence_ttl,
            client,
            conn,
            relay: Arc::downgrade(relay),
            tokens,
            presence,
            routed: Mutex::new(HashMap::new()),
            subscribed: AtomicBool::new(false),
            writes_ok: AtomicBool::new(true),
            last_error: Mutex::new(None),
            stop: CancellationToken::new(),
        });
        // A wrong password or database is the deployer's to fix now, not a degraded fleet.
        match tokio::time::timeout(OP_TIMEOUT, fleet.ping()).await {
            Ok(Err(e)) if is_config_error(&e) => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{} refused this server: {e}", fleet.describe),
                ))
            }
            Ok(Err(e)) => fleet.failed(format!("cannot reach {}: {e}", fleet.describe)),
            Err(_) => fleet.failed(format!(
                "{} did not answer within {} s",
                fleet.describe,
                OP_TIMEOUT.as_secs()
            )),
            Ok(Ok(())) => {}
        }
        fleet.reload_tokens().await;
        relay
            .join_fleet(Arc::clone(&fleet) as Arc<dyn Remote>)
            .map_err(io::Error::other)?;
        tokio::spawn(Arc::clone(&fleet).subscribe_loop());
        tokio::spawn(Arc::clone(&fleet).presence_loop(presence_rx, addr));
        // Ready when subscribed (a reachable Redis answers within milliseconds); an unreachable
        // one leaves the instance degraded, trying on.
        let ready = tokio::time::Instant::now() + OP_TIMEOUT;
        while !fleet.subscribed.load(Ordering::Relaxed) && tokio::time::Instant::now() < ready {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        crate::log::line(format_args!(
            "joined the fleet in {} as instance '{}' (presence TTL {} s)",
            fleet.describe,
            fleet.instance,
            fleet.ttl.as_secs_f64()
        ));
        Ok(fleet)
    }

    /// The token store the server checks browsers' tokens against (the fleet's).
    pub fn token_store(&self) -> TokenStore {
        TokenStore::shared(Arc::clone(&self.tokens) as Arc<dyn crate::target_tokens::SharedTokens>)
    }

    /// Stops the background tasks (the instance's presence then expires by itself).
    pub fn stop_tasks(&self) {
        self.stop.cancel();
    }

    /// Stops the background tasks, fails the routed commands still waiting, and removes this
    /// instance's heartbeat and its browsers' presence (bounded: a Redis that does not answer
    /// leaves them to expire).
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.routed_lock().clear();
        let relay = self.relay.upgrade();
        let targets: Vec<String> = relay
            .map(|r| r.browsers().into_iter().map(|b| b.target).collect())
            .unwrap_or_default();
        let mut conn = self.conn.clone();
        let instance = self.instance.clone();
        let keys = self.keys.clone();
        let work = async move {
            for target in targets {
                let _: Result<i64, _> = redis::Script::new(RELEASE)
                    .key(keys.browser(&target))
                    .arg(&instance)
                    .invoke_async(&mut conn)
                    .await;
            }
            let _: Result<i64, _> = redis::cmd("DEL")
                .arg(keys.instance(&instance))
                .query_async(&mut conn)
                .await;
        };
        let _ = tokio::time::timeout(OP_TIMEOUT, work).await;
    }

    fn routed_lock(&self) -> MutexGuard<'_, HashMap<String, Waiters>> {
        self.routed.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn ping(&self) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        redis::cmd("PING").query_async::<()>(&mut conn).await
    }

    /// Notes a failure (the fleet is degraded until the next success), logged once per change.
    fn failed(&self, why: String) {
        let mut last = self.last_error.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() != Some(why.as_str()) {
            crate::log::line(format_args!(
                "fleet degraded: {why}; this instance keeps its own browsers and retries"
            ));
        }
        *last = Some(why);
    }

    fn recovered(&self, what: &str) {
        if self.subscribed.load(Ordering::Relaxed) && self.writes_ok.load(Ordering::Relaxed) {
            let mut last = self.last_error.lock().unwrap_or_else(|e| e.into_inner());
            if last.take().is_some() {
                crate::log::line(format_args!("fleet recovered ({what})"));
            }
        }
    }

    /// Reads the tokens from Redis into the copy browsers' tokens are checked against, and
    /// disconnects this instance's browsers whose token is gone (revoked while a note was
    /// missed). If Redis lost every token (restarted without persistence), the copy stays
    /// and is written back.
    async fn reload_tokens(&self) {
        let mut conn = self.conn.clone();
        // Both in one transaction: read apart, another instance's write-back after a Redis
        // restart could fall between them (no tokens, yet the marker that tokens were written),
        // and every browser of this instance would count as revoked.
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HGETALL")
            .arg(self.keys.tokens())
            .cmd("EXISTS")
            .arg(self.keys.meta());
        let read = pipe.query_async::<(HashMap<String, String>, bool)>(&mut conn);
        let (raw, meta) = match tokio::time::timeout(OP_TIMEOUT, read).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                self.writes_ok.store(false, Ordering::Relaxed);
                return self.failed(format!(
                    "cannot read the tokens from {}: {e}",
                    self.describe
                ));
            }
            Err(_) => return,
        };
        let mut bad = Vec::new();
        let fresh = tokens::parse_all(raw, &mut bad);
        for id in bad {
            crate::log::line(format_args!(
                "ignored {}'s entry '{id}': not a token",
                self.keys.tokens()
            ));
        }
        let before = crate::target_tokens::SharedTokens::cached(self.tokens.as_ref());
        if fresh.is_empty() && !meta {
            if let Some(kept) = before.filter(|k| !k.is_empty()) {
                self.restore_tokens(&kept).await;
                return;
            }
        }
        let Some(relay) = self.relay.upgrade() else {
            return self.tokens.set_cached(fresh);
        };
        let live: HashSet<&str> = fresh.iter().map(|t| t.id.as_str()).collect();
        for (_, token_id) in relay.token_ids() {
            if let Some(id) = token_id.filter(|id| !live.contains(id.as_str())) {
                relay.disconnect(&Disconnect::TokenId(id), "token revoked");
            }
        }
        self.tokens.set_cached(fresh);
    }

    /// Writes `kept` back into a Redis that lost its data.
    async fn restore_tokens(&self, kept: &[IssuedToken]) {
        let mut conn = self.conn.clone();
        // One transaction: no instance reads the marker without the tokens.
        let mut pipe = redis::pipe();
        pipe.atomic();
        for t in kept {
            if let Ok(json) = serde_json::to_string(t) {
                pipe.cmd("HSETNX")
                    .arg(self.keys.tokens())
                    .arg(&t.id)
                    .arg(json)
                    .ignore();
            }
        }
        pipe.cmd("SET").arg(self.keys.meta()).arg("1").ignore();
        match pipe.query_async::<()>(&mut conn).await {
            Ok(()) => crate::log::line(format_args!(
                "{} had lost the fleet's tokens (restarted without persistence?): wrote back the {} this instance knew",
                self.describe,
                kept.len()
            )),
            Err(e) => self.failed(format!("cannot write the tokens back: {e}")),
        }
    }

    /// Reads this instance's channel and the fleet's, resubscribing whenever the subscription
    /// is lost (Redis restarted or unreachable), until shutdown.
    async fn subscribe_loop(self: Arc<Self>) {
        loop {
            let session = async {
                let pubsub = tokio::time::timeout(OP_TIMEOUT, self.client.get_async_pubsub())
                    .await
                    .map_err(|_| "no answer in time".to_string())?
                    .map_err(|e| e.to_string())?;
                let (mut sink, mut stream) = pubsub.split();
                let subscribed = async {
                    sink.subscribe(self.keys.inbox(&self.instance)).await?;
                    sink.subscribe(self.keys.fleet()).await
                };
                tokio::time::timeout(OP_TIMEOUT, subscribed)
                    .await
                    .map_err(|_| "no answer in time".to_string())?
                    .map_err(|e| e.to_string())?;
                self.subscribed.store(true, Ordering::Relaxed);
                self.recovered("subscribed again");
                // Messages published while unsubscribed are lost: reload what they may have
                // said.
                self.reload_tokens().await;
                let mut ping = tokio::time::interval(self.ttl / 3);
                loop {
                    tokio::select! {
                        message = stream.next() => match message {
                            Some(message) => self.handle(message),
                            None => return Err("lost the subscription to Redis".to_string()),
                        },
                        _ = ping.tick() => {
                            // A half-open connection shows as an unanswered ping.
                            let pinged = tokio::time::timeout(OP_TIMEOUT, sink.ping::<redis::Value>()).await;
                            if !matches!(pinged, Ok(Ok(_))) {
                                return Err("the subscription to Redis stopped answering".to_string());
                            }
                        }
                    }
                }
            };
            let outcome: Result<(), String> = tokio::select! {
                outcome = session => outcome,
                () = self.stop.cancelled() => return,
            };
            self.subscribed.store(false, Ordering::Relaxed);
            if let Err(why) = outcome {
                self.failed(format!("{} ({why})", self.describe));
            }
            tokio::select! {
                () = tokio::time::sleep(RESUBSCRIBE) => {}
                () = self.stop.cancelled() => return,
            }
        }
    }

    /// One message from a channel.
    fn handle(self: &Arc<Self>, message: redis::Msg) {
        let payload: Vec<u8> = match message.get_payload() {
            Ok(p) => p,
            Err(_) => return,
        };
        if payload.len() > wire::MAX_MESSAGE {
            crate::log::line(format_args!(
                "dropped a fleet message of {} bytes on {} (limit {})",
                payload.len(),
                message.get_channel_name(),
                wire::MAX_MESSAGE
            ));
            return;
        }
        let message: Message = match serde_json::from_slice(&payload) {
            Ok(m) => m,
            Err(e) => {
                crate::log::line(format_args!(
                    "ignored a fleet message that does not parse: {e}"
                ));
                return;
            }
        };
        match message {
            Message::Command { .. } => {
                tokio::spawn(Arc::clone(self).run_here(message));
            }
            Message::Result { id, result } => {
                let outcome = parse_result(result, &id);
                self.answer(&id, outcome);
            }
            Message::Failed {
                id,
                status,
                message,
            } => self.answer(&id, Err(CommandError::Fleet { status, message })),
            Message::Tokens => {
                let fleet = Arc::clone(self);
                tokio::spawn(async move { fleet.reload_tokens().await });
            }
            Message::Disconnect {
                target,
                token_id,
                reason,
            } => {
                if let Some(relay) = self.relay.upgrade() {
                    let which = match (target, token_id) {
                        (Some(t), _) => Disconnect::Target(t),
                        (None, Some(id)) => Disconnect::TokenId(id),
                        (None, None) => return,
                    };
                    relay.disconnect(&which, &reason);
                }
            }
        }
    }

    fn answer(&self, id: &str, outcome: Result<CommandResult, CommandError>) {
        let waiters = self.routed_lock().remove(id).unwrap_or_default();
        for waiter in waiters {
            let _ = waiter.send(outcome.clone());
        }
    }

    /// Runs a command another instance routed here, in the browser this instance holds, and
    /// publishes its answer on that instance's channel.
    async fn run_here(self: Arc<Self>, message: Message) {
        let Message::Command {
            id,
            from,
            tool,
            args,
            target,
            agent,
            wait_ms,
            bound,
        } = message
        else {
            return;
        };
        let Some(relay) = self.relay.upgrade() else {
            return;
        };
        let outcome = relay
            .run_local(Request {
                tool: &tool,
                args,
                target: Some(&target),
                base: Duration::from_millis(wait_ms),
                base_bound: bound.into(),
                agent: agent.as_deref(),
                id: Some(&id),
            })
            .await;
        let reply = match outcome {
            Ok(result) => match serde_json::to_value(&result) {
                Ok(result) => Message::Result {
                    id: id.clone(),
                    result,
                },
                Err(e) => Message::Failed {
                    id: id.clone(),
                    status: 500,
                    message: format!("The result could not be encoded: {e}"),
                },
            },
            Err(CommandError::NoBrowser | CommandError::UnknownTarget { .. }) => Message::Failed {
                id: id.clone(),
                status: 503,
                message: format!(
                    "The browser of target '{target}' left instance '{}' before the command reached it; it is not connected now. Retry once it reconnects (with the same id, the command runs at most once).",
                    self.instance
                ),
            },
            Err(CommandError::ShuttingDown) => Message::Failed {
                id: id.clone(),
                status: 503,
                message: format!(
                    "Instance '{}', which holds target '{target}', is shutting down; command {id} may or may not have run. Retry with the same id once the browser reconnects to another instance: it runs at most once.",
                    self.instance
                ),
            },
            Err(e) => Message::Failed {
                id: id.clone(),
                status: crate_status(&e),
                message: e.to_string(),
            },
        };
        let bytes = match serde_json::to_vec(&reply) {
            Ok(b) => b,
            Err(_) => return,
        };
        let mut conn = self.conn.clone();
        let sent: redis::RedisResult<i64> = redis::cmd("PUBLISH")
            .arg(self.keys.inbox(&from))
            .arg(bytes)
            .query_async(&mut conn)
            .await;
        if let Err(e) = sent {
            crate::log::line(format_args!(
                "could not send the answer of command {id} to instance '{from}': {e}"
            ));
        }
    }

    /// Writes this instance's heartbeat and its browsers' presence, as they change and every
    /// third of the TTL; a browser whose presence another instance took (it connected there
    /// since) is dropped here.
    async fn presence_loop(
        self: Arc<Self>,
        mut events: mpsc::UnboundedReceiver<Presence>,
        addr: std::net::SocketAddr,
    ) {
        let ttl_ms = self.ttl.as_millis() as u64;
        let mut held: HashMap<String, String> = HashMap::new();
        let mut tick = tokio::time::interval(self.ttl / 3);
        let heartbeat = json!({"addr": addr.to_string(), "startedAt": unix_ms()}).to_string();
        loop {
            let event = tokio::select! {
                () = self.stop.cancelled() => return,
                event = events.recv() => event,
                _ = tick.tick() => None,
            };
            let mut conn = self.conn.clone();
            match event {
                Some(Presence::Up { target, value }) => {
                    let set: redis::RedisResult<()> = tokio::time::timeout(
                        OP_TIMEOUT,
                        redis::cmd("SET")
                            .arg(self.keys.browser(&target))
                            .arg(&value)
                            .arg("PX")
                            .arg(ttl_ms)
                            .query_async(&mut conn),
                    )
                    .await
                    .unwrap_or_else(|_| Err(timeout_error()));
                    self.wrote(set.map(|_| ()));
                    held.insert(target, value);
                }
                Some(Presence::Down { target }) => {
                    held.remove(&target);
                    let released: redis::RedisResult<i64> = tokio::time::timeout(
                        OP_TIMEOUT,
                        redis::Script::new(RELEASE)
                            .key(self.keys.browser(&target))
                            .arg(&self.instance)
                            .invoke_async(&mut conn),
                    )
                    .await
                    .unwrap_or_else(|_| Err(timeout_error()));
                    self.wrote(released.map(|_| ()));
                }
                None => {
                    let beat: redis::RedisResult<()> = tokio::time::timeout(
                        OP_TIMEOUT,
                        redis::cmd("SET")
                            .arg(self.keys.instance(&self.instance))
                            .arg(&heartbeat)
                            .arg("PX")
                            .arg(ttl_ms)
                            .query_async(&mut conn),
                    )
                    .await
                    .unwrap_or_else(|_| Err(timeout_error()));
                    let ok = beat.is_ok();
                    self.wrote(beat);
                    if !ok {
                        continue;
                    }
                    let mut lost = Vec::new();
                    for (target, value) in &held {
                        let refreshed: redis::RedisResult<i64> = redis::Script::new(REFRESH)
                            .key(self.keys.browser(target))
                            .arg(value)
                            .arg(&self.instance)
                            .arg(ttl_ms)
                            .invoke_async(&mut conn)
                            .await;
                        match refreshed {
                            Ok(0) => lost.push(target.clone()),
                            Ok(_) => {}
                            Err(e) => {
                                self.wrote(Err(e));
                                break;
                            }
                        }
                    }
                    for target in lost {
                        held.remove(&target);
                        if let Some(relay) = self.relay.upgrade() {
                            if let Some(connection) = relay.connection_of(&target) {
                                crate::log::line(format_args!(
                                    "target '{target}' connected to another instance since: dropping its older connection here"
                                ));
                                relay.evict(&target, connection);
                            }
                        }
                    }
                    self.reload_tokens().await;
                }
            }
        }
    }

    fn wrote(&self, outcome: redis::RedisResult<()>) {
        match outcome {
            Ok(()) => {
                self.writes_ok.store(true, Ordering::Relaxed);
                self.recovered("Redis answers again");
            }
            Err(e) => {
                self.writes_ok.store(false, Ordering::Relaxed);
                self.failed(format!("cannot write to {}: {e}", self.describe));
            }
        }
    }

    /// Every browser of the fleet, from the presence keys.
    async fn list(&self) -> Result<Vec<FleetBrowser>, String> {
        let mut conn = self.conn.clone();
        let pattern = self.keys.browsers_pattern();
        let work = async {
            let mut cursor: u64 = 0;
            let mut keys: Vec<String> = Vec::new();
            loop {
                let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await?;
                keys.extend(batch);
                cursor = next;
                if cursor == 0 || keys.len() >= MAX_LISTED {
                    break;
                }
            }
            keys.truncate(MAX_LISTED);
            let mut browsers = Vec::new();
            for chunk in keys.chunks(500) {
                let values: Vec<Option<String>> =
                    redis::cmd("MGET").arg(chunk).query_async(&mut conn).await?;
                for (key, value) in chunk.iter().zip(values) {
                    let target = key
                        .strip_prefix(&format!("{}browser:", self.keys.prefix()))
                        .unwrap_or(key);
                    if let Some(b) = value.and_then(|v| parse_presence(target, &v)) {
                        browsers.push(b);
                    }
                }
            }
            Ok::<_, redis::RedisError>(browsers)
        };
        let mut browsers = tokio::time::timeout(OP_TIMEOUT, work)
            .await
            .map_err(|_| format!("{} did not answer in time", self.describe))?
            .map_err(|e| {
                format!(
                    "cannot read the fleet's browsers from {}: {e}",
                    self.describe
                )
            })?;
        browsers.sort_by(|a, b| a.target.cmp(&b.target));
        Ok(browsers)
    }

    /// The instance holding `target`, from its presence key.
    async fn holder(&self, target: &str) -> Result<Option<FleetBrowser>, String> {
        let mut conn = self.conn.clone();
        let value: Option<String> = tokio::time::timeout(
            OP_TIMEOUT,
            redis::cmd("GET")
                .arg(self.keys.browser(target))
                .query_async(&mut conn),
        )
        .await
        .map_err(|_| format!("{} did not answer in time", self.describe))?
        .map_err(|e| e.to_string())?;
        Ok(value.and_then(|v| parse_presence(target, &v)))
    }

    async fn alive(&self, instance: &str) -> Option<bool> {
        let mut conn = self.conn.clone();
        tokio::time::timeout(
            OP_TIMEOUT,
            redis::cmd("EXISTS")
                .arg(self.keys.instance(instance))
                .query_async::<bool>(&mut conn),
        )
        .await
        .ok()?
        .ok()
    }

    fn unavailable(&self, why: String) -> CommandError {
        CommandError::Fleet {
            status: 503,
            message: why,
        }
    }

    async fn route(&self, command: Routed) -> Result<CommandResult, CommandError> {
        let Routed {
            id,
            tool,
            args,
            target,
            agent,
            wait,
            bound,
        } = command;
        if let Some(why) = self.degraded() {
            return Err(self.unavailable(format!(
                "No browser is connected to this instance with target '{target}', and the fleet cannot be reached to find it elsewhere: {why}. This instance's own browsers still answer."
            )));
        }
        let holder = match self.holder(&target).await {
            Ok(Some(h)) if h.instance != self.instance => h,
            Ok(_) => {
                let connected = self
                    .list()
                    .await
                    .map(|l| l.into_iter().map(|b| b.target).collect())
                    .unwrap_or_default();
                return Err(CommandError::UnknownTarget { target, connected });
            }
            Err(why) => {
                return Err(self.unavailable(format!(
                    "Cannot look up target '{target}' in the fleet: {why}."
                )))
            }
        };
        let (tx, mut rx) = oneshot::channel();
        {
            let mut routed = self.routed_lock();
            if !routed.contains_key(&id) && routed.len() >= crate::relay::MAX_PENDING {
                return Err(CommandError::TooManyPending {
                    limit: crate::relay::MAX_PENDING,
                });
            }
            routed.entry(id.clone()).or_default().push(tx);
        }
        let guard = RoutedGuard {
            fleet: self,
            id: &id,
        };
        let message = Message::Command {
            id: id.clone(),
            from: self.instance.clone(),
            tool: tool.clone(),
            args,
            target: target.clone(),
            agent,
            wait_ms: wait.as_millis() as u64,
            bound: bound.into(),
        };
        let bytes = serde_json::to_vec(&message)
            .map_err(|e| self.unavailable(format!("The command could not be encoded: {e}")))?;
        let mut conn = self.conn.clone();
        let receivers: i64 = tokio::time::timeout(
            OP_TIMEOUT,
            redis::cmd("PUBLISH")
                .arg(self.keys.inbox(&holder.instance))
                .arg(bytes)
                .query_async(&mut conn),
        )
        .await
        .map_err(|_| self.unavailable(format!("{} did not answer in time", self.describe)))?
        .map_err(|e| {
            self.unavailable(format!(
                "Cannot route the command through {}: {e}",
                self.describe
            ))
        })?;
        if receivers == 0 {
            return Err(self.unavailable(format!(
                "Target '{target}' is held by instance '{}', which does not answer (it stopped or lost Redis); the command was not sent. The browser reconnects to another instance within seconds: retry then.",
                holder.instance
            )));
        }
        let deadline = tokio::time::sleep(wait + ROUTE_MARGIN);
        tokio::pin!(deadline);
        let mut check = tokio::time::interval(ALIVE_CHECK);
        check.tick().await;
        let outcome = loop {
            tokio::select! {
                answer = &mut rx => break match answer {
                    Ok(outcome) => outcome,
                    Err(_) => Err(CommandError::ShuttingDown),
                },
                () = &mut deadline => break Err(CommandError::Timeout { after: wait, id: id.clone(), tool: tool.clone(), bound }),
                _ = check.tick() => {
                    if self.alive(&holder.instance).await == Some(false) {
                        break Err(self.unavailable(format!(
                            "Instance '{}', which held target '{target}', stopped while command {id} was running; it may or may not have run. Retry with the same id once the browser reconnects: it runs at most once.",
                            holder.instance
                        )));
                    }
                }
            }
        };
        drop(guard);
        outcome
    }
}

/// The HTTP status the API answers `e` with (as `api.rs` maps it), for a failure another
/// instance reports.
fn crate_status(e: &CommandError) -> u16 {
    match e {
        CommandError::TargetRequired { .. }
        | CommandError::UnknownTarget { .. }
        | CommandError::IdInUse { .. } => 409,
        CommandError::Timeout { .. } => 504,
        CommandError::NoRandomness(_) => 500,
        CommandError::Fleet { status, .. } => *status,
        CommandError::NoBrowser
        | CommandError::TooManyPending { .. }
        | CommandError::ShuttingDown => 503,
    }
}

/// Removes a routed command's waiters once none waits any more.
struct RoutedGuard<'a> {
    fleet: &'a Fleet,
    id: &'a str,
}

impl Drop for RoutedGuard<'_> {
    fn drop(&mut self) {
        let mut routed = self.fleet.routed_lock();
        if let Some(waiters) = routed.get_mut(self.id) {
            waiters.retain(|w| !w.is_closed());
            if waiters.is_empty() {
                routed.remove(self.id);
            }
        }
    }
}

fn timeout_error() -> redis::RedisError {
    redis::RedisError::from(io::Error::new(
        io::ErrorKind::TimedOut,
        "Redis did not answer in time",
    ))
}

/// A wrong password, user or database: the deployer's to fix.
fn is_config_error(e: &redis::RedisError) -> bool {
    if e.kind() == redis::ErrorKind::AuthenticationFailed {
        return true;
    }
    let text = e.to_string();
    [
        "NOAUTH",
        "WRONGPASS",
        "invalid password",
        "NOPERM",
        "DB index",
    ]
    .iter()
    .any(|w| text.contains(w))
}

fn parse_presence(target: &str, value: &str) -> Option<FleetBrowser> {
    let v: Value = serde_json::from_str(value).ok()?;
    Some(FleetBrowser {
        target: target.to_string(),
        connected_at: v["connectedAt"].as_u64().unwrap_or(0),
        instance: v["instance"].as_str()?.to_string(),
        token_id: v["tokenId"].as_str().map(str::to_string),
    })
}

fn parse_result(mut result: Value, id: &str) -> Result<CommandResult, CommandError> {
    if let Some(map) = result.as_object_mut() {
        map.insert("type".into(), json!("result"));
    }
    match serde_json::from_value::<ExtensionFrame>(result) {
        Ok(ExtensionFrame::Result {
            command_id,
            outcome,
            paused,
        }) => Ok(CommandResult {
            command_id,
            outcome,
            paused,
        }),
        _ => Err(CommandError::Fleet {
            status: 502,
            message: format!(
                "The instance holding the browser sent a result for {id} that does not parse."
            ),
        }),
    }
}

impl Remote for Fleet {
    fn registered(&self, target: &str, token_id: Option<&str>, connected_at: u64) {
        let value = json!({
            "instance": self.instance,
            "connectedAt": connected_at,
            "tokenId": token_id,
        })
        .to_string();
        let _ = self.presence.send(Presence::Up {
            target: target.to_string(),
            value,
        });
    }

    fn unregistered(&self, target: &str) {
        let _ = self.presence.send(Presence::Down {
            target: target.to_string(),
        });
    }

    fn browsers(&self) -> BoxFuture<'_, Result<Vec<FleetBrowser>, String>> {
        Box::pin(async move {
            if let Some(why) = self.degraded() {
                return Err(why);
            }
            self.list().await
        })
    }

    fn run(&self, command: Routed) -> BoxFuture<'_, Result<CommandResult, CommandError>> {
        Box::pin(self.route(command))
    }

    fn disconnect<'a>(
        &'a self,
        target: Option<&'a str>,
        token_id: Option<&'a str>,
        reason: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let note = Message::Disconnect {
                target: target.map(str::to_string),
                token_id: token_id.map(str::to_string),
                reason: reason.to_string(),
            };
            let bytes = serde_json::to_vec(&note).map_err(|e| e.to_string())?;
            let mut conn = self.conn.clone();
            tokio::time::timeout(
                OP_TIMEOUT,
                redis::cmd("PUBLISH")
                    .arg(self.keys.fleet())
                    .arg(bytes)
                    .query_async::<i64>(&mut conn),
            )
            .await
            .map_err(|_| format!("{} did not answer in time", self.describe))?
            .map_err(|e| e.to_string())?;
            Ok(())
        })
    }

    fn instance(&self) -> &str {
        &self.instance
    }

    fn degraded(&self) -> Option<String> {
        let last = self.last_error.lock().unwrap_or_else(|e| e.into_inner());
        if self.subscribed.load(Ordering::Relaxed) && self.writes_ok.load(Ordering::Relaxed) {
            return None;
        }
        Some(
            last.clone()
                .unwrap_or_else(|| format!("not yet subscribed to {}", self.describe)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redacted("redis://:s3cret@db:6379/2"),
            "redis://:***@db:6379/2"
        );
        assert_eq!(
            redacted("rediss://app:s3cret@db:6380"),
            "rediss://app:***@db:6380"
        );
        assert_eq!(redacted("redis://db:6379"), "redis://db:6379");
        let c = FleetConfig::new("redis://:s3cret@db:6379");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(!c.describe().contains("s3cret"));
    }

    #[test]
    fn bad_configs_are_refused_with_the_reason() {
        let e = FleetConfig::new("http://db:6379").client().unwrap_err();
        assert!(e.to_string().contains("redis:// or rediss://"), "{e}");
        let mut c = FleetConfig::new("redis://db:6379");
        c.prefix = "a b".into();
        assert!(c.client().unwrap_err().to_string().contains("prefix"));
        let mut c = FleetConfig::new("redis://db:6379");
        c.ca_file = Some("/nonexistent.pem".into());
        assert!(c.client().unwrap_err().to_string().contains("rediss://"));
        let mut c = FleetConfig::new("rediss://db:6379");
        c.ca_file = Some("/nonexistent.pem".into());
        assert!(c.client().unwrap_err().to_string().contains("CA file"));
    }

    #[test]
    fn results_travel_whole() {
        let r = CommandResult::ok("cmd-1", protocol::ToolResult::text("hi"));
        let back = parse_result(serde_json::to_value(&r).unwrap(), "cmd-1").unwrap();
        assert_eq!(back, r);
    }
}
