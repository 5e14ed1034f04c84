//! Idle detach: a group tab that no command has used for the idle period is detached, so
//! Chrome's "is debugging this browser" bar goes away once no tab is in use; the next command
//! attaches again (`cdp::send` attaches on demand). The period is the setting
//! `debuggerIdleSeconds` in chrome.storage.local (default 5 minutes, 0 = never; the Options page
//! sets whole minutes). Never cut: a tab with a command running, an open JavaScript dialog or a
//! download in progress, nor a tab whose agent's policy answers dialogs ("dismiss",
//! "accept": a dialog that opens while no debugger is attached is reported to none, and would
//! hang its page until the next command).
//!
//! Last-use times live in memory: the debugger keeps the worker alive while a tab is attached.
//! After a restart anyway, the `debugger-idle` alarm wakes the worker, which finds the group tabs
//! still attached and starts their clock again (detached one idle period later).

use crate::cdp::{self, record};
use crate::chrome::storage::{self, Area};
use crate::chrome::{alarms, debugger};
use crate::js::{log, now_ms, sleep_ms, within};
use crate::vec_map::{VecMap, VecSet};
use futures_channel::oneshot;
use futures_util::future::select;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};

pub const ALARM: &str = "debugger-idle";
pub const SETTING_KEY: &str = "debuggerIdleSeconds";
pub const DEFAULT_SECONDS: u32 = 300;
/// What the Options page may set, in whole minutes (shorter periods are for tests).
pub const MAX_MINUTES: u32 = 24 * 60;
/// The watch re-reads the setting at least this often (a change in Options takes effect).
const RECHECK_MS: f64 = 15_000.0;

#[derive(Default)]
struct Use {
    last: f64,
    running: u32,
}

thread_local! {
    static TABS: RefCell<VecMap<i32, Use>> = const { RefCell::new(VecMap::new()) };
    static DETACHING: RefCell<VecSet<i32>> = const { RefCell::new(VecSet::new()) };
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    /// Wakes the watch early (the setting changed).
    static WAKE: RefCell<Option<oneshot::Sender<()>>> = const { RefCell::new(None) };
}

/// The stored setting changed (Options, or another writer): the watch applies it now.
pub fn setting_changed() {
    if let Some(wake) = WAKE.with(|w| w.borrow_mut().take()) {
        let _ = wake.send(());
    }
}

/// The idle period in milliseconds; `None`: never detach.
pub async fn period_ms() -> Option<f64> {
    let seconds = storage::get::<f64>(Area::Local, SETTING_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or(f64::from(DEFAULT_SECONDS));
    (seconds.is_finite() && seconds > 0.0).then_some(seconds * 1000.0)
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Whole minutes (a stored period shorter than a minute shows as a fraction).
    pub idle_minutes: f64,
}

pub async fn settings() -> Settings {
    Settings {
        idle_minutes: period_ms().await.map_or(0.0, |ms| ms / 60_000.0),
    }
}

/// From the Options page: whole minutes, 0 to a day.
pub async fn save(minutes: Option<f64>) -> Result<(), String> {
    let minutes = minutes
        .filter(|m| m.fract() == 0.0 && (0.0..=f64::from(MAX_MINUTES)).contains(m))
        .ok_or_else(|| {
            format!("Enter a whole number of minutes from 0 (never detach) to {MAX_MINUTES}.")
        })?;
    storage::set(Area::Local, SETTING_KEY, &(minutes * 60.0)).await
}

/// A CDP call or a command used the tab now.
pub fn touch(tab: i32) {
    TABS.with(|t| t.borrow_mut().entry(tab).or_default().last = now_ms());
}

/// The debugger is attached to the tab: its idle clock runs from now.
pub fn attached(tab: i32) {
    touch(tab);
    watch();
}

/// Chrome detached us, or the tab closed.
pub fn forget(tab: i32) {
    TABS.with(|t| t.borrow_mut().remove(&tab));
}

/// Marks the tab in use while the returned guard lives (a whole command, waits included).
pub fn busy(tab: i32) -> Busy {
    TABS.with(|t| {
        let mut t = t.borrow_mut();
        let u = t.entry(tab).or_default();
        u.running += 1;
        u.last = now_ms();
    });
    Busy(tab)
}

pub struct Busy(i32);

impl Drop for Busy {
    fn drop(&mut self) {
        TABS.with(|t| {
            if let Some(u) = t.borrow_mut().get_mut(&self.0) {
                u.running = u.running.saturating_sub(1);
                u.last = now_ms();
            }
        });
    }
}

/// Waits (bounded) while an idle detach of the tab is under way, so a command that arrives
/// meanwhile attaches after it rather than racing it.
pub async fn settled(tab: i32) {
    for _ in 0..100 {
        if !DETACHING.with(|d| d.borrow().contains(&tab)) {
            return;
        }
        sleep_ms(20).await;
    }
}

/// Starts the watch unless it runs: it ends when no tab is attached any more.
fn watch() {
    if WATCHING.with(|w| w.replace(true)) {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        // The backstop for a worker that Chrome restarts while tabs are attached.
        if let Err(e) = alarms::create_periodic(ALARM, 1.0).await {
            log(&format!("cannot create the {ALARM} alarm: {e}"));
        }
        loop {
            let period = period_ms().await;
            let wait = match period {
                Some(p) => detach_idle(p).await.min(RECHECK_MS),
                None => RECHECK_MS,
            };
            if TABS.with(|t| t.borrow().is_empty()) {
                break;
            }
            let (wake, woken) = oneshot::channel();
            WAKE.with(|w| *w.borrow_mut() = Some(wake));
            let nap = std::pin::pin!(sleep_ms(wait.clamp(100.0, RECHECK_MS) as u32));
            let _ = select(nap, woken).await;
        }
        WATCHING.with(|w| w.set(false));
        let _ = alarms::clear(ALARM).await;
    });
}

