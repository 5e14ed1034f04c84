//! The connections' lifecycle: what the user wants of each (connected or not), one connection
//! loop per connection, authentication, backoff and keep-alive. The first connection keeps the
//! keys a single connection always had; further ones (a second product's accepted pair offer)
//! are [`connections`]. What the pages show is [`status`]; what becomes of commands and results
//! (exactly once per id and connection, per-tab order, the outbox) is [`delivery`].
//! A disconnect sticks: a rejected token or the user's Disconnect stops every reconnect path
//! of that connection until the user saves a config or connects it again.

mod connections;
mod delivery;
mod status;

use crate::chrome::storage::{self, Area};
use crate::chrome::{alarms, runtime};
use crate::js::{log, sleep_ms};
use crate::transport::Reply;
use crate::transport::{self, Ended, Handoff};
use crate::vec_map::VecMap;
use crate::watchdog;
use futures_channel::mpsc;
use futures_util::lock::Mutex;
use protocol::{ConfigError, ConnectionConfig, Transport};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen_futures::spawn_local;

pub use connections::{Extra, MAX_CONNECTIONS};
pub use delivery::execute;
pub use status::{status, status_of, State, Status};

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
    /// Per connection (0: the first).
    static SESSIONS: RefCell<VecMap<u32, Session>> = const { RefCell::new(VecMap::new()) };
    /// Changes to the list of connections are made one at a time.
    static LIST_LOCK: Rc<Mutex<()>> = Rc::new(Mutex::new(()));
}

fn with<R>(conn: u32, f: impl FnOnce(&mut Session) -> R) -> R {
    SESSIONS.with(|s| f(s.borrow_mut().entry(conn).or_default()))
}

/// Whether any connection's loop runs (the keep-alive and the watchdog serve them all).
fn any_running() -> bool {
    SESSIONS.with(|s| s.borrow().values().any(|s| s.running))
}

/// What a transport hands on, and to whom: the session's delivery and status, for `conn`.
fn handoff(conn: u32) -> Handoff {
    Handoff {
        conn,
        on_command: delivery::receive,
        on_server_said: status::server_said,
        on_undelivered: delivery::undelivered,
    }
}

/// The first connection's config.
pub async fn saved_config() -> Option<ConnectionConfig> {
    storage::get(Area::Local, CONFIG_KEY).await.ok().flatten()
}

