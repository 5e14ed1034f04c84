//! Client-defined tools (BTCP / WebMCP): the tools btcp_interfaces, btcp_get_interface,
//! btcp_call and btcp_run_script. A tab's namespaces are the page's registered providers plus
//! the built-in tools as `browser`; one call path (`call_method`) serves btcp_call and code mode,
//! and built-in calls go through `tools::dispatch` like any command (group check included).

mod page;
mod script;

use crate::tools::{self, bounded, typed, Access, Tool};
use protocol::btcp::{declarations, PageTools, BROWSER};
use protocol::{schema, ToolResult};
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
    match call_method(
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
    script::run(args.tab_id, &args.script, args.timeout_ms).await
}

/// What one method call gave: a built-in tool's result, or a page method's JSON value.
pub enum Answer {
    Builtin(ToolResult),
    Page(Option<Value>),
}

/// Calls `namespace.method(args)` on the tab: arguments checked against the method's schema;
/// `browser` methods go through `tools::dispatch` with `tabId` defaulting to this tab.
pub async fn call_method(
    tools: &PageTools,
    tab: i32,
    namespace: &str,
    method: &str,
    mut args: Map<String, Value>,
    page_timeout_ms: u32,
) -> Result<Answer, String> {
    let spec = tools.method(namespace, method)?;
    if namespace == BROWSER {
        if spec.input_schema.pointer("/properties/tabId").is_some() {
            args.entry("tabId").or_insert(Value::from(tab));
        }
        // Boxed: dispatch can lead back here (btcp_call → dispatch of a built-in tool).
        let fut: Pin<Box<dyn Future<Output = Result<ToolResult, String>>>> =
            Box::pin(tools::dispatch(method, args));
        return fut.await.map(Answer::Builtin);
    }
    schema::check_args(&spec.input_schema, &args)
        .map_err(|e| format!("{namespace}.{method}: {e}"))?;
    page::invoke(tab, namespace, method, &args, page_timeout_ms)
        .await
        .map(Answer::Page)
}
