//! Delivery: every command id runs once (across worker restarts too), commands for one tab run
//! in order and commands for different tabs concurrently, and every result is answered through
//! the live connection or kept in the outbox until the next one. What must survive a worker
//! restart (the ledger of ids, the outbox) is written by [`store`], off the command's path.
//!
//! Each connection has its own ids: an id is kept as the connection's number and the backend's
//! id ([`internal_id`]; the first connection's ids as they came), so ids of two backends never
//! meet, and each result goes back to the connection its command came by.

mod seen;
mod store;

use crate::agent::{self, Agent};
use crate::js::{log, with_timeout};
use crate::tools::{self, Checked, Output, Refused};
use crate::transport::Reply;
use crate::vec_map::VecMap;
use futures_channel::{mpsc, oneshot};
use protocol::{Command, CommandResult, Malformed, Outcome};
use seen::SeenIds;
use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use wasm_bindgen_futures::spawn_local;

pub use store::restore;

/// Every command is answered within this (shared with backends: `protocol::bounds`).
const COMMAND_TIMEOUT_MS: u32 = protocol::bounds::COMMAND_MS;
/// The outbox holds at most this many results and bytes (chrome.storage.session has 10 MB);
/// past that the oldest result is dropped.
const OUTBOX_MAX: usize = 128;
const OUTBOX_BYTES: usize = 6 << 20;
/// Ids remembered (in memory and in the stored ledger).
const SEEN_MAX: usize = 512;
/// A finished command's result is kept for a redelivered id when smaller than this.
const KEEP_RESULT_BYTES: usize = 64 << 10;

/// What the session knows of a command id.
enum Seen {
    Running,
    /// Finished; the result when small enough to answer a redelivery with it (boxed: the
    /// table of seen ids keeps a place for twice `SEEN_MAX` of these).
    Done(Option<Box<Reply>>),
}

struct Delivery {
    /// Per connection, the live, authenticated connection's outgoing results.
    senders: VecMap<u32, mpsc::UnboundedSender<Reply>>,
    /// Results produced while no connection was up, delivered on the next one.
    outbox: VecDeque<Reply>,
    /// The last `SEEN_MAX` ids, each with its number (its ledger slot is the number modulo
    /// `SEEN_MAX`).
    seen: SeenIds<Seen>,
    next_n: u64,
    /// Running ids still waiting for their tab's turn (not started).
    waiting: HashSet<String>,
    /// Running ids of commands that only read ([`Checked::only_reads`]).
    reading: HashSet<String>,
    /// Per tab, the last queued command: commands for one tab run in order.
    tab_tails: VecMap<i64, (u64, oneshot::Receiver<()>)>,
    next_seq: u64,
    /// Commands between their start and their answer.
    in_flight: usize,
    /// What the stored copy lacks, and the writes under way.
    store: store::Writer,
    /// Commands that came before the previous worker's ledger was read, in order.
    before_restore: Vec<(u32, Result<Command, Malformed>)>,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            senders: VecMap::new(),
            outbox: VecDeque::new(),
            seen: SeenIds::new(SEEN_MAX),
            next_n: 0,
            waiting: HashSet::new(),
            reading: HashSet::new(),
            tab_tails: VecMap::new(),
            next_seq: 0,
            in_flight: 0,
            store: store::Writer::default(),
            before_restore: Vec::new(),
        }
    }
}

thread_local! {
    static DELIVERY: RefCell<Delivery> = RefCell::new(Delivery::default());
}

fn with<R>(f: impl FnOnce(&mut Delivery) -> R) -> R {
    DELIVERY.with(|d| f(&mut d.borrow_mut()))
}

impl Delivery {
    fn remember(&mut self, id: &str, seen: Seen) {
        let n = self.next_n;
        self.remember_as(id, seen, n);
    }

    /// Remembers a command about to run, not stored yet: `run_command` stores it once it knows
    /// the command will do something (one refused at once is never stored).
    fn remember_unstored(&mut self, id: &str) {
        self.remember(id, Seen::Running);
        self.store.dirty.remove(id);
    }

    /// Remembers `id` as the `n`th id seen (restored ids keep the number they were stored
    /// with, so they keep their slot).
    fn remember_as(&mut self, id: &str, seen: Seen, n: u64) {
        let dirty = &mut self.store.dirty;
        // A forgotten id's slot is taken by the id just remembered.
        if self.seen.remember(id, n, seen, |old| {
            dirty.remove(&old);
        }) {
            self.next_n = self.next_n.max(n + 1);
        }
        self.store.dirty.insert(id.to_string());
    }

    /// Marks a remembered id's stored entry as behind (its stage changed).
    fn touch(&mut self, id: &str) {
        if self.seen.contains(id) {
            self.store.dirty.insert(id.to_string());
        }
    }

