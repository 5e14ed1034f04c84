//! Client-defined tools (BTCP / WebMCP), below the tools: a tab's namespaces are the page's
//! registered providers plus the built-in tools as `browser`. The page side is `page.rs`, code
//! mode `script.rs`; one call path (`call_method`) serves btcp_call and code mode. The four btcp
//! tools are declared in `tools/btcp.rs`, which hands down the tools' dispatch as a
//! [`Dispatch`]: built-in calls go through it like any command (group check included), and
//! nothing here imports the tools.

pub mod page;
pub mod script;

use protocol::btcp::{PageTools, BROWSER};
use protocol::{schema, ToolResult};
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// Runs a built-in tool by name (`tools::dispatch`, handed down by the btcp tools).
pub type Dispatch =
    fn(&str, Map<String, Value>) -> Pin<Box<dyn Future<Output = Result<ToolResult, String>>>>;

/// What one method call gave: a built-in tool's result, or a page method's JSON value.
pub enum Answer {
    Builtin(ToolResult),
    Page(Option<Value>),
}

/// Calls `namespace.method(args)` on the tab: arguments checked against the method's schema;
/// `browser` methods go through `dispatch` with `tabId` defaulting to this tab.
pub async fn call_method(
    dispatch: Dispatch,
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
        return dispatch(method, args).await.map(Answer::Builtin);
    }
    schema::check_args(&spec.input_schema, &args)
        .map_err(|e| format!("{namespace}.{method}: {e}"))?;
    page::invoke(tab, namespace, method, &args, page_timeout_ms)
        .await
        .map(Answer::Page)
}
