//! The connection lifecycle: what the user wants (connected or not), the one connection loop,
//! authentication, backoff, keep-alive, the status the pages show, and the results outbox.
//! A disconnect sticks: a rejected token or the user's Disconnect stops every reconnect path
//! until the user saves a config again.

use crate::chrome::storage::{self, Area};
use crate::chrome::{alarms, runtime};
use crate::js::{log, now_ms, sleep_ms, with_timeout};
use crate::seen_ids::SeenIds;
use crate::tools;
use crate::transport::{self, Ended};
use crate::watchdog;
use futures_channel::{mpsc, oneshot};
use protocol::{
    Command, CommandResult, ConfigError, ConnectionConfig, Malformed, Outcome, Transport,
};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use wasm_bindgen_futures::spawn_local;

const CONFIG_KEY: &str = "config";
const WANT_KEY: &str = "wantConnected";
const STATUS_KEY: &str = "status";
/// The ledger of ids executed, running or queued survives a worker restart in
/// chrome.storage.session as a ring of `SEEN_MAX` slots (`delivery.0` … `delivery.511`), one
/// small entry per id, so a command writes only its own entry; undelivered results are kept
/// under their own key, written only when the outbox changes.
const LEDGER_PREFIX: &str = "delivery.";
const OUTBOX_KEY: &str = "outbox";
pub const ALARM: &str = "keepalive";
/// Chrome stops an idle worker after 30 s; an extension API call resets that timer.
const KEEPALIVE_MS: u32 = 20_000;
/// Every command is answered within this (shared with backends: `protocol::bounds`).
const COMMAND_TIMEOUT_MS: u32 = protocol::bounds::COMMAND_MS;
/// The outbox holds at most this many results and bytes (chrome.storage.session has 10 MB);
/// past that the oldest result is dropped.
const OUTBOX_MAX: usize = 128;
const OUTBOX_BYTES: usize = 6 << 20;
const SEEN_MAX: usize = 512;
/// A finished command's result is kept for a redelivered id when smaller than this.
const KEEP_RESULT_BYTES: usize = 64 << 10;

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

/// What the session knows of a command id.
enum Seen {
    Running,
    /// Finished; the result when small enough to answer a redelivery with it (boxed: the
    /// ledger's table keeps a place for twice `SEEN_MAX` of these).
    Done(Option<Box<CommandResult>>),
}

/// Where a command id stands, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stage {
    /// Received, waiting for its tab's turn: not started.
    Queued,
    Running,
    Done,
}

/// One ledger slot: the id, its place in the order ids were first seen, its stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Slot {
    id: String,
    n: u64,
    s: Stage,
}

struct Session {
    /// The state of the status last set (in memory, so it is known without an await).
    state: Option<State>,
    /// Bumped to retire the running loop (new config, Disconnect).
    generation: u64,
    running: bool,
    /// The live, authenticated connection's outgoing results.
    sender: Option<mpsc::UnboundedSender<CommandResult>>,
    /// Results produced while no connection was up, delivered on the next one.
    outbox: VecDeque<(CommandResult, usize)>,
    /// The last `SEEN_MAX` ids, each with its number (its ledger slot is the number modulo
    /// `SEEN_MAX`).
    seen: SeenIds<Seen>,
    next_n: u64,
    /// The stored delivery state was read (once per worker start).
    restored: bool,
    /// Running ids still waiting for their tab's turn (not started).
    waiting: std::collections::HashSet<String>,
    /// Per tab, the last queued command: commands for one tab run in order.
    tab_tails: HashMap<i64, (u64, oneshot::Receiver<()>)>,
    next_seq: u64,
    /// Ids whose stored ledger entry is behind, and whether the stored outbox is.
    dirty: std::collections::HashSet<String>,
    outbox_dirty: bool,
    /// A `flush_soon` is scheduled; a `flush_later`.
    flush_scheduled: bool,
    flush_timer: bool,
    /// Commands between their start and their answer.
    in_flight: usize,
    /// A write is in flight; the commands waiting for the next, which carries their entry.
    writing: bool,
    batch_waiters: Vec<oneshot::Sender<()>>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            state: None,
            generation: 0,
            running: false,
            sender: None,
            outbox: VecDeque::new(),
            seen: SeenIds::new(SEEN_MAX),
            next_n: 0,
            restored: false,
            waiting: Default::default(),
            tab_tails: HashMap::new(),
            next_seq: 0,
            dirty: Default::default(),
            outbox_dirty: false,
            flush_scheduled: false,
            flush_timer: false,
            in_flight: 0,
            writing: false,
            batch_waiters: Vec::new(),
        }
    }
}

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::default());
}

