//! The worker's use of the Chrome DevTools Protocol: debugger sessions on group tabs, attached on
//! first use, every call bounded in time and failing with one typed [`Error`]. A tab's
//! out-of-process iframes are child sessions (`children`), reached through [`send_to`] with a
//! [`Target`] naming the session. `idle` detaches tabs nobody uses; `record` keeps what the tabs
//! do, fed typed `events`. Nothing here calls up into the group or the tools.

pub mod children;
mod error;
pub mod events;
pub mod idle;
pub mod record;

pub use children::{child_sessions, embedder, session_of_frame};
pub use error::{thrown, thrown_js, Error, Exception};

use crate::chrome::debugger;
use crate::js::{sleep_ms, within};
use crate::vec_map::VecSet;
use futures_util::future::{select, Either};
use serde_json::{json, Value};
use std::cell::RefCell;
use wasm_bindgen::JsValue;

/// Bound for one CDP call unless the caller gives its own.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;

thread_local! {
    static ATTACHED: RefCell<VecSet<i32>> = const { RefCell::new(VecSet::new()) };
}

/// Whether a call waits for the viewport Chrome's debugging bar is about to change after an
/// attach (`crate::debugging_bar`): every call that may measure the page does; the recorders'
/// domains don't, so they are enabled right after the attach and lose no event to the wait.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Settle {
    Wait,
    Skip,
}

async fn ensure_attached(tab_id: i32, settle: Settle) -> Result<(), Error> {
    attach(tab_id).await?;
    if settle == Settle::Wait {
        // This attach, or another caller's, may still be settling the viewport.
        crate::debugging_bar::settled(tab_id).await;
    }
    Ok(())
}

async fn attach(tab_id: i32) -> Result<(), Error> {
    // An idle detach under way finishes first; this command then attaches again.
    idle::settled(tab_id).await;
    if ATTACHED.with(|a| a.borrow().contains(&tab_id)) {
        return Ok(());
    }
    // Never attach to a page outside the boundary (the extension's own, browser pages, files).
    crate::boundary::check_now(tab_id)
        .await
        .map_err(Error::Refused)?;
    let bar_shown = ATTACHED.with(|a| !a.borrow().is_empty());
    let attach_started = crate::js::now_ms();
    let attach = debugger::attach(tab_id);
    let restarted = match within(DEFAULT_TIMEOUT_MS, "attaching the debugger", attach).await? {
        Ok(()) => false,
        // Still attached from before a worker restart: the session is ours.
        Err(e) if Error::already_attached(&e) => true,
        Err(e) => return Err(Error::from_attach(tab_id, e)),
    };
    ATTACHED.with(|a| a.borrow_mut().insert(tab_id));
    idle::attached(tab_id);
    auto_attach(tab_id, restarted).await;
    // The first look must not measure a layout that Chrome's debugging bar is about to move.
    crate::debugging_bar::after_attach(tab_id, bar_shown || restarted, attach_started);
    Ok(())
}

pub fn is_attached(tab_id: i32) -> bool {
    ATTACHED.with(|a| a.borrow().contains(&tab_id))
}

/// Chrome detached us (tab closed, user cancelled the infobar, navigation to chrome://).
pub fn on_detach(tab_id: i32) {
    if ATTACHED.with(|a| {
        let mut a = a.borrow_mut();
        a.remove(&tab_id) && a.is_empty()
    }) {
        crate::debugging_bar::all_detached();
    }
    children::forget_tab(tab_id);
}