/// Whether the person wants the first connection connected.
pub async fn first_wanted() -> bool {
    storage::get(Area::Local, WANT_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// The further connections, as stored.
pub async fn extras() -> Vec<Extra> {
    connections::list().await
}

/// The config to connect `conn` with, if the user wants it connected and the config is usable
/// (both read in one call).
async fn wanted_config(conn: u32) -> Option<ConnectionConfig> {
    if conn != 0 {
        let extra = connections::list()
            .await
            .into_iter()
            .find(|e| e.id == conn)?;
        return (extra.want && extra.config.validate().is_ok()).then_some(extra.config);
    }
    let stored = storage::get_many(Area::Local, &[WANT_KEY, CONFIG_KEY])
        .await
        .ok()?;
    let want: bool = storage::field(&stored, WANT_KEY)?;
    let config: ConnectionConfig = storage::field(&stored, CONFIG_KEY)?;
    (want && config.validate().is_ok()).then_some(config)
}

/// Called at every worker start and alarm: start each connection's loop if the user wants it
/// connected and none is running. Never starts a second loop for one connection. The ledger of
/// delivered ids is read at once, beside the connect (commands wait for it in `delivery`).
pub async fn resume() {
    // The first connection is claimed before any await (the worker's boot and an alarm often
    // call this together); its config and the further connections come in one read.
    let claimed = claim(0);
    let stored = storage::get_many(Area::Local, &[connections::LIST_KEY, WANT_KEY, CONFIG_KEY])
        .await
        .ok();
    let extras: Vec<Extra> = stored
        .as_ref()
        .and_then(|v| storage::field(v, connections::LIST_KEY))
        .unwrap_or_default();
    connections::register_looks(&extras);
    if let Some(gen) = claimed {
        let wanted = stored.as_ref().and_then(|v| {
            let want: bool = storage::field(v, WANT_KEY)?;
            let config: ConnectionConfig = storage::field(v, CONFIG_KEY)?;
            (want && config.validate().is_ok()).then_some(config)
        });
        spawn_local(resume_claimed(0, gen, wanted));
    }
    for extra in extras {
        spawn_local(resume_one(extra.id));
    }
    // After the loops, so that their sockets open before the ledger is parsed; a command
    // waits for it (`delivery::admit_waiting`).
    spawn_local(delivery::restore());
}

/// Claims connection `conn`'s loop: its generation, or `None` when a loop runs already.
fn claim(conn: u32) -> Option<u64> {
    with(conn, |s| {
        (!std::mem::replace(&mut s.running, true)).then_some(s.generation)
    })
}

async fn resume_one(conn: u32) {
    // Claimed before any await: the worker's boot and an alarm often call this together.
    let Some(gen) = claim(conn) else {
        return;
    };
    let wanted = wanted_config(conn).await;
    resume_claimed(conn, gen, wanted).await;
}

/// Starts the claimed loop of `conn` with the config just read (`None`: not wanted).
async fn resume_claimed(conn: u32, gen: u64, wanted: Option<ConnectionConfig>) {
    if with(conn, |s| s.generation != gen) {
        return; // a Save or Disconnect decided meanwhile
    }
    match wanted {
        // The config just read is the connection's: nothing changed it meanwhile (a Save or
        // Disconnect retires this loop).
        Some(config) => spawn_loop(conn, gen, Some(config)),
        None => {
            with(conn, |s| s.running = false);
            if !any_running() {
                watchdog::stop().await;
            }
            if status_of(conn).await.state != State::Error {
                let msg = if conn != 0 {
                    "Disconnected. Click Connect to connect."
                } else if saved_config().await.is_some() {
                    "Disconnected. Click Save & connect to connect."
                } else {
                    "Not configured: enter the server URL and token, then Save & connect."
                };
                status::set_status_of(conn, State::Disconnected, msg).await;
            }
        }
    }
}

/// Validates and stores the first connection's config, then (re)connects with it.
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
    retire_loop(0);
    start_loop(0);
    Ok(())
}

fn list_error(message: String) -> ConfigError {
    ConfigError {
        field: "offer",
        message,
    }
}

/// An accepted pair offer: the first connection when there is none yet or it is the same
/// backend (server and target); else the further connection of the same backend is replaced,
/// or a new one added (at most [`MAX_CONNECTIONS`] in all). Connects it; returns its number.
pub async fn accept_offer(
    config: ConnectionConfig,
    brand: Option<String>,
) -> Result<u32, ConfigError> {
    let config = config.normalized()?;
    let lock = LIST_LOCK.with(Rc::clone);
    let _turn = lock.lock().await;
    let first = saved_config().await;
    if first
        .as_ref()
        .is_none_or(|f| connections::same_backend(f, &config))
    {
        save_and_connect(config).await?;
        return Ok(0);
    }
    let mut list = connections::list().await;
    let id = match list
        .iter_mut()
        .find(|e| connections::same_backend(&e.config, &config))
    {
        Some(e) => {
            e.config = config;
            e.brand = brand;
            e.want = true;
            e.id
        }
        None => {
            if list.len() + 1 >= MAX_CONNECTIONS {
                return Err(list_error(format!(
                    "This browser already keeps {MAX_CONNECTIONS} connections, the most it keeps: remove one in Options, then accept again."
                )));
            }
            let id = list.iter().map(|e| e.id).max().unwrap_or(0) + 1;
            list.push(Extra {
                id,
                config,
                want: true,
                brand,
            });
            id
        }
    };
    connections::store(&list).await.map_err(list_error)?;
    connections::register_looks(&list);
    retire_loop(id);
    start_loop(id);
    Ok(id)
}

/// The user's Disconnect (or a Connect with the saved config when `connect` is true) of the
/// first connection.
pub async fn set_wanted(connect: bool) {
    set_wanted_of(0, connect).await;
}

/// The user's Connect or Disconnect of connection `conn`; false when there is no such
/// connection.
pub async fn set_wanted_of(conn: u32, connect: bool) -> bool {
    let stored = if conn == 0 {
        storage::set(Area::Local, WANT_KEY, &connect).await
    } else {
        let lock = LIST_LOCK.with(Rc::clone);
        let _turn = lock.lock().await;
        let mut list = connections::list().await;
        let Some(extra) = list.iter_mut().find(|e| e.id == conn) else {
            return false;
        };
        extra.want = connect;
        connections::store(&list).await
    };
    if let Err(e) = stored {
        log(&format!("cannot store the wanted state: {e}"));
    }
    retire_loop(conn);
    if connect {
        start_loop(conn);
    } else {
        if !any_running() {
            let _ = alarms::clear(ALARM).await;
            watchdog::stop().await;
        }
        let again = if conn == 0 {
            "Save & connect"
        } else {
            "Connect"
        };
        status::set_status_of(
            conn,
            State::Disconnected,
            format!("Disconnected by you. Click {again} to connect again."),
        )
        .await;
    }
    true
}

/// The user's Remove of connection `conn`: disconnected and forgotten (the first connection's
/// config is cleared; a further one leaves the list, with its undelivered results). Its tab
/// group's tabs stay open. False when there is no such connection.
pub async fn remove(conn: u32) -> bool {
    if conn == 0 {
        set_wanted_of(0, false).await;
        if let Err(e) = storage::set(Area::Local, CONFIG_KEY, &serde_json::Value::Null).await {
            log(&format!("cannot clear the config: {e}"));
        }
        status::set_status_of(
            0,
            State::Disconnected,
            "Not configured: enter the server URL and token, then Save & connect.",
        )
        .await;
        crate::policy::connection_removed(0).await;
        return true;
    }
    let lock = LIST_LOCK.with(Rc::clone);
    let _turn = lock.lock().await;
    let mut list = connections::list().await;
    let before = list.len();
    list.retain(|e| e.id != conn);
    if list.len() == before {
        return false;
    }
    if let Err(e) = connections::store(&list).await {
        log(&format!("cannot store the connections: {e}"));
    }
    retire_loop(conn);
    SESSIONS.with(|s| s.borrow_mut().remove(&conn));
    delivery::removed(conn);
    crate::agent::forget(conn);
    crate::policy::connection_removed(conn).await;
    connections::register_looks(&list);
    let _ = storage::remove_session(&[status::key(conn)]).await;
    if !any_running() {
        let _ = alarms::clear(ALARM).await;
        watchdog::stop().await;
    }
    true
}

fn retire_loop(conn: u32) {
    with(conn, |s| {
        s.generation += 1;
        s.running = false;
    });
    delivery::disconnected(conn);
}

fn start_loop(conn: u32) {
    let gen = with(conn, |s| {
        s.running = true;
        s.generation
    });
    spawn_loop(conn, gen, None);
}

/// Starts the loop; `config`: the wanted config as just read, for its first connection.
fn spawn_loop(conn: u32, gen: u64, config: Option<ConnectionConfig>) {
    spawn_local(run(conn, gen, config));
    spawn_local(keep_alive(conn, gen));
}

/// The backend a connection's commands come from (its target, else its server URL), for the
/// log.
pub fn target_of(conn: u32) -> Option<String> {
    with(conn, |s| s.backend.clone())
}

fn is_current(conn: u32, gen: u64) -> bool {
    with(conn, |s| s.generation == gen && s.running)
}

/// Retry delay: 1 s doubling to 30 s, with ±20 % jitter so many browsers don't reconnect at once.
fn backoff_ms(attempt: u32) -> u32 {
    let base = 1_000u32.saturating_mul(1 << attempt.min(5)).min(30_000);
    let jitter = (js_sys::Math::random() * 0.4 - 0.2) * f64::from(base);
    (f64::from(base) + jitter) as u32
}

async fn run(conn: u32, gen: u64, mut first: Option<ConnectionConfig>) {
    // The keep-alive alarm and the watchdog are not needed before the first command: set up
    // beside the connect, not before it.
    spawn_local(start_backstops());
    let mut attempt = 0u32;
    while is_current(conn, gen) {
        let config = match first.take() {
            Some(config) => Some(config),
            None => wanted_config(conn).await,
        };
        let Some(config) = config else {
            if is_current(conn, gen) {
                with(conn, |s| s.running = false);
            }
            return;
        };
        // A loop retired while it waited (Save & connect started a new one meanwhile) must
        // not connect too, nor write its "Connecting" over the new loop's "Connected".
        if !is_current(conn, gen) {
            return;
        }
        // Issued now (Chrome applies one worker's calls in order, so a later status wins),
        // not waited for: the connect does not need it.
        spawn_local(status::set_status_of(
            conn,
            State::Connecting,
            format!("Connecting to {}…", config.server_url),
        ));
        let (tx, rx) = mpsc::unbounded();
        let pending_tx = RefCell::new(Some(tx));
        let on_auth = || {
            if let Some(tx) = pending_tx.borrow_mut().take() {
                on_authenticated(conn, gen, tx, &config);
            }
        };
        let handoff = handoff(conn);
        let ended = match config.transport {
            Transport::WebSocket => transport::websocket::run(&config, handoff, rx, on_auth).await,
            Transport::SseHttp => transport::sse_http::run(&config, handoff, rx, on_auth).await,
            Transport::HttpPoll => {
                transport::http_poll::run(&config, true, handoff, rx, on_auth).await
            }
            Transport::HttpShortPoll => {
                transport::http_poll::run(&config, false, handoff, rx, on_auth).await
            }
        };
        drop(pending_tx);
        if with(conn, |s| s.generation == gen) {
            delivery::disconnected(conn);
        }
        if !is_current(conn, gen) {
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
                let again = if conn == 0 {
                    "paste a new token and click Save & connect"
                } else {
                    "pair with it again, or remove it in Options"
                };
                let message = if matches!(ended, Ended::Unauthorized(_)) {
                    format!("The server rejected the token{why}. It was cleared: {again}.")
                } else {
                    format!("The server disconnected this browser{why}. Its token was cleared: {again}.")
                };
                with(conn, |s| s.running = false);
                stop_for_good(conn, &config, message).await;
                return;
            }
            Ended::Lost {
                authenticated,
                detail,
            } => {
                attempt = if authenticated { 0 } else { attempt + 1 };
                let delay = backoff_ms(attempt);
                status::set_status_of(
                    conn,
                    State::Error,
                    format!("{detail}. Retrying in {} s.", (delay + 500) / 1000),
                )
                .await;
                sleep_ms(delay).await;
            }
        }
    }
}

