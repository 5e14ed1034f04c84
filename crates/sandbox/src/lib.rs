//! Code mode's isolate: runs an agent's script in QuickJS (its own wasm module, which the worker
//! loads on first use) with only the tool namespaces, `__interfaces`, `__getToolInterface` and a
//! captured `console` in scope. The sandbox never performs a tool call itself: it is a step
//! machine. `start` and `resume` run the script until it settles or waits on tool calls, and
//! hand those calls to the host, which dispatches them and feeds the results back. Each step is
//! bounded in CPU time, the whole run in wall-clock time, memory, stack, tool calls and output
//! size.

use rquickjs::context::intrinsic as i;
use rquickjs::promise::PromiseState;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Object, Persistent, Promise, Runtime,
    Value,
};

/// The intrinsics a script gets: the language and its everyday library (Date, RegExp, JSON,
/// Map and Set, Promise, Proxy, WeakRef). No typed arrays (nor Atomics with them): tool calls
/// carry JSON, and leaving them out makes the module 9.4 KB smaller gzipped; no `performance`
/// (no clock beyond Date) and no DOMException.
type Intrinsics = (
    i::Date,
    i::Eval,
    i::RegExpCompiler,
    i::RegExp,
    i::Json,
    i::MapSet,
    i::Promise,
    i::Proxy,
    i::WeakRef,
);
use std::cell::{Cell, RefCell};
use std::rc::Rc;

#[cfg(target_arch = "wasm32")]
mod clock {
    /// QuickJS's one host import on wasm32 (Date.now, timing), answered here so the module
    /// needs nothing from the embedder.
    #[no_mangle]
    pub extern "C" fn __rquickjs_host_now_us() -> f64 {
        js_sys::Date::now() * 1000.0
    }

    pub fn now_ms() -> f64 {
        js_sys::Date::now()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod clock {
    use std::sync::OnceLock;
    use std::time::Instant;

    pub fn now_ms() -> f64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
    }
}

/// The bounds of one script run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock time for the whole run, tool calls included.
    pub time_ms: f64,
    /// CPU time the script may run without waiting on a tool call (the host is busy meanwhile).
    pub step_ms: f64,
    /// Heap of the JS engine.
    pub memory_bytes: usize,
    /// Native stack the engine may use (deep recursion ends in a RangeError before it).
    pub stack_bytes: usize,
    pub max_calls: u32,
    /// Characters of the JSON return value.
    pub max_output_chars: usize,
    /// Characters of console output kept (later lines are dropped and counted).
    pub max_console_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time_ms: 30_000.0,
            step_ms: 1_000.0,
            memory_bytes: 32 << 20,
            stack_bytes: 48 << 10,
            max_calls: 200,
            max_output_chars: 100_000,
            max_console_chars: 20_000,
        }
    }
}

/// A tool call the script made and now awaits.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: u32,
    pub namespace: String,
    pub method: String,
    /// The arguments object as JSON text (the prelude's `JSON.stringify` of it).
    pub args: String,
}

/// Where a run stands after a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The script awaits these new calls (and possibly older ones not yet resumed).
    Calls(Vec<ToolCall>),
    /// The script ended: its return value as JSON text (`None` for undefined), or why it failed.
    Done(Result<Option<String>, String>),
}

#[derive(Default)]
struct Host {
    new_calls: Vec<ToolCall>,
    calls_made: u32,
    outstanding: u32,
    console: Vec<String>,
    console_chars: usize,
    console_dropped: u32,
}

/// Why the interrupt handler stopped the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    Step,
    Time,
}

pub struct Sandbox {
    // Persistent handles must be released before the context and runtime (field order).
    settle: Option<Persistent<Function<'static>>>,
    encode: Option<Persistent<Function<'static>>>,
    /// The prelude's second half, until [`Sandbox::open`] runs it.
    install: Option<Persistent<Function<'static>>>,
    /// Freezes some more intrinsics (`freezeSome(budget)` → all frozen), until the run opens.
    freeze_some: Option<Persistent<Function<'static>>>,
    main: Option<Persistent<Promise<'static>>>,
    context: Context,
    runtime: Runtime,
    host: Rc<RefCell<Host>>,
    limits: Limits,
    end_ms: Rc<Cell<f64>>,
    /// Set once the run is open: the interrupt handler checks the limits from then on.
    armed: Rc<Cell<bool>>,
    step_deadline: Rc<Cell<f64>>,
    stopped: Rc<Cell<Option<Stop>>>,
    done: bool,
}

