//! The connection lifecycle: what the user wants (connected or not), the one connection loop,
//! authentication, backoff and keep-alive. What the pages show is [`status`]; what becomes of
//! commands and results (exactly once per id, per-tab order, the outbox) is [`delivery`].
//! A disconnect sticks: a rejected token or the user's Disconnect stops every reconnect path
//! until the user saves a config again.

mod delivery;
mod status;

use crate::chrome::storage::{self, Area};
use crate::chrome::{alarms, runtime};
use crate::js::{log, sleep_ms};
use crate::transport::{self, Ended, Handoff};
use crate::watchdog;
use futures_channel::mpsc;
use protocol::{CommandResult, ConfigError, ConnectionConfig, Transport};
use std::cell::RefCell;
use wasm_bindgen_futures::spawn_local;

pub use delivery::execute;
pub use status::{set_status, status, State, Status};

const CONFIG_KEY: &str = "config";
const WANT_KEY: &str = "wantConnected";
pub const ALARM: &str = "keepalive";
/// Chrome stops an idle worker after 30 s; an extension API call resets that timer.
const KEEPALIVE_MS: u32 = 20_000;

#[derive(Default)]
struct Session {
    /// Bumped to retire the running loop (new config, Disconnect).
    generation: u64,
    running: bool,
    /// What the live connection's commands are logged under: its target, else its server.
    backend: Option<String>,
}

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::default());
}

fn with<R>(f: impl FnOnce(&mut Session) -> R) -> R {
    SESSION.with(|s| f(&mut s.borrow_mut()))
}

/// What a transport hands on, and to whom: the session's delivery and status.
const HANDOFF: Handoff = Handoff {
    command: delivery::receive,
    server_said: status::server_said,
    undelivered: delivery::undelivered,
};

pub async fn saved_config() -> Option<ConnectionConfig> {
    storage::get(Area::Local, CONFIG_KEY).await.ok().flatten()
}

/// The config to connect with, if the user wants a connection and the config is usable (both
/// read in one call).
async fn wanted_config() -> Option<ConnectionConfig> {
    let stored = storage::get_many(Area::Local, &[WANT_KEY, CONFIG_KEY])
        .await
        .ok()?;
    let want: bool = storage::field(&stored, WANT_KEY)?;
    let config: ConnectionConfig = storage::field(&stored, CONFIG_KEY)?;
    (want && config.validate().is_ok()).then_some(config)
}

/// Called at every worker start and alarm: start the loop if the user wants a connection and
/// none is running. Never starts a second loop.
pub async fn resume() {
    // Claimed before any await: the worker's boot and an alarm often call this together.
    let claimed = with(|s| (!std::mem::replace(&mut s.running, true)).then_some(s.generation));
    let Some(gen) = claimed else {
        return;
    };
    let wanted = wanted_config().await;
    if with(|s| s.generation != gen) {
        return; // a Save or Disconnect decided meanwhile
    }
    match wanted {
        // The config just read is the first connection's: nothing changed it meanwhile (a
        // Save or Disconnect retires this loop).
        Some(config) => spawn_loop(gen, Some(config)),
        None => {
            with(|s| s.running = false);
            watchdog::stop().await;
            if status().await.state != State::Error {
                let msg = if saved_config().await.is_some() {
                    "Disconnected. Click Save & connect to connect."
                } else {
                    "Not configured: enter the server URL and token, then Save & connect."
                };
                set_status(State::Disconnected, msg).await;
            }
        }
    }
}

/// Validates and stores the config, then (re)connects with it.
pub async fn save_and_connect(config: ConnectionConfig) -> Result<(), ConfigError> {
    let config = config.normalized()?;
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
        watchdog::stop().await;
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
    });
    delivery::disconnected();
}

fn start_loop() {
    let gen = with(|s| {
        s.running = true;
        s.generation
    });
    spawn_loop(gen, None);
}

/// Starts the loop; `config`: the wanted config as just read, for its first connection.
fn spawn_loop(gen: u64, config: Option<ConnectionConfig>) {
    spawn_local(run(gen, config));
    spawn_local(keep_alive(gen));
}

