//! chrome.action: the toolbar icon's badge and title, for every tab or for one.

use crate::js::error_text;
use crate::js::settle;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeText)]
    fn set_badge_text_js(details: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = getBadgeText)]
    fn get_badge_text_js(details: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setBadgeBackgroundColor)]
    fn set_badge_color_js(details: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "action"], js_name = setTitle)]
    fn set_title_js(details: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

fn details(key: &str, value: &str) -> JsValue {
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &JsValue::from_str(key), &JsValue::from_str(value));
    o.into()
}

/// Sets the badge text ("" removes the badge).
pub async fn set_badge_text(text: &str) -> Result<(), String> {
    settle(set_badge_text_js(&details("text", text)))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// The badge text ("" when there is none).
pub async fn badge_text() -> Result<String, String> {
    settle(get_badge_text_js(&js_sys::Object::new().into()))
        .await
        .map(|v| v.as_string().unwrap_or_default())
        .map_err(|e| error_text(&e))
}

/// Sets the badge colour (a CSS colour such as `#1a73e8`).
pub async fn set_badge_color(color: &str) -> Result<(), String> {
    settle(set_badge_color_js(&details("color", color)))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// `{key: value, tabId?}`; a `None` value is `null` (for one tab: back to the default).
fn for_tab(key: &str, value: Option<&str>, tab: Option<i32>) -> JsValue {
    let o = js_sys::Object::new();
    let v = value.map_or(JsValue::NULL, JsValue::from_str);
    let _ = js_sys::Reflect::set(&o, &JsValue::from_str(key), &v);
    if let Some(tab) = tab {
        let _ = js_sys::Reflect::set(&o, &JsValue::from_str("tabId"), &JsValue::from(tab));
    }
    o.into()
}

/// The badge text of one tab (`None`: the default again).
pub async fn set_tab_badge_text(tab: i32, text: Option<&str>) -> Result<(), String> {
    settle(set_badge_text_js(&for_tab("text", text, Some(tab))))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// The badge colour of one tab.
pub async fn set_tab_badge_color(tab: i32, color: &str) -> Result<(), String> {
    settle(set_badge_color_js(&for_tab(
        "color",
        Some(color),
        Some(tab),
    )))
    .await
    .map(drop)
    .map_err(|e| error_text(&e))
}

/// The toolbar button's title (its tooltip), for one tab or every tab.
pub async fn set_title(tab: Option<i32>, title: &str) -> Result<(), String> {
    settle(set_title_js(&for_tab("title", Some(title), tab)))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}
