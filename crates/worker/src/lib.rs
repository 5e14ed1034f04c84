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

/// The direct transport: a command `{id, tool, args}` run in-process through the same dispatch
/// as every network transport, answered with its result `{commandId, result | error}`. Used by
/// tests and embedding code in the worker (`self.browserOperator.run`, see worker.js).
#[wasm_bindgen(js_name = runCommand)]
pub async fn run_command(command: JsValue) -> JsValue {
    let command: protocol::Command = match js::from_js(command) {
        Ok(c) => c,
        Err(e) => {
            return js::to_js(&serde_json::json!({
                "commandId": "",
                "error": format!("Malformed command: {e}; send {{id, tool, args}}"),
            }))
            .unwrap_or(JsValue::NULL)
        }
    };
    let result = protocol::CommandResult {
        command_id: command.id,
        outcome: session::execute(&command.tool, command.args).await,
    };
    js::to_js(&result).unwrap_or(JsValue::NULL)
}
