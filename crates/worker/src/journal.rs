//! The log of what was done: the last 200 commands, newest first (time, backend, tool, tab and
//! its site, a short escaped summary of the arguments with typed secrets masked, outcome), kept
//! in `chrome.storage.session` (across worker restarts, gone with the browser's session, never
//! written to disk), written off the command's path in batches; read and cleared by the
//! activity page.
//!
//! Stored as a ring of `MAX` slots (`activityLog.0` … `activityLog.199`), each entry under the
//! slot of its number, so a batch writes only the entries recorded since the last one (the
//! whole list in one value cost the worker 2–4 ms of every 200 under a stream of commands).
//! Each slot holds its entry as JSON text (`storage::json_text`), not as an object: Chrome
//! clones a string into storage far faster than an object of eight fields (60 entries in one
//! `set`, from the worker: the call held it 0.3 ms against 1.0 ms, and was answered in 0.8
//! against 2.1 ms).

use crate::chrome::storage::{self, Area};
use crate::js::{log, now_ms, sleep_ms};
use crate::vec_map::VecSet;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::VecDeque;
use wasm_bindgen_futures::spawn_local;

/// Slot `n` of the ring is `activityLog.n`.
const SLOT_PREFIX: &str = "activityLog.";
/// Entries kept.
pub const MAX: usize = 200;
/// A batch of entries is written this long after the first of them.
const WRITE_AFTER_MS: u32 = 200;
/// Characters of one argument's value, of the whole summary, and of an error, as logged.
const VALUE_CHARS: usize = 60;
const SUMMARY_CHARS: usize = 200;
const ERROR_CHARS: usize = 160;
/// What a masked secret shows.
const MASK: &str = "\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}";

/// One command, as the activity page shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// Milliseconds since the epoch when it ended.
    pub time: f64,
    /// The backend (the connection's target or server; "direct" for the in-worker transport).
    pub backend: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<i64>,
    /// The host the tab showed when the command ended, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// The arguments, short and escaped; typed secrets masked.
    pub args: String,
    /// `ok`, `error` or `stopped`.
    pub outcome: String,
    /// The error, short and escaped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a command came from.
pub enum Via {
    /// A network transport, with the connection's backend if one is up.
    Backend(Option<String>),
    /// `self.browserOperator.run` in the worker.
    Direct,
}

/// A command's arguments as the log shows them: each argument's value cut short and escaped
/// (made before the command runs, without writing out large values).
pub struct Summary(Vec<(String, String)>);

/// A command the person ended (Stop) or refused (paused); the log imports nothing of
/// `control`, which sits above the tools that tell the log of secrets.
#[derive(Clone, Copy)]
pub enum Halted {
    Stopped,
    Paused,
}

/// A finished command.
pub struct Done<'a> {
    pub via: Via,
    pub tool: String,
    pub tab: Option<i64>,
    pub args: Summary,
    /// Its error, if it failed.
    pub error: Option<&'a str>,
    pub halted: Option<Halted>,
}

/// One stored slot: an entry and its number (the order entries were recorded in, across
/// workers: a restarted worker numbers on from the highest stored).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Slot {
    n: u64,
    e: Entry,
}

#[derive(Default)]
struct Journal {
    /// Newest first, each with its number.
    entries: VecDeque<(u64, Entry)>,
    /// The number the next entry gets (provisional until the stored log is read: renumbered
    /// then, before anything is written).
    next: u64,
    /// How many of the newest entries are not written yet.
    unwritten: usize,
    /// The stored log was read into `entries` (once per worker).
    restored: bool,
    write_scheduled: bool,
    /// Tabs whose last command put text into a password field (said by its handler).
    secret: VecSet<i64>,
}

thread_local! {
    static JOURNAL: RefCell<Journal> = RefCell::new(Journal::default());
}

fn with<R>(f: impl FnOnce(&mut Journal) -> R) -> R {
    JOURNAL.with(|j| f(&mut j.borrow_mut()))
}

/// A handler's word that the command it runs on `tab` put text into a password field: its
/// text is masked in the log.
pub fn mark_secret(tab: i32) {
    with(|j| j.secret.insert(i64::from(tab)));
}

/// Control and invisible characters (and the escape character itself) as escapes, so what the
/// log shows is what was sent.
pub fn escaped(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if invisible(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Characters that show nothing or change how text around them shows: controls, format
/// characters (zero-width, bidirectional overrides), separators other than the space.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F | 0x3000 | 0x3164
            | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB | 0xE0000..=0xE0FFF)
        || (c as u32 == 0x00A0)
}

