//! chrome.storage: `local` (config and token; survives restarts, not synced) and `session`
//! (status, group id; cleared when the browser quits).

use crate::js::{error_text, from_js, to_js};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = get)]
    async fn local_get(keys: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "local"], js_name = set)]
    async fn local_set(items: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = get)]
    async fn session_get(keys: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = set)]
    async fn session_set(items: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "storage", "session"], js_name = remove)]
    async fn session_remove(keys: &JsValue) -> Result<JsValue, JsValue>;
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
        Area::Local => local_get(&k).await,
        Area::Session => session_get(&k).await,
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
        Area::Local => local_set(&items).await,
        Area::Session => session_set(&items).await,
    }
    .map(drop)
    .map_err(|e| storage_err("set", key, e))
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
    session_remove(&list)
        .await
        .map(drop)
        .map_err(|e| storage_err("remove", &keys.join(","), e))
}
