//! chrome.action: the toolbar icon's badge.

use crate::js::error_text;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeText)]
    async fn set_badge_text_js(details: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = getBadgeText)]
    async fn get_badge_text_js(details: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeBackgroundColor)]
    async fn set_badge_color_js(details: &JsValue) -> Result<JsValue, JsValue>;
}

fn details(key: &str, value: &str) -> JsValue {
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &JsValue::from_str(key), &JsValue::from_str(value));
    o.into()
}

/// Sets the badge text ("" removes the badge).
pub async fn set_badge_text(text: &str) -> Result<(), String> {
    set_badge_text_js(&details("text", text))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// The badge text ("" when there is none).
pub async fn badge_text() -> Result<String, String> {
    get_badge_text_js(&js_sys::Object::new().into())
        .await
        .map(|v| v.as_string().unwrap_or_default())
        .map_err(|e| error_text(&e))
}

/// Sets the badge colour (a CSS colour such as `#1a73e8`).
pub async fn set_badge_color(color: &str) -> Result<(), String> {
    set_badge_color_js(&details("color", color))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}
