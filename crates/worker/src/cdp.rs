//! Debugger sessions on group tabs: attach on first use, every CDP call bounded in time. A tab's
//! out-of-process iframes (frames of another site, in another renderer) are child sessions of
//! the tab's session: auto-attached (`Target.setAutoAttach`, flattened) whenever the debugger
//! attaches, kept here from `Target.attachedToTarget`/`detachedFromTarget` events, and reached
//! through `send_to` with a `Target` naming the session. `idle` detaches tabs nobody uses.

use crate::chrome::debugger;
use crate::js::{sleep_ms, with_timeout};
use crate::observers;
use futures_util::future::{select, Either};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use wasm_bindgen::JsValue;

/// Bound for one CDP call unless the caller gives its own.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;

thread_local! {
    static ATTACHED: RefCell<HashSet<i32>> = RefCell::new(HashSet::new());
    static CHILDREN: RefCell<HashMap<i32, Vec<Child>>> = RefCell::new(HashMap::new());
}

async fn ensure_attached(tab_id: i32) -> Result<(), String> {
    // An idle detach under way finishes first; this command then attaches again.
    crate::idle::settled(tab_id).await;
    if ATTACHED.with(|a| a.borrow().contains(&tab_id)) {
        // Another caller's attach may still be settling the viewport.
        crate::debugging_bar::settled(tab_id).await;
        return Ok(());
    }
    // Never attach to a page outside the boundary (the extension's own, browser pages, files).
    crate::boundary::check_now(tab_id).await?;
    let bar_shown = ATTACHED.with(|a| !a.borrow().is_empty());
    let attach_started = crate::js::now_ms();
    let restarted = match with_timeout(DEFAULT_TIMEOUT_MS, "attaching the debugger", debugger::attach(tab_id)).await? {
        Ok(()) => false,
        // Still attached from before a worker restart: the session is ours.
        Err(e) if e.contains("already attached") => true,
        Err(e) if e.contains("Cannot access") || e.contains("Cannot attach") => {
            return Err(format!(
                "The debugger can't attach to tab {tab_id} ({e}). Pages such as chrome://, the Chrome Web Store and other extensions can't be automated: navigate the tab to a web page first."
            ))
        }
        Err(e) => return Err(format!("Attaching the debugger to tab {tab_id} failed: {e}")),
    };
    ATTACHED.with(|a| a.borrow_mut().insert(tab_id));
    crate::idle::attached(tab_id);
    auto_attach(tab_id, restarted).await;
    // The first look must not measure a layout that Chrome's debugging bar is about to move.
    crate::debugging_bar::after_attach(tab_id, bar_shown || restarted, attach_started).await;
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
    CHILDREN.with(|c| c.borrow_mut().remove(&tab_id));
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
    debugger::json_result(send_js_with_timeout(tab_id, method, params, timeout_ms).await?)
}

