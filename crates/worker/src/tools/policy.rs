//! set_policy: the backend's policy for the group's tabs (hosts, dialogs, download paths); the
//! policy itself is `crate::policy`'s. Only a backend sets it: the catalog marks it
//! `backendOnly`, so the MCP server does not offer it and code mode's `browser.*` lacks it.

use crate::tools::{typed, Tool};

pub const TOOL: Tool = Tool {
    name: "set_policy",
    tab: None,
    during_dialog: false,
    run: |args| typed(args, crate::policy::set),
};
