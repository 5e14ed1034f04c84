//! chrome.webNavigation: whether a tab's page is the browser's error page.

use crate::js::error_text;
use crate::js::settle;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "webNavigation"], js_name = getFrame)]
    fn get_frame_js(details: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

/// Whether the tab's top frame shows an error page (its last navigation failed).
pub async fn shows_error_page(tab: i32) -> Result<bool, String> {
    let details = crate::js::to_js(&serde_json::json!({"tabId": tab, "frameId": 0}))?;
    let frame = settle(get_frame_js(&details))
        .await
        .map_err(|e| error_text(&e))?;
    if frame.is_null() || frame.is_undefined() {
        return Ok(false);
    }
    Ok(
        js_sys::Reflect::get(&frame, &JsValue::from_str("errorOccurred"))
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
    )
}
