//! What of delivery survives a worker restart, in chrome.storage.session: the ledger of ids
//! executed, running or queued, as a ring of `SEEN_MAX` slots (`delivery.0` …
//! `delivery.511`), one small entry per id, so a command writes only its own entry; and
//! undelivered results under their own key, written only when the outbox changes. Every value
//! is stored as JSON text (`storage::json_text`: one ledger entry held the worker 0.05-0.08 ms
//! in a `set` as text, 0.07-0.10 ms as an object built field by field).
//!
//! No command waits for a write's answer. Chrome handles a worker's extension API calls in the
//! order the worker makes them, and applies a session-storage write when it handles it. A
//! command's entry in a write issued before its tool makes its first extension API call
//! (`chrome.tabs`, `chrome.debugger`, …: everything a tool does to the browser goes through
//! one) is therefore stored before anything the tool does reaches the browser; a worker stopped
//! before Chrome handled the write has none of the tool's calls handled either. Waiting for the
//! write's answer would only add its round trip to every command.
//!
//! The writes, and which wait for which:
//! - A starting command's entry ([`stored_before_acting`]) is issued at once, unless a write
//!   carrying other starting commands' entries is in flight (commands arriving together): its
//!   entry then goes in the next write, issued as soon as that one is answered, with
//!   everything that changed meanwhile, so a stream of commands costs a few writes, not one
//!   each, and Chrome is never handed more than it keeps up with.
//! - A command that only reads has its entry (`reading`) written lazily, like what follows:
//!   the write is issued when its task first yields, which is at its tool's first call. It
//!   need not come first (run twice, such a command changes nothing), only be there for a
//!   restarted worker to answer the id.
//! - Everything else (finished commands' entries, the outbox) is written lazily ([`flush`]):
//!   at once when no write is in flight, else when the last one is answered. A starting
//!   command never waits behind such a write.

use super::{with, Delivery, Seen, SEEN_MAX};
use crate::chrome::storage::{self, Area};
use crate::js::{log, sleep_ms};
use crate::transport::Reply;
use futures_channel::oneshot;
use js_sys::JsString;
use protocol::CommandResult;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use wasm_bindgen_futures::spawn_local;

const LEDGER_PREFIX: &str = "delivery.";
const OUTBOX_KEY: &str = "outbox";
/// How long a finished command's "done" entry may wait for the next write while other commands
/// run (under a stream of commands it rides along with the next one's entry).
const LATER_MS: u32 = 20;

/// Where a command id stands, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stage {
    /// Received, waiting for its tab's turn: not started.
    Queued,
    Running,
    /// Running, a command that only reads: run again, it would change nothing.
    Reading,
    Done,
}

/// One ledger slot: the id, its place in the order ids were first seen, its stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Slot {
    id: String,
    n: u64,
    s: Stage,
}

/// What the stored copy lacks, and the writes under way.
#[derive(Default)]
pub(super) struct Writer {
    /// Ids whose stored ledger entry is behind, and whether the stored outbox is.
    pub(super) dirty: HashSet<String>,
    pub(super) outbox_dirty: bool,
    /// A `flush_soon` is scheduled; a `flush_later`.
    flush_scheduled: bool,
    flush_timer: bool,
    /// Writes issued and not answered yet, and how many of them carry starting commands'
    /// entries.
    writes: u32,
    starting_writes: u32,
    /// Starting commands whose entry waits for the next write.
    waiters: Vec<oneshot::Sender<()>>,
}

impl Writer {
    /// Whether a starting command's entry is issued in a write of its own now (else it waits
    /// for the next write, issued when the starting commands' write in flight is answered).
    fn starts_now(&self) -> bool {
        self.starting_writes == 0
    }

    /// Whether a lazy write may be issued now.
    fn lazy_now(&self) -> bool {
        self.writes == 0
    }

    fn issued(&mut self, starting: bool) {
        self.writes += 1;
        self.starting_writes += u32::from(starting);
    }

    /// A write was answered: the next to issue, if any (`Some(true)`: one carrying the
    /// entries of the starting commands waiting for it).
    fn answered(&mut self, starting: bool) -> Option<bool> {
        self.writes -= 1;
        self.starting_writes -= u32::from(starting);
        if !self.waiters.is_empty() && self.starting_writes == 0 {
            Some(true)
        } else if self.writes == 0 && (!self.dirty.is_empty() || self.outbox_dirty) {
            Some(false)
        } else {
            None
        }
    }
}