/// [`send`] with Chrome's result as the JS object it is (read with [`crate::js::field`]): a large
/// string in it (an image, a page's text) is read once, not stringified, parsed and copied.
pub async fn send_js(tab_id: i32, method: &str, params: Value) -> Result<JsValue, String> {
    send_js_with_timeout(tab_id, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_js_with_timeout(
    tab_id: i32,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<JsValue, String> {
    crate::idle::touch(tab_id);
    ensure_attached(tab_id).await?;
    crate::boundary::check_known(tab_id)?;
    let result = with_timeout(
        timeout_ms,
        method,
        unless_dialog(tab_id, None, method, &params),
    )
    .await?;
    match result {
        Err(e) if e.contains("not attached") || e.contains("Detached") => {
            // Chrome dropped the session behind our back: attach again once and retry.
            on_detach(tab_id);
            ensure_attached(tab_id).await?;
            with_timeout(
                timeout_ms,
                method,
                debugger::send_command_js_in(tab_id, None, method, &params),
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
async fn unless_dialog(
    tab_id: i32,
    session: Option<&str>,
    method: &str,
    params: &Value,
) -> Result<JsValue, String> {
    let call = std::pin::pin!(debugger::send_command_js_in(
        tab_id, session, method, params
    ));
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
        Either::Right((_, _)) if method.starts_with("Input.") => Ok(JsValue::NULL),
        Either::Right((d, _)) => Err(format!(
            "a JavaScript {} dialog opened (\"{}\"); answer it with handle_dialog",
            d.kind, d.message
        )),
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

/// In the error of a command sent to a child session that no longer exists (its frame navigated
/// to another process or was removed).
pub const FRAME_GONE: &str = "the frame's debugger session is gone";

/// A child session: an out-of-process iframe of the tab.
struct Child {
    session: String,
    /// The iframe's frame id (its target id).
    frame: String,
    /// The session that embeds it (`None`: the tab's own).
    parent: Option<String>,
}

/// `send` to a tab's session or one of its child sessions.
pub async fn send_to(target: &Target, method: &str, params: Value) -> Result<Value, String> {
    send_to_with_timeout(target, method, params, DEFAULT_TIMEOUT_MS).await
}

pub async fn send_to_with_timeout(
    target: &Target,
    method: &str,
    params: Value,
    timeout_ms: u32,
) -> Result<Value, String> {
    let Some(session) = target.session.as_deref() else {
        return send_with_timeout(target.tab, method, params, timeout_ms).await;
    };
    crate::idle::touch(target.tab);
    ensure_attached(target.tab).await?;
    crate::boundary::check_known(target.tab)?;
    let out = with_timeout(
        timeout_ms,
        method,
        unless_dialog(target.tab, Some(session), method, &params),
    )
    .await?;
    let out = out.map_err(|e| {
        if e.contains("Session with given id not found") || e.contains("not attached") {
            forget_child(target.tab, session);
            format!("{method}: {FRAME_GONE}")
        } else {
            format!("{method}: {e}")
        }
    })?;
    debugger::json_result(out)
}

/// Asks Chrome to attach the tab's out-of-process iframes as child sessions (and to report them
/// with `Target.attachedToTarget`). After a worker restart the children attached before are not
/// reported again, so auto-attach is switched off (which detaches them) and on again.
async fn auto_attach(tab: i32, restarted: bool) {
    let known = CHILDREN.with(|c| c.borrow().get(&tab).is_some_and(|v| !v.is_empty()));
    if restarted && !known {
        let off = json!({"autoAttach": false, "waitForDebuggerOnStart": false, "flatten": true});
        let _ = with_timeout(
            DEFAULT_TIMEOUT_MS,
            "Target.setAutoAttach",
            debugger::send_command(tab, "Target.setAutoAttach", &off),
        )
        .await;
    }
    let on = auto_attach_params();
    let out = with_timeout(
        DEFAULT_TIMEOUT_MS,
        "Target.setAutoAttach",
        debugger::send_command(tab, "Target.setAutoAttach", &on),
    )
    .await;
    if let Err(e) | Ok(Err(e)) = out {
        crate::js::log(&format!(
            "tab {tab}: out-of-process iframes will not be read ({e})"
        ));
    }
}

fn auto_attach_params() -> Value {
    json!({
        "autoAttach": true,
        "waitForDebuggerOnStart": false,
        "flatten": true,
        "filter": [{"type": "iframe"}],
    })
}

/// `Target.attachedToTarget` / `Target.detachedFromTarget` from the tab's session or, for nested
/// iframes, from a child session (`from`). Returns the child session that just attached.
pub fn on_target_event(tab: i32, from: Option<&str>, method: &str, p: &Value) -> Option<Target> {
    let text = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    match method {
        "Target.attachedToTarget" => {
            if text("/targetInfo/type").as_deref() != Some("iframe") {
                return None;
            }
            let (Some(session), Some(frame)) = (text("/sessionId"), text("/targetInfo/targetId"))
            else {
                return None;
            };
            CHILDREN.with(|c| {
                let mut c = c.borrow_mut();
                let list = c.entry(tab).or_default();
                list.retain(|k| k.frame != frame && k.session != session);
                list.push(Child {
                    session: session.clone(),
                    frame,
                    parent: from.map(str::to_string),
                });
            });
            // Its own out-of-process iframes (nested sites) are its children.
            let child = Target {
                tab,
                session: Some(session),
            };
            let nested = child.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let _ = send_to(&nested, "Target.setAutoAttach", auto_attach_params()).await;
            });
            Some(child)
        }
        "Target.detachedFromTarget" => {
            if let Some(session) = text("/sessionId") {
                forget_child(tab, &session);
            }
            None
        }
        _ => None,
    }
}

/// Drops a child session and the sessions nested in it.
fn forget_child(tab: i32, session: &str) {
    CHILDREN.with(|c| {
        let mut c = c.borrow_mut();
        let Some(list) = c.get_mut(&tab) else { return };
        let mut gone = vec![session.to_string()];
        while let Some(s) = gone.pop() {
            list.retain(|k| {
                if k.session == s {
                    return false;
                }
                if k.parent.as_deref() == Some(s.as_str()) {
                    gone.push(k.session.clone());
                }
                true
            });
        }
    });
}

/// The tab's child sessions, in the order they were attached (parents before their children).
pub fn child_sessions(tab: i32) -> Vec<Target> {
    CHILDREN.with(|c| {
        c.borrow()
            .get(&tab)
            .map(|list| {
                list.iter()
                    .map(|k| Target {
                        tab,
                        session: Some(k.session.clone()),
                    })
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// For a child session: the session that embeds it and the id of its frame there.
pub fn embedder(target: &Target) -> Option<(Target, String)> {
    let session = target.session.as_deref()?;
    CHILDREN.with(|c| {
        let c = c.borrow();
        let k = c.get(&target.tab)?.iter().find(|k| k.session == session)?;
        Some((
            Target {
                tab: target.tab,
                session: k.parent.clone(),
            },
            k.frame.clone(),
        ))
    })
}

/// The child session of an out-of-process iframe, by its frame id.
pub fn session_of_frame(tab: i32, frame: &str) -> Option<Target> {
    CHILDREN.with(|c| {
        let c = c.borrow();
        let k = c.get(&tab)?.iter().find(|k| k.frame == frame)?;
        Some(Target {
            tab,
            session: Some(k.session.clone()),
        })
    })
}
