//! javascript_tool: evaluate in the page, REPL style (last expression's value, promises awaited,
//! top-level await), bounded in time and output.

use crate::cdp;
use crate::tools::bounded;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "javascript_tool",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

const EVAL_TIMEOUT_MS: u32 = 10_000;
const MAX_OUTPUT_CHARS: usize = 50_000;
const GROUP: &str = "browser-operator-js";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    text: String,
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    let start = crate::js::now_ms();
    let timed_out = |e: cdp::Error| {
        match e {
        cdp::Error::Timeout(_) => format!("The script did not finish within {} s (a promise that never settles, or a dialog open on the page).", EVAL_TIMEOUT_MS / 1000),
        e => e.to_string(),
    }
    };
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        json!({
            "expression": args.text,
            "replMode": true,
            "awaitPromise": true,
            "userGesture": true,
            "objectGroup": GROUP,
            "timeout": EVAL_TIMEOUT_MS,
        }),
        EVAL_TIMEOUT_MS + 1_000,
    )
    .await
    .map_err(timed_out)?;
    // REPL mode awaits top-level `await`, not a promise that is the value of the last
    // expression (`fetch(url)`, `Promise.resolve(5)`): that one is awaited here, within what
    // is left of the same bound.
    let promise = out
        .pointer("/result/subtype")
        .filter(|s| s.as_str() == Some("promise"))
        .and_then(|_| out.pointer("/result/objectId"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let out = match (cdp::thrown(out), promise) {
        (Ok(_), Some(promise)) => {
            let spent = (crate::js::now_ms() - start).max(0.0) as u32;
            let left = (EVAL_TIMEOUT_MS + 1_000).saturating_sub(spent).max(100);
            let awaited = cdp::send_with_timeout(
                tab,
                "Runtime.awaitPromise",
                json!({"promiseObjectId": promise, "returnByValue": false}),
                left,
            )
            .await;
            match awaited {
                Ok(v) => cdp::thrown(v),
                Err(e) => {
                    release(tab).await;
                    return Err(timed_out(e));
                }
            }
        }
        (out, _) => out,
    };
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            // Objects stay alive in the page until their group is released.
            release(tab).await;
            return Err(e.into());
        }
    };
    let text = describe_value(tab, out.get("result").unwrap_or(&Value::Null)).await;
    if out.pointer("/result/objectId").is_some() {
        release(tab).await;
    }
    Ok(ToolResult::text(bounded(text, MAX_OUTPUT_CHARS)))
}

async fn release(tab: i32) {
    let _ = cdp::send(
        tab,
        "Runtime.releaseObjectGroup",
        json!({"objectGroup": GROUP}),
    )
    .await;
}

/// A CDP RemoteObject as text: primitives as themselves, DOM nodes and errors by their
/// description, other objects as JSON.
async fn describe_value(tab: i32, obj: &Value) -> String {
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("undefined");
    let subtype = obj.get("subtype").and_then(Value::as_str);
    let description = obj.get("description").and_then(Value::as_str);
    if let Some(u) = obj.get("unserializableValue").and_then(Value::as_str) {
        return u.to_string();
    }
    match (kind, subtype) {
        ("undefined", _) => "undefined".into(),
        ("string", _) => obj
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ("number" | "boolean", _) => obj.get("value").map(Value::to_string).unwrap_or_default(),
        ("object", Some("null")) => "null".into(),
        ("object", Some("node" | "error" | "regexp" | "date"))
        | ("function" | "symbol" | "bigint", _) => description.unwrap_or(kind).to_string(),
        _ => match obj.get("objectId").and_then(Value::as_str) {
            Some(id) => as_json(tab, id)
                .await
                .unwrap_or_else(|| description.unwrap_or("Object").to_string()),
            None => description.unwrap_or("Object").to_string(),
        },
    }
}

async fn as_json(tab: i32, object_id: &str) -> Option<String> {
    let out = cdp::send(
        tab,
        "Runtime.callFunctionOn",
        json!({
            "objectId": object_id,
            "functionDeclaration": crate::js::page_js!("tools/javascript_json.js"),
            "returnByValue": true,
        }),
    )
    .await
    .ok()?;
    out.pointer("/result/value")
        .and_then(Value::as_str)
        .map(str::to_string)
}