    fn queue(&mut self, reply: Reply) {
        self.store.outbox_dirty = true;
        self.outbox.push_back(reply);
        let mut bytes: usize = self.outbox.iter().map(Reply::size).sum();
        while self.outbox.len() > OUTBOX_MAX || (bytes > OUTBOX_BYTES && self.outbox.len() > 1) {
            if let Some(dropped) = self.outbox.pop_front() {
                bytes -= dropped.size();
                log(&format!(
                    "outbox full: dropped the undelivered result of {:?}",
                    dropped.id()
                ));
            }
        }
    }
}

/// Splits a separator from the backend's id.
const SEP: char = '\u{1e}';

/// The id a command of connection `conn` is kept by: the backend's id for the first connection
/// (as it always was), else the connection's number, a separator, and the backend's id.
pub fn internal_id(conn: u32, id: &str) -> String {
    if conn == 0 && !id.contains(SEP) {
        id.to_string()
    } else {
        format!("{conn}{SEP}{id}")
    }
}

/// The connection and the backend's id of a kept id.
fn split_id(internal: &str) -> (u32, &str) {
    match internal.split_once(SEP) {
        Some((conn, id)) => match conn.parse() {
            Ok(conn) => (conn, id),
            Err(_) => (0, internal),
        },
        None => (0, internal),
    }
}

/// A result kept by its command's id (`result.command_id`), sent as its backend knows it (its
/// own id in the JSON).
fn reply(mut result: CommandResult) -> Reply {
    let id = std::mem::take(&mut result.command_id);
    result.command_id = split_id(&id).1.to_string();
    Reply::of(id, &result)
}

/// A finished command's reply: a page's text goes into its JSON as the JS string it is.
fn reply_of(id: String, outcome: tools::Outcome, paused: bool) -> Reply {
    let outcome = match outcome {
        Ok(Output::PageText(text)) if !paused => {
            let command_id = split_id(&id).1.to_string();
            return Reply::page_text(id, &command_id, &text);
        }
        Ok(output) => Outcome::Result {
            result: output.into_content(),
        },
        Err(error) => Outcome::Error { error },
    };
    reply(CommandResult {
        command_id: id,
        outcome,
        paused,
    })
}

/// Connection `conn` was accepted: its results go to `tx`, and what of its results waited in
/// the outbox is sent on it now.
pub fn connected(conn: u32, tx: mpsc::UnboundedSender<Reply>) {
    with(|d| d.senders.insert(conn, tx));
    send_outbox(conn);
}

/// Sends what of connection `conn`'s results waits in the outbox, if it is up.
fn send_outbox(conn: u32) {
    let waiting = with(|d| {
        let tx = d.senders.get(&conn).cloned()?;
        let (mine, others): (Vec<_>, Vec<_>) =
            d.outbox.drain(..).partition(|r| split_id(r.id()).0 == conn);
        d.outbox.extend(others);
        Some((tx, mine))
    });
    let Some((tx, waiting)) = waiting else {
        return;
    };
    let flushed = !waiting.is_empty();
    for reply in waiting {
        let _ = tx.unbounded_send(reply);
    }
    if flushed {
        with(|d| d.store.outbox_dirty = true);
        store::flush_soon();
    }
}

/// The previous worker's ledger was read: the commands that came meanwhile are admitted, in
/// the order they came, and the results it left go to the connections already up.
fn admit_waiting() {
    let waiting = with(|d| std::mem::take(&mut d.before_restore));
    for (conn, parsed) in waiting {
        receive(conn, parsed);
    }
    let up: Vec<u32> = with(|d| d.senders.keys().copied().collect());
    for conn in up {
        send_outbox(conn);
    }
}

/// Connection `conn` is not up now: its results wait in the outbox.
pub fn disconnected(conn: u32) {
    with(|d| d.senders.remove(&conn));
}

/// Connection `conn` was removed: its undelivered results go.
pub fn removed(conn: u32) {
    let dropped = with(|d| {
        d.senders.remove(&conn);
        let before = d.outbox.len();
        d.outbox.retain(|r| split_id(r.id()).0 != conn);
        d.store.outbox_dirty |= d.outbox.len() != before;
        d.outbox.len() != before
    });
    if dropped {
        store::flush_soon();
    }
}

