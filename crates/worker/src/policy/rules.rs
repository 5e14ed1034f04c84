//! The policy's hosts as the browser's own request rules: chrome.declarativeNetRequest session
//! rules, so Chrome refuses a group tab's page or frame request outside them before it leaves,
//! whoever started it (a command, a redirect, a link, a script, a person typing), with no
//! debugger attached. Two sets:
//! - the groups' tabs by id (`tabIds`): a tab is named, as its agent's, from when the worker sees
//!   it join an agent's group (or be opened by a group tab), and before any command runs on it
//!   ([`cover`]);
//! - the tabs a group tab's page opens, before the worker can know them (a link with
//!   `target=_blank` sends its first request before `chrome.tabs.onCreated` reaches the
//!   worker): top-level requests that a page on a host the groups' tabs show started, in any tab
//!   not known (`excludedTabIds`: every tab outside the groups the worker knows of, and the
//!   groups' own, which the first set holds). A person's own tab that it catches (a ctrl+click in the person's tab on a site a
//!   group tab also shows, before the new tab is known) is excluded and loaded again at once
//!   ([`repair`]), so it never refuses a person's own navigation for longer than that.
//!
//! Session rules outlive the worker; the tabs they name are refreshed at each worker start.
//!
//! Both sets come in two layers, and the first is per agent (`host_rules::browser_rules`, which
//! makes the whole set): each agent's tabs are named in rules of its own policy, with its
//! allowed hosts narrowed to the person's allowed sites, at [`host_rules::BACKEND_PRIORITY`]..+2;
//! every group tab is named in the person's blocked sites (Options) at
//! [`host_rules::PERSON_PRIORITY`], above every agent's rule, so the person's rules win. The
//! rules for opened tabs are per set of shown hosts (`host_rules::opener_sets`): a host only
//! one agent's tabs show holds the tabs its pages open to that agent's policy; a host two
//! agents' tabs show (or a host and its subdomain), whose opened tab cannot be attributed, to
//! both (refused what either refuses).
//!
//! The rules are numbered from [`FIRST_ID`] without gaps on every write, which removes the ids of
//! the previous one: at most `host_rules::MAX_SESSION_RULES` (Chrome's session-rule bound), of
//! which at most `host_rules::MAX_REGEX_RULES` regular expressions, which `set_policy` keeps
//! (`policy::set` refuses a policy that could need more, `host_rules::worst_case`).

use crate::agent::Agent;
use crate::chrome::declarative_net_request as dnr;
use crate::chrome::tabs::{self, Tab};
use protocol::host_rules::{self, web_host, AgentTabs, HostPolicy};
use std::cell::{Cell, RefCell};

/// The first rule id; the rules take the ids from it on, one each.
pub const FIRST_ID: u32 = 1_000;

/// True when neither the person's rules nor any agent's policy refuse anything.
fn open() -> bool {
    super::all_open()
}

/// A tab the rules name: its agent (`Agent::key`) and the web host it shows (as far as the
/// worker knows).
struct Covered {
    tab: i32,
    owner: String,
    host: Option<String>,
}

thread_local! {
    /// The tabs the rules name. Plain lists (a few tabs; the worker's size counts more than
    /// lookups in them).
    static COVERED: RefCell<Vec<Covered>> = const { RefCell::new(Vec::new()) };
    /// Tabs known to be outside the group: the rules for opened tabs leave them alone.
    static OTHERS: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// The tabs whose refused navigation was loaded again (once each, in case another
    /// extension's blocker refused it).
    static REPAIRED: RefCell<Vec<(i32, String)>> = const { RefCell::new(Vec::new()) };
    /// The last tabs that closed (Chrome never reuses a tab id in a session): an event that
    /// comes after `onRemoved` (the group change of a closing tab) does not list them again.
    static CLOSED: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// How many rules the last write left (from [`FIRST_ID`]); `None` before this worker's
    /// first, which removes every id a write can use.
    static WRITTEN: Cell<Option<u32>> = const { Cell::new(None) };
}

/// The agent whose tab the rules name it as (`Agent::key`), if they name it.
pub fn owner(tab: i32) -> Option<String> {
    COVERED.with(|c| {
        c.borrow()
            .iter()
            .find(|t| t.tab == tab)
            .map(|t| t.owner.clone())
    })
}

/// Whether the rules name the tab.
pub fn covers(tab: i32) -> bool {
    COVERED.with(|c| c.borrow().iter().any(|t| t.tab == tab))
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
        c.retain(|t| t.tab != tab);
        c.len() != before
    })
}

/// The distinct web hosts the covered tabs of `owner` show, sorted.
fn shown_by(covered: &[Covered], owner: &str) -> Vec<String> {
    let mut hosts: Vec<String> = covered
        .iter()
        .filter(|t| t.owner == owner)
        .filter_map(|t| t.host.clone())
        .collect();
    protocol::sort::sort_dedup(&mut hosts);
    hosts
}

