//! Code mode: runs an agent's script in the sandbox with the tab's namespaces in scope. The
//! sandbox hands over the tool calls the script awaits; they run here, concurrently, through
//! the same call path as btcp_call, and their results go back in. The worker's event loop
//! stays free while calls are in flight; the sandbox bounds the computing between them.

use super::{call_method, page, Answer};
use crate::js::{now_ms, with_timeout};
use browser_operator_sandbox::{Limits, Sandbox, Step, ToolCall};
use futures_util::stream::{FuturesUnordered, StreamExt};
use protocol::ToolResult;
use serde::Serialize;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(
    inline_js = "export function guarded(f) { try { f(); return undefined; } catch (e) { return String((e && e.message) || e); } }"
)]
extern "C" {
    /// Calls `f`, returning what it threw (a JS exception unwinding through the wasm).
    fn guarded(f: &mut dyn FnMut()) -> Option<String>;
}

const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Longest page-method wait inside a script (the run's own limit may cut it shorter).
const PAGE_CALL_MS: u32 = 15_000;
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

pub async fn run(tab: i32, script: &str, timeout_ms: Option<u32>) -> Result<ToolResult, String> {
    let time_ms = timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    let tools = page::tools(tab).await?;
    let limits = Limits {
        time_ms: f64::from(time_ms),
        ..Limits::default()
    };
    let mut sandbox = Some(Sandbox::new(&tools.interfaces_json(), limits)?);
    let mut trace: Vec<TraceEntry> = Vec::new();
    let mut inflight: FuturesUnordered<Pin<Box<dyn Future<Output = Done> + '_>>> =
        FuturesUnordered::new();
    // Calls in flight, by id, to name them if the run times out.
    let mut waiting: Vec<(u32, String)> = Vec::new();
    let mut step = guarded_step(&mut sandbox, |s| s.start(script));
    let outcome = loop {
        match step {
            Step::Done(outcome) => break outcome,
            Step::Calls(calls) => {
                for c in calls {
                    waiting.push((c.id, format!("{}.{}", c.namespace, c.method)));
                    let budget = remaining_ms(&sandbox).clamp(1, PAGE_CALL_MS);
                    inflight.push(Box::pin(perform(&tools, tab, c, budget)));
                }
            }
        }
        let remaining = remaining_ms(&sandbox);
        match with_timeout(remaining, "the script", inflight.next()).await {
            Ok(Some((id, result, entry))) => {
                waiting.retain(|(w, _)| *w != id);
                trace.push(entry);
                step = guarded_step(&mut sandbox, |s| s.resume(vec![(id, result)]));
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
    let (console, console_dropped) = sandbox.as_ref().map(Sandbox::console).unwrap_or_default();
    drop(inflight);
    drop(sandbox);
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

fn remaining_ms(sandbox: &Option<Sandbox>) -> u32 {
    sandbox.as_ref().map_or(0, |s| s.remaining_ms() as u32)
}

/// Runs one step of the sandbox so that the browser's own stack running out inside the engine
/// (a RangeError that unwinds the wasm without cleanup) ends the script with an error instead
/// of wedging the worker. The engine's state is unknown after that: the sandbox is leaked,
/// never touched again.
fn guarded_step(sandbox: &mut Option<Sandbox>, f: impl FnOnce(&mut Sandbox) -> Step) -> Step {
    let Some(running) = sandbox.as_mut() else {
        return Step::Done(Err("internal: the sandbox is gone".into()));
    };
    let mut f = Some(f);
    let mut out = None;
    let thrown = guarded(&mut || {
        if let Some(f) = f.take() {
            out = Some(f(running));
        }
    });
    match out {
        Some(step) => step,
        None => {
            if let Some(lost) = sandbox.take() {
                std::mem::forget(lost);
            }
            Step::Done(Err(format!(
                "The script exhausted the browser's stack (recursion too deep?) and was stopped: {}",
                thrown.unwrap_or_default()
            )))
        }
    }
}

/// One tool call of the script: its result as JSON text for the sandbox, and a trace entry.
async fn perform(tools: &protocol::btcp::PageTools, tab: i32, c: ToolCall, budget_ms: u32) -> Done {
    let started = now_ms();
    let name = format!("{}.{}", c.namespace, c.method);
    let args = match c.args {
        Value::Object(map) => map,
        _ => Default::default(),
    };
    let shown_args = summarize(&args);
    let result = match call_method(tools, tab, &c.namespace, &c.method, args, budget_ms).await {
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
