//! chrome.runtime: the extension's id and a trivial call that resets the worker's idle timer.

use crate::js::error_text;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "runtime"], js_name = getPlatformInfo)]
    async fn get_platform_info() -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getManifest)]
    fn get_manifest() -> JsValue;
}

/// A cheap extension API call: Chrome counts it as activity and keeps the worker alive.
pub async fn touch() -> Result<(), String> {
    get_platform_info()
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
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
