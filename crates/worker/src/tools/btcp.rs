//! btcp_interfaces, btcp_get_interface, btcp_call and btcp_run_script: the client-defined tools
//! (BTCP / WebMCP) of a tab. The page side, the one call path and code mode are `crate::btcp`'s,
//! below the tools; a `browser.*` call there comes back to [`dispatch`](super::dispatch), which
//! these handlers hand down as a function value ([`browser`]), so `crate::btcp` imports nothing
//! of the tools.

use crate::btcp::{self, page, Answer};
use crate::tools::{bounded, dispatch, typed, Access, Output, Tool};
use protocol::btcp::declarations;
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

pub const INTERFACES: Tool = Tool {
    name: "btcp_interfaces",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, interfaces),
};

pub const GET_INTERFACE: Tool = Tool {
    name: "btcp_get_interface",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, get_interface),
};

pub const CALL: Tool = Tool {
    name: "btcp_call",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, call),
};

pub const RUN_SCRIPT: Tool = Tool {
    name: "btcp_run_script",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run_script),
};

/// Time a page method has to answer a btcp_call.
const PAGE_CALL_MS: u32 = 15_000;
const MAX_OUTPUT_CHARS: usize = 100_000;

/// A `browser.*` call of btcp_call or code mode: the one path of every command, group check and
/// guards included. Boxed, as it can lead back here (btcp_call → dispatch of a built-in tool).
fn browser(
    name: &str,
    args: Map<String, Value>,
) -> Pin<Box<dyn Future<Output = Result<ToolResult, String>>>> {
    let name = name.to_string();
    Box::pin(async move { dispatch(&name, args).await.map(Output::into_content) })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabArgs {
    tab_id: i32,
}

pub async fn interfaces(args: TabArgs) -> Result<ToolResult, String> {
    let tools = page::tools(args.tab_id).await?;
    let text = serde_json::to_string(&tools).map_err(|e| format!("internal: {e}"))?;
    Ok(ToolResult::text(text))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceArgs {
    tab_id: i32,
    namespace: String,
    #[serde(default)]
    format: Option<String>,
}

pub async fn get_interface(args: InterfaceArgs) -> Result<ToolResult, String> {
    let tools = page::tools(args.tab_id).await?;
    let ns = tools.get(&args.namespace)?;
    let text = match args.format.as_deref() {
        Some("json") => {
            serde_json::to_string(&ns.interface).map_err(|e| format!("internal: {e}"))?
        }
        _ => declarations(ns),
    };
    Ok(ToolResult::text(text))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallArgs {
    tab_id: i32,
    namespace: String,
    method: String,
    #[serde(default)]
    args: Map<String, Value>,
}

pub async fn call(args: CallArgs) -> Result<ToolResult, String> {
    let tools = page::tools(args.tab_id).await?;
    match btcp::call_method(
        browser,
        &tools,
        args.tab_id,
        &args.namespace,
        &args.method,
        args.args,
        PAGE_CALL_MS,
    )
    .await?
    {
        Answer::Builtin(result) => Ok(result),
        Answer::Page(value) => Ok(ToolResult::text(bounded(
            value.map_or_else(|| "undefined".into(), |v| v.to_string()),
            MAX_OUTPUT_CHARS,
        ))),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptArgs {
    tab_id: i32,
    script: String,
    #[serde(default)]
    timeout_ms: Option<u32>,
}

pub async fn run_script(args: ScriptArgs) -> Result<ToolResult, String> {
    btcp::script::run(browser, args.tab_id, &args.script, args.timeout_ms).await
}
