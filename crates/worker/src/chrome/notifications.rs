//! chrome.notifications: a system notification (shown when the popup is closed) and its removal.

use crate::js::error_text;
use crate::js::settle;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = create)]
    fn create_js(id: &str, options: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = clear)]
    fn clear_js(id: &str) -> Result<js_sys::Promise, JsValue>;
}

/// Shows a basic notification with the extension's icon under `id` (replacing one of that id).
pub async fn create(id: &str, title: &str, message: &str) -> Result<(), String> {
    let icon = format!(
        "chrome-extension://{}/extension/icons/icon128.png",
        super::runtime::id()
    );
    let options = crate::js::to_js(&serde_json::json!({
        "type": "basic",
        "iconUrl": icon,
        "title": title,
        "message": message,
        "requireInteraction": true,
    }))?;
    settle(create_js(id, &options))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// Removes the notification `id` (nothing when there is none).
pub async fn clear(id: &str) -> Result<(), String> {
    settle(clear_js(id))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}