impl Sandbox {
    /// A fresh isolate whose globals are one frozen namespace per entry of `interfaces`
    /// (JSON text `{namespace: {name, version, methods: [{name, …}]}}`; the order is kept),
    /// plus `__interfaces`,
    /// `__getToolInterface` and `console`.
    pub fn new(interfaces: &str, limits: Limits) -> Result<Sandbox, String> {
        let mut sandbox = Sandbox::prepare(limits, "{}")?;
        sandbox.open(interfaces, limits.time_ms)?;
        Ok(sandbox)
    }

    /// A fresh isolate made ready before its script is known: the engine, the prelude, `console`,
    /// the frozen intrinsics and the namespaces of `base_interfaces` (those every run has, such
    /// as `browser`; same JSON as in [`Sandbox::new`]), but no clock running. [`Sandbox::open`]
    /// completes it. This is most of an isolate's cost (building the intrinsics and freezing
    /// them), so a host can prepare the next run's isolate while it is idle; each isolate still
    /// serves one run only.
    pub fn prepare(limits: Limits, base_interfaces: &str) -> Result<Sandbox, String> {
        // The Rust allocator records each block's size, so the memory limit counts every byte
        // (QuickJS's default allocator can't measure blocks on wasm32 and would not limit).
        let runtime = Runtime::new_with_alloc(rquickjs::allocator::RustAllocator)
            .map_err(|e| format!("sandbox: {e}"))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(limits.stack_bytes);
        let step_deadline = Rc::new(Cell::new(f64::INFINITY));
        let stopped = Rc::new(Cell::new(None));
        // The prelude is ours and bounded (it freezes interfaces the registry's limits bound):
        // it is never interrupted, so a run whose budget ran out while it was set up (a loaded
        // machine) still ends with the time limit's own message, at the script's first check.
        let armed = Rc::new(Cell::new(false));
        let end_ms = Rc::new(Cell::new(f64::INFINITY));
        {
            let (step_deadline, stopped, armed, end_ms) = (
                step_deadline.clone(),
                stopped.clone(),
                armed.clone(),
                end_ms.clone(),
            );
            runtime.set_interrupt_handler(Some(Box::new(move || {
                if !armed.get() {
                    return false;
                }
                let now = clock::now_ms();
                let why = if now > end_ms.get() {
                    Some(Stop::Time)
                } else if now > step_deadline.get() {
                    Some(Stop::Step)
                } else {
                    None
                };
                if why.is_some() && stopped.get().is_none() {
                    stopped.set(why);
                }
                stopped.get().is_some()
            })));
        }
        let context =
            Context::custom::<Intrinsics>(&runtime).map_err(|e| format!("sandbox: {e}"))?;
        let host = Rc::new(RefCell::new(Host::default()));
        let (settle, encode, install, freeze_some) = context.with(|ctx| -> Result<_, String> {
            let prelude: Function = ctx
                .eval(include_str!("prelude.js"))
                .catch(&ctx)
                .map_err(|e| format!("sandbox prelude: {e}"))?;
            let call = host_call(&ctx, host.clone(), limits.max_calls)?;
            let log = host_log(&ctx, host.clone(), limits.max_console_chars)?;
            let hooks: Object = prelude
                .call((call, log, limits.max_calls))
                .catch(&ctx)
                .map_err(|e| format!("sandbox prelude: {e}"))?;
            let hook = |name: &str| -> Result<Function, String> {
                hooks.get(name).map_err(|e| e.to_string())
            };
            let install = hook("install")?;
            install
                .call::<_, ()>((base_interfaces, false))
                .catch(&ctx)
                .map_err(|e| format!("sandbox prelude: {e}"))?;
            Ok((
                Persistent::save(&ctx, hook("settle")?),
                Persistent::save(&ctx, hook("encode")?),
                Persistent::save(&ctx, install),
                Persistent::save(&ctx, hook("freezeSome")?),
            ))
        })?;
        Ok(Sandbox {
            settle: Some(settle),
            encode: Some(encode),
            install: Some(install),
            freeze_some: Some(freeze_some),
            main: None,
            context,
            runtime,
            host,
            limits,
            end_ms,
            armed,
            step_deadline,
            stopped,
            done: false,
        })
    }

