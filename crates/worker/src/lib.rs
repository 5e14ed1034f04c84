//! The Browser Operator service worker. `extension/worker.js` loads this wasm, registers every
//! chrome.* listener synchronously and hands the events to the functions exported here.

mod brand;
mod cdp;
mod chrome;
mod group;
mod js;
mod pages;
mod pairing;
mod session;
mod tools;
mod transport;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

/// The worker started (install, browser start, or Chrome woke it for an event).
#[wasm_bindgen]
pub fn boot() {
    spawn_local(session::resume());
}

/// A `chrome.alarms` alarm: the backstop that reconnects after Chrome stopped the worker.
#[wasm_bindgen(js_name = onAlarm)]
pub fn on_alarm(name: String) {
    if name == session::ALARM {
        spawn_local(session::resume());
    }
}

/// `chrome.debugger.onDetach`: forget the session so the next command attaches again.
#[wasm_bindgen(js_name = onDebuggerDetach)]
pub fn on_debugger_detach(source: JsValue) {
    let tab = js_sys::Reflect::get(&source, &JsValue::from_str("tabId"))
        .ok()
        .and_then(|v| v.as_f64());
    if let Some(tab) = tab {
        cdp::on_detach(tab as i32);
    }
}

/// `chrome.runtime.onMessage`: requests from the extension's own pages (Options, popup) and
/// pairing offers from the content script. The answer is passed to `sendResponse`.
#[wasm_bindgen(js_name = onMessage)]
pub async fn on_message(message: JsValue, sender: JsValue) -> JsValue {
    pages::handle(message, sender).await
}
