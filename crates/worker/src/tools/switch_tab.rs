//! switch_tab: a group tab becomes the group's active tab and the selected tab of its window
//! (the window is not focused, so the person's foreground window stays where it is).

use crate::active;
use crate::chrome::tabs::{self, UpdateProperties};
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;

pub const TOOL: Tool = Tool {
    name: "switch_tab",
    tab: Some(Access::Selects),
    during_dialog: true,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = tabs::update(
        args.tab_id,
        &UpdateProperties {
            active: Some(true),
            ..UpdateProperties::default()
        },
    )
    .await?;
    active::activate(args.tab_id).await;
    let title = tab.title.as_deref().unwrap_or("");
    let url = tab
        .url
        .as_deref()
        .or(tab.pending_url.as_deref())
        .unwrap_or("");
    Ok(ToolResult::text(format!(
        "Switched to tab {}: \"{title}\" ({url}). It is the automation group's active tab.",
        args.tab_id
    )))
}
