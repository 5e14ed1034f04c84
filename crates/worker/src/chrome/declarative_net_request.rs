//! chrome.declarativeNetRequest: the session rules that refuse a group tab's navigations before
//! their requests leave (kept by Chrome across worker restarts, dropped when the browser quits).

use crate::js::settle;
use crate::js::{error_text, to_js};
use serde_json::Value;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "declarativeNetRequest"], js_name = updateSessionRules)]
    fn update_session_rules_js(options: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

/// Removes the rules `remove` and adds `add`, in one step (all or nothing).
pub async fn update_session_rules(remove: &[u32], add: &[Value]) -> Result<(), String> {
    let options = to_js(&serde_json::json!({"removeRuleIds": remove, "addRules": add}))?;
    settle(update_session_rules_js(&options))
        .await
        .map(drop)
        .map_err(|e| {
            format!(
                "chrome.declarativeNetRequest.updateSessionRules: {}",
                error_text(&e)
            )
        })
}
