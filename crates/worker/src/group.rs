//! The agents' tab groups: the security boundary. Each agent (a connection, or an MCP session
//! within one, see `agent`) has its own group, and only its group's tabs accept its commands;
//! a tab of another agent's group is refused as such. Found again after a worker restart (the
//! id kept in session storage, then by the agent's title).

use crate::agent::{self, Agent};
use crate::chrome::storage::{self, Area};
use crate::chrome::tab_groups::{self, Look};
use crate::chrome::tabs::{self, GroupTarget, Tab};
use crate::chrome::windows;
use crate::vec_map::VecMap;
use std::cell::{Cell, RefCell};

const GROUP_KEY: &str = "groupId";

thread_local! {
    /// Per agent (by `Agent::key`), the group id last found or created; Chrome never reuses a
    /// group id within a session.
    static KNOWN: RefCell<VecMap<String, i32>> = const { RefCell::new(VecMap::new()) };
    /// The agents' group tabs as Chrome last reported them: from `chrome.tabs.get` in `check_tab`,
    /// replaced by every `chrome.tabs.onUpdated` (which carries the whole tab), dropped when
    /// the tab leaves the groups, closes, is replaced or moves to another window.
    static REPORTED: RefCell<VecMap<i32, Tab>> = const { RefCell::new(VecMap::new()) };
    /// Bumped by every tab event: a `chrome.tabs.get` answered before an event that came in
    /// while it was awaited is older than that event and is not recorded.
    static EVENTS: Cell<u64> = const { Cell::new(0) };
}

/// Where the agent's group id is kept ("groupId" for the primary, as it always was).
fn storage_key(agent: &Agent) -> String {
    if agent.is_primary() {
        GROUP_KEY.to_string()
    } else {
        format!("{GROUP_KEY}:{}", agent.key())
    }
}

fn known(agent: &Agent) -> Option<i32> {
    KNOWN.with(|k| k.borrow().get(&agent.key()).copied())
}

/// Whether the group is one of the agents' groups known to this worker.
fn is_known(group: i32) -> bool {
    group >= 0 && KNOWN.with(|k| k.borrow().values().any(|g| *g == group))
}

/// Every agent's group id known to this worker.
pub fn known_groups() -> Vec<i32> {
    KNOWN.with(|k| k.borrow().values().copied().collect())
}

/// A group tab of the current agent as Chrome last reported it, without asking Chrome again.
/// Its group and address are as current as the tab events the worker has handled; whether
/// that is current enough to act on is the boundary's call (`boundary_guard::current`).
pub fn reported(tab_id: i64) -> Option<Tab> {
    let id = i32::try_from(tab_id).ok()?;
    let group = known(&agent::current())?;
    REPORTED.with(|r| r.borrow().get(&id).filter(|t| t.group_id == group).cloned())
}

/// A tab of any agent's group as last reported (outside any command: tab events).
pub fn reported_any(tab_id: i32) -> Option<Tab> {
    REPORTED.with(|r| {
        r.borrow()
            .get(&tab_id)
            .filter(|t| is_known(t.group_id))
            .cloned()
    })
}

/// `chrome.tabs.onUpdated`, with the tab as it is now: a group tab's record is replaced; a tab
/// that is not (or no longer) in an agent's group is dropped.
pub fn tab_updated(tab: Tab) {
    EVENTS.with(|e| e.set(e.get() + 1));
    let Some(id) = tab.id else { return };
    let ours = is_known(tab.group_id);
    REPORTED.with(|r| {
        let mut r = r.borrow_mut();
        if ours {
            r.insert(id, tab);
        } else {
            r.remove(&id);
        }
    });
}

/// The tab closed, was replaced by another, or moved to another window: asked again next time.
pub fn tab_gone(tab_id: i32) {
    EVENTS.with(|e| e.set(e.get() + 1));
    REPORTED.with(|r| r.borrow_mut().remove(&tab_id));
}

/// Whether the tab's report is kept.
pub fn holds(tab: i32) -> bool {
    REPORTED.with(|r| r.borrow().contains_key(&tab))
}