pub async fn send(tab_id: i32, method: &str, params: Value) -> Result<Value, Error> {
    send_with_timeout(tab_id, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_with_timeout(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<Value, Error> {
    json(send_js_with_timeout(tab_id, method, params, timeout_ms).await?)
}

/// [`send`] with Chrome's result as the JS object it is (read with [`crate::js::field`]): a large
/// string in it (an image, a page's text) is read once, not stringified, parsed and copied.
pub async fn send_js(tab_id: i32, method: &str, params: Value) -> Result<JsValue, Error> {
    send_js_with_timeout(tab_id, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_js_with_timeout(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<JsValue, Error> {
    send_settled(tab_id, method, params, timeout_ms, Settle::Wait).await
}

/// [`send_with_timeout`] for a call that measures nothing of the page (the recorders' domains):
/// after a fresh attach it does not wait for the debugging bar's change.
pub async fn send_unsettled(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<Value, Error> {
    json(send_settled(tab_id, method, params, timeout_ms, Settle::Skip).await?)
}

async fn send_settled(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
    settle: Settle,
) -> Result<JsValue, Error> {
    idle::touch(tab_id);
    ensure_attached(tab_id, settle).await?;
    crate::boundary::check_known(tab_id).map_err(Error::Refused)?;
    let result = within(
        timeout_ms,
        method,
        unless_dialog(tab_id, None, method, &params),
    )
    .await?;
    match result {
        Err(Error::Detached { .. }) => {
            // Chrome dropped the session behind our back: attach again once and retry.
            on_detach(tab_id);
            ensure_attached(tab_id, settle).await?;
            within(
                timeout_ms,
                method,
                debugger::send_command_js_in(tab_id, None, method, &params),
            )
            .await?
            .map_err(|e| Error::from_chrome(method, e, false))
        }
        other => other,
    }
}

/// A call that a JavaScript dialog would block (a click that opens an alert waits until the alert
/// is answered) ends when the dialog opens: input counts as delivered, anything else fails with
/// a message that says how to go on.
async fn unless_dialog(
    tab_id: i32,
    session: Option<&str>,
    method: &str,
    params: &Value,
) -> Result<JsValue, Error> {
    let child = session.is_some();
    let call = std::pin::pin!(async {
        debugger::send_command_js_in(tab_id, session, method, params)
            .await
            .map_err(|e| Error::from_chrome(method, e, child))
    });
    if record::open_dialog(tab_id).is_some() {
        return call.await;
    }
    let watch = std::pin::pin!(async {
        loop {
            sleep_ms(25).await;
            if let Some(d) = record::open_dialog(tab_id) {
                return d;
            }
        }
    });
    match select(call, watch).await {
        Either::Left((r, _)) => r,
        Either::Right((_, _)) if method.starts_with("Input.") => Ok(JsValue::NULL),
        Either::Right((d, _)) => Err(Error::Dialog {
            method: method.to_string(),
            kind: d.kind,
            message: d.message,
        }),
    }
}

/// Where a CDP command goes: a tab's own session, or one of its child sessions (an
/// out-of-process iframe). A tab id alone is its own session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub tab: i32,
    pub session: Option<String>,
}

impl From<i32> for Target {
    fn from(tab: i32) -> Target {
        Target { tab, session: None }
    }
}

impl From<&Target> for Target {
    fn from(t: &Target) -> Target {
        t.clone()
    }
}

/// `send` to a tab's session or one of its child sessions.
pub async fn send_to(target: &Target, method: &str, params: Value) -> Result<Value, Error> {
    send_to_with_timeout(target, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_to_with_timeout(
    target: &Target,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<Value, Error> {
    let Some(session) = target.session.as_deref() else {
        return send_with_timeout(target.tab, method, params, timeout_ms).await;
    };
    idle::touch(target.tab);
    ensure_attached(target.tab, Settle::Wait).await?;
    crate::boundary::check_known(target.tab).map_err(Error::Refused)?;
    let out = within(
        timeout_ms,
        method,
        unless_dialog(target.tab, Some(session), method, &params),
    )
    .await?;
    if let Err(Error::FrameGone { .. }) = out {
        children::forget(target.tab, session);
    }
    json(out?)
}

/// A CDP result as JSON (`null` when Chrome returns nothing).
fn json(out: JsValue) -> Result<Value, Error> {
    debugger::json_result(out).map_err(Error::Other)
}

/// Asks Chrome to attach the tab's out-of-process iframes as child sessions (and to report them
/// with `Target.attachedToTarget`). After a worker restart the children attached before are not
/// reported again, so auto-attach is switched off (which detaches them) and on again.
async fn auto_attach(tab: i32, restarted: bool) {
    let known = children::known(tab);
    if restarted && !known {
        let off = json!({"autoAttach": false, "waitForDebuggerOnStart": false, "flatten": true});
        let _ = within(
            DEFAULT_TIMEOUT_MS,
            "Target.setAutoAttach",
            debugger::send_command(tab, "Target.setAutoAttach", &off),
        )
        .await;
    }
    let on = children::auto_attach_params();
    let out = within(
        DEFAULT_TIMEOUT_MS,
        "Target.setAutoAttach",
        debugger::send_command(tab, "Target.setAutoAttach", &on),
    )
    .await;
    let failed = match out {
        Ok(Ok(_)) => return,
        Ok(Err(e)) => e,
        Err(t) => t.to_string(),
    };
    crate::js::log(&format!(
        "tab {tab}: out-of-process iframes will not be read ({failed})"
    ));
}