fn with<R>(f: impl FnOnce(&mut Session) -> R) -> R {
    SESSION.with(|s| f(&mut s.borrow_mut()))
}

impl Session {
    /// The stored entry of a remembered id, as it stands now.
    fn slot(&self, id: &str) -> Option<(String, Slot)> {
        let n = self.seen.number(id)?;
        let s = match self.seen.get(id)? {
            Seen::Running if self.waiting.contains(id) => Stage::Queued,
            Seen::Running => Stage::Running,
            Seen::Done(_) => Stage::Done,
        };
        let key = format!("{LEDGER_PREFIX}{}", n % SEEN_MAX as u64);
        let slot = Slot {
            id: id.to_string(),
            n,
            s,
        };
        Some((key, slot))
    }

    fn remember(&mut self, id: &str, seen: Seen) {
        let n = self.next_n;
        self.remember_as(id, seen, n);
    }

    /// Remembers `id` as the `n`th id seen (restored ids keep the number they were stored
    /// with, so they keep their slot).
    fn remember_as(&mut self, id: &str, seen: Seen, n: u64) {
        let dirty = &mut self.dirty;
        // A forgotten id's slot is taken by the id just remembered.
        if self.seen.remember(id, n, seen, |old| {
            dirty.remove(&old);
        }) {
            self.next_n = self.next_n.max(n + 1);
        }
        self.dirty.insert(id.to_string());
    }

    /// Marks a remembered id's stored entry as behind (its stage changed).
    fn touch(&mut self, id: &str) {
        if self.seen.contains(id) {
            self.dirty.insert(id.to_string());
        }
    }

    fn queue(&mut self, result: CommandResult) {
        self.outbox_dirty = true;
        let size = result.payload_len();
        self.outbox.push_back((result, size));
        let mut bytes: usize = self.outbox.iter().map(|(_, n)| n).sum();
        while self.outbox.len() > OUTBOX_MAX || (bytes > OUTBOX_BYTES && self.outbox.len() > 1) {
            if let Some((dropped, n)) = self.outbox.pop_front() {
                bytes -= n;
                log(&format!(
                    "outbox full: dropped the undelivered result of {}",
                    dropped.command_id
                ));
            }
        }
    }
}

/// Writes what changed in the delivery state (the entries of the ids that changed, the outbox
/// if it did) to chrome.storage.session: issued now and not awaited, unless a write is still
/// in flight, in which case the next write, issued as soon as that one is answered, carries
/// everything that changed meanwhile (one write in flight at a time: a stream of commands
/// costs a few writes, not one each, and Chrome is never handed more than it keeps up with).
///
/// Why not awaited: Chrome handles a worker's extension API calls in the order the worker
/// makes them, and a session-storage write is applied when it is handled. A command's entry
/// in a write issued before its tool makes its first extension API call (`chrome.tabs`,
/// `chrome.debugger`, …: everything a tool does to the browser goes through one) is therefore
/// stored before anything the tool does reaches the browser; a worker stopped before Chrome
/// handled the write has none of the tool's calls handled either. Waiting for the write's
/// answer would only add its round trip to every command.
fn flush() {
    if !with(|s| s.writing) {
        issue();
    }
}