/// The summary of a command's arguments (its tab is said apart).
pub fn summary(_tool: &str, args: &Map<String, Value>) -> Summary {
    let mut parts = Vec::new();
    let mut room = SUMMARY_CHARS;
    for (key, value) in args {
        if key == "tabId" || room == 0 {
            continue;
        }
        let shown = match value {
            Value::String(s) => format!("\"{}\"", escaped(s, VALUE_CHARS.min(room))),
            Value::Array(a) => format!("[{} item(s)]", a.len()),
            Value::Object(o) => format!("{{{} field(s)}}", o.len()),
            other => escaped(&other.to_string(), VALUE_CHARS),
        };
        room = room.saturating_sub(shown.chars().count() + key.len());
        parts.push((escaped(key, 40), shown));
    }
    Summary(parts)
}

impl Summary {
    /// As one line; `secret`: the typed text (`text`, `value`) masked.
    fn line(self, secret: bool) -> String {
        self.0
            .into_iter()
            .map(|(k, v)| {
                let masked = secret && (k == "text" || k == "value");
                format!("{k}: {}", if masked { MASK } else { v.as_str() })
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The host of a URL (no user or path), if it has one.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then(|| escaped(host, 100))
}

/// Records a finished command (no await; the write is batched, after the answer).
pub fn record(done: Done<'_>) {
    let site = done
        .tab
        .and_then(crate::group::reported)
        .and_then(|t| t.url.as_deref().and_then(host_of));
    let secret = done.tab.is_some_and(|t| with(|j| j.secret.remove(&t)));
    let (outcome, error) = match (done.halted, done.error) {
        (Some(Halted::Stopped), _) => ("stopped", None),
        (Some(Halted::Paused), _) => ("paused", None),
        (None, None) => ("ok", None),
        (None, Some(error)) => ("error", Some(escaped(error, ERROR_CHARS))),
    };
    let entry = Entry {
        time: now_ms(),
        backend: match done.via {
            Via::Backend(Some(b)) => escaped(&b, 140),
            Via::Backend(None) => "backend".into(),
            Via::Direct => "direct".into(),
        },
        tool: escaped(&done.tool, 60),
        tab: done.tab,
        site,
        args: done.args.line(secret),
        outcome: outcome.into(),
        error,
    };
    let schedule = with(|j| {
        let n = j.next;
        j.next += 1;
        j.entries.push_front((n, entry));
        j.entries.truncate(MAX);
        j.unwritten += 1;
        !std::mem::replace(&mut j.write_scheduled, true)
    });
    if schedule {
        spawn_local(async {
            sleep_ms(WRITE_AFTER_MS).await;
            write().await;
        });
    }
}

fn slot_keys() -> Vec<String> {
    (0..MAX).map(|i| format!("{SLOT_PREFIX}{i}")).collect()
}

/// Reads what an earlier worker stored (once), below what this one recorded since (which is
/// numbered on from the stored entries).
async fn restore() {
    if with(|j| j.restored) {
        return;
    }
    let keys = slot_keys();
    let mut stored: Vec<Slot> = match storage::get_many(Area::Session, &keys).await {
        Ok(found) => keys
            .iter()
            .filter_map(|k| storage::json_field::<Slot>(&found, k))
            .collect(),
        Err(e) => {
            log(&format!("cannot read the activity log: {e}"));
            Vec::new()
        }
    };
    protocol::sort::sort_by_key(&mut stored, |s| std::cmp::Reverse(s.n));
    with(|j| {
        if std::mem::replace(&mut j.restored, true) {
            return;
        }
        j.merge(stored);
    });
}

impl Journal {
    /// The stored entries (newest first) below the ones recorded here, which take the numbers
    /// after the highest stored.
    fn merge(&mut self, stored: Vec<Slot>) {
        let base = stored.first().map_or(0, |s| s.n + 1);
        let mine = self.entries.len() as u64;
        for (i, (n, _)) in self.entries.iter_mut().enumerate() {
            *n = base + mine - 1 - i as u64;
        }
        self.next = base + mine;
        self.unwritten = self.entries.len();
        self.entries
            .extend(stored.into_iter().map(|s| (s.n, s.e)).take(MAX));
        self.entries.truncate(MAX);
    }

    /// The slots to write: the entries recorded since the last write that are still kept.
    fn take_unwritten(&mut self) -> Vec<(String, Slot)> {
        let unwritten = std::mem::take(&mut self.unwritten);
        self.entries
            .iter()
            .take(unwritten)
            .map(|(n, e)| {
                let key = format!("{SLOT_PREFIX}{}", n % MAX as u64);
                (
                    key,
                    Slot {
                        n: *n,
                        e: e.clone(),
                    },
                )
            })
            .collect()
    }
}

async fn write() {
    restore().await;
    let slots = with(|j| {
        j.write_scheduled = false;
        j.take_unwritten()
    });
    if slots.is_empty() {
        return;
    }
    let items = js_sys::Object::new();
    for (key, slot) in &slots {
        match storage::json_text(slot) {
            Ok(v) => {
                let _ = js_sys::Reflect::set(&items, &key.into(), &v);
            }
            Err(e) => log(&format!("cannot store the activity log: {e}")),
        }
    }
    if let Err(e) = storage::set_session_now(&items).await {
        log(&format!("cannot store the activity log: {e}"));
    }
}

/// The log, newest first (the activity page asks).
pub async fn entries() -> Vec<Entry> {
    restore().await;
    with(|j| j.entries.iter().map(|(_, e)| e.clone()).collect())
}

/// The person's Clear.
pub async fn clear() {
    restore().await;
    with(|j| {
        j.entries.clear();
        j.unwritten = 0;
    });
    if let Err(e) = storage::remove_session(&slot_keys()).await {
        log(&format!("cannot clear the activity log: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_read_early_as_the_worker_starts() {
        assert!(crate::chrome::storage::early_reads::asks_numbered(
            "session",
            SLOT_PREFIX,
            MAX
        ));
    }

    #[test]
    fn escapes_control_and_invisible_characters_and_cuts_short() {
        assert_eq!(
            escaped("a\nb\u{200b}c\u{202e}d\\", 100),
            "a\\nb\\u{200b}c\\u{202e}d\\\\"
        );
        assert_eq!(escaped("abcdef", 3), "abc…");
        assert_eq!(escaped("\u{7}é", 10), "\\u{7}é");
    }

    #[test]
    fn summaries_are_short_and_mask_typed_secrets() {
        let args = serde_json::json!({"tabId": 3, "action": "type", "text": "hunter2\u{200b}"});
        let s = summary("computer", args.as_object().unwrap());
        assert_eq!(
            s.line(false),
            "action: \"type\", text: \"hunter2\\u{200b}\""
        );
        let s = summary("computer", args.as_object().unwrap());
        assert_eq!(s.line(true), format!("action: \"type\", text: {MASK}"));
        let long = "x".repeat(10_000);
        let args = serde_json::json!({"text": long, "files": [1, 2], "o": {"a": 1}});
        let line = summary("t", args.as_object().unwrap()).line(false);
        assert!(line.chars().count() < 120, "{line}");
        assert!(
            line.contains("[2 item(s)]") && line.contains("{1 field(s)}"),
            "{line}"
        );
    }

    fn entry(tool: &str) -> Entry {
        Entry {
            time: 0.0,
            backend: "b".into(),
            tool: tool.into(),
            tab: None,
            site: None,
            args: String::new(),
            outcome: "ok".into(),
            error: None,
        }
    }

    fn record_plain(j: &mut Journal, tool: &str) {
        let n = j.next;
        j.next += 1;
        j.entries.push_front((n, entry(tool)));
        j.entries.truncate(MAX);
        j.unwritten += 1;
    }

    /// A batch writes only the entries recorded since the last one, each in the slot of its
    /// number; a restarted worker numbers on from the stored entries and keeps them below its
    /// own, newest first.
    #[test]
    fn batches_write_only_new_entries_into_their_slots() {
        let mut j = Journal::default();
        j.merge(Vec::new());
        record_plain(&mut j, "a");
        record_plain(&mut j, "b");
        let first = j.take_unwritten();
        let keys: Vec<&str> = first.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["activityLog.1", "activityLog.0"]);
        record_plain(&mut j, "c");
        let second = j.take_unwritten();
        assert_eq!(second.len(), 1, "wrote again what was written");
        assert_eq!((second[0].0.as_str(), second[0].1.n), ("activityLog.2", 2));
        assert!(j.take_unwritten().is_empty());

        // The next worker: two entries recorded before it read the stored three.
        let stored: Vec<Slot> = [second, first]
            .concat()
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        let mut next = Journal::default();
        record_plain(&mut next, "d");
        record_plain(&mut next, "e");
        next.merge(stored);
        let tools: Vec<&str> = next.entries.iter().map(|(_, e)| e.tool.as_str()).collect();
        assert_eq!(tools, ["e", "d", "c", "b", "a"]);
        let numbers: Vec<u64> = next.entries.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [4, 3, 2, 1, 0]);
        let keys: Vec<String> = next.take_unwritten().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["activityLog.4", "activityLog.3"]);

        // Past MAX, the oldest slot is taken by the newest entry.
        for _ in 0..MAX {
            record_plain(&mut next, "x");
        }
        assert_eq!(next.entries.len(), MAX);
        let written = next.take_unwritten();
        assert_eq!(written.len(), MAX);
        assert!(written
            .iter()
            .any(|(k, s)| k == "activityLog.4" && s.n == 204));
    }

    #[test]
    fn hosts_without_users_or_paths() {
        assert_eq!(
            host_of("https://u:p@example.com:8080/a?b").as_deref(),
            Some("example.com:8080")
        );
        assert_eq!(host_of("about:blank"), None);
        assert_eq!(host_of("http://127.0.0.1/x").as_deref(), Some("127.0.0.1"));
    }
}