/// The keep-alive alarm and the watchdog, for the loops that run; undone when none runs any
/// more by the time they are set up (a Disconnect during the worker's start).
async fn start_backstops() {
    if let Err(e) = alarms::create_periodic(ALARM, 0.5).await {
        log(&format!("cannot create the keep-alive alarm: {e}"));
    }
    watchdog::start().await;
    if !any_running() {
        let _ = alarms::clear(ALARM).await;
        watchdog::stop().await;
    }
}

fn on_authenticated(
    conn: u32,
    gen: u64,
    tx: mpsc::UnboundedSender<Reply>,
    config: &ConnectionConfig,
) {
    if with(conn, |s| s.generation != gen) {
        // A retired loop's connection: its status is not the browser's.
        return;
    }
    with(conn, |s| {
        s.backend = Some(match &config.target {
            Some(t) => t.clone(),
            None => config.server_url.clone(),
        })
    });
    delivery::connected(conn, tx);
    // Written now, not after another await: a status set later (say, the server's
    // `event: disconnect` right behind) must never be overwritten by this one.
    spawn_local(status::set_status_of(
        conn,
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
async fn stop_for_good(conn: u32, config: &ConnectionConfig, message: String) {
    if conn == 0 {
        let mut cleared = config.clone();
        cleared.token.clear();
        let _ = storage::set(Area::Local, CONFIG_KEY, &cleared).await;
        let _ = storage::set(Area::Local, WANT_KEY, &false).await;
    } else {
        let lock = LIST_LOCK.with(Rc::clone);
        let _turn = lock.lock().await;
        let mut list = connections::list().await;
        if let Some(e) = list.iter_mut().find(|e| e.id == conn) {
            e.config.token.clear();
            e.want = false;
            let _ = connections::store(&list).await;
        }
    }
    if !any_running() {
        let _ = alarms::clear(ALARM).await;
        watchdog::stop().await;
    }
    status::set_status_of(conn, State::Error, message).await;
}

/// While the loop runs, a trivial extension API call every 20 s keeps Chrome from stopping the
/// worker; it sends nothing to the backend. A worker stopped anyway is started again by the
/// watchdog at once, or by the alarm (the backstop) within its 30 s period.
async fn keep_alive(conn: u32, gen: u64) {
    while is_current(conn, gen) {
        sleep_ms(KEEPALIVE_MS).await;
        let _ = runtime::touch().await;
    }
}

#[cfg(test)]
#[test]
fn its_keys_are_read_early_as_the_worker_starts() {
    for key in [CONFIG_KEY, WANT_KEY, connections::LIST_KEY] {
        assert!(
            crate::chrome::storage::early_reads::asks("local", key),
            "{key}"
        );
    }
}
