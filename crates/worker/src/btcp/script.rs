//! Code mode: runs an agent's script in the sandbox (crates/sandbox, a second wasm module that
//! extension/sandbox.js loads on first use) with the tab's namespaces in scope. The sandbox
//! hands over the tool calls the script awaits; they run here, concurrently, through the same
//! call path as btcp_call, and their results go back in. The worker's event loop stays free
//! while calls are in flight; the sandbox bounds the computing between them.

use super::{call_method, page, Answer, Dispatch};
use crate::js::settle;
use crate::js::{error_text, now_ms, sleep_ms, with_timeout};
use futures_util::stream::{FuturesUnordered, StreamExt};
use protocol::ToolResult;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(raw_module = "../sandbox.js")]
extern "C" {
    /// Instantiates the sandbox module (once).
    #[wasm_bindgen(catch, js_name = loadSandbox)]
    fn load_sandbox() -> Result<js_sys::Promise, JsValue>;
    /// One script run's isolate (crates/sandbox/src/module.rs), prepared before its run with
    /// the namespaces every run has.
    type Isolate;
    #[wasm_bindgen(catch, js_name = newIsolate)]
    fn new_isolate(base_interfaces: &str) -> Result<Isolate, JsValue>;
    /// Completes a prepared isolate for its one run with the page's namespaces; the run's
    /// clock starts.
    /// Prepares some more (freezes up to `objects` intrinsics); true once it is all done.
    #[wasm_bindgen(method, js_name = prepareMore)]
    fn prepare_more(this: &Isolate, objects: u32) -> bool;
    #[wasm_bindgen(method, catch)]
    fn open(this: &Isolate, interfaces: &str, time_ms: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch)]
    fn start(this: &Isolate, script: &str) -> Result<String, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn resume(this: &Isolate, id: u32, ok: bool, text: &str) -> Result<String, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn console(this: &Isolate) -> Result<String, JsValue>;
    #[wasm_bindgen(method, js_name = remainingMs)]
    fn remaining_ms(this: &Isolate) -> f64;
    #[wasm_bindgen(method)]
    fn free(this: &Isolate);
}

/// A step of the run, as the sandbox reports it.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Step {
    Calls(Vec<ToolCall>),
    Done(Ended),
}

#[derive(Deserialize)]
struct ToolCall {
    id: u32,
    namespace: String,
    method: String,
    args: Value,
}

#[derive(Deserialize)]
struct Ended {
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize, Default)]
struct Console {
    lines: Vec<String>,
    dropped: u32,
}

fn failed(e: impl Into<String>) -> Step {
    Step::Done(Ended {
        value: None,
        error: Some(e.into()),
    })
}

