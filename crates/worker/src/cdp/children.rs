//! Child sessions: a tab's out-of-process iframes (frames of another site, in another renderer),
//! auto-attached (`Target.setAutoAttach`, flattened) whenever the debugger attaches, kept here
//! from `Target.attachedToTarget` / `detachedFromTarget` events, and reached through
//! `cdp::send_to` with a `Target` naming the session.

use super::events::Event;
use super::Target;
use crate::vec_map::VecMap;
use serde_json::{json, Value};
use std::cell::RefCell;

/// A child session: an out-of-process iframe of the tab.
struct Child {
    session: String,
    /// The iframe's frame id (its target id).
    frame: String,
    /// The session that embeds it (`None`: the tab's own).
    parent: Option<String>,
}

thread_local! {
    static CHILDREN: RefCell<VecMap<i32, Vec<Child>>> = const { RefCell::new(VecMap::new()) };
}

/// `Target.setAutoAttach` for iframes, flattened.
pub fn auto_attach_params() -> Value {
    json!({
        "autoAttach": true,
        "waitForDebuggerOnStart": false,
        "flatten": true,
        "filter": [{"type": "iframe"}],
    })
}

/// True when the tab has child sessions on record.
pub fn known(tab: i32) -> bool {
    CHILDREN.with(|c| c.borrow().get(&tab).is_some_and(|v| !v.is_empty()))
}

/// The tab's debugger session ended: its children went with it.
pub fn forget_tab(tab: i32) {
    CHILDREN.with(|c| c.borrow_mut().remove(&tab));
}

/// Whether the tab has child sessions on record.
pub fn holds(tab: i32) -> bool {
    CHILDREN.with(|c| c.borrow().contains_key(&tab))
}

/// An iframe attached or a session detached, from the tab's session or, for nested iframes,
/// from a child session (`from`). Returns the child session that just attached.
pub fn on_event(tab: i32, from: Option<&str>, event: &Event) -> Option<Target> {
    match event {
        Event::IframeAttached { session, frame } => {
            CHILDREN.with(|c| {
                let mut c = c.borrow_mut();
                let list = c.entry(tab).or_default();
                list.retain(|k| k.frame != *frame && k.session != *session);
                list.push(Child {
                    session: session.clone(),
                    frame: frame.clone(),
                    parent: from.map(str::to_string),
                });
            });
            // Its own out-of-process iframes (nested sites) are its children.
            let child = Target {
                tab,
                session: Some(session.clone()),
            };
            let nested = child.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let _ = super::send_to(&nested, "Target.setAutoAttach", auto_attach_params()).await;
            });
            Some(child)
        }
        Event::TargetDetached { session } => {
            forget(tab, session);
            None
        }
        _ => None,
    }
}

/// Drops a child session and the sessions nested in it.
pub fn forget(tab: i32, session: &str) {
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