/// The backend the live connection's commands come from (its target, else its server URL),
/// for the log.
pub fn current_target() -> Option<String> {
    with(|s| s.backend.clone())
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

async fn run(gen: u64, mut first: Option<ConnectionConfig>) {
    if let Err(e) = alarms::create_periodic(ALARM, 0.5).await {
        log(&format!("cannot create the keep-alive alarm: {e}"));
    }
    watchdog::start().await;
    delivery::restore().await;
    let mut attempt = 0u32;
    while is_current(gen) {
        let config = match first.take() {
            Some(config) => Some(config),
            None => wanted_config().await,
        };
        let Some(config) = config else {
            if is_current(gen) {
                with(|s| s.running = false);
            }
            return;
        };
        // A loop retired while it waited (Save & connect started a new one during this
        // worker's start-up, which reads the delivery ledger first) must not connect too,
        // nor write its "Connecting" over the new loop's "Connected".
        if !is_current(gen) {
            return;
        }
        set_status(
            State::Connecting,
            format!("Connecting to {}…", config.server_url),
        )
        .await;
        if !is_current(gen) {
            return;
        }
        let (tx, rx) = mpsc::unbounded();
        let pending_tx = RefCell::new(Some(tx));
        let on_auth = || {
            if let Some(tx) = pending_tx.borrow_mut().take() {
                on_authenticated(gen, tx, &config);
            }
        };
        let ended = match config.transport {
            Transport::WebSocket => transport::websocket::run(&config, HANDOFF, rx, on_auth).await,
            Transport::SseHttp => transport::sse_http::run(&config, HANDOFF, rx, on_auth).await,
            Transport::HttpPoll => {
                transport::http_poll::run(&config, true, HANDOFF, rx, on_auth).await
            }
            Transport::HttpShortPoll => {
                transport::http_poll::run(&config, false, HANDOFF, rx, on_auth).await
            }
        };
        drop(pending_tx);
        if with(|s| s.generation == gen) {
            delivery::disconnected();
        }
        if !is_current(gen) {
            return;
        }
        match ended {
            Ended::Stopped => return,
            Ended::Unauthorized(ref reason) | Ended::Disconnected(ref reason) => {
                let why = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({reason})")
                };
                let message = if matches!(ended, Ended::Unauthorized(_)) {
                    format!("The server rejected the token{why}. It was cleared: paste a new token and click Save & connect.")
                } else {
                    format!("The server disconnected this browser{why}. Its token was cleared: paste a new token and click Save & connect.")
                };
                stop_for_good(&config, message).await;
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

fn on_authenticated(gen: u64, tx: mpsc::UnboundedSender<CommandResult>, config: &ConnectionConfig) {
    if with(|s| s.generation != gen) {
        // A retired loop's connection: its status is not the browser's.
        return;
    }
    with(|s| {
        s.backend = Some(match &config.target {
            Some(t) => t.clone(),
            None => config.server_url.clone(),
        })
    });
    delivery::connected(tx);
    // Written now, not after another await: a status set later (say, the server's
    // `event: disconnect` right behind) must never be overwritten by this one.
    spawn_local(set_status(
        State::Connected,
        format!(
            "Connected to {} ({})",
            config.server_url,
            config.transport.as_str()
        ),
    ));
}

/// A rejected token (401, close 4001) or the server's disconnect: clear the token and stop
/// until the user gives a new one.
async fn stop_for_good(config: &ConnectionConfig, message: String) {
    let mut cleared = config.clone();
    cleared.token.clear();
    let _ = storage::set(Area::Local, CONFIG_KEY, &cleared).await;
    let _ = storage::set(Area::Local, WANT_KEY, &false).await;
    let _ = alarms::clear(ALARM).await;
    watchdog::stop().await;
    set_status(State::Error, message).await;
}

/// While the loop runs, a trivial extension API call every 20 s keeps Chrome from stopping the
/// worker; it sends nothing to the backend. A worker stopped anyway is started again by the
/// watchdog at once, or by the alarm (the backstop) within its 30 s period.
async fn keep_alive(gen: u64) {
    while is_current(gen) {
        sleep_ms(KEEPALIVE_MS).await;
        let _ = runtime::touch().await;
    }
}
