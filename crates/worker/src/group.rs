//! The automation tab group: the security boundary. Only its tabs accept commands. Found again
//! after a worker restart (the id kept in session storage, then by the brand's title).

use crate::brand::brand;
use crate::chrome::storage::{self, Area};
use crate::chrome::tab_groups::{self, Look};
use crate::chrome::tabs::{self, GroupTarget, Tab};
use crate::chrome::windows;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

const GROUP_KEY: &str = "groupId";

thread_local! {
    /// The group id last found or created; Chrome never reuses a group id within a session.
    static KNOWN: Cell<Option<i32>> = const { Cell::new(None) };
    /// The group's tabs as Chrome last reported them: from `chrome.tabs.get` in `check_tab`,
    /// replaced by every `chrome.tabs.onUpdated` (which carries the whole tab), dropped when
    /// the tab leaves the group, closes, is replaced or moves to another window.
    static REPORTED: RefCell<HashMap<i32, Tab>> = RefCell::new(HashMap::new());
    /// Bumped by every tab event: a `chrome.tabs.get` answered before an event that came in
    /// while it was awaited is older than that event and is not recorded.
    static EVENTS: Cell<u64> = const { Cell::new(0) };
}

/// A group tab as Chrome last reported it, without asking Chrome again. Its group and address
/// are as current as the tab events the worker has handled; whether that is current enough to
/// act on is the boundary's call (`boundary_guard::current`).
pub fn reported(tab_id: i64) -> Option<Tab> {
    let id = i32::try_from(tab_id).ok()?;
    let group = KNOWN.with(Cell::get)?;
    REPORTED.with(|r| r.borrow().get(&id).filter(|t| t.group_id == group).cloned())
}

/// `chrome.tabs.onUpdated`, with the tab as it is now: a group tab's record is replaced; a tab
/// that is not (or no longer) in the group is dropped.
pub fn tab_updated(tab: Tab) {
    EVENTS.with(|e| e.set(e.get() + 1));
    let Some(id) = tab.id else { return };
    let ours = KNOWN.with(Cell::get) == Some(tab.group_id);
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

fn remember(id: i32) -> i32 {
    KNOWN.with(|k| k.set(Some(id)));
    id
}

/// The live group's id, if there is one.
pub async fn find() -> Result<Option<i32>, String> {
    let known = match KNOWN.with(Cell::get) {
        Some(id) => Some(id),
        None => storage::get::<i32>(Area::Session, GROUP_KEY).await?,
    };
    if let Some(id) = known {
        if tab_groups::get(id).await.is_some() {
            return Ok(Some(remember(id)));
        }
        KNOWN.with(|k| k.set(None));
    }
    let title = brand().group_title;
    let mut found = tab_groups::query_by_title(&title)
        .await?
        .into_iter()
        .map(|g| g.id)
        .next();
    if found.is_none() {
        // Left showing the activity sign by a worker that stopped while a command ran.
        let marked = format!("{}{title}", crate::activity::MARK);
        found = tab_groups::query_by_title(&marked)
            .await?
            .into_iter()
            .map(|g| g.id)
            .next();
    }
    if let Some(id) = found {
        storage::set(Area::Session, GROUP_KEY, &id).await?;
        remember(id);
    }
    Ok(found)
}

/// The group, creating it (a normal window with one grouped tab) when none exists.
/// Returns the group id and, when it was just created, its first tab.
pub async fn find_or_create() -> Result<(i32, Option<Tab>), String> {
    if let Some(id) = find().await? {
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
    let b = brand();
    tab_groups::update(
        group_id,
        &Look {
            title: &b.group_title,
            color: &b.group_color,
            collapsed: false,
        },
    )
    .await?;
    storage::set(Area::Session, GROUP_KEY, &group_id).await?;
    remember(group_id);
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

/// The tab, if it belongs to the automation group; otherwise an error that lists the valid ids.
/// Takes the id as the command gave it: one that is not a tab id at all (negative, too large)
/// gets the same answer as a tab that does not exist, without asking Chrome.
pub async fn check_tab(tab_id: i64) -> Result<Tab, String> {
    let events = EVENTS.with(Cell::get);
    let tab = match i32::try_from(tab_id) {
        Ok(id) if id >= 0 => tabs::get(id).await.ok(),
        _ => None,
    };
    // Fast path: the tab is in the group we know, which therefore still exists.
    if let (Some(known), Some(tab)) = (KNOWN.with(Cell::get), tab.as_ref()) {
        if tab.group_id == known {
            record(tab, events);
            return Ok(tab.clone());
        }
    }
    let group = find().await?;
    if let (Some(group_id), Some(tab)) = (group, tab.as_ref()) {
        if tab.group_id == group_id {
            record(tab, events);
            return Ok(tab.clone());
        }
    }
    let why = if tab.is_none() {
        "does not exist"
    } else {
        "is not in the automation tab group"
    };
    Err(format!("Tab {tab_id} {why}{}", valid_ids(group).await?))
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
