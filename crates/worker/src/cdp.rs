//! Debugger sessions on group tabs: attach on first use, every CDP call bounded in time
//! (`idle` detaches tabs nobody uses).

use crate::chrome::debugger;
use crate::js::{sleep_ms, with_timeout};
use crate::observers;
use futures_util::future::{select, Either};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashSet;

/// Bound for one CDP call unless the caller gives its own.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;

thread_local! {
    static ATTACHED: RefCell<HashSet<i32>> = RefCell::new(HashSet::new());
}

async fn ensure_attached(tab_id: i32) -> Result<(), String> {
    // An idle detach under way finishes first; this command then attaches again.
    crate::idle::settled(tab_id).await;
    if ATTACHED.with(|a| a.borrow().contains(&tab_id)) {
        return Ok(());
    }
    match with_timeout(DEFAULT_TIMEOUT_MS, "attaching the debugger", debugger::attach(tab_id)).await? {
        Ok(()) => {}
        // Still attached from before a worker restart: the session is ours.
        Err(e) if e.contains("already attached") => {}
        Err(e) if e.contains("Cannot access") || e.contains("Cannot attach") => {
            return Err(format!(
                "The debugger can't attach to tab {tab_id} ({e}). Pages such as chrome://, the Chrome Web Store and other extensions can't be automated: navigate the tab to a web page first."
            ))
        }
        Err(e) => return Err(format!("Attaching the debugger to tab {tab_id} failed: {e}")),
    }
    ATTACHED.with(|a| a.borrow_mut().insert(tab_id));
    crate::idle::attached(tab_id);
    Ok(())
}

pub fn is_attached(tab_id: i32) -> bool {
    ATTACHED.with(|a| a.borrow().contains(&tab_id))
}

/// Chrome detached us (tab closed, user cancelled the infobar, navigation to chrome://).
pub fn on_detach(tab_id: i32) {
    ATTACHED.with(|a| a.borrow_mut().remove(&tab_id));
}

pub async fn send(tab_id: i32, method: &str, params: Value) -> Result<Value, String> {
    send_with_timeout(tab_id, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_with_timeout(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<Value, String> {
    crate::idle::touch(tab_id);
    ensure_attached(tab_id).await?;
    let result = with_timeout(timeout_ms, method, unless_dialog(tab_id, method, &params)).await?;
    match result {
        Err(e) if e.contains("not attached") || e.contains("Detached") => {
            // Chrome dropped the session behind our back: attach again once and retry.
            on_detach(tab_id);
            ensure_attached(tab_id).await?;
            with_timeout(
                timeout_ms,
                method,
                debugger::send_command(tab_id, method, &params),
            )
            .await?
            .map_err(|e| format!("{method}: {e}"))
        }
        other => other.map_err(|e| format!("{method}: {e}")),
    }
}

/// A call that a JavaScript dialog would block (a click that opens an alert waits until the alert
/// is answered) ends when the dialog opens: input counts as delivered, anything else fails with
/// a message that says how to go on.
async fn unless_dialog(tab_id: i32, method: &str, params: &Value) -> Result<Value, String> {
    let call = std::pin::pin!(debugger::send_command(tab_id, method, params));
    if observers::open_dialog(tab_id).is_some() {
        return call.await;
    }
    let watch = std::pin::pin!(async {
        loop {
            sleep_ms(25).await;
            if let Some(d) = observers::open_dialog(tab_id) {
                return d;
            }
        }
    });
    match select(call, watch).await {
        Either::Left((r, _)) => r,
        Either::Right((_, _)) if method.starts_with("Input.") => Ok(Value::Null),
        Either::Right((d, _)) => Err(format!(
            "a JavaScript {} dialog opened (\"{}\"); answer it with handle_dialog",
            d.kind, d.message
        )),
    }
}