/// Issues the write of what changed (the caller checked that none is in flight); once it is
/// answered, issues the next if more changed meanwhile.
fn issue() {
    let (slots, outbox, waiters) = with(|s| {
        s.flush_scheduled = false;
        let ids: Vec<String> = s.dirty.drain().collect();
        let slots: Vec<(String, Slot)> = ids.iter().filter_map(|id| s.slot(id)).collect();
        let outbox = std::mem::take(&mut s.outbox_dirty)
            .then(|| s.outbox.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>());
        s.writing = !slots.is_empty() || outbox.is_some();
        (slots, outbox, std::mem::take(&mut s.batch_waiters))
    });
    if slots.is_empty() && outbox.is_none() {
        for w in waiters {
            let _ = w.send(());
        }
        return;
    }
    let items = js_sys::Object::new();
    let put = |key: &str, value: Result<wasm_bindgen::JsValue, String>| match value {
        Ok(v) => {
            let _ = js_sys::Reflect::set(&items, &key.into(), &v);
        }
        Err(e) => log(&format!("cannot store {key}: {e}")),
    };
    for (key, slot) in &slots {
        put(key, crate::js::to_js(slot));
    }
    if let Some(outbox) = &outbox {
        put(OUTBOX_KEY, crate::js::to_js(outbox));
    }
    let written = storage::set_session_now(&items);
    // Their entries are in the write just issued.
    for w in waiters {
        let _ = w.send(());
    }
    spawn_local(async move {
        if let Err(e) = written.await {
            log(&format!("cannot store the delivery state: {e}"));
        }
        let more = with(|s| {
            s.writing = false;
            !s.dirty.is_empty() || s.outbox_dirty || !s.batch_waiters.is_empty()
        });
        if more {
            issue();
        }
    });
}

/// [`flush`] once the current task yields: a burst of changes (results of commands that
/// finished together) is written in one call. For changes no tool's act depends on.
fn flush_soon() {
    if with(|s| std::mem::replace(&mut s.flush_scheduled, true)) {
        return;
    }
    spawn_local(async { flush() });
}

/// Returns once this command's entry is in a write issued to Chrome (see [`flush`]): at once
/// when no write is in flight, else when the one in flight is answered and the next, which
/// carries this entry, is issued.
async fn stored_before_acting() {
    if !with(|s| s.writing) {
        issue();
        return;
    }
    let (tx, rx) = oneshot::channel();
    with(|s| s.batch_waiters.push(tx));
    let _ = rx.await;
}

/// How long a finished command's "done" entry may wait for the next write while other
/// commands run (under a stream of commands it rides along with the next one's entry).
const LATER_MS: u32 = 20;

/// For a finished command's entry: written with the next command's entry while other commands
/// are running (so a stream of commands costs one write each, not two), else at once
/// ([`flush_soon`]); within `LATER_MS` in any case. Until then a restarted worker would take
/// the id for one interrupted while running: answered with that error, never run again.
fn flush_later() {
    if with(|s| s.in_flight == 0) {
        flush_soon();
        return;
    }
    if with(|s| std::mem::replace(&mut s.flush_timer, true)) {
        return;
    }
    spawn_local(async {
        sleep_ms(LATER_MS).await;
        with(|s| s.flush_timer = false);
        flush();
    });
}

