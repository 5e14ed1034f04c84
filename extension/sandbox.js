// Code mode's sandbox: a second wasm module (QuickJS), instantiated on first use so the worker
// starts without it. The Rust worker imports these functions (crates/worker/src/btcp/script.rs).
import init, { Isolate } from "./pkg/sandbox/browser_operator_sandbox.js";

let ready;

export function loadSandbox() {
  ready ??= init({ module_or_path: new URL("./pkg/sandbox/browser_operator_sandbox_bg.wasm", import.meta.url) });
  return ready;
}

// A prepared isolate with the namespaces every run has, not yet open (see
// crates/sandbox/src/module.rs).
export function newIsolate(baseInterfaces) {
  return new Isolate(baseInterfaces);
}
