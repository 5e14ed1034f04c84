//! The sandbox as its own wasm module (built by build.sh into extension/pkg/sandbox and loaded
//! by extension/sandbox.js on first use): one `Isolate` per script run, steps as JSON text.

use crate::{Limits, Sandbox};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Isolate(Sandbox);

#[wasm_bindgen]
impl Isolate {
    /// `interfaces`: `{namespace: interface}` JSON; `time_ms`: the run's wall-clock limit.
    #[wasm_bindgen(constructor)]
    pub fn new(interfaces: &str, time_ms: f64) -> Result<Isolate, JsError> {
        let limits = Limits {
            time_ms,
            ..Limits::default()
        };
        Sandbox::new(interfaces, limits)
            .map(Isolate)
            .map_err(|e| JsError::new(&e))
    }

    pub fn start(&mut self, script: &str) -> String {
        self.0.start(script).to_json().to_string()
    }

    /// Settles call `id`: `ok` with JSON text (empty for undefined), or rejects with `text`.
    pub fn resume(&mut self, id: u32, ok: bool, text: String) -> String {
        let result = if ok { Ok(text) } else { Err(text) };
        self.0.resume(vec![(id, result)]).to_json().to_string()
    }

    /// `{"lines": [...], "dropped": n}`.
    pub fn console(&self) -> String {
        let (lines, dropped) = self.0.console();
        serde_json::json!({"lines": lines, "dropped": dropped}).to_string()
    }

    #[wasm_bindgen(js_name = remainingMs)]
    pub fn remaining_ms(&self) -> f64 {
        self.0.remaining_ms()
    }
}
