//! What the HTTP transports share: `fetch` with the bearer header and an abort signal, reading
//! a response body as a stream of byte chunks, and POSTing a result with bounded retries.

use super::Reply;
use crate::js::settle;
use crate::js::{error_text, sleep_ms, with_timeout};
use js_sys::Uint8Array;
use protocol::ConnectionConfig;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_name = fetch)]
    fn fetch_js(url: &str, init: &RequestInit) -> Result<js_sys::Promise, JsValue>;

    /// `fetch`'s options.
    #[wasm_bindgen(extends = js_sys::Object)]
    type RequestInit;
    #[wasm_bindgen(method, setter = method)]
    fn set_method(this: &RequestInit, v: &str);
    #[wasm_bindgen(method, setter = body)]
    fn set_body(this: &RequestInit, v: &js_sys::JsString);
    #[wasm_bindgen(method, setter = headers)]
    fn set_headers(this: &RequestInit, v: &Headers);
    #[wasm_bindgen(method, setter = cache)]
    fn set_cache(this: &RequestInit, v: &str);
    #[wasm_bindgen(method, setter = credentials)]
    fn set_credentials(this: &RequestInit, v: &str);
    #[wasm_bindgen(method, setter = signal)]
    fn set_signal(this: &RequestInit, v: &AbortSignal);

    type Headers;
    #[wasm_bindgen(constructor)]
    fn new() -> Headers;
    #[wasm_bindgen(method, catch)]
    fn append(this: &Headers, name: &str, value: &str) -> Result<(), JsValue>;

    #[wasm_bindgen(js_name = AbortController)]
    type AbortControllerJs;
    #[wasm_bindgen(constructor, catch, js_class = AbortController)]
    fn new() -> Result<AbortControllerJs, JsValue>;
    #[wasm_bindgen(method, getter)]
    fn signal(this: &AbortControllerJs) -> AbortSignal;
    #[wasm_bindgen(method)]
    fn abort(this: &AbortControllerJs);

    type AbortSignal;

    #[wasm_bindgen(js_name = Response)]
    type FetchResponse;
    #[wasm_bindgen(method, getter)]
    fn status(this: &FetchResponse) -> u16;
    #[wasm_bindgen(method, catch)]
    async fn text(this: &FetchResponse) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, getter)]
    fn body(this: &FetchResponse) -> Option<ReadableStream>;

    type ReadableStream;
    #[wasm_bindgen(method, catch, js_name = getReader)]
    fn get_reader(this: &ReadableStream) -> Result<StreamReader, JsValue>;

    type StreamReader;
    #[wasm_bindgen(method, catch)]
    async fn read(this: &StreamReader) -> Result<JsValue, JsValue>;

    /// What a stream reader's `read()` gives.
    type ReadResult;
    #[wasm_bindgen(method, getter)]
    fn done(this: &ReadResult) -> Option<bool>;
    #[wasm_bindgen(method, getter)]
    fn value(this: &ReadResult) -> JsValue;
}

const POST_TIMEOUT_MS: u32 = 30_000;
const POST_ATTEMPTS: u32 = 4;

/// An `AbortController`: dropping it aborts the request it was given to.
pub struct Abort(AbortControllerJs);

impl Abort {
    pub fn new() -> Option<Abort> {
        AbortControllerJs::new().ok().map(Abort)
    }
}

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response: its status and a reader over its body.
pub struct Response {
    pub status: u16,
    raw: FetchResponse,
}

/// `fetch(url)` with the bearer token; `accept` and an optional JSON `body` (POST when given).
pub async fn request(
    config: &ConnectionConfig,
    url: &str,
    accept: &str,
    body: Option<&js_sys::JsString>,
    abort: Option<&Abort>,
) -> Result<Response, String> {
    let init: RequestInit = js_sys::Object::new().unchecked_into();
    let headers = Headers::new();
    let bad_header = |e: JsValue| format!("Cannot reach {url}: {}", error_text(&e));
    headers
        .append("Authorization", &format!("Bearer {}", config.token))
        .map_err(bad_header)?;
    headers.append("Accept", accept).map_err(bad_header)?;
    if let Some(body) = body {
        init.set_method("POST");
        headers
            .append("Content-Type", "application/json")
            .map_err(bad_header)?;
        init.set_body(body);
    }
    init.set_headers(&headers);
    init.set_cache("no-store");
    init.set_credentials("omit");
    if let Some(a) = abort {
        init.set_signal(&a.0.signal());
    }
    let raw: FetchResponse = settle(fetch_js(url, &init))
        .await
        .map_err(|e| format!("Cannot reach {url}: {}", error_text(&e)))?
        .unchecked_into();
    Ok(Response {
        status: raw.status(),
        raw,
    })
}

impl Response {
    /// The body as text.
    pub async fn text(&self) -> Result<String, String> {
        let v = self
            .raw
            .text()
            .await
            .map_err(|e| format!("reading the response failed: {}", error_text(&e)))?;
        Ok(v.as_string().unwrap_or_default())
    }

    /// A reader over the body's byte chunks.
    pub fn reader(&self) -> Result<BodyReader, String> {
        let body = self
            .raw
            .body()
            .ok_or_else(|| "the response has no body stream".to_string())?;
        body.get_reader()
            .map(BodyReader)
            .map_err(|e| error_text(&e))
    }
}

pub struct BodyReader(StreamReader);

impl BodyReader {
    /// The next chunk, `Ok(None)` at the end of the body.
    pub async fn next(&self) -> Result<Option<Vec<u8>>, String> {
        let r: ReadResult = self
            .0
            .read()
            .await
            .map_err(|e| error_text(&e))?
            .unchecked_into();
        if r.done().unwrap_or(true) {
            return Ok(None);
        }
        Ok(Some(Uint8Array::new(&r.value()).to_vec()))
    }
}

/// POSTs a result to `{serverUrl}{resultPath}`, retrying a failed POST (same commandId) a few
/// times; a result that still can't be delivered is handed to `undelivered` (the session's
/// outbox). Returns `false` when no attempt reached the server at all (no HTTP answer): the
/// backend is gone.
pub async fn post_result(config: ConnectionConfig, reply: Reply, handoff: super::Handoff) -> bool {
    let url = config.result_url();
    let body = reply.json();
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
                    "the server refused result {:?} (HTTP {})",
                    reply.id(),
                    r.status
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
    handoff.undelivered(reply);
    reached
}