/// Reads what the previous worker left: ids already executed (never run again), undelivered
/// results, and commands that were running when it stopped (answered with an error).
async fn restore() {
    if with(|s| std::mem::replace(&mut s.restored, true)) {
        return;
    }
    let mut keys: Vec<String> = (0..SEEN_MAX)
        .map(|i| format!("{LEDGER_PREFIX}{i}"))
        .collect();
    keys.push(OUTBOX_KEY.to_string());
    let stored = match storage::get_many(Area::Session, &keys).await {
        Ok(v) => v,
        Err(e) => {
            log(&format!("cannot read the delivery state: {e}"));
            return;
        }
    };
    let field = |key: &str| {
        js_sys::Reflect::get(&stored, &key.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    };
    let mut slots: Vec<Slot> = keys[..SEEN_MAX]
        .iter()
        .filter_map(|k| field(k))
        .filter_map(|v| crate::js::from_js(v).ok())
        .collect();
    slots.sort_by_key(|slot| slot.n);
    let outbox: Vec<CommandResult> = field(OUTBOX_KEY)
        .and_then(|v| crate::js::from_js(v).ok())
        .unwrap_or_default();
    with(|s| {
        for r in outbox {
            s.queue(r);
        }
        // What was read is what is stored: only what changes below is written back.
        s.outbox_dirty = false;
        for slot in slots {
            let id = slot.id;
            if slot.s == Stage::Done {
                s.remember_as(&id, Seen::Done(None), slot.n);
                s.dirty.remove(&id);
                continue;
            }
            let error = if slot.s == Stage::Running {
                "The extension's service worker was stopped while this command ran; it may have partly happened and was not run again. Check the page state before retrying."
            } else {
                "The extension's service worker was stopped before this command's turn came (it waited behind earlier commands for the same tab); it did not run, and is safe to send again."
            };
            let r = CommandResult::error(id.clone(), error);
            s.remember_as(&id, Seen::Done(Some(Box::new(r.clone()))), slot.n);
            s.queue(r);
        }
    });
    flush();
}

pub async fn set_status(state: State, message: impl Into<String>) {
    with(|s| s.state = Some(state));
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
        s.sender = None;
    });
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
    restore().await;
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
            Transport::WebSocket => transport::websocket::run(&config, rx, on_auth).await,
            Transport::SseHttp => transport::sse_http::run(&config, rx, on_auth).await,
            Transport::HttpPoll => transport::http_poll::run(&config, true, rx, on_auth).await,
            Transport::HttpShortPoll => {
                transport::http_poll::run(&config, false, rx, on_auth).await
            }
        };
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
    let Some(waiting) = with(|s| {
        if s.generation != gen {
            return None;
        }
        s.sender = Some(tx.clone());
        Some(s.outbox.drain(..).map(|(r, _)| r).collect::<Vec<_>>())
    }) else {
        // A retired loop's connection: its status is not the browser's.
        return;
    };
    let flushed = !waiting.is_empty();
    for result in waiting {
        let _ = tx.unbounded_send(result);
    }
    if flushed {
        with(|s| s.outbox_dirty = true);
        flush_soon();
    }
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

