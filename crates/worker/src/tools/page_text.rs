//! get_page_text: the readable text of a group tab (main content when marked, else the body),
//! whitespace collapsed, bounded. page_text.js writes the whole answer in the page, and the
//! worker reads it as the one string it is (not as JSON text parsed and formatted again).

use crate::cdp;
use crate::js::field;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::json;

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
    let out = cdp::send_js(
        args.tab_id,
        "Runtime.evaluate",
        json!({"expression": expression, "returnByValue": true, "timeout": 5000}),
    )
    .await?;
    let out = cdp::thrown_js(out).map_err(|e| match e {
        cdp::Error::Exception(_) => {
            "Reading the page's text failed (the page threw an exception).".to_string()
        }
        e => e.to_string(),
    })?;
    match field(&field(&out, "result"), "value").as_string() {
        Some(answer) => Ok(ToolResult::text(answer)),
        None => Err("Reading the page's text failed (the page gave no text).".into()),
    }
}
