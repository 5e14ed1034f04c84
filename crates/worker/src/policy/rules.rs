//! The policy's hosts as the browser's own request rules: chrome.declarativeNetRequest session
//! rules, so Chrome refuses a group tab's page or frame request outside them before it leaves,
//! whoever started it (a command, a redirect, a link, a script, a person typing), with no
//! debugger attached. Two sets, from the same `HostPolicy`:
//! - the group's tabs by id (`tabIds`): a tab is named from when the worker sees it join the
//!   group (or be opened by a group tab), and before any command runs on it ([`cover`]);
//! - the tabs a group tab's page opens, before the worker can know them (a link with
//!   `target=_blank` sends its first request before `chrome.tabs.onCreated` reaches the
//!   worker): top-level requests that a page on a host the group's tabs show started, in any tab
//!   not known to be someone else's (`excludedTabIds`: every tab outside the group the worker
//!   knows of). A person's own tab that it catches (a ctrl+click in the person's tab on a site a
//!   group tab also shows, before the new tab is known) is excluded and loaded again at once
//!   ([`repair`]), so it never refuses a person's own navigation for longer than that.
//!
//! Session rules outlive the worker; the tabs they name are refreshed at each worker start.
//!
//! Both sets come in two layers (`host_rules::layers`): the backend's policy with its allowed
//! hosts narrowed to the person's allowed sites, at ids [`FIRST_ID`].. and
//! [`OPENED_FIRST_ID`].., priorities [`BASE_PRIORITY`]..+2; the person's blocked sites
//! (Options) at ids [`PERSON_FIRST_ID`].. and [`PERSON_OPENED_FIRST_ID`].., at
//! [`PERSON_PRIORITY`], above every backend rule, so the person's rules win.

use super::site_rules;
use crate::chrome::declarative_net_request as dnr;
use crate::chrome::tabs::{self, Tab};
use protocol::host_rules::{layers, web_host, MAX_PATTERNS};
use std::cell::RefCell;

/// The first id of the backend policy's rules for the group's tabs (one rule per pattern, and
/// one refusing all).
pub const FIRST_ID: u32 = 1_000;
/// Under the person's allowed sites the backend's layer holds at most both allowed lists.
const LAST_ID: u32 = FIRST_ID + (MAX_PATTERNS + site_rules::MAX_PATTERNS) as u32;
/// The first id of its rules for tabs a group tab's page opens (at most as many, and two).
pub const OPENED_FIRST_ID: u32 = 2_000;
const OPENED_LAST_ID: u32 = OPENED_FIRST_ID + (MAX_PATTERNS + site_rules::MAX_PATTERNS) as u32 + 2;
/// The backend policy's priorities: refuse all (by list) < allowed < blocked.
pub const BASE_PRIORITY: u32 = 10;
/// The first id of the person's rules (one per blocked site).
pub const PERSON_FIRST_ID: u32 = 3_000;
const PERSON_LAST_ID: u32 = PERSON_FIRST_ID + site_rules::MAX_PATTERNS as u32;
/// The person's priorities: above every backend rule.
pub const PERSON_PRIORITY: u32 = 20;
/// The first id of the person's rules for tabs a group tab's page opens.
pub const PERSON_OPENED_FIRST_ID: u32 = 4_000;
const PERSON_OPENED_LAST_ID: u32 = PERSON_OPENED_FIRST_ID + site_rules::MAX_PATTERNS as u32;

/// True when neither the person's rules nor the backend's policy refuse anything.
fn open() -> bool {
    super::with_both(|person, backend| person.is_open() && backend.is_open())
}

