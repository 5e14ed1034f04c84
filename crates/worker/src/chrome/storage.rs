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

/// The reads extension/early-reads.js asked of Chrome as the worker started.
#[wasm_bindgen(raw_module = "../early-reads.js")]
extern "C" {
    /// The early answer for `keys` (once per key), or undefined.
    #[wasm_bindgen(js_name = take)]
    fn take_early(area: &str, keys: &js_sys::Array) -> Option<js_sys::Promise>;
    /// Keys about to be written: read from Chrome from now on.
    #[wasm_bindgen(js_name = forget)]
    fn forget_early(area: &str, keys: &js_sys::Array);
}

#[derive(Clone, Copy)]
pub enum Area {
    Local,
    Session,
}

impl Area {
    fn name(self) -> &'static str {
        match self {
            Area::Local => "local",
            Area::Session => "session",
        }
    }
}

/// One `get` of `keys`: the answer read as the worker started when there is one for them all.
fn read(area: Area, keys: &js_sys::Array) -> Result<js_sys::Promise, JsValue> {
    if let Some(early) = take_early(area.name(), keys) {
        return Ok(early);
    }
    match area {
        Area::Local => local_get(keys),
        Area::Session => session_get(keys),
    }
}

fn array_of<K: AsRef<str>>(keys: &[K]) -> js_sys::Array {
    keys.iter().map(|k| JsValue::from_str(k.as_ref())).collect()
}

fn storage_err(op: &str, key: &str, e: JsValue) -> String {
    format!("chrome.storage {op} {key}: {}", error_text(&e))
}

/// The value under `key`, or `None` when absent or of another shape.
pub async fn get<T: DeserializeOwned>(area: Area, key: &str) -> Result<Option<T>, String> {
    let all = settle(read(area, &array_of(&[key])))
        .await
        .map_err(|e| storage_err("get", key, e))?;
    let v = js_sys::Reflect::get(&all, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    Ok(from_js(v).ok())
}

pub async fn set<T: Serialize + ?Sized>(area: Area, key: &str, value: &T) -> Result<(), String> {
    let items = js_sys::Object::new();
    js_sys::Reflect::set(&items, &JsValue::from_str(key), &to_js(value)?)
        .map_err(|e| storage_err("set", key, e))?;
    forget_early(area.name(), &array_of(&[key]));
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
    forget_early(Area::Session.name(), &js_sys::Object::keys(items));
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
    settle(read(area, &array_of(keys)))
        .await
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
    let list = array_of(keys);
    forget_early(Area::Session.name(), &list);
    settle(session_remove(&list))
        .await
        .map(drop)
        .map_err(|e| storage_err("remove", &keys.join(","), e))
}

/// What extension/early-reads.js asks of Chrome as the worker starts: each module whose keys
/// are read at boot checks, in its tests, that they are on the list.
#[cfg(test)]
pub(crate) mod early_reads {
    use serde_json::Value;

    fn reads() -> Value {
        let js = include_str!("../../../../extension/early-reads.js");
        let line = js
            .lines()
            .find_map(|l| l.strip_prefix("const READS = "))
            .expect("early-reads.js has its READS line");
        serde_json::from_str(line.trim_end_matches(';')).expect("READS is JSON")
    }

    /// Whether `key` of `area` ("local", "session") is read early.
    pub fn asks(area: &str, key: &str) -> bool {
        reads()[area]
            .as_array()
            .is_some_and(|keys| keys.iter().any(|k| k == key))
    }

    /// Whether `prefix` 0 … `count` − 1 of `area` are read early.
    pub fn asks_numbered(area: &str, prefix: &str, count: usize) -> bool {
        reads()["numbered"][area][prefix].as_u64() == Some(count as u64)
    }

    #[test]
    fn the_list_reads_as_json() {
        assert!(asks("local", "config"));
        assert!(!asks("local", "nothing"));
        assert!(asks_numbered("session", "delivery.", 512));
    }
}