/// Detaches every tab idle for `period` ms; returns the time until the next one may be due.
async fn detach_idle(period: f64) -> f64 {
    let now = now_ms();
    let mut next = RECHECK_MS;
    let candidates: Vec<(i32, f64)> = TABS.with(|t| {
        t.borrow()
            .iter()
            .filter(|(_, u)| u.running == 0)
            .map(|(tab, u)| (*tab, u.last))
            .collect()
    });
    if TABS.with(|t| t.borrow().values().any(|u| u.running > 0)) {
        // A running command's tab is due one period after it ends, at the earliest.
        next = next.min(period);
    }
    for (tab, last) in candidates {
        let due = last + period - now;
        if due > 0.0 {
            next = next.min(due);
            continue;
        }
        // Chrome reports a dialog only to a debugger attached when it opened: while the tab's
        // agent's policy answers dialogs, a detached tab's dialog would hang its page, so it
        // is not detached.
        if crate::policy::dialog_answer(tab).is_some() {
            continue;
        }
        if record::open_dialog(tab).is_some() || record::downloading(tab) {
            next = next.min(period);
            continue;
        }
        // A command may have started while an earlier tab was being detached.
        let still_idle = TABS.with(|t| {
            t.borrow()
                .get(&tab)
                .is_some_and(|u| u.running == 0 && u.last + period <= now_ms())
        });
        if still_idle {
            detach(tab).await;
        }
    }
    next
}

/// Detaches the debugger from the tab, keeping the recording coherent (a gap starts).
pub async fn detach(tab: i32) {
    DETACHING.with(|d| d.borrow_mut().insert(tab));
    forget(tab);
    cdp::on_detach(tab);
    record::idle_detached(tab);
    let step = "detaching the debugger";
    let failed = match within(cdp::DEFAULT_TIMEOUT_MS, step, debugger::detach(tab)).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => match cdp::Error::from_chrome(step, e, false) {
            // Gone already.
            cdp::Error::Detached { .. } => None,
            e => Some(e),
        },
        Err(t) => Some(t.into()),
    };
    if let Some(e) = failed {
        log(&format!("detaching the idle tab {tab}: {e}"));
    }
    DETACHING.with(|d| d.borrow_mut().remove(&tab));
}

/// True while the watch runs (it knows the attached tabs).
pub fn watching() -> bool {
    WATCHING.with(Cell::get)
}

/// No tab to watch: the backstop alarm goes.
pub async fn stop_alarm() {
    let _ = alarms::clear(ALARM).await;
}

/// A group tab found attached after a worker restart: its idle clock starts now.
pub fn attached_after_restart(tab: i32) {
    if !TABS.with(|t| t.borrow().contains_key(&tab)) {
        attached(tab);
    }
}

/// Whether the tab's use is on record.
pub fn holds(tab: i32) -> bool {
    TABS.with(|t| t.borrow().contains_key(&tab))
}

#[cfg(test)]
#[test]
fn its_key_is_read_early_as_the_worker_starts() {
    assert!(crate::chrome::storage::early_reads::asks(
        "local",
        SETTING_KEY
    ));
}