/// The outbox as stored: JSON text of `[[id, result], …]`, each result's JSON as it was made
/// beside the id the session keeps it by.
fn outbox_text<'a>(outbox: impl IntoIterator<Item = &'a Reply>) -> JsString {
    let entries = js_sys::Array::new();
    for r in outbox {
        let id = serde_json::to_string(r.id()).unwrap_or_default();
        entries.push(
            &JsString::from(format!("[{id},"))
                .concat(&r.json())
                .concat(&"]".into()),
        );
    }
    JsString::from("[")
        .concat(&entries.join(","))
        .concat(&"]".into())
}

impl Delivery {
    /// The stored entry of a remembered id, as it stands now.
    fn slot(&self, id: &str) -> Option<(String, Slot)> {
        let n = self.seen.number(id)?;
        let s = match self.seen.get(id)? {
            Seen::Running if self.waiting.contains(id) => Stage::Queued,
            Seen::Running if self.reading.contains(id) => Stage::Reading,
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
}

/// Returns once this command's entry is in a write issued to Chrome: at once, unless a write
/// carrying other starting commands' entries is in flight; then when that one is answered and
/// the next, which carries this entry, is issued.
pub(super) async fn stored_before_acting() {
    if with(|d| d.store.starts_now()) {
        issue(true);
        return;
    }
    let (tx, rx) = oneshot::channel();
    with(|d| d.store.waiters.push(tx));
    let _ = rx.await;
}

/// Writes what changed, lazily: now when no write is in flight, else once the last one is
/// answered.
pub(super) fn flush() {
    if with(|d| d.store.lazy_now()) {
        issue(false);
    }
}

/// Issues the write of what changed; `starting`: it carries starting commands' entries (the
/// caller's, and those of the commands waiting for it). Once it is answered, issues the next
/// if more changed meanwhile.
fn issue(starting: bool) {
    let (slots, outbox, waiters) = with(|d| {
        d.store.flush_scheduled = false;
        let ids: Vec<String> = d.store.dirty.drain().collect();
        let slots: Vec<(String, Slot)> = ids.iter().filter_map(|id| d.slot(id)).collect();
        let outbox = std::mem::take(&mut d.store.outbox_dirty).then(|| outbox_text(&d.outbox));
        (slots, outbox, std::mem::take(&mut d.store.waiters))
    });
    let starting = starting || !waiters.is_empty();
    if slots.is_empty() && outbox.is_none() {
        // Everything is in writes already issued.
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
        put(key, storage::json_text(slot));
    }
    if let Some(outbox) = outbox {
        put(OUTBOX_KEY, Ok(outbox.into()));
    }
    let written = storage::set_session_now(&items);
    with(|d| d.store.issued(starting));
    // Their entries are in the write just issued.
    for w in waiters {
        let _ = w.send(());
    }
    spawn_local(async move {
        if let Err(e) = written.await {
            log(&format!("cannot store the delivery state: {e}"));
        }
        if let Some(starting) = with(|d| d.store.answered(starting)) {
            issue(starting);
        }
    });
}

/// [`flush`] once the current task yields, after the tasks that run then (a result's POST
/// among them): a burst of changes (results of commands that finished together) is written in
/// one call. For changes no tool's act depends on.
pub(super) fn flush_soon() {
    if with(|d| std::mem::replace(&mut d.store.flush_scheduled, true)) {
        return;
    }
    spawn_local(async {
        crate::js::yield_now().await;
        flush()
    });
}

/// For a finished command's entry: written with the next command's entry while other commands
/// are running (so a stream of commands costs one write each, not two), else at once
/// ([`flush_soon`]); within `LATER_MS` in any case. Until then a restarted worker would take
/// the id for one interrupted while running: answered with that error, never run again.
pub(super) fn flush_later() {
    if with(|d| d.in_flight == 0) {
        flush_soon();
        return;
    }
    if with(|d| std::mem::replace(&mut d.store.flush_timer, true)) {
        return;
    }
    spawn_local(async {
        sleep_ms(LATER_MS).await;
        with(|d| d.store.flush_timer = false);
        flush();
    });
}

thread_local! {
    static RESTORED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The restore is done: commands are admitted (until then they wait, in `delivery`).
    static RESTORE_DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether what the previous worker left has been read (commands wait until it has).
pub(super) fn restored() -> bool {
    RESTORE_DONE.with(std::cell::Cell::get)
}

/// Reads what the previous worker left (once per worker start; later calls return at once):
/// ids already executed (never run again), undelivered results, and commands that were running
/// when it stopped (answered with an error). Then the commands that arrived meanwhile are
/// admitted, and the outbox goes to the connections already up.
pub async fn restore() {
    if RESTORED.with(|r| r.replace(true)) {
        return;
    }
    restore_once().await;
    RESTORE_DONE.with(|d| d.set(true));
    super::admit_waiting();
}

async fn restore_once() {
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
    // Each value is JSON text (`storage.session` is cleared when the extension is updated, so
    // no other form is stored).
    let mut slots: Vec<Slot> = keys[..SEEN_MAX]
        .iter()
        .filter_map(|k| storage::json_field(&stored, k))
        .collect();
    protocol::sort::sort_by_key(&mut slots, |slot| slot.n);
    let outbox: Vec<(String, CommandResult)> =
        storage::json_field(&stored, OUTBOX_KEY).unwrap_or_default();
    with(|d| {
        for (id, r) in outbox {
            d.queue(Reply::of(id, &r));
        }
        // What was read is what is stored: only what changes below is written back.
        d.store.outbox_dirty = false;
        for slot in slots {
            let id = slot.id;
            if slot.s == Stage::Done {
                d.remember_as(&id, Seen::Done(None), slot.n);
                d.store.dirty.remove(&id);
                continue;
            }
            let error = match slot.s {
                Stage::Running => "The extension's service worker was stopped while this command ran; it may have partly happened and was not run again. Check the page state before retrying.",
                Stage::Reading => "The extension's service worker was stopped while this command read the page; it changes nothing, was not run again, and is safe to send again.",
                Stage::Queued | Stage::Done => "The extension's service worker was stopped before this command's turn came (it waited behind earlier commands for the same tab); it did not run, and is safe to send again.",
            };
            let r = super::reply(CommandResult::error(id.clone(), error));
            d.remember_as(&id, Seen::Done(Some(Box::new(r.clone()))), slot.n);
            d.queue(r);
        }
    });
    flush();
}

#[cfg(test)]
mod tests {
    use super::Writer;
    use futures_channel::oneshot;

    #[test]
    fn the_ledger_and_outbox_are_read_early_as_the_worker_starts() {
        use crate::chrome::storage::early_reads::{asks, asks_numbered};
        assert!(asks_numbered(
            "session",
            super::LEDGER_PREFIX,
            super::SEEN_MAX
        ));
        assert!(asks("session", super::OUTBOX_KEY));
    }

    /// A starting command never waits behind a write of finished entries or the outbox: its
    /// entry is issued at once, beside it.
    #[test]
    fn a_starting_command_does_not_wait_behind_a_lazy_write() {
        let mut w = Writer::default();
        assert!(w.starts_now() && w.lazy_now());
        w.issued(false);
        assert!(w.starts_now(), "waited behind a write of finished entries");
        assert!(!w.lazy_now(), "two lazy writes in flight");
        w.issued(true);
        // Answered in the order issued; nothing changed meanwhile: nothing more to write.
        assert_eq!(w.answered(false), None);
        assert_eq!(w.answered(true), None);
        assert!(w.starts_now() && w.lazy_now());
    }

    /// Commands arriving together share writes: while one starting write is in flight, the
    /// next starting commands wait, and their entries go in one write when it is answered.
    #[test]
    fn starting_commands_arriving_together_share_the_next_write() {
        let mut w = Writer::default();
        w.issued(true);
        assert!(!w.starts_now());
        let (tx, _rx) = oneshot::channel();
        w.waiters.push(tx);
        w.dirty.insert("b".into());
        assert_eq!(w.answered(true), Some(true));
        // A lazy change waits for the writes in flight, then goes alone.
        let mut w = Writer::default();
        w.issued(true);
        w.issued(false);
        w.dirty.insert("done".into());
        assert_eq!(w.answered(true), None);
        assert_eq!(w.answered(false), Some(false));
    }
}
