//! set_policy: the backend's policy for the group's tabs (hosts, dialogs, download paths); the
//! policy itself is `crate::policy`'s. Only a backend sets it: the catalog marks it
//! `backendOnly`, so the MCP server does not offer it and code mode's `browser.*` lacks it.
//!
//! A policy that answers dialogs ("dismiss", "accept") needs the debugger on every group tab:
//! Chrome reports a dialog only to a debugger attached when it opened. So setting one attaches
//! the group's tabs now, and idle detach (`cdp::idle`) leaves them attached while it holds.

use crate::cdp::{idle, record};
use crate::tools::{typed, Tool};
use crate::{group, js, policy};
use protocol::ToolResult;

pub const TOOL: Tool = Tool {
    name: "set_policy",
    tab: None,
    during_dialog: false,
    run: |args| typed(args, set),
};

async fn set(args: policy::Args) -> Result<ToolResult, String> {
    let answer = policy::set(args).await?;
    if policy::dialog_answer().is_some() {
        attach_group_tabs().await;
    }
    // Idle detach follows the policy now (it holds off while dialogs are answered).
    idle::setting_changed();
    Ok(answer)
}

/// Every group tab recorded (attached), so its dialogs are seen and answered: every agent's,
/// as the policy holds for all of them.
async fn attach_group_tabs() {
    let tabs = group::all_tabs().await.unwrap_or_default();
    for tab in tabs.iter().filter_map(|t| t.id) {
        if let Err(e) = record::observe(tab).await {
            js::log(&format!("attaching tab {tab} to answer its dialogs: {e}"));
        }
    }
}
