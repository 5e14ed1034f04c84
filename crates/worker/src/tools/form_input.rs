//! form_input: set a form control named by a ref so that the page's framework sees the change
//! (the page-side work is form_input.js).

use crate::cdp;
use crate::isolated_world as world;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "form_input",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    #[serde(rename = "ref")]
    target: String,
    value: Value,
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    if !matches!(
        args.value,
        Value::String(_) | Value::Bool(_) | Value::Number(_)
    ) {
        return Err("Invalid argument `value`: expected a string, boolean or number.".into());
    }
    let element = world::resolve(tab, &args.target).await?;
    let out = cdp::send_to(
        &element.target,
        "Runtime.callFunctionOn",
        json!({
            "objectId": element.object,
            "functionDeclaration": crate::js::page_js!("tools/form_input.js"),
            "arguments": [{"value": args.value}],
            "returnByValue": true,
            "userGesture": true,
        }),
    )
    .await?;
    let _ = cdp::send_to(
        &element.target,
        "Runtime.releaseObjectGroup",
        json!({"objectGroup": "browser-operator-refs"}),
    )
    .await;
    let out = cdp::thrown(out).map_err(|e| match e {
        cdp::Error::Exception(x) => format!(
            "Setting {} failed in the page: {}",
            args.target,
            x.description().unwrap_or("exception")
        ),
        e => e.to_string(),
    })?;
    let r = out.pointer("/result/value").cloned().unwrap_or(Value::Null);
    if r.get("kind").and_then(Value::as_str) == Some("password") {
        crate::journal::mark_secret(tab);
    }
    if let Some(e) = r.get("error").and_then(Value::as_str) {
        return Err(format!("{}: {e}", args.target));
    }
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Ok(ToolResult::text(format!(
        "Set {} ({}) from {:?} to {:?}",
        args.target,
        text("kind"),
        text("previous"),
        text("value")
    )))
}