/// Per agent with a covered tab, the web hosts its tabs show (what the rules for opened tabs
/// follow).
fn shown() -> Vec<(String, Vec<String>)> {
    COVERED.with(|c| {
        let c = c.borrow();
        let mut owners: Vec<&str> = c.iter().map(|t| t.owner.as_str()).collect();
        protocol::sort::sort_dedup(&mut owners);
        owners
            .into_iter()
            .map(|o| (o.to_string(), shown_by(&c, o)))
            .collect()
    })
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

/// Writes the rules for the policies in force and the tabs known, replacing the previous ones
/// in one step. Each call carries the whole state, made without an await before Chrome is
/// asked, and Chrome takes one worker's calls in order: the last call made is the state in
/// force.
pub async fn apply() -> Result<(), String> {
    let others: Vec<i32> = OTHERS.with(|o| o.borrow().clone());
    let owners: Vec<(String, Vec<i32>)> = COVERED.with(|c| {
        let mut by: Vec<(String, Vec<i32>)> = Vec::new();
        for t in c.borrow().iter() {
            match by.iter_mut().find(|(o, _)| *o == t.owner) {
                Some((_, tabs)) => tabs.push(t.tab),
                None => by.push((t.owner.clone(), vec![t.tab])),
            }
        }
        by
    });
    let shown = shown();
    let policies: Vec<HostPolicy> = owners.iter().map(|(o, _)| super::hosts_for(o)).collect();
    let agents: Vec<AgentTabs> = owners
        .iter()
        .zip(&policies)
        .map(|((o, tabs), policy)| AgentTabs {
            policy,
            tabs,
            shown: shown
                .iter()
                .find(|(s, _)| s == o)
                .map_or(&[][..], |(_, h)| h.as_slice()),
        })
        .collect();
    let rules = super::site_rules::with(|person| {
        host_rules::browser_rules(&person.hosts, &agents, &others, FIRST_ID)
    });
    let before = WRITTEN
        .with(Cell::get)
        .unwrap_or(host_rules::MAX_SESSION_RULES as u32);
    let remove: Vec<u32> = (FIRST_ID..FIRST_ID + before.max(rules.len() as u32)).collect();
    WRITTEN.with(|w| w.set(Some(rules.len() as u32)));
    let written = dnr::update_session_rules(&remove, &rules).await;
    if written.is_err() {
        // What Chrome holds is not known now: the next write removes every id again.
        WRITTEN.with(|w| w.set(None));
    }
    written
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
/// set): each agent's group's tabs as its own, and every other tab as someone else's.
pub async fn refresh() -> Result<(), String> {
    // The groups of agents that set a policy are found too (a named agent's group is known
    // only once met, and after a restart its policy must hold before its next command).
    for a in super::agents() {
        let _ = crate::group::find_for(&a).await;
    }
    let mut groups: Vec<(i32, String)> = Vec::new();
    for g in crate::group::find_all().await {
        if let Some(owner) = crate::group::owner_of(g).await {
            groups.push((g, owner.key()));
        }
    }
    let all = tabs::query(&tabs::Query::default()).await?;
    let covered: Vec<Covered> = all
        .iter()
        .filter_map(|t| {
            let owner = groups.iter().find(|(g, _)| *g == t.group_id)?.1.clone();
            Some(Covered {
                tab: t.id?,
                owner,
                host: host_of(t),
            })
        })
        .collect();
    let mut others: Vec<i32> = all
        .iter()
        .filter_map(|t| t.id)
        .filter(|id| !covered.iter().any(|t| t.tab == *id))
        .collect();
    protocol::sort::sort(&mut others);
    COVERED.with(|c| *c.borrow_mut() = covered);
    OTHERS.with(|o| *o.borrow_mut() = others);
    apply().await
}

/// Names the tab in the rules as `owner`'s (it joined that agent's group, or a page of that
/// agent's group opened it); returns once Chrome has them. Cheap when it is named so already.
pub async fn cover(tab: i32, owner: &Agent) -> Result<(), String> {
    remove_other(tab);
    let owner = owner.key();
    let known = COVERED.with(|c| {
        let mut c = c.borrow_mut();
        match c.iter_mut().find(|t| t.tab == tab) {
            Some(t) if t.owner == owner => true,
            Some(t) => {
                t.owner = owner;
                false
            }
            None => {
                c.push(Covered {
                    tab,
                    owner,
                    host: None,
                });
                false
            }
        }
    });
    if known || open() {
        return Ok(());
    }
    apply().await
}

/// A covered tab's address changed (`chrome.tabs.onUpdated`): the hosts whose pages' new tabs
/// are held to the policy follow what the group's tabs show.
pub fn shows(tab: &Tab) {
    let Some(id) = tab.id else { return };
    let host = host_of(tab);
    let before = shown();
    let changed = COVERED.with(|c| match c.borrow_mut().iter_mut().find(|t| t.tab == id) {
        Some(t) if t.host != host && host.is_some() => {
            t.host = host;
            true
        }
        _ => false,
    });
    if changed && shown() != before {
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