/// An `error` frame from the backend: shown in the status, the connection stays.
pub fn server_said(message: &str) {
    let message = format!("Server says: {message}");
    // The state as it is now, not after an await: a status set meanwhile must win.
    let state = with(|s| s.state).unwrap_or(State::Connecting);
    spawn_local(set_status(state, message));
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

/// A command from any transport: executed once per id (across worker restarts), in order per
/// tab and concurrently across tabs, answered through the live connection or the outbox.
pub fn receive(cmd: Command) {
    match admit(&cmd.id, None) {
        Next::Wait => {}
        Next::Answer(r) => {
            deliver(r);
        }
        Next::Run => spawn_local(run_command(cmd)),
    }
}

/// A command as a transport read it: one that can't run but carries an id is answered with its
/// error, exactly once per id like any command; one without an id is only logged.
pub fn receive_parsed(parsed: Result<Command, Malformed>) {
    match parsed {
        Ok(cmd) => receive(cmd),
        Err(Malformed {
            id: Some(id),
            error,
        }) => {
            let refused = CommandResult::error(id.clone(), error);
            match admit(&id, Some(refused)) {
                Next::Answer(r) => {
                    deliver(r);
                    flush_soon();
                }
                Next::Wait | Next::Run => {}
            }
        }
        Err(Malformed { id: None, error }) => log(&format!("ignored {error}")),
    }
}

enum Next {
    Run,
    Wait,
    Answer(CommandResult),
}

/// What to do with an id: run it (first seen), wait for its running result, or answer from what
/// is kept. `refused`: the id's answer is already known (a malformed command), kept as done.
fn admit(id: &str, refused: Option<CommandResult>) -> Next {
    with(|s| {
        match s.seen.get(id) {
        None => match refused {
            Some(r) => {
                s.remember(id, Seen::Done(Some(Box::new(r.clone()))));
                Next::Answer(r)
            }
            None => {
                s.remember(id, Seen::Running);
                Next::Run
            }
        },
        Some(Seen::Running) => Next::Wait, // its result will come
        Some(Seen::Done(Some(r))) => Next::Answer((**r).clone()),
        Some(Seen::Done(None)) => Next::Answer(CommandResult {
            command_id: id.to_string(),
            outcome: Outcome::Error {
                error: "This command id was already executed by this browser (its result was sent then); it is not run twice.".into(),
            },
        }),
    }
    })
}

async fn run_command(cmd: Command) {
    with(|s| s.in_flight += 1);
    // A tool the catalog marks `outsideTabOrder` (listing a tab's page tools) only reads, so it
    // does not wait behind the tab's running commands.
    let ordered = protocol::tool(&cmd.tool).is_none_or(|spec| !spec.outside_tab_order);
    let tab = cmd
        .args
        .get("tabId")
        .and_then(serde_json::Value::as_i64)
        .filter(|_| ordered);
    let turn = tab.map(|tab| {
        let (done, rx) = oneshot::channel();
        let (seq, previous) = with(|s| {
            s.next_seq += 1;
            let seq = s.next_seq;
            (seq, s.tab_tails.insert(tab, (seq, rx)).map(|(_, rx)| rx))
        });
        (tab, seq, done, previous)
    });
    let waits = turn.as_ref().is_some_and(|t| t.3.is_some());
    if waits {
        with(|s| s.waiting.insert(cmd.id.clone()));
    }
    // The id is stored (running, or waiting for its turn) before the tool starts, so a
    // restarted worker never runs it again and can say whether it had started: issued here,
    // ahead of the tool's first extension API call (see `flush`).
    stored_before_acting().await;
    let turn = match turn {
        Some((tab, seq, done, previous)) => {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            Some((tab, seq, done))
        }
        None => None,
    };
    if waits {
        with(|s| {
            s.waiting.remove(&cmd.id);
            s.touch(&cmd.id);
        });
        stored_before_acting().await;
    }
    let outcome = execute(&cmd.tool, cmd.args).await;
    if let Some((tab, seq, done)) = turn {
        let _ = done.send(());
        with(|s| {
            if s.tab_tails.get(&tab).is_some_and(|(q, _)| *q == seq) {
                s.tab_tails.remove(&tab);
            }
        });
    }
    let result = CommandResult {
        command_id: cmd.id.clone(),
        outcome,
    };
    let small = result.payload_len() < KEEP_RESULT_BYTES;
    with(|s| {
        if s.seen
            .set(&cmd.id, Seen::Done(small.then(|| Box::new(result.clone()))))
        {
            s.touch(&cmd.id);
        }
        s.in_flight -= 1;
    });
    // Queued in the outbox (no connection): written at once.
    if !deliver(result) {
        flush_later();
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

/// Sends the result on the live connection, or keeps it in the outbox (then true, and the
/// outbox is written soon).
fn deliver(result: CommandResult) -> bool {
    let queued = with(|s| {
        let unsent = match &s.sender {
            Some(tx) => tx.unbounded_send(result).err().map(|e| e.into_inner()),
            None => Some(result),
        };
        unsent.map(|r| s.queue(r)).is_some()
    });
    if queued {
        flush_soon();
    }
    queued
}

/// A result the transport could not deliver (a POST that kept failing): back to the outbox,
/// sent on the next connection.
pub fn undelivered(result: CommandResult) {
    with(|s| s.queue(result));
    flush_soon();
}