const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Longest page-method wait inside a script (the run's own limit may cut it shorter).
const PAGE_CALL_MS: u32 = 15_000;
/// Objects the spare isolate freezes per idle step (of about 1,200; about 1 ms per step in wasm).
const FREEZE_STEP: u32 = 200;
/// Arguments longer than this are summarized in the trace.
const TRACE_ARGS_CHARS: usize = 300;

#[derive(Serialize)]
struct TraceEntry {
    call: String,
    args: Value,
    ok: bool,
    ms: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    console: Vec<String>,
    #[serde(skip_serializing_if = "is_zero")]
    console_dropped: u32,
    calls: &'a [TraceEntry],
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

type Done = (u32, Result<String, String>, TraceEntry);

/// Runs the script on the tab; its `browser.*` calls go to `dispatch`.
pub async fn run(
    dispatch: Dispatch,
    tab: i32,
    script: &str,
    timeout_ms: Option<u32>,
) -> Result<ToolResult, String> {
    let time_ms = timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    let tools = page::tools(tab).await?;
    settle(load_sandbox())
        .await
        .map_err(|e| format!("Loading the code-mode sandbox failed: {}", error_text(&e)))?;
    let isolate = take_isolate()
        .map_err(|e| format!("Starting the code-mode sandbox failed: {}", error_text(&e)))?;
    if let Err(e) = isolate.open(&tools.page_interfaces_json(), f64::from(time_ms)) {
        retire(Some(isolate));
        return Err(format!(
            "Starting the code-mode sandbox failed: {}",
            error_text(&e)
        ));
    }
    let mut sandbox = Some(isolate);
    let mut trace: Vec<TraceEntry> = Vec::new();
    let mut inflight: FuturesUnordered<Pin<Box<dyn Future<Output = Done> + '_>>> =
        FuturesUnordered::new();
    // Calls in flight, by id, to name them if the run times out.
    let mut waiting: Vec<(u32, String)> = Vec::new();
    let mut step = guarded_step(&mut sandbox, |s| s.start(script));
    let outcome = loop {
        match step {
            Step::Done(Ended { error: Some(e), .. }) => break Err(e),
            Step::Done(Ended { value, .. }) => break Ok(value),
            Step::Calls(calls) => {
                for c in calls {
                    waiting.push((c.id, format!("{}.{}", c.namespace, c.method)));
                    let budget = remaining_ms(&sandbox).clamp(1, PAGE_CALL_MS);
                    inflight.push(Box::pin(perform(dispatch, &tools, tab, c, budget)));
                }
            }
        }
        let remaining = remaining_ms(&sandbox);
        match with_timeout(remaining, "the script", inflight.next()).await {
            Ok(Some((id, result, entry))) => {
                waiting.retain(|(w, _)| *w != id);
                trace.push(entry);
                step = guarded_step(&mut sandbox, |s| match &result {
                    Ok(text) => s.resume(id, true, text),
                    Err(e) => s.resume(id, false, e),
                });
            }
            Ok(None) => break Err("internal: the script waits but no tool call is running".into()),
            Err(_) => {
                let names: Vec<&str> = waiting.iter().map(|(_, n)| n.as_str()).collect();
                break Err(format!(
                    "The script did not finish within its time limit of {time_ms} ms and was stopped while waiting on {}.",
                    names.join(", ")
                ));
            }
        }
    };
    let Console {
        lines: console,
        dropped: console_dropped,
    } = sandbox
        .as_ref()
        .and_then(|s| s.console().ok())
        .and_then(|text| crate::js::parse_json(&text).ok())
        .unwrap_or_default();
    drop(inflight);
    retire(sandbox);
    let report = |result: Option<&Value>| {
        serde_json::to_string(&Report {
            result,
            console: console.clone(),
            console_dropped,
            calls: &trace,
        })
        .unwrap_or_default()
    };
    match outcome {
        Ok(value) => Ok(ToolResult::text(report(value.as_ref()))),
        Err(e) => Err(format!("{e}\n{}", report(None))),
    }
}

thread_local! {
    /// A prepared isolate for the next run: building the engine and freezing its intrinsics is
    /// most of a run's fixed cost, so it is done while the worker is idle. Each isolate serves
    /// one run and is freed after it: nothing of one script survives into the next.
    static SPARE: RefCell<Option<Isolate>> = const { RefCell::new(None) };
    /// Isolates whose run ended, freed while the worker is idle.
    static RETIRED: RefCell<Vec<Isolate>> = const { RefCell::new(Vec::new()) };
    static TIDYING: Cell<bool> = const { Cell::new(false) };
    /// `{"browser": …}`: the namespace every run has, in the spare before the page's are known.
    static BROWSER_INTERFACES: String = protocol::btcp::browser_interfaces_json();
}

fn new_prepared() -> Result<Isolate, JsValue> {
    BROWSER_INTERFACES.with(|b| new_isolate(b))
}

/// The spare isolate, or a new one when there is none (the first run, or runs at once).
fn take_isolate() -> Result<Isolate, JsValue> {
    match SPARE.with(|s| s.borrow_mut().take()) {
        Some(ready) => Ok(ready),
        None => new_prepared(),
    }
}

/// After a run: its isolate (if any) is freed and the next run's prepared, in a task of its own
/// after this one, so the command's answer goes out first.
fn retire(used: Option<Isolate>) {
    if let Some(used) = used {
        RETIRED.with(|r| r.borrow_mut().push(used));
    }
    if TIDYING.with(|t| t.replace(true)) {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        sleep_ms(0).await;
        for used in RETIRED.with(|r| std::mem::take(&mut *r.borrow_mut())) {
            used.free();
        }
        if SPARE.with(|s| s.borrow().is_none()) {
            // A failure here shows again, reported, when the next run makes its own.
            if let Ok(ready) = new_prepared() {
                SPARE.with(|s| *s.borrow_mut() = Some(ready));
            }
        }
        // The rest of the preparing in steps, each its own task, so that a command arriving
        // meanwhile waits for one step at most (a run that takes the spare first finishes it).
        loop {
            sleep_ms(0).await;
            let done = SPARE.with(|s| {
                s.borrow()
                    .as_ref()
                    .is_none_or(|i| i.prepare_more(FREEZE_STEP))
            });
            if done {
                break;
            }
        }
        TIDYING.with(|t| t.set(false));
    });
}

fn remaining_ms(sandbox: &Option<Isolate>) -> u32 {
    sandbox.as_ref().map_or(0, |s| s.remaining_ms() as u32)
}

/// Runs one step of the sandbox. A throw out of the module means the browser's own stack ran
/// out inside the engine (a RangeError that unwinds the wasm without cleanup): the script ends
/// with an error, and the isolate, whose state is now unknown, is leaked, never touched again.
fn guarded_step(
    sandbox: &mut Option<Isolate>,
    f: impl FnOnce(&Isolate) -> Result<String, JsValue>,
) -> Step {
    let Some(running) = sandbox.as_ref() else {
        return failed("internal: the sandbox is gone");
    };
    match f(running) {
        Ok(text) => crate::js::parse_json(&text)
            .unwrap_or_else(|e| failed(format!("internal: the sandbox's step: {e}"))),
        Err(thrown) => {
            if let Some(lost) = sandbox.take() {
                std::mem::forget(lost);
            }
            failed(format!(
                "The script exhausted the browser's stack (recursion too deep?) and was stopped: {}",
                error_text(&thrown)
            ))
        }
    }
}

/// One tool call of the script: its result as JSON text for the sandbox, and a trace entry.
async fn perform(
    dispatch: Dispatch,
    tools: &protocol::btcp::PageTools,
    tab: i32,
    c: ToolCall,
    budget_ms: u32,
) -> Done {
    let started = now_ms();
    let name = format!("{}.{}", c.namespace, c.method);
    let args = match c.args {
        Value::Object(map) => map,
        _ => Default::default(),
    };
    let shown_args = summarize(&args);
    let called = call_method(
        dispatch,
        tools,
        tab,
        &c.namespace,
        &c.method,
        args,
        budget_ms,
    );
    let result = match called.await {
        Ok(Answer::Builtin(r)) => Ok(Value::String(r.joined_text()).to_string()),
        Ok(Answer::Page(Some(v))) => Ok(v.to_string()),
        Ok(Answer::Page(None)) => Ok(String::new()),
        Err(e) => Err(e),
    };
    let entry = TraceEntry {
        call: name,
        args: shown_args,
        ok: result.is_ok(),
        ms: (now_ms() - started).max(0.0) as u32,
        error: result.as_ref().err().cloned(),
    };
    (c.id, result, entry)
}

fn summarize(args: &serde_json::Map<String, Value>) -> Value {
    let text = Value::Object(args.clone()).to_string();
    if text.chars().count() <= TRACE_ARGS_CHARS {
        Value::Object(args.clone())
    } else {
        json!(format!(
            "{}… ({} characters)",
            text.chars().take(TRACE_ARGS_CHARS).collect::<String>(),
            text.chars().count()
        ))
    }
}
