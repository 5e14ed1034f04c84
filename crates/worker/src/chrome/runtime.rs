//! chrome.runtime: the extension's id, its contexts, a trivial call that resets the worker's
//! idle timer, and `runtime.Port` (a long-lived message channel; `tabs::connect` opens one).

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
    /// `runtime.Port`: messages both ways until either end disconnects.
    pub type Port;
    #[wasm_bindgen(method, catch, js_name = postMessage)]
    fn post(this: &Port, message: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = disconnect)]
    fn close(this: &Port) -> Result<(), JsValue>;
    #[wasm_bindgen(method, getter, js_name = onMessage)]
    fn on_message(this: &Port) -> PortEvent;
    #[wasm_bindgen(method, getter, js_name = onDisconnect)]
    fn on_disconnect(this: &Port) -> PortEvent;

    type PortEvent;
    #[wasm_bindgen(method, js_name = addListener)]
    fn add_listener(this: &PortEvent, listener: &js_sys::Function);
}

impl Port {
    /// Sends a message; fails when the port is already disconnected.
    pub fn post_message(&self, message: &JsValue) -> Result<(), String> {
        self.post(message).map_err(|e| error_text(&e))
    }

    /// Calls `listener` with each message from the other end.
    pub fn on_each_message(&self, listener: &js_sys::Function) {
        self.on_message().add_listener(listener);
    }

    /// Calls `listener` once the other end disconnects (or never connected). The listener
    /// should read Chrome's reason ([`last_error`]), or Chrome logs it as unchecked.
    pub fn on_disconnected(&self, listener: &js_sys::Function) {
        self.on_disconnect().add_listener(listener);
    }

    /// Disconnects this end (its own `onDisconnect` listeners are not called); nothing when it
    /// is disconnected already.
    pub fn disconnect(&self) {
        let _ = self.close();
    }
}

/// `runtime.lastError`'s message while a listener of a failed call or port runs (reading it is
/// what keeps Chrome from logging it as unchecked).
pub fn last_error() -> Option<String> {
    let get = |o: &JsValue, k: &str| js_sys::Reflect::get(o, &JsValue::from_str(k));
    get(&js_sys::global(), "chrome")
        .and_then(|c| get(&c, "runtime"))
        .and_then(|r| get(&r, "lastError"))
        .ok()
        .filter(|e| !e.is_undefined() && !e.is_null())
        .map(|e| error_text(&e))
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