    /// Freezes up to `objects` more of the intrinsics of a prepared isolate; true once all are
    /// (and from then on). [`Sandbox::open`] freezes what is left: a host can spread the work
    /// over idle moments so that no single step holds it up for long.
    pub fn prepare_more(&mut self, objects: u32) -> bool {
        let Some(freeze_some) = self.freeze_some.clone() else {
            return true;
        };
        let done = self.context.with(|ctx| {
            freeze_some
                .restore(&ctx)
                .ok()
                .and_then(|f| f.call::<_, bool>((objects,)).catch(&ctx).ok())
                // A failure here surfaces when the run opens (which freezes the rest).
                .unwrap_or(true)
        });
        if done {
            self.freeze_some = None;
        }
        done
    }

    /// Completes a prepared isolate for one run: the namespaces of `interfaces` (see
    /// [`Sandbox::new`]) join those it was prepared with, the global object is frozen, and the
    /// run's clock (`time_ms` of wall-clock time) starts now.
    pub fn open(&mut self, interfaces: &str, time_ms: f64) -> Result<(), String> {
        let Some(install) = self.install.take() else {
            return Err("internal: the sandbox is already open".into());
        };
        self.freeze_some = None;
        let start = clock::now_ms();
        self.limits.time_ms = time_ms;
        self.end_ms.set(start + time_ms);
        self.context.with(|ctx| -> Result<(), String> {
            let install = install
                .restore(&ctx)
                .map_err(|e| format!("internal: {e}"))?;
            install
                .call::<_, ()>((interfaces, true))
                .catch(&ctx)
                .map_err(|e| format!("sandbox prelude: {e}"))
        })?;
        self.armed.set(true);
        Ok(())
    }

    /// Runs the script (the body of an async function: `await` and `return` work; strict mode)
    /// until it ends or waits on tool calls.
    pub fn start(&mut self, script: &str) -> Step {
        if self.main.is_some() || self.done {
            return Step::Done(Err("internal: the sandbox already ran a script".into()));
        }
        if self.install.is_some() {
            return Step::Done(Err("internal: the sandbox is not open".into()));
        }
        self.begin_step();
        let source = format!("(async () => {{ \"use strict\"; {script}\n}})()");
        let started = self.context.with(|ctx| {
            let opts = {
                let mut o = rquickjs::context::EvalOptions::default();
                o.strict = true;
                o.filename = Some(SCRIPT_FILE.into());
                o
            };
            match ctx
                .eval_with_options::<Promise, _>(source, opts)
                .catch(&ctx)
            {
                Ok(p) => Ok(Persistent::save(&ctx, p)),
                Err(e) => Err(describe(&e)),
            }
        });
        match started {
            Ok(p) => self.main = Some(p),
            Err(e) => {
                let e = match self.stopped.get() {
                    Some(stop) => self.stop_message(stop),
                    None => self.explain(e),
                };
                return self.finish(Err(e));
            }
        }
        self.run_jobs()
    }

    /// Hands the script the results of tool calls it awaited: `Ok(json text)` resolves the
    /// call's promise (empty text for undefined), `Err(message)` rejects it with an Error.
    pub fn resume(&mut self, results: Vec<(u32, Result<String, String>)>) -> Step {
        if self.done {
            return Step::Done(Err("internal: the script has ended".into()));
        }
        self.begin_step();
        let Some(settle) = self.settle.clone() else {
            return self.finish(Err("internal: the sandbox is closed".into()));
        };
        let failed = self.context.with(|ctx| -> Option<String> {
            let settle = settle.restore(&ctx).ok()?;
            for (id, result) in results {
                {
                    let mut h = self.host.borrow_mut();
                    h.outstanding = h.outstanding.saturating_sub(1);
                }
                let (ok, text) = match result {
                    Ok(t) => (true, t),
                    Err(e) => (false, e),
                };
                if let Err(e) = settle.call::<_, ()>((id, ok, text)).catch(&ctx) {
                    return Some(describe(&e));
                }
            }
            None
        });
        if let Some(e) = failed {
            return self.finish(Err(e));
        }
        self.run_jobs()
    }

    /// Console lines so far (`level: text` for all but log), and how many were dropped.
    pub fn console(&self) -> (Vec<String>, u32) {
        let h = self.host.borrow();
        (h.console.clone(), h.console_dropped)
    }

