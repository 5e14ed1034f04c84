//! The dialog recorder: the JavaScript dialog open on the tab, if any.

use crate::cdp::events::Event;

#[derive(Clone, PartialEq)]
pub struct Dialog {
    pub kind: String,
    pub message: String,
    pub default_prompt: String,
    /// The page stopped answering while the debugger was away: most likely a dialog that
    /// opened then, which Chrome does not report to a debugger attached later.
    pub unknown: bool,
}

impl Dialog {
    /// What a page that stopped answering while no debugger watched most likely shows.
    pub fn unknown() -> Dialog {
        Dialog {
            kind: "unknown".into(),
            message: String::new(),
            default_prompt: String::new(),
            unknown: true,
        }
    }
}

/// Follows the dialog events of the tab's session.
pub fn on(open: &mut Option<Dialog>, event: &Event) {
    match event {
        Event::DialogOpening {
            kind,
            message,
            default_prompt,
        } => {
            *open = Some(Dialog {
                kind: kind.clone(),
                message: message.clone(),
                default_prompt: default_prompt.clone(),
                unknown: false,
            })
        }
        Event::DialogClosed => *open = None,
        _ => {}
    }
}

/// A page that has had this many dialogs answered by the policy within [`LOOP_WINDOW_MS`]
/// reopens them in a loop: the next one is left open (commands say so at once, and
/// handle_dialog answers it) instead of being answered forever.
pub const LOOP_BOUND: usize = 20;
pub const LOOP_WINDOW_MS: f64 = 10_000.0;

thread_local! {
    /// When the policy answered each tab's recent dialogs.
    static ANSWERED: std::cell::RefCell<crate::vec_map::VecMap<i32, std::collections::VecDeque<f64>>> =
        const { std::cell::RefCell::new(crate::vec_map::VecMap::new()) };
}

/// How the policy answers a dialog that opens on the tab now, if it does: not when it asks,
/// nor past the loop bound.
pub fn policy_answer(tab: i32, now: f64) -> Option<bool> {
    let accept = crate::policy::dialog_answer(tab)?;
    ANSWERED.with(|a| {
        let mut a = a.borrow_mut();
        let times = a.entry(tab).or_default();
        while times.front().is_some_and(|t| now - t > LOOP_WINDOW_MS) {
            times.pop_front();
        }
        if times.len() >= LOOP_BOUND {
            return None;
        }
        times.push_back(now);
        Some(accept)
    })
}

/// The tab closed or left the group.
pub fn forget(tab: i32) {
    ANSWERED.with(|a| a.borrow_mut().remove(&tab));
}
