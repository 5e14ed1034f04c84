//! chrome.runtime: the extension's id, its contexts, and a trivial call that resets the worker's
//! idle timer.

use crate::js::error_text;
use crate::js::settle;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "runtime"], js_name = getPlatformInfo)]
    fn get_platform_info() -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getManifest)]
    fn get_manifest() -> JsValue;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "runtime"], js_name = getContexts)]
    fn get_contexts_js(filter: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

/// A cheap extension API call: Chrome counts it as activity and keeps the worker alive.
pub async fn touch() -> Result<(), String> {
    settle(get_platform_info())
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// How many of this extension's contexts of `kind` exist (`"OFFSCREEN_DOCUMENT"`, `"TAB"`, …).
pub async fn count_contexts(kind: &str) -> Result<usize, String> {
    let filter = crate::js::to_js(&serde_json::json!({ "contextTypes": [kind] }))?;
    let found = settle(get_contexts_js(&filter))
        .await
        .map_err(|e| error_text(&e))?;
    Ok(js_sys::Array::from(&found).length() as usize)
}

/// This extension's id.
pub fn id() -> String {
    let get = |o: &JsValue, k: &str| js_sys::Reflect::get(o, &JsValue::from_str(k));
    get(&js_sys::global(), "chrome")
        .and_then(|c| get(&c, "runtime"))
        .and_then(|r| get(&r, "id"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// The `version` field of manifest.json.
pub fn version() -> String {
    js_sys::Reflect::get(&get_manifest(), &JsValue::from_str("version"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}
