//! The policy's hosts as the browser's own request rules: chrome.declarativeNetRequest session
//! rules naming the automation group's tabs (`tabIds`), so Chrome refuses a group tab's page or
//! frame request outside them before it leaves, whoever started it (a command, a redirect, a
//! link, a script, a person typing), with no debugger attached. Session rules outlive the
//! worker; the tabs they name are refreshed at each worker start. A tab is named from when the
//! worker sees it join the group (or be opened by a group tab), and before any command runs on
//! it ([`cover`]).
//!
//! Rule ids [`FIRST_ID`].. and priorities [`BASE_PRIORITY`]..+2 are the backend's (its allowed
//! hosts narrowed to the person's allowed sites); the person's own site rules (Options) take
//! ids [`PERSON_FIRST_ID`].. and higher priorities in the same rule set, so they win
//! (`host_rules::layered_dnr_rules`).

use super::site_rules;
use crate::chrome::declarative_net_request as dnr;
use protocol::host_rules::{layered_dnr_rules, Layers, MAX_PATTERNS};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The first id of the backend policy's rules (one rule per pattern, and one refusing all).
pub const FIRST_ID: u32 = 1_000;
/// Under the person's allowed sites the backend's layer holds at most both allowed lists.
const LAST_ID: u32 = FIRST_ID + (MAX_PATTERNS + site_rules::MAX_PATTERNS) as u32;
/// The backend policy's priorities: refuse all (by list) < allowed < blocked.
pub const BASE_PRIORITY: u32 = 10;
/// The first id of the person's rules (one per blocked site).
pub const PERSON_FIRST_ID: u32 = 3_000;
const PERSON_LAST_ID: u32 = PERSON_FIRST_ID + site_rules::MAX_PATTERNS as u32;
/// The person's priorities: above every backend rule.
pub const PERSON_PRIORITY: u32 = 20;
const LAYERS: Layers = Layers {
    backend_first_id: FIRST_ID,
    backend_priority: BASE_PRIORITY,
    person_first_id: PERSON_FIRST_ID,
    person_priority: PERSON_PRIORITY,
};

/// True when neither the person's rules nor the backend's policy refuse anything.
fn open() -> bool {
    super::with_both(|person, backend| person.is_open() && backend.is_open())
}

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
    let rules =
        super::with_both(|person, backend| layered_dnr_rules(person, backend, LAYERS, &tabs));
    let remove: Vec<u32> = (FIRST_ID..=LAST_ID)
        .chain(PERSON_FIRST_ID..=PERSON_LAST_ID)
        .collect();
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
    if open() {
        return Ok(());
    }
    apply().await
}

/// The tab closed or left the group.
pub fn uncover(tab: i32) {
    if COVERED.with(|c| c.borrow_mut().remove(&tab)) && !open() {
        wasm_bindgen_futures::spawn_local(async {
            if let Err(e) = apply().await {
                crate::js::log(&format!("the URL policy's request rules: {e}"));
            }
        });
    }
}
