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