    /// Calls made so far and not yet resumed.
    pub fn outstanding(&self) -> u32 {
        self.host.borrow().outstanding
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Milliseconds left of the run's wall-clock budget.
    pub fn remaining_ms(&self) -> f64 {
        (self.end_ms.get() - clock::now_ms()).max(0.0)
    }

    fn begin_step(&self) {
        self.step_deadline
            .set(clock::now_ms() + self.limits.step_ms);
    }

    fn finish(&mut self, outcome: Result<Option<String>, String>) -> Step {
        self.done = true;
        self.main = None;
        Step::Done(outcome)
    }

    fn stop_message(&self, stop: Stop) -> String {
        match stop {
            Stop::Step => format!(
                "The script ran for more than {} ms without waiting on a tool call (an endless loop?) and was stopped.",
                self.limits.step_ms
            ),
            Stop::Time => format!(
                "The script did not finish within its time limit of {} ms and was stopped.",
                self.limits.time_ms
            ),
        }
    }

    fn run_jobs(&mut self) -> Step {
        loop {
            if let Some(stop) = self.stopped.get() {
                return self.finish(Err(self.stop_message(stop)));
            }
            match self.runtime.execute_pending_job() {
                Ok(true) => continue,
                Ok(false) => break,
                // An exception inside a job rejects the promise it belongs to; the main
                // promise's state tells the outcome.
                Err(_) => continue,
            }
        }
        if let Some(stop) = self.stopped.get() {
            return self.finish(Err(self.stop_message(stop)));
        }
        let Some(main) = self.main.clone() else {
            return self.finish(Err("internal: no script is running".into()));
        };
        let limits = self.limits;
        let encode = self.encode.clone();
        let settled = self
            .context
            .with(|ctx| -> Option<Result<Option<String>, String>> {
                let main = match main.restore(&ctx) {
                    Ok(m) => m,
                    Err(e) => return Some(Err(format!("internal: {e}"))),
                };
                match main.state() {
                    PromiseState::Pending => None,
                    PromiseState::Rejected => {
                        let err = match main.result::<Value>() {
                            Some(Err(e)) => describe(&CaughtError::from_error(&ctx, e)),
                            _ => "The script failed.".into(),
                        };
                        Some(Err(err))
                    }
                    PromiseState::Resolved => {
                        let value = match main.result::<Value>() {
                            Some(Ok(v)) => v,
                            _ => return Some(Err("internal: no return value".into())),
                        };
                        Some(encode_value(&ctx, encode, value, limits.max_output_chars))
                    }
                }
            });
        if let Some(stop) = self.stopped.get() {
            return self.finish(Err(self.stop_message(stop)));
        }
        match settled {
            Some(outcome) => self.finish(outcome.map_err(|e| self.explain(e))),
            None => {
                let calls = std::mem::take(&mut self.host.borrow_mut().new_calls);
                if calls.is_empty() && self.outstanding() == 0 {
                    return self.finish(Err("The script is awaiting a promise that nothing will ever settle (no tool call is pending).".into()));
                }
                Step::Calls(calls)
            }
        }
    }

    /// Adds what a limit means to the engine's terse messages.
    fn explain(&self, e: String) -> String {
        if e.contains("out of memory") {
            format!(
                "{e}: the script exceeded its memory limit of {} MB.",
                self.limits.memory_bytes >> 20
            )
        } else if e.contains("stack overflow") || e.contains("call stack size") {
            format!("{e}: recursion too deep for the sandbox's stack.")
        } else {
            e
        }
    }
}

/// `hostCall(ns, method, argsJson)` → call id, or -1 once the call limit is reached.
fn host_call<'js>(
    ctx: &Ctx<'js>,
    host: Rc<RefCell<Host>>,
    max_calls: u32,
) -> Result<Function<'js>, String> {
    Function::new(
        ctx.clone(),
        move |namespace: String, method: String, args: String| -> i32 {
            let mut h = host.borrow_mut();
            if h.calls_made >= max_calls {
                return -1;
            }
            let id = h.calls_made;
            h.calls_made += 1;
            h.outstanding += 1;
            h.new_calls.push(ToolCall {
                id,
                namespace,
                method,
                args,
            });
            id as i32
        },
    )
    .map_err(|e| format!("sandbox: {e}"))
}

