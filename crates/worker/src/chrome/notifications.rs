//! chrome.notifications: a system notification (shown when the popup is closed) and its removal.

use crate::js::error_text;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = create)]
    async fn create_js(id: &str, options: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "notifications"], js_name = clear)]
    async fn clear_js(id: &str) -> Result<JsValue, JsValue>;
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
    create_js(id, &options)
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// Removes the notification `id` (nothing when there is none).
pub async fn clear(id: &str) -> Result<(), String> {
    clear_js(id).await.map(drop).map_err(|e| error_text(&e))
}
