//! The automation tab group: the security boundary. Only its tabs accept commands. Found again
//! after a worker restart (the id kept in session storage, then by the brand's title).

use crate::brand::brand;
use crate::chrome::storage::{self, Area};
use crate::chrome::tab_groups::{self, Look};
use crate::chrome::tabs::{self, GroupTarget, Tab};
use crate::chrome::windows;
use std::cell::Cell;

const GROUP_KEY: &str = "groupId";

thread_local! {
    /// The group id last found or created; Chrome never reuses a group id within a session.
    static KNOWN: Cell<Option<i32>> = const { Cell::new(None) };
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
    let found = tab_groups::query_by_title(&title)
        .await?
        .into_iter()
        .map(|g| g.id)
        .next();
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
    let tab = match i32::try_from(tab_id) {
        Ok(id) if id >= 0 => tabs::get(id).await.ok(),
        _ => None,
    };
    // Fast path: the tab is in the group we know, which therefore still exists.
    if let (Some(known), Some(tab)) = (KNOWN.with(Cell::get), tab.as_ref()) {
        if tab.group_id == known {
            return Ok(tab.clone());
        }
    }
    let group = find().await?;
    if let (Some(group_id), Some(tab)) = (group, tab.as_ref()) {
        if tab.group_id == group_id {
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
            let mut chars = end.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
                .unwrap_or_default()
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

/// A tab opened by `opener`: it joins the group when the opener is a group tab whose page opened
/// a window just now (`Page.windowOpen`). Chrome also names an opener for tabs that the user or
/// another program creates next to a group tab; those stay out.
pub async fn adopt(tab_id: i32, opener: i32) -> Result<(), String> {
    let mut opened = false;
    for _ in 0..20 {
        if crate::observers::opened_window_within(opener, 3_000.0) {
            opened = true;
            break;
        }
        crate::js::sleep_ms(50).await;
    }
    if !opened {
        return Ok(());
    }
    let Some(group_id) = find().await? else {
        return Ok(());
    };
    if tabs::get(opener).await?.group_id != group_id {
        return Ok(());
    }
    tabs::group(&[tab_id], GroupTarget::Existing(group_id)).await?;
    crate::observers::observe(tab_id).await
}
