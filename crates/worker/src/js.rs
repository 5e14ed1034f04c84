//! Glue between Rust values and JS values, and the few global functions a service worker has
//! (no `window` here: timers and clocks come from the global scope).

use futures_util::future::{select, Either};
use serde::{de::DeserializeOwned, Serialize};
use std::future::Future;
use wasm_bindgen::{JsCast, JsValue};

/// A page-side script next to the tools (its path under `src/`), as embedded: without its
/// comment lines and indentation (see build.rs).
macro_rules! page_js {
    ($path:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/js/", $path))
    };
}
pub(crate) use page_js;

/// Serializes to plain JS objects (never `Map`, which chrome.* rejects): written as JSON and
/// parsed by the browser. One serializer for every type (the one the wire uses) keeps the wasm
/// small, and one `JSON.parse` is faster than building the object field by field across the
/// boundary.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, String> {
    let text =
        serde_json::to_string(value).map_err(|e| format!("internal: cannot convert to JS: {e}"))?;
    js_sys::JSON::parse(&text)
        .map_err(|e| format!("internal: cannot convert to JS: {}", error_text(&e)))
}

/// The JSON of a JS value (`null` for `undefined`), parsed in Rust: one `JSON.stringify`
/// instead of a conversion field by field across the boundary.
pub fn json_of(value: &JsValue) -> Result<serde_json::Value, String> {
    if value.is_undefined() {
        return Ok(serde_json::Value::Null);
    }
    let text = js_sys::JSON::stringify(value)
        .map_err(|e| format!("unexpected value from Chrome: {}", error_text(&e)))?;
    match text.as_string() {
        Some(text) => {
            serde_json::from_str(&text).map_err(|e| format!("unexpected value from Chrome: {e}"))
        }
        // A function or symbol: nothing JSON can say.
        None => Ok(serde_json::Value::Null),
    }
}

/// A field of a JS object (`undefined` when it has none, or is no object).
pub fn field(value: &JsValue, key: &str) -> JsValue {
    if !value.is_object() {
        return JsValue::UNDEFINED;
    }
    js_sys::Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// A typed value from JS, through [`json_of`] and [`from_json`].
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, String> {
    from_json(json_of(&value)?).map_err(|e| format!("unexpected value from Chrome: {e}"))
}

/// The one way the worker reads a typed value: from a parsed `serde_json::Value`, through
/// `protocol::json` (serde's code is generated once per type and deserializer, and it is most of
/// the wasm's size: every type read by one deserializer).
pub fn from_json<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, serde_json::Error> {
    protocol::json::from_value(value)
}

/// A typed value from JSON text, through [`from_json`].
pub fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    from_json(serde_json::from_str(text)?)
}

/// The message of a thrown JS value (an `Error`'s message, or the value as text).
pub fn error_text(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    if let Some(s) = e.as_string() {
        return s;
    }
    js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Lets the tasks already scheduled run first (one turn of the microtask queue).
/// What a promise-returning JS call (an extension API, `fetch`) came to: its promise settled,
/// or what it threw at once. Chrome throws at once for arguments its schema refuses
/// (`chrome.tabs.get(-1)`) rather than returning a rejected promise. The bindings are plain
/// `catch` imports returning the promise, called inside the async fn that awaits them here: an
/// `async` import awaits its promise without looking for a throw, and the future making such a
/// call would never end.
pub async fn settle(call: Result<js_sys::Promise, JsValue>) -> Result<JsValue, JsValue> {
    wasm_bindgen_futures::JsFuture::from(call?).await
}

pub async fn yield_now() {
    let _ =
        wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::UNDEFINED)).await;
}

pub async fn sleep_ms(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// Runs `fut` for at most `ms`; past that, an error that names the step that timed out.
pub async fn with_timeout<T>(
    ms: u32,
    step: &str,
    fut: impl Future<Output = T>,
) -> Result<T, String> {
    within(ms, step, fut).await.map_err(|t| t.to_string())
}

/// A step that ran past its bound; says which step and the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeout {
    pub step: String,
    pub ms: u32,
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} timed out after {} s",
            self.step,
            f64::from(self.ms) / 1000.0
        )
    }
}

/// [`with_timeout`] with the timeout as a value (for callers that tell it from other errors).
pub async fn within<T>(ms: u32, step: &str, fut: impl Future<Output = T>) -> Result<T, Timeout> {
    let fut = std::pin::pin!(fut);
    let timer = gloo_timers::future::TimeoutFuture::new(ms);
    match select(fut, timer).await {
        Either::Left((v, _)) => Ok(v),
        Either::Right(_) => Err(Timeout {
            step: step.to_string(),
            ms,
        }),
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = RegExp)]
    fn make_regexp(pattern: &str, flags: &str) -> Result<js_sys::RegExp, JsValue>;
}

/// A JavaScript regular expression (the browser's engine: no regex crate in the wasm).
pub fn regexp(pattern: &str, flags: &str) -> Result<js_sys::RegExp, String> {
    make_regexp(pattern, flags).map_err(|e| error_text(&e))
}

/// Logs to the worker's console (visible in chrome://extensions → service worker).
pub fn log(msg: &str) {
    web_sys::console::log_1(&JsValue::from_str(&format!("[browser-operator] {msg}")));
}
