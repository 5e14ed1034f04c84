//! tabs_context_mcp, tabs_create_mcp, tabs_close_mcp.

use crate::chrome::tabs::{self, CreateProperties, GroupTarget, Tab};
use crate::tools::{typed, Access, Tool};
use crate::{active, group};
use protocol::ToolResult;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const CONTEXT: Tool = Tool {
    name: "tabs_context_mcp",
    tab: None,
    during_dialog: false,
    run: |args| typed(args, context),
};

pub const CREATE: Tool = Tool {
    name: "tabs_create_mcp",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(async { create().await.map(Into::into) }),
};

pub const CLOSE: Tool = Tool {
    name: "tabs_close_mcp",
    tab: Some(Access::Closes),
    during_dialog: true,
    run: |args| typed(args, close),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextArgs {
    #[serde(default)]
    create_if_empty: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TabInfo<'a> {
    tab_id: i32,
    title: &'a str,
    url: &'a str,
    active: bool,
}

/// `{"availableTabs":[…],"tabGroupId":G}` on the first line, then a readable list.
async fn context_text(group_id: i32) -> Result<String, String> {
    active::settled().await;
    let tabs = group::tabs_of(group_id).await?;
    let active = active::among(&tabs).await;
    let infos: Vec<TabInfo> = tabs
        .iter()
        .filter_map(|t| {
            Some(TabInfo {
                tab_id: t.id?,
                title: t.title.as_deref().unwrap_or(""),
                url: t.url.as_deref().or(t.pending_url.as_deref()).unwrap_or(""),
                active: t.id == active,
            })
        })
        .collect();
    let head = json!({"availableTabs": infos, "tabGroupId": group_id}).to_string();
    let list = infos
        .iter()
        .map(|t| {
            let mark = if t.active { " (active)" } else { "" };
            format!("• tabId {}{mark}: \"{}\" ({})", t.tab_id, t.title, t.url)
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(format!("{head}\n\nTabs in the automation group:\n{list}"))
}

pub async fn context(args: ContextArgs) -> Result<ToolResult, String> {
    let group_id = if args.create_if_empty {
        let (id, created) = group::find_or_create().await?;
        if let Some(tab) = created.and_then(|t| t.id) {
            active::joined(tab, true).await;
            record(tab).await;
        }
        id
    } else {
        match group::find().await? {
            Some(id) => id,
            None => {
                return Ok(ToolResult::text(
                    "No automation tab group exists. Use createIfEmpty: true to create one.",
                ))
            }
        }
    };
    Ok(ToolResult::text(context_text(group_id).await?))
}

pub async fn create() -> Result<ToolResult, String> {
    let (group_id, created) = group::find_or_create().await?;
    let tab: Tab = match created {
        Some(tab) => tab,
        None => {
            let window_id = group::tabs_of(group_id)
                .await?
                .first()
                .map(|t| t.window_id)
                .ok_or("the automation group has no tabs")?;
            let tab = tabs::create(&CreateProperties {
                window_id: Some(window_id),
                url: Some("about:blank"),
                active: true,
            })
            .await?;
            let id = tab.id.ok_or("the new tab has no id")?;
            crate::debugging_bar::tab_created(id);
            tabs::group(&[id], GroupTarget::Existing(group_id)).await?;
            tab
        }
    };
    let id = tab.id.ok_or("the new tab has no id")?;
    // The new tab is the group's only active one (and Chrome's selected tab of its window).
    active::joined(id, true).await;
    record(id).await;
    Ok(ToolResult::text(format!(
        "Created new tab. Tab ID: {id}\n\n{}",
        context_text(group_id).await?
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseArgs {
    tab_id: i32,
}

/// How long a tab may take to close (a hung page holds a close up) before the command says so.
const CLOSE_BOUND_MS: u32 = 10_000;

pub async fn close(args: CloseArgs) -> Result<ToolResult, String> {
    // A debugger attached to a page that no longer answers keeps Chrome from closing it.
    if crate::cdp::is_attached(args.tab_id) {
        crate::cdp::idle::detach(args.tab_id).await;
    }
    crate::js::with_timeout(
        CLOSE_BOUND_MS,
        &format!("Closing tab {}", args.tab_id),
        tabs::remove(args.tab_id),
    )
    .await??;
    let rest = match group::find().await? {
        Some(g) => context_text(g).await?,
        None => "The automation group has no tabs left.".into(),
    };
    Ok(ToolResult::text(format!(
        "Closed tab {}.\n\n{rest}",
        args.tab_id
    )))
}

/// A tab that joins the group is recorded (console, network) from this moment.
async fn record(tab: i32) {
    if let Err(e) = crate::cdp::record::observe(tab).await {
        crate::js::log(&format!("recording tab {tab}: {e}"));
    }
}