/// `hostLog(level, text)`: keeps console output up to the limit, counts what it drops.
fn host_log<'js>(
    ctx: &Ctx<'js>,
    host: Rc<RefCell<Host>>,
    max_chars: usize,
) -> Result<Function<'js>, String> {
    Function::new(ctx.clone(), move |level: String, text: String| {
        let mut h = host.borrow_mut();
        let line = if level == "log" {
            text
        } else {
            format!("{level}: {text}")
        };
        let n = line.chars().count();
        if h.console_chars + n > max_chars {
            h.console_dropped += 1;
        } else {
            h.console_chars += n;
            h.console.push(line);
        }
    })
    .map_err(|e| format!("sandbox: {e}"))
}

fn encode_value<'js>(
    ctx: &Ctx<'js>,
    encode: Option<Persistent<Function<'static>>>,
    value: Value<'js>,
    max_chars: usize,
) -> Result<Option<String>, String> {
    let encode = encode
        .ok_or("internal: the sandbox is closed")?
        .restore(ctx)
        .map_err(|e| format!("internal: {e}"))?;
    let text: Value = encode.call((value,)).catch(ctx).map_err(|e| {
        format!(
            "The return value can't be turned into JSON: {}",
            describe(&e)
        )
    })?;
    let Some(text) = text.as_string() else {
        return Ok(None);
    };
    // The engine's memory limit bounds the string; the copy is at most that big.
    let text = text.to_string().map_err(|e| format!("internal: {e}"))?;
    let len = text.chars().count();
    if len > max_chars {
        return Err(format!(
            "The return value is {len} characters of JSON; the limit is {max_chars}. Return less (e.g. a summary or a slice)."
        ));
    }
    Ok(Some(text))
}

/// An exception as one line: `Name: message (line N)`.
fn describe(e: &CaughtError) -> String {
    match e {
        CaughtError::Exception(ex) => {
            let message = ex.message().unwrap_or_default();
            let name: Option<String> = ex.as_object().get("name").ok();
            let head = match name {
                Some(n) if !n.is_empty() => format!("{n}: {message}"),
                _ => message,
            };
            match ex.stack().as_deref().and_then(script_line) {
                Some(line) => format!("{head} (line {line})"),
                None => head,
            }
        }
        CaughtError::Value(v) => {
            let shown = v
                .as_string()
                .and_then(|s| s.to_string().ok())
                .or_else(|| v.as_number().map(|n| n.to_string()))
                .unwrap_or_else(|| format!("a {}", v.type_name()));
            format!("Uncaught {shown}")
        }
        CaughtError::Error(e) => e.to_string(),
    }
}

/// The file name the agent's script runs under (in stack traces).
const SCRIPT_FILE: &str = "agent.js";

/// The line in the agent's script of the first `agent.js:LINE` frame.
fn script_line(stack: &str) -> Option<u32> {
    let at = format!("{SCRIPT_FILE}:");
    let rest = &stack[stack.find(&at)? + at.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

impl Step {
    /// The step as JSON text for the extension: `{"calls": [{id, namespace, method, args}]}`, or
    /// `{"done": {"value": …}}` (no `value` for undefined) / `{"done": {"error": "…"}}`. The
    /// arguments and the value are JSON already (the engine's `JSON.stringify`), so they are
    /// placed as they are.
    pub fn to_json(&self) -> String {
        match self {
            Step::Calls(calls) => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        format!(
                            r#"{{"id":{},"namespace":{},"method":{},"args":{}}}"#,
                            c.id,
                            json_string(&c.namespace),
                            json_string(&c.method),
                            c.args
                        )
                    })
                    .collect();
                format!(r#"{{"calls":[{}]}}"#, calls.join(","))
            }
            Step::Done(Ok(Some(v))) => format!(r#"{{"done":{{"value":{v}}}}}"#),
            Step::Done(Ok(None)) => r#"{"done":{}}"#.into(),
            Step::Done(Err(e)) => format!(r#"{{"done":{{"error":{}}}}}"#, json_string(e)),
        }
    }
}

/// `text` as a JSON string literal. By hand rather than with serde_json, which the sandbox
/// otherwise does not need: leaving it out makes the module smaller (see `Intrinsics`' note for
/// how sizes are measured).
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Other controls, and the line separators JavaScript once refused in strings.
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(target_arch = "wasm32")]
mod module;

#[cfg(test)]
mod tests;