fn remember(agent: &Agent, id: i32) -> i32 {
    KNOWN.with(|k| k.borrow_mut().insert(agent.key(), id));
    id
}

/// The current agent's live group's id, if there is one.
pub async fn find() -> Result<Option<i32>, String> {
    find_for(&agent::current()).await
}

/// The agent's live group's id, if there is one.
pub async fn find_for(agent: &Agent) -> Result<Option<i32>, String> {
    let key = storage_key(agent);
    let known = match known(agent) {
        Some(id) => Some(id),
        None => storage::get::<i32>(Area::Session, &key).await?,
    };
    if let Some(id) = known {
        if tab_groups::get(id).await.is_some() {
            return Ok(Some(remember(agent, id)));
        }
        KNOWN.with(|k| k.borrow_mut().remove(&agent.key()));
    }
    let title = agent::look(agent).title;
    let taken = known_groups();
    // Also one left showing the activity sign by a worker that stopped while a command ran.
    let marked = format!("{}{title}", crate::activity::MARK);
    let mut found = None;
    for t in [&title, &marked] {
        found = tab_groups::query_by_title(t)
            .await?
            .into_iter()
            .map(|g| g.id)
            .find(|g| !taken.contains(g));
        if found.is_some() {
            break;
        }
    }
    if let Some(id) = found {
        storage::set(Area::Session, &key, &id).await?;
        remember(agent, id);
    }
    Ok(found)
}

/// Whether `group` is one of the agents' groups (looked up by title when this worker has not
/// met it yet, say after a restart), and whose.
pub async fn owner_of(group: i32) -> Option<Agent> {
    if group < 0 {
        return None;
    }
    let key = KNOWN.with(|k| {
        k.borrow()
            .iter()
            .find(|(_, g)| **g == group)
            .map(|(key, _)| key.clone())
    });
    if let Some(key) = key {
        return Some(Agent::from_key(&key));
    }
    let title = tab_groups::get(group).await?.title?;
    let mut candidates = vec![Agent::default()];
    candidates.extend(agent::connections().into_iter().map(|c| Agent::of(c, None)));
    for a in candidates {
        if agent::look(&a).title == title && find_for(&a).await.ok().flatten() == Some(group) {
            return Some(a);
        }
    }
    None
}

/// The current agent's group, creating it (a normal window with one grouped tab) when none
/// exists. Returns the group id and, when it was just created, its first tab.
pub async fn find_or_create() -> Result<(i32, Option<Tab>), String> {
    let agent = agent::current();
    if let Some(id) = find_for(&agent).await? {
        return Ok((id, None));
    }
    let window = windows::create_normal("about:blank").await?;
    let tab = window
        .tabs
        .into_iter()
        .next()
        .ok_or("chrome.windows.create returned a window without a tab")?;
    let tab_id = tab.id.ok_or("the new window's tab has no id")?;
    crate::debugging_bar::tab_created(tab_id);
    let group_id = tabs::group(&[tab_id], GroupTarget::NewInWindow(window.id)).await?;
    let look = agent::look(&agent);
    tab_groups::update(
        group_id,
        &Look {
            title: &look.title,
            color: &look.color,
            collapsed: false,
        },
    )
    .await?;
    storage::set(Area::Session, &storage_key(&agent), &group_id).await?;
    remember(&agent, group_id);
    Ok((group_id, Some(tabs::get(tab_id).await?)))
}

/// The tabs of the group, in tab-strip order.
pub async fn tabs_of(group_id: i32) -> Result<Vec<Tab>, String> {
    tabs::query(&tabs::Query {
        group_id: Some(group_id),
        window_id: None,
    })
    .await
}

/// The tabs of every agent's group this worker knows (after `find_all`).
pub async fn all_tabs() -> Result<Vec<Tab>, String> {
    let mut all = Vec::new();
    for g in find_all().await {
        all.extend(tabs_of(g).await?);
    }
    Ok(all)
}

