//! chrome.debugger: attach to a tab and send Chrome DevTools Protocol commands to it or to one of
//! its child sessions (out-of-process iframes reached through `Target.setAutoAttach`).

use crate::js::settle;
use crate::js::{error_text, to_js};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = attach)]
    fn attach_debugger(target: &JsValue, version: &str) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = sendCommand)]
    fn send_command_js(
        target: &JsValue,
        method: &str,
        params: &JsValue,
    ) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = detach)]
    fn detach_debugger(target: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "debugger"], js_name = getTargets)]
    fn get_targets() -> Result<js_sys::Promise, JsValue>;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Debuggee<'a> {
    tab_id: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
}

fn debuggee(tab_id: i32) -> Result<JsValue, String> {
    to_js(&Debuggee {
        tab_id,
        session_id: None,
    })
}

pub async fn attach(tab_id: i32) -> Result<(), String> {
    settle(attach_debugger(&debuggee(tab_id)?, "1.3"))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// Sends one CDP command to the tab's session; the result as JSON (`null` when Chrome returns
/// nothing).
pub async fn send_command(tab_id: i32, method: &str, params: &Value) -> Result<Value, String> {
    send_command_in(tab_id, None, method, params).await
}

/// Sends one CDP command to the tab's session or, with `session_id`, to one of its child
/// sessions (flattened auto-attach).
pub async fn send_command_in(
    tab_id: i32,
    session_id: Option<&str>,
    method: &str,
    params: &Value,
) -> Result<Value, String> {
    json_result(send_command_js_in(tab_id, session_id, method, params).await?)
}

/// [`send_command_in`] with Chrome's result as the JS object it is: for a caller that reads one
/// large field of it (an image, a page's text) as a string, without the whole result going
/// through JSON text into Rust.
pub async fn send_command_js_in(
    tab_id: i32,
    session_id: Option<&str>,
    method: &str,
    params: &Value,
) -> Result<JsValue, String> {
    let target = to_js(&Debuggee { tab_id, session_id })?;
    settle(send_command_js(&target, method, &to_js(params)?))
        .await
        .map_err(|e| error_text(&e))
}

/// A CDP result as JSON (`null` when Chrome returns nothing).
pub fn json_result(out: JsValue) -> Result<Value, String> {
    if out.is_undefined() || out.is_null() {
        return Ok(Value::Null);
    }
    // One JSON.stringify and a parse in Rust: converting a large result (an accessibility tree
    // of 10,000 elements) field by field across the JS boundary takes seconds.
    let text = js_sys::JSON::stringify(&out)
        .map_err(|e| error_text(&e))?
        .as_string()
        .ok_or("the CDP result is not JSON")?;
    serde_json::from_str(&text).map_err(|e| format!("unexpected CDP result: {e}"))
}

pub async fn detach(tab_id: i32) -> Result<(), String> {
    settle(detach_debugger(&debuggee(tab_id)?))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetInfo {
    #[serde(default)]
    tab_id: Option<i32>,
    attached: bool,
}

/// Tabs that some debugger (this extension's or another client's) is attached to.
pub async fn attached_tabs() -> Result<Vec<i32>, String> {
    let targets: Vec<TargetInfo> =
        crate::js::from_js(settle(get_targets()).await.map_err(|e| error_text(&e))?)?;
    Ok(targets
        .into_iter()
        .filter(|t| t.attached)
        .filter_map(|t| t.tab_id)
        .collect())
}
