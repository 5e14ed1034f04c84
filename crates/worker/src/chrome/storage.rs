//! chrome.storage: `local` (config and token; survives restarts, not synced) and `session`
//! (status, group id; cleared when the browser quits).

use crate::js::settle;
use crate::js::{error_text, from_js, to_js};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = get)]
    fn local_get(keys: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = set)]
    fn local_set(items: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = get)]
    fn session_get(keys: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = set)]
    fn session_set(items: &JsValue) -> Result<js_sys::Promise, JsValue>;
    /// The same `set`, called at once (not at a future's first poll): the request is on its
    /// way to Chrome when this returns.
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = set)]
    fn session_set_now(items: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = remove)]
    fn session_remove(keys: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

#[derive(Clone, Copy)]
pub enum Area {
    Local,
    Session,
}

fn storage_err(op: &str, key: &str, e: JsValue) -> String {
    format!("chrome.storage {op} {key}: {}", error_text(&e))
}

/// The value under `key`, or `None` when absent or of another shape.
pub async fn get<T: DeserializeOwned>(area: Area, key: &str) -> Result<Option<T>, String> {
    let k = JsValue::from_str(key);
    let all = match area {
        Area::Local => settle(local_get(&k)).await,
        Area::Session => settle(session_get(&k)).await,
    }
    .map_err(|e| storage_err("get", key, e))?;
    let v = js_sys::Reflect::get(&all, &k).unwrap_or(JsValue::UNDEFINED);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    Ok(from_js(v).ok())
}

pub async fn set<T: Serialize + ?Sized>(area: Area, key: &str, value: &T) -> Result<(), String> {
    let items = js_sys::Object::new();
    js_sys::Reflect::set(&items, &JsValue::from_str(key), &to_js(value)?)
        .map_err(|e| storage_err("set", key, e))?;
    match area {
        Area::Local => settle(local_set(&items)).await,
        Area::Session => settle(session_set(&items)).await,
    }
    .map(drop)
    .map_err(|e| storage_err("set", key, e))
}

/// Writes `items` (key → value) to session storage now: the request is made before this
/// returns, so it reaches Chrome ahead of every extension API call the worker makes after it
/// (Chrome handles one worker's calls in the order they were made). The future only says how
/// the write ended; nobody needs to wait for it.
pub fn set_session_now(
    items: &js_sys::Object,
) -> impl std::future::Future<Output = Result<(), String>> {
    let issued = session_set_now(items);
    async move {
        let promise = issued.map_err(|e| storage_err("set", "(several keys)", e))?;
        wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .map(drop)
            .map_err(|e| storage_err("set", "(several keys)", e))
    }
}

/// The values under `keys`, as one object (absent keys are missing): one call for them all.
pub async fn get_many<K: AsRef<str>>(area: Area, keys: &[K]) -> Result<JsValue, String> {
    let list = js_sys::Array::new();
    for k in keys {
        list.push(&JsValue::from_str(k.as_ref()));
    }
    match area {
        Area::Local => settle(local_get(&list)).await,
        Area::Session => settle(session_get(&list)).await,
    }
    .map_err(|e| storage_err("get", "(several keys)", e))
}

/// The value under `key` in what [`get_many`] returned, or `None` when absent or of another
/// shape.
pub fn field<T: DeserializeOwned>(stored: &JsValue, key: &str) -> Option<T> {
    js_sys::Reflect::get(stored, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
        .and_then(|v| from_js(v).ok())
}

/// A value as the JSON text the worker stores its own session state in (the delivery ledger
/// and outbox, the activity log): Chrome clones a string into storage faster than an object
/// (60 activity-log entries in one `set`: 0.3 ms of the worker against 1.0 ms).
pub fn json_text<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, String> {
    serde_json::to_string(value)
        .map(|text| JsValue::from_str(&text))
        .map_err(|e| format!("internal: cannot write as JSON: {e}"))
}

/// The value under `key` in what [`get_many`] returned, stored by [`json_text`]; `None` when
/// absent or not such text.
pub fn json_field<T: DeserializeOwned>(stored: &JsValue, key: &str) -> Option<T> {
    let text = js_sys::Reflect::get(stored, &JsValue::from_str(key))
        .ok()?
        .as_string()?;
    crate::js::parse_json(&text).ok()
}

/// Removes `keys` from session storage.
pub async fn remove_session(keys: &[String]) -> Result<(), String> {
    if keys.is_empty() {
        return Ok(());
    }
    let list = js_sys::Array::new();
    for k in keys {
        list.push(&JsValue::from_str(k));
    }
    settle(session_remove(&list))
        .await
        .map(drop)
        .map_err(|e| storage_err("remove", &keys.join(","), e))
}
