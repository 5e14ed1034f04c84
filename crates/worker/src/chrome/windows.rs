//! chrome.windows: the normal window that holds a new automation group.

use crate::chrome::tabs::Tab;
use crate::js::settle;
use crate::js::{error_text, from_js, to_js};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "windows"], js_name = create)]
    fn create_window(props: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "windows"], js_name = update)]
    fn update_window(window_id: i32, props: &JsValue) -> Result<js_sys::Promise, JsValue>;
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
        settle(create_window(&data))
            .await
            .map_err(|e| format!("chrome.windows.create: {}", error_text(&e)))?,
    )
}

#[derive(Serialize)]
struct Size {
    width: u32,
    height: u32,
    state: &'static str,
}

/// Resizes a window (its outer size, in screen pixels); a maximized window is restored first.
pub async fn resize(window_id: i32, width: u32, height: u32) -> Result<(), String> {
    let props = to_js(&Size {
        width,
        height,
        state: "normal",
    })?;
    settle(update_window(window_id, &props))
        .await
        .map(drop)
        .map_err(|e| format!("chrome.windows.update: {}", error_text(&e)))
}

#[derive(Serialize)]
struct Focus {
    focused: bool,
}

/// Brings a window to the front (and makes it the last focused one).
pub async fn focus(window_id: i32) -> Result<(), String> {
    settle(update_window(window_id, &to_js(&Focus { focused: true })?))
        .await
        .map(drop)
        .map_err(|e| format!("chrome.windows.update: {}", error_text(&e)))
}