/// A command as a transport read it, from any transport: run once per id (across worker
/// restarts), in order per tab and concurrently across tabs, answered through the live
/// connection or the outbox. One that can't run but carries an id is answered with its error,
/// exactly once per id like any command; one without an id is only logged.
pub fn receive(conn: u32, parsed: Result<Command, Malformed>) {
    // Until the previous worker's ledger is read, no id can be told new: the command waits
    // (the connect does not wait for the read; the first command rarely does).
    if !store::restored() {
        with(|d| d.before_restore.push((conn, parsed)));
        // Started at the worker's start; this only makes sure (a second call returns at once).
        spawn_local(store::restore());
        return;
    }
    match parsed {
        Ok(mut cmd) => {
            cmd.id = internal_id(conn, &cmd.id);
            match admit(&cmd.id, None) {
                Next::Wait => {}
                Next::Answer(r) => {
                    deliver(r);
                }
                Next::Run => {
                    let agent = Agent::of(conn, cmd.agent.take());
                    spawn_local(run_command(cmd, agent))
                }
            }
        }
        Err(Malformed {
            id: Some(id),
            error,
        }) => {
            let id = internal_id(conn, &id);
            let refused = reply(CommandResult::error(id.clone(), error));
            match admit(&id, Some(refused)) {
                Next::Answer(r) => {
                    deliver(r);
                    store::flush_soon();
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
    Answer(Reply),
}

/// What to do with an id: run it (first seen), wait for its running result, or answer from what
/// is kept. `refused`: the id's answer is already known (a malformed command), kept as done.
fn admit(id: &str, refused: Option<Reply>) -> Next {
    with(|d| {
        match d.seen.get(id) {
        None => match refused {
            Some(r) => {
                d.remember(id, Seen::Done(Some(Box::new(r.clone()))));
                Next::Answer(r)
            }
            None => {
                d.remember_unstored(id);
                Next::Run
            }
        },
        Some(Seen::Running) => Next::Wait, // its result will come
        Some(Seen::Done(Some(r))) => Next::Answer((**r).clone()),
        Some(Seen::Done(None)) => Next::Answer(reply(CommandResult::error(
            id,
            "This command id was already executed by this browser (its result was sent then); it is not run twice.",
        ))),
    }
    })
}

async fn run_command(cmd: Command, agent: Agent) {
    with(|d| d.in_flight += 1);
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
        let (seq, previous) = with(|d| {
            d.next_seq += 1;
            let seq = d.next_seq;
            (seq, d.tab_tails.insert(tab, (seq, rx)).map(|(_, rx)| rx))
        });
        (tab, seq, done, previous)
    });
    let waits = turn.as_ref().is_some_and(|t| t.3.is_some());
    if waits {
        with(|d| d.waiting.insert(cmd.id.clone()));
    }
    let tool = cmd.tool.clone();
    let tab_arg = cmd.args.get("tabId").and_then(serde_json::Value::as_i64);
    let summary = crate::journal::summary(&cmd.tool, &cmd.args);
    let checked = tools::check(&cmd.tool, cmd.args);
    let (tab, seq, done, previous) = match turn {
        Some((tab, seq, done, previous)) => (Some(tab), seq, Some(done), previous),
        None => (None, 0, None, None),
    };
    // The whole command, its wait for its tab's turn included, ends when the person clicks
    // Stop (its `done` is then dropped, which lets the next command for the tab go).
    let id = cmd.id.clone();
    // A command refused at once (an unknown tool, arguments its schema refuses) that waits for
    // no turn does nothing and is answered now: it is never stored (run again after a
    // restart, it answers the same), so it costs no write at all.
    let stored = waits || !matches!(checked, Err(Refused::Now(_)));
    // A command that only reads changes nothing a second run would change again: its entry
    // need not be stored before it acts, only soon, so that a restarted worker answers it.
    let acts = !checked.as_ref().is_ok_and(Checked::only_reads);
    if stored && !acts {
        with(|d| d.reading.insert(id.clone()));
    }
    let work = async {
        // The id is stored (running, or waiting for its turn) once it is received, so a
        // restarted worker never runs it again and says whether it had started. A command that
        // acts has it in a write issued ahead of its tool's first extension API call (see
        // `store`); one that only reads, in a write issued after that call, off its path.
        if stored {
            with(|d| d.touch(&id));
            store_entry(acts).await;
        }
        if let Some(previous) = previous {
            let _ = previous.await;
        }
        if waits {
            with(|d| {
                d.waiting.remove(&id);
                d.touch(&id);
            });
            if checked.is_ok() {
                store_entry(acts).await;
            }
        }
        // Everything the command runs knows whose it is: its agent's group, and no other.
        let outcome = agent::scope(agent.clone(), run(checked)).await;
        if let Some(done) = done {
            let _ = done.send(());
        }
        outcome
    };
    let halted = crate::control::stoppable(work).await;
    if waits {
        with(|d| {
            if d.waiting.remove(&cmd.id) {
                d.touch(&cmd.id);
            }
        });
    }
    if let Some(tab) = tab {
        with(|d| {
            if d.tab_tails.get(&tab).is_some_and(|(q, _)| *q == seq) {
                d.tab_tails.remove(&tab);
            }
        });
    }
    let (outcome, halted) = settled(halted);
    crate::journal::record(crate::journal::Done {
        via: crate::journal::Via::Backend(super::target_of(agent.conn)),
        tool,
        tab: tab_arg,
        args: summary,
        error: outcome.as_ref().err().map(String::as_str),
        halted: halted.map(logged),
    });
    let result = reply_of(cmd.id.clone(), outcome, halted.is_some());
    let small = result.size() < KEEP_RESULT_BYTES;
    with(|d| {
        if d.seen
            .set(&cmd.id, Seen::Done(small.then(|| Box::new(result.clone()))))
            && stored
        {
            d.touch(&cmd.id);
        }
        d.reading.remove(&cmd.id);
        d.in_flight -= 1;
    });
    // Queued in the outbox (no connection): written at once.
    if !deliver(result) && stored {
        store::flush_later();
    }
}

/// Stores a command's entry: before its tool's first extension API call when it acts
/// (returns once the entry is in a write issued), else soon (returns at once; the write is
/// issued when this task yields, which is at the tool's first call).
async fn store_entry(acts: bool) {
    if acts {
        store::stored_before_acting().await;
    } else {
        store::flush_soon();
    }
}

/// Runs a tool through the one dispatch path, bounded in time, unless the person paused the
/// browser; ended by their Stop (the direct transport; `paused` as in the protocol).
pub async fn execute(
    tool: &str,
    args: serde_json::Map<String, serde_json::Value>,
) -> (Outcome, bool) {
    let tab = args.get("tabId").and_then(serde_json::Value::as_i64);
    let summary = crate::journal::summary(tool, &args);
    let halted = crate::control::stoppable(run(tools::check(tool, args))).await;
    let (outcome, halted) = settled(halted);
    crate::journal::record(crate::journal::Done {
        via: crate::journal::Via::Direct,
        tool: tool.to_string(),
        tab,
        args: summary,
        error: outcome.as_ref().err().map(String::as_str),
        halted: halted.map(logged),
    });
    let outcome = match outcome {
        Ok(output) => Outcome::Result {
            result: output.into_content(),
        },
        Err(error) => Outcome::Error { error },
    };
    (outcome, halted.is_some())
}

fn logged(h: crate::control::Halted) -> crate::journal::Halted {
    match h {
        crate::control::Halted::Stopped => crate::journal::Halted::Stopped,
        crate::control::Halted::Paused => crate::journal::Halted::Paused,
    }
}

/// A command's outcome, or the person's reason it has none of its own.
fn settled(
    halted: Result<tools::Outcome, crate::control::Halted>,
) -> (tools::Outcome, Option<crate::control::Halted>) {
    match halted {
        Ok(outcome) => (outcome, None),
        Err(h) => (Err(h.message().into()), Some(h)),
    }
}

/// Runs a checked command bounded in time, or says why it can't run.
async fn run(checked: Result<Checked, Refused>) -> tools::Outcome {
    match checked {
        Ok(command) => bounded(command.tool_name(), command.run()).await,
        Err(Refused::Now(error)) => Err(error),
        Err(refused) => bounded(refused.tool_name(), async { Err(refused.message().await) }).await,
    }
}

async fn bounded(
    tool: &str,
    work: impl std::future::Future<Output = tools::Outcome>,
) -> tools::Outcome {
    let step = format!("The {tool} command");
    with_timeout(COMMAND_TIMEOUT_MS, &step, work)
        .await
        .and_then(|outcome| outcome)
}

/// Sends the result on the live connection, or keeps it in the outbox (then true, and the
/// outbox is written soon).
fn deliver(reply: Reply) -> bool {
    let queued = with(|d| {
        let conn = split_id(reply.id()).0;
        let unsent = match d.senders.get(&conn) {
            Some(tx) => tx.unbounded_send(reply).err().map(|e| e.into_inner()),
            None => Some(reply),
        };
        unsent.map(|r| d.queue(r)).is_some()
    });
    if queued {
        store::flush_soon();
    }
    queued
}

/// A result the transport could not deliver (a POST that kept failing): back to the outbox,
/// sent on the next connection.
pub fn undelivered(reply: Reply) {
    with(|d| d.queue(reply));
    store::flush_soon();
}

#[cfg(test)]
mod tests {
    use super::{internal_id, split_id};

    /// The first connection's ids are kept as they came; another's carry its number, and each
    /// splits back into the connection and the backend's own id.
    #[test]
    fn ids_are_kept_per_connection() {
        assert_eq!(internal_id(0, "abc"), "abc");
        assert_eq!(split_id("abc"), (0, "abc"));
        let other = internal_id(3, "abc");
        assert_ne!(other, "abc");
        assert_eq!(split_id(&other), (3, "abc"));
        // A first connection's id that holds the separator is still its own.
        let odd = internal_id(0, "3\u{1e}abc");
        assert_eq!(split_id(&odd), (0, "3\u{1e}abc"));
    }
}
