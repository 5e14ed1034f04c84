//! The person's Stop and Resume: Stop ends every running and queued command with "Stopped by
//! the user", releases input the agent holds down, and pauses the browser (every command that
//! comes meanwhile is refused at once) until Resume; the pause is kept in
//! `chrome.storage.session`, so a restarted worker is still paused.

use crate::chrome::storage::{self, Area};
use crate::js::log;
use crate::vec_map::VecMap;
use futures_channel::oneshot;
use futures_util::future::{select, Either};
use std::cell::{Cell, RefCell};
use std::future::Future;

const PAUSED_KEY: &str = "paused";

/// What the model reads for a command the person stopped.
pub const STOPPED: &str = "Stopped by the user: the person using this browser clicked Stop (in the extension's popup, or its keyboard shortcut), so this command was ended before it finished and may have partly happened. The browser is paused: no command runs until they click Resume in the popup.";
/// What the model reads for a command sent while the person has paused the browser.
pub const PAUSED: &str = "Paused by the user: the person using this browser stopped the agent (Stop in the extension's popup, or its keyboard shortcut), so this command was not run. No command runs until they click Resume in the popup; ask them to resume if they want you to continue.";

/// Why a command did not get its own answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halted {
    /// It was running or queued when the person clicked Stop.
    Stopped,
    /// It came while the browser was paused; it did not run.
    Paused,
}

impl Halted {
    pub fn message(self) -> &'static str {
        match self {
            Halted::Stopped => STOPPED,
            Halted::Paused => PAUSED,
        }
    }
}

thread_local! {
    /// Whether the person paused the browser (`None`: not read from storage yet).
    static IS_PAUSED: Cell<Option<bool>> = const { Cell::new(None) };
    /// The commands that Stop ends now: running, or waiting for their tab's turn.
    static RUNNING: RefCell<VecMap<u64, oneshot::Sender<()>>> = const { RefCell::new(VecMap::new()) };
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

/// Whether the browser is paused; read from storage once per worker, then known without an
/// await.
pub async fn paused() -> bool {
    if let Some(p) = IS_PAUSED.with(Cell::get) {
        return p;
    }
    let stored = match storage::get::<bool>(Area::Session, PAUSED_KEY).await {
        Ok(v) => v.unwrap_or(false),
        Err(e) => {
            log(&format!("cannot read the paused state: {e}"));
            false
        }
    };
    // A Stop or Resume meanwhile is newer than what was read.
    IS_PAUSED.with(|p| {
        let now = p.get().unwrap_or(stored);
        p.set(Some(now));
        now
    })
}

/// Unregisters a command from Stop when it ends (or is dropped).
struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        RUNNING.with(|r| r.borrow_mut().remove(&self.0));
    }
}

/// Runs a command's whole work (its wait for its tab's turn, any prompt it waits for, the tool)
/// unless the browser is paused, and ends it when the person clicks Stop: then the work is
/// dropped where it stands.
pub async fn stoppable<T>(work: impl Future<Output = T>) -> Result<T, Halted> {
    if paused().await {
        return Err(Halted::Paused);
    }
    let (tx, rx) = oneshot::channel();
    let id = NEXT.with(|n| {
        n.set(n.get() + 1);
        n.get()
    });
    RUNNING.with(|r| r.borrow_mut().insert(id, tx));
    let _registered = Registered(id);
    let work = std::pin::pin!(work);
    // The signal is polled first: a command queued behind a stopped one is woken by both (the
    // one ahead was dropped, which lets it go) and must not take a step.
    match select(rx, work).await {
        Either::Left(_) => Err(Halted::Stopped),
        Either::Right((out, _)) => Ok(out),
    }
}

/// The person's Stop: every running and queued command ends now, held input is released, and
/// the browser stays paused (also across a worker restart) until [`resume`].
pub async fn stop() {
    IS_PAUSED.with(|p| p.set(Some(true)));
    let ended: Vec<oneshot::Sender<()>> =
        RUNNING.with(|r| r.borrow_mut().drain().map(|(_, tx)| tx).collect());
    for tx in ended {
        let _ = tx.send(());
    }
    crate::tools::computer::release_held().await;
    if let Err(e) = storage::set(Area::Session, PAUSED_KEY, &true).await {
        log(&format!("cannot store the paused state: {e}"));
    }
}

/// The person's Resume: commands run again.
pub async fn resume() {
    IS_PAUSED.with(|p| p.set(Some(false)));
    if let Err(e) = storage::set(Area::Session, PAUSED_KEY, &false).await {
        log(&format!("cannot store the paused state: {e}"));
    }
}

#[cfg(test)]
#[test]
fn its_key_is_read_early_as_the_worker_starts() {
    assert!(crate::chrome::storage::early_reads::asks(
        "session", PAUSED_KEY
    ));
}