thread_local! {
    /// The tabs the rules name, with the web host each shows (as far as the worker knows).
    /// Plain lists (a few tabs; the worker's size counts more than lookups in them).
    static COVERED: RefCell<Vec<(i32, Option<String>)>> = const { RefCell::new(Vec::new()) };
    /// Tabs known to be outside the group: the rules for opened tabs leave them alone.
    static OTHERS: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// The tabs whose refused navigation was loaded again (once each, in case another
    /// extension's blocker refused it).
    static REPAIRED: RefCell<Vec<(i32, String)>> = const { RefCell::new(Vec::new()) };
    /// The last tabs that closed (Chrome never reuses a tab id in a session): an event that
    /// comes after `onRemoved` (the group change of a closing tab) does not list them again.
    static CLOSED: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

/// Whether the rules name the tab.
pub fn covers(tab: i32) -> bool {
    COVERED.with(|c| c.borrow().iter().any(|(t, _)| *t == tab))
}

/// Whether the tab is known to be outside the group (a person's).
pub fn is_other(tab: i32) -> bool {
    OTHERS.with(|o| o.borrow().binary_search(&tab).is_ok())
}

/// At most this many closed tabs are remembered.
const CLOSED_KEPT: usize = 64;

/// Adds the tab to the others (kept sorted); whether it was new. A closed tab is not.
fn add_other(tab: i32) -> bool {
    if CLOSED.with(|c| c.borrow().contains(&tab)) {
        return false;
    }
    OTHERS.with(|o| {
        let mut o = o.borrow_mut();
        match o.binary_search(&tab) {
            Ok(_) => false,
            Err(at) => {
                o.insert(at, tab);
                true
            }
        }
    })
}

fn remove_other(tab: i32) -> bool {
    OTHERS.with(|o| {
        let mut o = o.borrow_mut();
        match o.binary_search(&tab) {
            Ok(at) => {
                o.remove(at);
                true
            }
            Err(_) => false,
        }
    })
}

fn remove_covered(tab: i32) -> bool {
    COVERED.with(|c| {
        let mut c = c.borrow_mut();
        let before = c.len();
        c.retain(|(t, _)| *t != tab);
        c.len() != before
    })
}

/// The distinct web hosts the covered tabs show, sorted.
fn initiators() -> Vec<String> {
    let mut hosts: Vec<String> =
        COVERED.with(|c| c.borrow().iter().filter_map(|(_, h)| h.clone()).collect());
    hosts.sort_unstable();
    hosts.dedup();
    hosts
}

/// The web host of a tab's address, as the browser's `initiatorDomains` takes it (IPv6
/// addresses are left out: no initiator rule names them).
fn host_shown(url: Option<&str>) -> Option<String> {
    web_host(url?).flatten().filter(|h| !h.starts_with('['))
}

fn host_of(tab: &Tab) -> Option<String> {
    // The address it is loading counts too: its page may open a tab as soon as it runs.
    host_shown(tab.url.as_deref()).or_else(|| host_shown(tab.pending_url.as_deref()))
}

/// Writes the rules for the policy in force and the tabs known, replacing the previous ones in
/// one step. Each call carries the whole state, made without an await before Chrome is asked,
/// and Chrome takes one worker's calls in order: the last call made is the state in force.
pub async fn apply() -> Result<(), String> {
    let tabs: Vec<i32> = COVERED.with(|c| c.borrow().iter().map(|(t, _)| *t).collect());
    let others: Vec<i32> = OTHERS.with(|o| o.borrow().clone());
    let initiators = initiators();
    let rules = super::with_both(|person, backend| {
        let (lower, upper) = layers(person, backend);
        let mut rules = lower.dnr_rules(FIRST_ID, BASE_PRIORITY, &tabs);
        rules.extend(upper.dnr_rules(PERSON_FIRST_ID, PERSON_PRIORITY, &tabs));
        if !tabs.is_empty() {
            rules.extend(lower.dnr_opener_rules(
                OPENED_FIRST_ID,
                BASE_PRIORITY,
                &initiators,
                &others,
            ));
            rules.extend(upper.dnr_opener_rules(
                PERSON_OPENED_FIRST_ID,
                PERSON_PRIORITY,
                &initiators,
                &others,
            ));
        }
        rules
    });
    let remove: Vec<u32> = (FIRST_ID..=LAST_ID)
        .chain(OPENED_FIRST_ID..=OPENED_LAST_ID)
        .chain(PERSON_FIRST_ID..=PERSON_LAST_ID)
        .chain(PERSON_OPENED_FIRST_ID..=PERSON_OPENED_LAST_ID)
        .collect();
    dnr::update_session_rules(&remove, &rules).await
}

fn apply_later() {
    if open() {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        if let Err(e) = apply().await {
            crate::js::log(&format!("the URL policy's request rules: {e}"));
        }
    });
}

