//! The boundary's guard, above `cdp`: it acts on what `boundary` knows of a tab's page. It says
//! when that is current enough to skip asking Chrome (the tab is recorded), and it detaches the
//! debugger from a tab found on a refused page: after a command that left it there, and when a
//! main-frame navigation to one commits.

use crate::boundary;
use crate::cdp::{self, idle, record};
use crate::chrome::tabs::{self, Tab};
use serde_json::Value;
use wasm_bindgen_futures::spawn_local;

/// Whether what is known of a group tab's page is current without asking Chrome: the tab is
/// recorded (the debugger attached with the Page domain on, so every navigation of its main
/// frame, whoever started it, arrives as a CDP event ahead of anything the new page answers,
/// see `boundary::on_event`), and `boundary::known_clear` holds: its main frame is known, no
/// refused page is known for it, and the tab as last reported (`group::reported`) shows none.
/// Otherwise the tab is looked up again.
pub fn current(tab: &Tab) -> bool {
    tab.id.is_some_and(record::recording) && boundary::known_clear(tab)
}

/// After a command on the tab: when it left the tab on a refused page, the debugger is
/// detached and the answer says so. A tab whose page is known current (`current`) is not
/// looked up again: a navigation to a refused page is marked from its CDP events.
pub async fn after_command(tab_id: i32) -> Option<String> {
    if crate::group::reported(i64::from(tab_id)).is_some_and(|t| current(&t)) {
        return None;
    }
    let tab = tabs::get(tab_id).await.ok()?;
    let e = boundary::check(&tab).err()?;
    leave(tab_id).await;
    Some(format!("{e} The debugger was detached from it."))
}

/// Detaches the debugger from a tab that shows a refused page.
async fn leave(tab_id: i32) {
    if cdp::is_attached(tab_id) {
        idle::detach(tab_id).await;
    }
    boundary::left(tab_id);
}

/// CDP events of an attached tab, for the boundary: a main-frame navigation to a refused page
/// marks the tab at once (`boundary::on_event`), and detaches it when it commits.
pub fn on_event(tab: i32, session: Option<&str>, method: &str, p: &Value) {
    if boundary::on_event(tab, session, method, p) {
        spawn_local(leave(tab));
    }
}
