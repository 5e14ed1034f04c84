//! get_page_text: the readable text of a group tab (main content when marked, else the body),
//! whitespace collapsed, bounded (page_text.js does the page-side part).

use crate::cdp;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "get_page_text",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

const MAX_TEXT_CHARS: usize = 50_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let expression = format!(
        "({})({MAX_TEXT_CHARS})",
        crate::js::page_js!("tools/page_text.js")
    );
    let out = cdp::send(
        args.tab_id,
        "Runtime.evaluate",
        json!({"expression": expression, "returnByValue": true, "timeout": 5000}),
    )
    .await?;
    if out.get("exceptionDetails").is_some() {
        return Err("Reading the page's text failed (the page threw an exception).".into());
    }
    let mut out = out;
    let v = out
        .pointer_mut("/result/value")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let get = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    Ok(ToolResult::text(format!(
        "Title: {}\nURL: {}\n\n{}",
        get("title"),
        get("url"),
        get("text")
    )))
}
