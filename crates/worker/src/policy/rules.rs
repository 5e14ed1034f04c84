//! The policy's hosts as the browser's own request rules: chrome.declarativeNetRequest session
//! rules naming the automation group's tabs (`tabIds`), so Chrome refuses a group tab's page or
//! frame request outside them before it leaves, whoever started it (a command, a redirect, a
//! link, a script, a person typing), with no debugger attached. Session rules outlive the
//! worker; the tabs they name are refreshed at each worker start. A tab is named from when the
//! worker sees it join the group (or be opened by a group tab), and before any command runs on
//! it ([`cover`]).
//!
//! Rule ids [`FIRST_ID`].. and priorities [`BASE_PRIORITY`]..+2 are the backend's; the person's
//! own site rules (issue 17) take higher priorities in the same rule set, so they win.

use crate::chrome::declarative_net_request as dnr;
use protocol::host_rules::MAX_PATTERNS;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The first id of the backend policy's rules (one rule per pattern, and one refusing all).
pub const FIRST_ID: u32 = 1_000;
const LAST_ID: u32 = FIRST_ID + MAX_PATTERNS as u32;
/// The backend policy's priorities: refuse all (by list) < allowed < blocked.
pub const BASE_PRIORITY: u32 = 10;

thread_local! {
    /// The tabs the rules name.
    static COVERED: RefCell<BTreeSet<i32>> = const { RefCell::new(BTreeSet::new()) };
}

/// Whether the rules name the tab.
pub fn covers(tab: i32) -> bool {
    COVERED.with(|c| c.borrow().contains(&tab))
}

/// Writes the rules for the policy in force and the tabs covered, replacing the previous ones in
/// one step. Each call carries the whole state, made without an await before Chrome is asked,
/// and Chrome takes one worker's calls in order: the last call made is the state in force.
pub async fn apply() -> Result<(), String> {
    let tabs: Vec<i32> = COVERED.with(|c| c.borrow().iter().copied().collect());
    let rules = super::with_hosts(|h| h.dnr_rules(FIRST_ID, BASE_PRIORITY, &tabs));
    let remove: Vec<u32> = (FIRST_ID..=LAST_ID).collect();
    dnr::update_session_rules(&remove, &rules).await
}

/// The tabs are named again from the group as it is (at worker start, and when a policy is set).
pub async fn refresh() -> Result<(), String> {
    let tabs = crate::group::all_tabs().await?;
    COVERED.with(|c| {
        let mut c = c.borrow_mut();
        c.clear();
        c.extend(tabs.iter().filter_map(|t| t.id));
    });
    apply().await
}

/// Names the tab in the rules (it joined the group, or a group tab's page opened it); returns
/// once Chrome has them. Cheap when it is named already.
pub async fn cover(tab: i32) -> Result<(), String> {
    if !COVERED.with(|c| c.borrow_mut().insert(tab)) {
        return Ok(());
    }
    if super::with_hosts(|h| h.is_open()) {
        return Ok(());
    }
    apply().await
}

/// The tab closed or left the group.
pub fn uncover(tab: i32) {
    if COVERED.with(|c| c.borrow_mut().remove(&tab)) && !super::with_hosts(|h| h.is_open()) {
        wasm_bindgen_futures::spawn_local(async {
            if let Err(e) = apply().await {
                crate::js::log(&format!("the URL policy's request rules: {e}"));
            }
        });
    }
}
