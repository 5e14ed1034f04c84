//! The page a group tab shows, held to `protocol::url_policy` and the backend's hosts
//! (`policy::check_page`, the one policy): a tab showing the extension's own
//! pages, another extension's, a browser page or a local file is never attached to, evaluated
//! in, read or acted on, however it got there. Checked from chrome.tabs before every tool that
//! takes a tab (dispatch) and before every debugger attach; while attached, the main frame's
//! navigations (CDP events) keep what is known current, so every CDP call checks it without a
//! round trip (the page can change between the check and the act).
//!
//! This is the page state, below `cdp` (which checks it before attaching and before every call)
//! and calling nothing of it. What acts on a refused page (detaching the debugger after a
//! command, or when a navigation commits) is `boundary_guard`'s, above `cdp`.

use crate::chrome::tabs::{self, Tab};
use crate::vec_map::VecMap;
use protocol::url_policy::Refusal;
use serde_json::Value;
use std::cell::RefCell;

#[derive(Default)]
struct Known {
    /// Tabs known to show (or to be committing) a refused page: the rule and the URL.
    refused: VecMap<i32, (Refusal, String)>,
    /// Each attached tab's main frame id, learnt from its navigations.
    main_frame: VecMap<i32, String>,
}

thread_local! {
    static KNOWN: RefCell<Known> = RefCell::new(Known::default());
}

fn with<R>(f: impl FnOnce(&mut Known) -> R) -> R {
    KNOWN.with(|k| f(&mut k.borrow_mut()))
}

/// The address the tab shows, or is about to show: a pending navigation to a refused page counts
/// as shown (it commits in a moment), and so does a committed one while another is pending.
fn refusal(tab: &Tab) -> Option<(Refusal, String)> {
    let id = tab.id?;
    [tab.url.as_deref(), tab.pending_url.as_deref()]
        .into_iter()
        .flatten()
        .filter(|u| !u.is_empty())
        .find_map(|u| {
            crate::policy::check_page(id, u)
                .err()
                .map(|r| (r, u.to_string()))
        })
}

/// Checks the page a tab (as chrome.tabs just reported it) shows, and records the answer.
pub fn check(tab: &Tab) -> Result<(), String> {
    let Some(id) = tab.id else {
        return Ok(());
    };
    match refusal(tab) {
        None => {
            with(|k| k.refused.remove(&id));
            Ok(())
        }
        Some((rule, url)) => {
            let e = rule.page_error(id, &url);
            with(|k| k.refused.insert(id, (rule, url)));
            Err(e)
        }
    }
}

/// The tab, looked up now, and checked (before a debugger attach).
pub async fn check_now(tab_id: i32) -> Result<(), String> {
    match tabs::get(tab_id).await {
        Ok(tab) => check(&tab),
        // A tab that is gone fails at attach with its own message.
        Err(_) => Ok(()),
    }
}

/// What is known without a round trip: before every CDP call.
pub fn check_known(tab_id: i32) -> Result<(), String> {
    with(|k| {
        k.refused
            .get(&tab_id)
            .map_or(Ok(()), |(rule, url)| Err(rule.page_error(tab_id, url)))
    })
}

/// Whether what is known here of a tab's page is current without asking Chrome, as far as this
/// state can tell: its main frame is known, no refused page is known for it, and the tab as
/// last reported shows none. Whether the tab is recorded (so that its navigations arrive) is
/// `boundary_guard::current`'s question, which asks this one too.
pub fn known_clear(tab: &Tab) -> bool {
    let Some(id) = tab.id else {
        return false;
    };
    with(|k| k.main_frame.contains_key(&id) && !k.refused.contains_key(&id))
        && refusal(tab).is_none()
}

/// Learns the tab's main frame (once recording starts), so that a navigation of it is
/// recognised from its start even before the tab has navigated under the debugger.
pub fn main_frame_is(tab_id: i32, frame: &str) {
    with(|k| k.main_frame.insert(tab_id, frame.to_string()));
}

/// The debugger left the tab (`boundary_guard` detached it from a refused page): its main frame
/// is learnt again when it is recorded again.
pub fn left(tab_id: i32) {
    with(|k| k.main_frame.remove(&tab_id));
}

/// CDP events of an attached tab: a main-frame navigation to a refused page marks the tab at
/// once (from when Chrome says where it starts navigating). True when such a navigation
/// committed: the tab is to be detached (`boundary_guard::on_event` does it).
pub fn on_event(tab: i32, session: Option<&str>, method: &str, p: &Value) -> bool {
    if session.is_some() {
        return false;
    }
    let url = match method {
        "Page.frameNavigated" => {
            let frame = p.get("frame");
            if frame.and_then(|f| f.get("parentId")).is_some() {
                return false;
            }
            if let Some(id) = frame.and_then(|f| f.get("id")).and_then(Value::as_str) {
                with(|k| k.main_frame.insert(tab, id.to_string()));
            }
            frame.and_then(|f| f.get("url")).and_then(Value::as_str)
        }
        "Page.frameStartedNavigating" => {
            let frame = p.get("frameId").and_then(Value::as_str);
            let main = with(|k| k.main_frame.get(&tab).cloned());
            if frame.is_none() || frame != main.as_deref() {
                return false;
            }
            p.get("url").and_then(Value::as_str)
        }
        _ => return false,
    };
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return false;
    };
    match crate::policy::check_page(tab, url) {
        Ok(()) => {
            // A navigation that only started proves nothing about the page shown until it
            // commits; a committed one does.
            if method == "Page.frameNavigated" {
                with(|k| k.refused.remove(&tab));
            }
            false
        }
        Err(rule) => {
            with(|k| k.refused.insert(tab, (rule, url.to_string())));
            // Detached once it commits: a navigation that Chrome blocks leaves the page where
            // it was (and the next command's check clears the mark).
            method == "Page.frameNavigated"
        }
    }
}

/// Whether something is known of the tab.
pub fn holds(tab: i32) -> bool {
    with(|k| k.refused.contains_key(&tab) || k.main_frame.contains_key(&tab))
}

/// The tab closed.
pub fn forget(tab_id: i32) {
    with(|k| {
        k.refused.remove(&tab_id);
        k.main_frame.remove(&tab_id);
    });
}
