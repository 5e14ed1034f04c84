//! chrome.downloads: where a finished download was saved (asked only when the policy lets paths
//! be reported) and why one failed.

use crate::js::settle;
use crate::js::{error_text, from_js, to_js};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "downloads"], js_name = search)]
    fn search_js(query: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

/// The fields of `downloads.DownloadItem` the worker reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DownloadItem {
    /// The absolute path it is saved to.
    #[serde(default)]
    pub filename: String,
    #[serde(default)]
    pub bytes_received: f64,
    /// Why it was interrupted (`NETWORK_FAILED`, `SERVER_BAD_CONTENT`, `USER_CANCELED`, …).
    #[serde(default)]
    pub error: String,
}

/// The newest downloads of `url` in `state` (`complete`, `interrupted`), at most 5.
pub async fn of(url: &str, state: &str) -> Result<Vec<DownloadItem>, String> {
    let query = to_js(&serde_json::json!({
        "url": url,
        "state": state,
        "orderBy": ["-startTime"],
        "limit": 5,
    }))?;
    let found = settle(search_js(&query))
        .await
        .map_err(|e| format!("chrome.downloads.search: {}", error_text(&e)))?;
    from_js(found)
}
