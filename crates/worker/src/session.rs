//! The connection lifecycle: what the user wants (connected or not), the one connection loop,
//! authentication, backoff, keep-alive, the status the pages show, and the results outbox.
//! A disconnect sticks: a rejected token or the user's Disconnect stops every reconnect path
//! until the user saves a config again.

use crate::chrome::storage::{self, Area};
use crate::chrome::{alarms, runtime};
use crate::js::{log, now_ms, sleep_ms, with_timeout};
use crate::tools;
use crate::transport::{self, Ended};
use futures_channel::mpsc;
use protocol::{Command, ConfigError, ConnectionConfig, ExtensionFrame, Outcome, Transport};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use wasm_bindgen_futures::spawn_local;

const CONFIG_KEY: &str = "config";
const WANT_KEY: &str = "wantConnected";
const STATUS_KEY: &str = "status";
pub const ALARM: &str = "keepalive";
/// Chrome stops an idle worker after 30 s; an extension API call resets that timer.
const KEEPALIVE_MS: u32 = 20_000;
const COMMAND_TIMEOUT_MS: u32 = 120_000;
const OUTBOX_MAX: usize = 256;
const SEEN_MAX: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Disconnected,
    Connecting,
    Connected,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub state: State,
    pub message: String,
    /// Milliseconds since the epoch when this status was set.
    pub since: f64,
}

#[derive(Default)]
struct Session {
    /// Bumped to retire the running loop (new config, Disconnect).
    generation: u64,
    running: bool,
    /// The live, authenticated connection's outgoing frames.
    sender: Option<mpsc::UnboundedSender<String>>,
    /// Results produced while no connection was up, delivered on the next one.
    outbox: VecDeque<String>,
    /// Commands seen by id: `None` while running, then the result frame (answered again if
    /// the backend redelivers the id, never run twice).
    seen: HashMap<String, Option<String>>,
    seen_order: VecDeque<String>,
}

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::default());
}

fn with<R>(f: impl FnOnce(&mut Session) -> R) -> R {
    SESSION.with(|s| f(&mut s.borrow_mut()))
}

pub async fn set_status(state: State, message: impl Into<String>) {
    let status = Status {
        state,
        message: message.into(),
        since: now_ms(),
    };
    if let Err(e) = storage::set(Area::Session, STATUS_KEY, &status).await {
        log(&format!("cannot store status: {e}"));
    }
}

pub async fn status() -> Status {
    storage::get(Area::Session, STATUS_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or(Status {
            state: State::Disconnected,
            message: "Not connected.".into(),
            since: now_ms(),
        })
}

pub async fn saved_config() -> Option<ConnectionConfig> {
    storage::get(Area::Local, CONFIG_KEY).await.ok().flatten()
}

/// The config to connect with, if the user wants a connection and the config is usable.
async fn wanted_config() -> Option<ConnectionConfig> {
    let want: bool = storage::get(Area::Local, WANT_KEY).await.ok().flatten()?;
    let config = saved_config().await?;
    (want && config.validate().is_ok()).then_some(config)
}

/// Called at every worker start and alarm: start the loop unless one runs. Synchronous, so two
/// wake-ups at once (start and alarm) can never start two loops.
pub fn resume() {
    if !with(|s| s.running) {
        start_loop();
    }
}

/// The status when no connection is wanted (a rejected token's error stays visible).
async fn show_idle_status() {
    if status().await.state == State::Error {
        return;
    }
    let msg = if saved_config().await.is_some() {
        "Disconnected. Click Save & connect to connect."
    } else {
        "Not configured: enter the server URL and token, then Save & connect."
    };
    set_status(State::Disconnected, msg).await;
}

/// Validates and stores the config, then (re)connects with it.
pub async fn save_and_connect(config: ConnectionConfig) -> Result<(), ConfigError> {
    let config = config.normalized()?;
    if config.transport != Transport::WebSocket {
        return Err(ConfigError {
            field: "transport",
            message: "This build connects over WebSocket only.".into(),
        });
    }
    let stored = async {
        storage::set(Area::Local, CONFIG_KEY, &config).await?;
        storage::set(Area::Local, WANT_KEY, &true).await
    };
    stored.await.map_err(|message| ConfigError {
        field: "transport",
        message,
    })?;
    retire_loop();
    start_loop();
    Ok(())
}

/// The user's Disconnect (or a Connect with the saved config when `connect` is true).
pub async fn set_wanted(connect: bool) {
    if let Err(e) = storage::set(Area::Local, WANT_KEY, &connect).await {
        log(&format!("cannot store the wanted state: {e}"));
    }
    retire_loop();
    if connect {
        start_loop();
    } else {
        let _ = alarms::clear(ALARM).await;
        set_status(
            State::Disconnected,
            "Disconnected by you. Click Save & connect to connect again.",
        )
        .await;
    }
}

fn retire_loop() {
    with(|s| {
        s.generation += 1;
        s.running = false;
        s.sender = None;
    });
}

fn start_loop() {
    let gen = with(|s| {
        s.running = true;
        s.generation
    });
    spawn_local(run(gen));
    spawn_local(keep_alive(gen));
}

fn is_current(gen: u64) -> bool {
    with(|s| s.generation == gen && s.running)
}

/// Retry delay: 1 s doubling to 30 s, with ±20 % jitter so many browsers don't reconnect at once.
fn backoff_ms(attempt: u32) -> u32 {
    let base = 1_000u32.saturating_mul(1 << attempt.min(5)).min(30_000);
    let jitter = (js_sys::Math::random() * 0.4 - 0.2) * f64::from(base);
    (f64::from(base) + jitter) as u32
}

async fn run(gen: u64) {
    if wanted_config().await.is_none() {
        with(|s| s.running = false);
        show_idle_status().await;
        return;
    }
    if let Err(e) = alarms::create_periodic(ALARM, 0.5).await {
        log(&format!("cannot create the keep-alive alarm: {e}"));
    }
    let mut attempt = 0u32;
    while is_current(gen) {
        let Some(config) = wanted_config().await else {
            with(|s| s.running = false);
            return;
        };
        set_status(
            State::Connecting,
            format!("Connecting to {}…", config.server_url),
        )
        .await;
        let (tx, rx) = mpsc::unbounded();
        let pending_tx = RefCell::new(Some(tx));
        let ended = transport::websocket::run(&config, rx, || {
            if let Some(tx) = pending_tx.borrow_mut().take() {
                on_authenticated(gen, tx);
            }
        })
        .await;
        drop(pending_tx);
        with(|s| {
            if s.generation == gen {
                s.sender = None;
            }
        });
        if !is_current(gen) {
            return;
        }
        match ended {
            Ended::Stopped => return,
            Ended::Unauthorized(reason) => {
                token_rejected(&config, &reason).await;
                with(|s| s.running = false);
                return;
            }
            Ended::Lost {
                authenticated,
                detail,
            } => {
                attempt = if authenticated { 0 } else { attempt + 1 };
                let delay = backoff_ms(attempt);
                set_status(
                    State::Error,
                    format!("{detail}. Retrying in {} s.", (delay + 500) / 1000),
                )
                .await;
                sleep_ms(delay).await;
            }
        }
    }
}

fn on_authenticated(gen: u64, tx: mpsc::UnboundedSender<String>) {
    let waiting = with(|s| {
        if s.generation != gen {
            return Vec::new();
        }
        s.sender = Some(tx.clone());
        s.outbox.drain(..).collect::<Vec<_>>()
    });
    for frame in waiting {
        let _ = tx.unbounded_send(frame);
    }
    spawn_local(async {
        let url = saved_config()
            .await
            .map(|c| c.server_url)
            .unwrap_or_default();
        set_status(State::Connected, format!("Connected to {url}")).await;
    });
}

/// Close 4001: the token is wrong or revoked. Clear it and stop until the user gives a new one.
async fn token_rejected(config: &ConnectionConfig, reason: &str) {
    let mut cleared = config.clone();
    cleared.token.clear();
    let _ = storage::set(Area::Local, CONFIG_KEY, &cleared).await;
    let _ = storage::set(Area::Local, WANT_KEY, &false).await;
    let _ = alarms::clear(ALARM).await;
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(" ({reason})")
    };
    set_status(
        State::Error,
        format!("The server rejected the token{why}. It was cleared: paste a new token and click Save & connect."),
    )
    .await;
}

