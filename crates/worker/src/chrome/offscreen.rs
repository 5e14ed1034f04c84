//! chrome.offscreen: the extension's one hidden document (the watchdog).

use crate::js::settle;
use crate::js::{error_text, to_js};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "offscreen"], js_name = createDocument)]
    fn create_document_js(params: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "offscreen"], js_name = closeDocument)]
    fn close_document_js() -> Result<js_sys::Promise, JsValue>;
}

#[derive(Serialize)]
struct CreateParameters<'a> {
    url: &'a str,
    reasons: &'a [&'a str],
    justification: &'a str,
}

/// Opens the offscreen document at `url` (relative to the extension root). Chrome allows one at
/// a time: a second call fails with its own message.
pub async fn create_document(
    url: &str,
    reasons: &[&str],
    justification: &str,
) -> Result<(), String> {
    let params = to_js(&CreateParameters {
        url,
        reasons,
        justification,
    })?;
    settle(create_document_js(&params))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

/// Closes the offscreen document (an error when none is open).
pub async fn close_document() -> Result<(), String> {
    settle(close_document_js())
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}
