//! chrome.alarms: the backstop that restarts a worker Chrome has stopped.

use crate::js::settle;
use crate::js::{error_text, to_js};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "alarms"], js_name = create)]
    fn create_alarm(name: &str, info: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "alarms"], js_name = clear)]
    fn clear_alarm(name: &str) -> Result<js_sys::Promise, JsValue>;
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AlarmInfo {
    period_in_minutes: f64,
    delay_in_minutes: f64,
}

/// A repeating alarm; creating it again with the same name replaces it.
pub async fn create_periodic(name: &str, minutes: f64) -> Result<(), String> {
    let info = to_js(&AlarmInfo {
        period_in_minutes: minutes,
        delay_in_minutes: minutes,
    })?;
    settle(create_alarm(name, &info))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}

pub async fn clear(name: &str) -> Result<(), String> {
    settle(clear_alarm(name))
        .await
        .map(drop)
        .map_err(|e| error_text(&e))
}