/// The tabs are named again from the browser as it is (at worker start, and when a policy is
/// set): the group's tabs, and every other tab as someone else's.
pub async fn refresh() -> Result<(), String> {
    let groups = crate::group::find_all().await;
    let all = tabs::query(&tabs::Query::default()).await?;
    let covered: Vec<(i32, Option<String>)> = all
        .iter()
        .filter(|t| groups.contains(&t.group_id))
        .filter_map(|t| Some((t.id?, host_of(t))))
        .collect();
    let mut others: Vec<i32> = all
        .iter()
        .filter_map(|t| t.id)
        .filter(|id| !covered.iter().any(|(t, _)| t == id))
        .collect();
    others.sort_unstable();
    COVERED.with(|c| *c.borrow_mut() = covered);
    OTHERS.with(|o| *o.borrow_mut() = others);
    apply().await
}

/// Names the tab in the rules (it joined the group, or a group tab's page opened it); returns
/// once Chrome has them. Cheap when it is named already.
pub async fn cover(tab: i32) -> Result<(), String> {
    remove_other(tab);
    if covers(tab) {
        return Ok(());
    }
    COVERED.with(|c| c.borrow_mut().push((tab, None)));
    if open() {
        return Ok(());
    }
    apply().await
}

/// A covered tab's address changed (`chrome.tabs.onUpdated`): the hosts whose pages' new tabs
/// are held to the policy follow what the group's tabs show.
pub fn shows(tab: &Tab) {
    let Some(id) = tab.id else { return };
    let host = host_of(tab);
    let before = initiators();
    let changed = COVERED.with(
        |c| match c.borrow_mut().iter_mut().find(|(t, _)| *t == id) {
            Some((_, shown)) if *shown != host && host.is_some() => {
                *shown = host;
                true
            }
            _ => false,
        },
    );
    if changed && initiators() != before {
        apply_later();
    }
}

/// The tab left the group, or was opened by someone else: someone else's from now.
pub fn uncover(tab: i32) {
    let was = remove_covered(tab);
    let new = add_other(tab);
    if was || new {
        apply_later();
    }
}

/// A tab opened by a tab outside the group, or by no tab (`chrome.tabs.onCreated`): someone
/// else's, unless it joined the group meanwhile.
pub fn other(tab: i32) {
    if covers(tab) {
        return;
    }
    if add_other(tab) {
        apply_later();
    }
}

/// The tab closed: nothing of it is kept.
pub fn closed(tab: i32) {
    CLOSED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() == CLOSED_KEPT {
            c.remove(0);
        }
        c.push(tab);
    });
    REPAIRED.with(|r| r.borrow_mut().retain(|(t, _)| *t != tab));
    let was = remove_covered(tab);
    if remove_other(tab) || was {
        apply_later();
    }
}

/// Whether anything is kept of the tab.
pub fn holds(tab: i32) -> bool {
    covers(tab) || is_other(tab) || REPAIRED.with(|r| r.borrow().iter().any(|(t, _)| *t == tab))
}

/// What a request rule's refusal of a tab the rules do not name was.
pub enum Caught {
    /// A tab a group tab's page opened: the policy's refusal, to report.
    Opened,
    /// Someone else's tab, caught before it was known: excluded and loaded again.
    Repaired,
    /// Not the policy's doing (another extension's blocker), or already loaded again once.
    NotOurs,
}

/// A request rule refused a top-level page of a tab the rules do not name, on its way to `url`,
/// a host the policy refuses: a tab a group tab opened is the policy's refusal; a tab someone
/// else opened was caught by the rules for opened tabs before the worker knew it, and is
/// excluded from them and sent to its address again.
pub async fn repair(tab: i32, url: &str) -> Result<Caught, String> {
    let t = tabs::get(tab).await?;
    let in_group = crate::group::find_all().await.contains(&t.group_id);
    let opened_by_group = t.opener_tab_id.is_some_and(covers);
    if in_group || opened_by_group {
        return Ok(Caught::Opened);
    }
    if REPAIRED.with(|r| r.borrow().iter().any(|(t, u)| *t == tab && u == url)) {
        return Ok(Caught::NotOurs);
    }
    REPAIRED.with(|r| r.borrow_mut().push((tab, url.to_string())));
    add_other(tab);
    apply().await?;
    tabs::update(
        tab,
        &tabs::UpdateProperties {
            url: Some(url),
            ..Default::default()
        },
    )
    .await?;
    Ok(Caught::Repaired)
}
