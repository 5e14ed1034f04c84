//! update_plan, and the reserved tools that this extension does not offer.

use protocol::ToolResult;
use serde::Deserialize;

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
