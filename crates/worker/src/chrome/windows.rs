//! chrome.windows: the normal window that holds a new automation group.

use crate::chrome::tabs::Tab;
use crate::js::{error_text, from_js, to_js};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "windows"], js_name = create)]
    async fn create_window(props: &JsValue) -> Result<JsValue, JsValue>;
}

#[derive(Debug, Deserialize)]
pub struct Window {
    pub id: i32,
    #[serde(default)]
    pub tabs: Vec<Tab>,
}

#[derive(Serialize)]
struct CreateData<'a> {
    url: &'a str,
    focused: bool,
    #[serde(rename = "type")]
    kind: &'a str,
}

/// A new normal window showing `url`.
pub async fn create_normal(url: &str) -> Result<Window, String> {
    let data = to_js(&CreateData {
        url,
        focused: true,
        kind: "normal",
    })?;
    from_js(
        create_window(&data)
            .await
            .map_err(|e| format!("chrome.windows.create: {}", error_text(&e)))?,
    )
}
