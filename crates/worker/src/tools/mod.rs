//! The one dispatch path for every command, whatever brought it: look the tool up in the
//! catalog, check the arguments against its schema, check the tab against the automation group,
//! then run the tool.

mod computer;
mod javascript;
mod navigate;
mod tabs;

use crate::btcp;
use crate::group;
use protocol::{schema, ToolResult};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub async fn dispatch(tool: &str, args: Map<String, Value>) -> Result<ToolResult, String> {
    let spec = protocol::tool(tool).ok_or_else(|| format!("Unknown tool: {tool}"))?;
    schema::check_args(&spec.input_schema, &args)?;
    // Every tool that takes a tabId acts on that tab: the boundary is checked here, once.
    if let Some(tab_id) = args.get("tabId").and_then(Value::as_i64) {
        let tab_id = i32::try_from(tab_id).map_err(|_| format!("Tab {tab_id} does not exist."))?;
        group::check_tab(tab_id).await?;
    }
    match tool {
        "tabs_context_mcp" => tabs::context(parse(args)?).await,
        "tabs_create_mcp" => tabs::create().await,
        "tabs_close_mcp" => tabs::close(parse(args)?).await,
        "navigate" => navigate::run(parse(args)?).await,
        "computer" => computer::run(parse(args)?).await,
        "javascript_tool" => javascript::run(parse(args)?).await,
        "btcp_interfaces" => btcp::interfaces(parse(args)?).await,
        "btcp_get_interface" => btcp::get_interface(parse(args)?).await,
        "btcp_call" => btcp::call(parse(args)?).await,
        "btcp_run_script" => btcp::run_script(parse(args)?).await,
        _ => Err(format!("Unknown tool: {tool}")),
    }
}

/// Typed arguments; the schema check has already given the friendly message for most mistakes.
fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, String> {
    serde_json::from_value(Value::Object(args)).map_err(|e| format!("Invalid arguments: {e}"))
}

/// Cuts `text` to at most `max` characters, saying how much was left out.
pub fn bounded(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}… (truncated: {rest} more characters)", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn bounded_cuts_on_characters() {
        assert_eq!(bounded("abc".into(), 5), "abc");
        assert_eq!(
            bounded("héllo".into(), 2),
            "hé… (truncated: 3 more characters)"
        );
    }
}
