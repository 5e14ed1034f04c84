//! What the HTTP transports share: `fetch` with the bearer header and an abort signal, reading
//! a response body as a stream of byte chunks, and POSTing a result with bounded retries.

use crate::js::{error_text, sleep_ms, with_timeout};
use js_sys::{Object, Reflect, Uint8Array};
use protocol::{CommandResult, ConnectionConfig};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = fetch)]
    async fn fetch_js(url: &str, init: &JsValue) -> Result<JsValue, JsValue>;
}

const POST_TIMEOUT_MS: u32 = 30_000;
const POST_ATTEMPTS: u32 = 4;

fn set(o: &JsValue, k: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(k), v);
}

fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &JsValue::from_str(k)).unwrap_or(JsValue::UNDEFINED)
}

/// An `AbortController`: dropping it aborts the request it was given to.
pub struct Abort(JsValue);

impl Abort {
    pub fn new() -> Option<Abort> {
        let ctor = get(&js_sys::global(), "AbortController");
        let ctor: &js_sys::Function = ctor.dyn_ref()?;
        Reflect::construct(ctor, &js_sys::Array::new())
            .ok()
            .map(Abort)
    }

    fn signal(&self) -> JsValue {
        get(&self.0, "signal")
    }
}

impl Drop for Abort {
    fn drop(&mut self) {
        if let Ok(f) = get(&self.0, "abort").dyn_into::<js_sys::Function>() {
            let _ = f.call0(&self.0);
        }
    }
}

/// A response: its status and a reader over its body.
pub struct Response {
    pub status: u16,
    raw: JsValue,
}

/// `fetch(url)` with the bearer token; `accept` and an optional JSON `body` (POST when given).
pub async fn request(
    config: &ConnectionConfig,
    url: &str,
    accept: &str,
    body: Option<&str>,
    abort: Option<&Abort>,
) -> Result<Response, String> {
    let init = Object::new();
    let headers = Object::new();
    set(
        &headers,
        "Authorization",
        &JsValue::from_str(&format!("Bearer {}", config.token)),
    );
    set(&headers, "Accept", &JsValue::from_str(accept));
    if let Some(body) = body {
        set(&init, "method", &JsValue::from_str("POST"));
        set(
            &headers,
            "Content-Type",
            &JsValue::from_str("application/json"),
        );
        set(&init, "body", &JsValue::from_str(body));
    }
    set(&init, "headers", &headers);
    set(&init, "cache", &JsValue::from_str("no-store"));
    set(&init, "credentials", &JsValue::from_str("omit"));
    if let Some(a) = abort {
        set(&init, "signal", &a.signal());
    }
    let raw = fetch_js(url, &init)
        .await
        .map_err(|e| format!("Cannot reach {url}: {}", error_text(&e)))?;
    let status = get(&raw, "status").as_f64().unwrap_or(0.0) as u16;
    Ok(Response { status, raw })
}

impl Response {
    /// The body as text.
    pub async fn text(&self) -> Result<String, String> {
        let f = get(&self.raw, "text")
            .dyn_into::<js_sys::Function>()
            .map_err(|_| "the response has no text()".to_string())?;
        let p = f.call0(&self.raw).map_err(|e| error_text(&e))?;
        let v = JsFuture::from(js_sys::Promise::from(p))
            .await
            .map_err(|e| format!("reading the response failed: {}", error_text(&e)))?;
        Ok(v.as_string().unwrap_or_default())
    }

    /// A reader over the body's byte chunks.
    pub fn reader(&self) -> Result<BodyReader, String> {
        let body = get(&self.raw, "body");
        let f = get(&body, "getReader")
            .dyn_into::<js_sys::Function>()
            .map_err(|_| "the response has no body stream".to_string())?;
        f.call0(&body).map(BodyReader).map_err(|e| error_text(&e))
    }
}

pub struct BodyReader(JsValue);

impl BodyReader {
    /// The next chunk, `Ok(None)` at the end of the body.
    pub async fn next(&self) -> Result<Option<Vec<u8>>, String> {
        let f = get(&self.0, "read")
            .dyn_into::<js_sys::Function>()
            .map_err(|_| "the body reader has no read()".to_string())?;
        let p = f.call0(&self.0).map_err(|e| error_text(&e))?;
        let r = JsFuture::from(js_sys::Promise::from(p))
            .await
            .map_err(|e| error_text(&e))?;
        if get(&r, "done").as_bool().unwrap_or(true) {
            return Ok(None);
        }
        Ok(Some(Uint8Array::new(&get(&r, "value")).to_vec()))
    }
}

/// POSTs a result to `{serverUrl}{resultPath}`, retrying a failed POST (same commandId) a few
/// times; a result that still can't be delivered is handed to `undelivered` (the session's
/// outbox). Returns `false` when no attempt reached the server at all (no HTTP answer): the
/// backend is gone.
pub async fn post_result(
    config: ConnectionConfig,
    result: CommandResult,
    undelivered: fn(CommandResult),
) -> bool {
    let url = config.result_url();
    let body = serde_json::to_string(&result).unwrap_or_default();
    let mut wait = 500;
    let mut reached = false;
    for attempt in 1..=POST_ATTEMPTS {
        let sent = with_timeout(
            POST_TIMEOUT_MS,
            "Posting a result",
            request(&config, &url, "application/json", Some(&body), None),
        )
        .await;
        reached |= matches!(sent, Ok(Ok(_)));
        match sent {
            Ok(Ok(r)) if (200..300).contains(&r.status) => return true,
            // The server answered but refuses: retrying the same body won't help.
            Ok(Ok(r)) if r.status == 400 || r.status == 413 => {
                crate::js::log(&format!(
                    "the server refused result {} (HTTP {})",
                    result.command_id, r.status
                ));
                return true;
            }
            _ if attempt == POST_ATTEMPTS => break,
            _ => {
                sleep_ms(wait).await;
                wait *= 2;
            }
        }
    }
    undelivered(result);
    reached
}