/// Every agent's live group: the primary's and each connection's (a named agent's group is
/// known once one of its commands met it).
pub async fn find_all() -> Vec<i32> {
    let mut agents = vec![Agent::default()];
    agents.extend(agent::connections().into_iter().map(|c| Agent::of(c, None)));
    for a in &agents {
        let _ = find_for(a).await;
    }
    let mut groups = known_groups();
    protocol::sort::sort_dedup(&mut groups);
    groups
}

/// The tab, if it belongs to the current agent's group; otherwise an error that says why (it
/// does not exist, it is in another agent's group, it is in no agent's group) and lists the
/// valid ids. Takes the id as the command gave it: one that is not a tab id at all (negative,
/// too large) gets the same answer as a tab that does not exist, without asking Chrome.
pub async fn check_tab(tab_id: i64) -> Result<Tab, String> {
    let agent = agent::current();
    let events = EVENTS.with(Cell::get);
    let tab = match i32::try_from(tab_id) {
        Ok(id) if id >= 0 => tabs::get(id).await.ok(),
        _ => None,
    };
    // Fast path: the tab is in the group we know, which therefore still exists.
    if let (Some(known), Some(tab)) = (known(&agent), tab.as_ref()) {
        if tab.group_id == known {
            record(tab, events);
            return Ok(tab.clone());
        }
    }
    let group = find_for(&agent).await?;
    if let (Some(group_id), Some(tab)) = (group, tab.as_ref()) {
        if tab.group_id == group_id {
            record(tab, events);
            return Ok(tab.clone());
        }
    }
    let another = match &tab {
        Some(t) => another_agents(&agent, t.group_id).await,
        None => false,
    };
    let why = match &tab {
        None => "does not exist",
        Some(_) if another => {
            "belongs to another agent's tab group: this connection drives only the tabs of its own group"
        }
        Some(_) => "is not in the automation tab group",
    };
    Err(format!("Tab {tab_id} {why}{}", valid_ids(group).await?))
}

/// Whether the group is another agent's (known here, or titled as one).
async fn another_agents(agent: &Agent, group: i32) -> bool {
    if group < 0 {
        return false;
    }
    if is_known(group) {
        return known(agent) != Some(group);
    }
    let Some(title) = tab_groups::get(group).await.and_then(|g| g.title) else {
        return false;
    };
    agent::other_titles(agent).contains(&title)
}

/// Keeps a group tab as `chrome.tabs.get` reported it, unless a tab event came in while the
/// answer was awaited (`events`: the count before asking): the event may be newer.
fn record(tab: &Tab, events: u64) {
    if let (Some(id), true) = (tab.id, EVENTS.with(Cell::get) == events) {
        REPORTED.with(|r| r.borrow_mut().insert(id, tab.clone()));
    }
}

/// "Valid tab ids: 3, 4. Call tabs_context_mcp to list them." (or how to create the group):
/// said after every message about a wrong `tabId`.
pub async fn valid_tabs_note() -> String {
    let listed = match find().await {
        Ok(group) => valid_ids(group).await,
        Err(e) => Err(e),
    };
    match listed {
        Ok(end) => {
            let end = end.trim_start_matches([',', '.', ' ']);
            // Our own English sentence: an ASCII capital (no Unicode case tables in the wasm).
            let mut end = end.to_string();
            if let Some(first) = end.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            end
        }
        Err(e) => format!("The valid tab ids could not be listed: {e}"),
    }
}

async fn valid_ids(group: Option<i32>) -> Result<String, String> {
    let valid = match group {
        Some(g) => tabs_of(g)
            .await?
            .iter()
            .filter_map(|t| t.id)
            .map(|id| id.to_string())
            .collect::<Vec<_>>(),
        None => Vec::new(),
    };
    Ok(if valid.is_empty() {
        ", and there is no automation tab group yet. Call tabs_context_mcp with createIfEmpty: true first.".to_string()
    } else {
        format!(
            ". Valid tab ids: {}. Call tabs_context_mcp to list them.",
            valid.join(", ")
        )
    })
}

#[cfg(test)]
#[test]
fn its_key_is_read_early_as_the_worker_starts() {
    assert!(crate::chrome::storage::early_reads::asks(
        "session", GROUP_KEY
    ));
}
