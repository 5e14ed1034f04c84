//! set_policy: the calling agent's policy for its own group's tabs (hosts, dialogs, download
//! paths); the policy itself is `crate::policy`'s. Another agent's tabs keep their own. Only a backend sets it: the catalog marks it
//! `backendOnly`, so the MCP server does not offer it and code mode's `browser.*` lacks it.
//!
//! A policy that answers dialogs ("dismiss", "accept") needs the debugger on every group tab:
//! Chrome reports a dialog only to a debugger attached when it opened. So setting one attaches
//! the agent's group's tabs now, and idle detach (`cdp::idle`) leaves them attached while it
//! holds.

use crate::cdp::{idle, record};
use crate::tools::{typed, Tool};
use crate::{agent, group, js, policy};
use protocol::ToolResult;

pub const TOOL: Tool = Tool {
    name: "set_policy",
    tab: None,
    during_dialog: false,
    run: |args| typed(args, set),
};

async fn set(args: policy::Args) -> Result<ToolResult, String> {
    let agent = agent::current();
    let answer = policy::set(&agent, args).await?;
    if policy::answers_dialogs(&agent) {
        attach_group_tabs().await;
    }
    // Idle detach follows the policy now (it holds off while dialogs are answered).
    idle::setting_changed();
    Ok(answer)
}

/// The agent's group's tabs recorded (attached), so their dialogs are seen and answered.
async fn attach_group_tabs() {
    let tabs = match group::find().await {
        Ok(Some(g)) => group::tabs_of(g).await.unwrap_or_default(),
        _ => Vec::new(),
    };
    for tab in tabs.iter().filter_map(|t| t.id) {
        if let Err(e) = record::observe(tab).await {
            js::log(&format!("attaching tab {tab} to answer its dialogs: {e}"));
        }
    }
}