/// An `error` frame from the backend: shown in the status, the connection stays.
pub fn server_said(message: &str) {
    let message = format!("Server says: {message}");
    spawn_local(async move {
        let state = status().await.state;
        set_status(state, message).await;
    });
}

/// While the loop runs, a trivial extension API call every 20 s keeps Chrome from stopping the
/// worker; it sends nothing to the backend. The alarm restarts a worker stopped anyway.
async fn keep_alive(gen: u64) {
    while is_current(gen) {
        sleep_ms(KEEPALIVE_MS).await;
        let _ = runtime::touch().await;
    }
}

/// A command from any transport: executed once per id, answered through the live connection
/// or the outbox.
pub fn receive(cmd: Command) {
    let earlier = with(|s| match s.seen.get(&cmd.id) {
        Some(done) => Some(done.clone()),
        None => {
            s.seen.insert(cmd.id.clone(), None);
            s.seen_order.push_back(cmd.id.clone());
            while s.seen_order.len() > SEEN_MAX {
                if let Some(old) = s.seen_order.pop_front() {
                    s.seen.remove(&old);
                }
            }
            None
        }
    });
    match earlier {
        Some(Some(frame)) => deliver(frame),
        Some(None) => {} // still running: its result will come
        None => spawn_local(async move {
            let outcome = execute(&cmd.tool, cmd.args).await;
            let frame = ExtensionFrame::Result {
                command_id: cmd.id.clone(),
                outcome,
            };
            let frame = serde_json::to_string(&frame).unwrap_or_default();
            with(|s| {
                if let Some(slot) = s.seen.get_mut(&cmd.id) {
                    *slot = Some(frame.clone());
                }
            });
            deliver(frame);
        }),
    }
}

/// Runs a tool through the one dispatch path, bounded in time.
pub async fn execute(tool: &str, args: serde_json::Map<String, serde_json::Value>) -> Outcome {
    let step = format!("The {tool} command");
    match with_timeout(COMMAND_TIMEOUT_MS, &step, tools::dispatch(tool, args)).await {
        Ok(Ok(result)) => Outcome::Result { result },
        Ok(Err(error)) | Err(error) => Outcome::Error { error },
    }
}

fn deliver(frame: String) {
    with(|s| {
        let unsent = match &s.sender {
            Some(tx) => tx.unbounded_send(frame).err().map(|e| e.into_inner()),
            None => Some(frame),
        };
        if let Some(frame) = unsent {
            if s.outbox.len() >= OUTBOX_MAX {
                s.outbox.pop_front();
                log("outbox full: dropped the oldest undelivered result");
            }
            s.outbox.push_back(frame);
        }
    });
}
