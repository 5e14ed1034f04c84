//! update_plan, and the reserved tools that this extension does not offer.

use crate::tools::{typed, Tool};
use protocol::ToolResult;
use serde::Deserialize;

pub const UPDATE: Tool = Tool {
    name: "update_plan",
    tab: None,
    during_dialog: false,
    run: |args| typed(args, update),
};

pub const GIF_CREATOR: Tool = Tool {
    name: "gif_creator",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(std::future::ready(Ok(reserved("gif_creator").into()))),
};

pub const SHORTCUTS_LIST: Tool = Tool {
    name: "shortcuts_list",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(std::future::ready(Ok(reserved("shortcuts_list").into()))),
};

pub const SHORTCUTS_EXECUTE: Tool = Tool {
    name: "shortcuts_execute",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(std::future::ready(Ok(reserved("shortcuts_execute").into()))),
};

pub const SWITCH_BROWSER: Tool = Tool {
    name: "switch_browser",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(std::future::ready(Ok(reserved("switch_browser").into()))),
};

#[derive(Deserialize)]
pub struct Args {
    domains: Vec<String>,
    approach: Vec<String>,
}

pub async fn update(args: Args) -> Result<ToolResult, String> {
    let domains = args.domains.join(", ");
    let steps: Vec<String> = args
        .approach
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect();
    Ok(ToolResult::text(format!(
        "Plan approved automatically.\nDomains: {domains}\nApproach:\n{}",
        steps.join("\n")
    )))
}

/// gif_creator, shortcuts_list, shortcuts_execute, switch_browser.
pub fn reserved(tool: &str) -> ToolResult {
    ToolResult::text(format!(
        "{tool} is not available in this extension. Use the other browser tools (computer, read_page, find, navigate, …) instead."
    ))
}
