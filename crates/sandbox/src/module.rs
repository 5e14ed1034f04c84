//! The sandbox as its own wasm module (built by build.sh into extension/pkg/sandbox and loaded
//! by extension/sandbox.js on first use): one `Isolate` per script run, steps as JSON text.

use crate::{Limits, Sandbox};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Isolate(Sandbox);

#[wasm_bindgen]
impl Isolate {
    /// A prepared isolate (the engine with its intrinsics frozen and the namespaces of
    /// `base_interfaces`, `{namespace: interface}` JSON, that every run has): the host may make
    /// it ahead of the run, while idle. [`Isolate::open`] completes it for one run.
    #[wasm_bindgen(constructor)]
    pub fn new(base_interfaces: &str) -> Result<Isolate, JsError> {
        Sandbox::prepare(Limits::default(), base_interfaces)
            .map(Isolate)
            .map_err(|e| JsError::new(&e))
    }

    /// Freezes up to `objects` more intrinsics; true once all are (open freezes the rest).
    #[wasm_bindgen(js_name = prepareMore)]
    pub fn prepare_more(&mut self, objects: u32) -> bool {
        self.0.prepare_more(objects)
    }

    /// `interfaces`: the run's other namespaces, `{namespace: interface}` JSON; `time_ms`: the
    /// run's wall-clock limit, counted from now.
    pub fn open(&mut self, interfaces: &str, time_ms: f64) -> Result<(), JsError> {
        self.0
            .open(interfaces, time_ms)
            .map_err(|e| JsError::new(&e))
    }

    pub fn start(&mut self, script: &str) -> String {
        self.0.start(script).to_json()
    }

    /// Settles call `id`: `ok` with JSON text (empty for undefined), or rejects with `text`.
    pub fn resume(&mut self, id: u32, ok: bool, text: String) -> String {
        let result = if ok { Ok(text) } else { Err(text) };
        self.0.resume(vec![(id, result)]).to_json()
    }

    /// `{"lines": [...], "dropped": n}`.
    pub fn console(&self) -> String {
        let (lines, dropped) = self.0.console();
        let lines: Vec<String> = lines.iter().map(|l| crate::json_string(l)).collect();
        format!(r#"{{"lines":[{}],"dropped":{dropped}}}"#, lines.join(","))
    }

    #[wasm_bindgen(js_name = remainingMs)]
    pub fn remaining_ms(&self) -> f64 {
        self.0.remaining_ms()
    }
}
