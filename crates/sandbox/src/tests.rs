//! Isolation and limits, natively: a small host answers the script's tool calls.

use super::*;
use serde_json::json;

type Json = serde_json::Value;

/// An outcome with its JSON text parsed, to compare with `json!`.
fn parsed(outcome: Result<Option<String>, String>) -> Result<Option<Json>, String> {
    outcome.map(|v| v.map(|text| serde_json::from_str(&text).unwrap()))
}

/// A finished step's outcome, parsed.
fn done(step: Step) -> Result<Option<Json>, String> {
    match step {
        Step::Done(outcome) => parsed(outcome),
        other => panic!("not done: {other:?}"),
    }
}

fn interfaces() -> String {
    json!({
        "browser": {"name": "browser", "version": "1", "methods": [{"name": "navigate", "description": "", "inputSchema": {"type": "object"}}]},
        "todo": {"name": "todo", "version": "1", "methods": [
            {"name": "list", "description": "", "inputSchema": {"type": "object"}},
            {"name": "add", "description": "", "inputSchema": {"type": "object"}},
            {"name": "hang", "description": "", "inputSchema": {"type": "object"}}
        ]}
    })
    .to_string()
}

/// Runs `script` to the end; `todo.list` answers the items, `todo.add` appends, `hang` never
/// answers. Returns the outcome and the calls made.
fn run_with(script: &str, limits: Limits) -> (Result<Option<Json>, String>, Vec<ToolCall>) {
    let mut sandbox = Sandbox::new(&interfaces(), limits).unwrap();
    let mut items: Vec<String> = vec!["milk".into()];
    let mut trace = Vec::new();
    let mut step = sandbox.start(script);
    loop {
        match step {
            Step::Done(outcome) => return (parsed(outcome), trace),
            Step::Calls(calls) => {
                let mut results = Vec::new();
                for c in calls {
                    trace.push(c.clone());
                    let args: Json = serde_json::from_str(&c.args).unwrap();
                    let r = match (c.namespace.as_str(), c.method.as_str()) {
                        ("todo", "list") => Ok(json!(items).to_string()),
                        ("todo", "add") => {
                            items.push(args["text"].as_str().unwrap_or("").to_string());
                            Ok(json!({"count": items.len()}).to_string())
                        }
                        ("todo", "hang") => continue,
                        _ => Err(format!(
                            "Tab {} is not in the automation tab group.",
                            args["tabId"]
                        )),
                    };
                    results.push((c.id, r));
                }
                if results.is_empty() {
                    return (Err("host: waiting forever".into()), trace);
                }
                step = sandbox.resume(results);
            }
        }
    }
}

fn run(script: &str) -> Result<Option<Json>, String> {
    run_with(script, Limits::default()).0
}

fn fails(script: &str) -> String {
    match run(script) {
        Err(e) => e,
        Ok(v) => panic!("expected an error from {script:?}, got {v:?}"),
    }
}

#[test]
fn workflow_reads_decides_and_acts() {
    let (out, trace) = run_with(
        r#"
        const before = await todo.list();
        for (const t of ["eggs", "bread"]) {
            if (!before.includes(t)) await todo.add({text: t});
        }
        console.log("added", 2, {ok: true});
        return {before, after: await todo.list()};
        "#,
        Limits::default(),
    );
    assert_eq!(
        out.unwrap(),
        Some(json!({"before": ["milk"], "after": ["milk", "eggs", "bread"]}))
    );
    assert_eq!(trace.len(), 4);
    assert_eq!(trace[1].args, r#"{"text":"eggs"}"#);
}

#[test]
fn console_is_captured() {
    let mut s = Sandbox::new(&interfaces(), Limits::default()).unwrap();
    let step = s.start("console.log('a', 1, [2]); console.warn('careful'); return 5;");
    assert_eq!(done(step), Ok(Some(json!(5))));
    assert_eq!(s.console().0, vec!["a 1 [2]", "warn: careful"]);
}

#[test]
fn undefined_return_is_none() {
    assert_eq!(run("await todo.list();"), Ok(None));
}

#[test]
fn host_errors_reject_and_can_be_caught() {
    let out = run("try { await browser.navigate({url: 'x', tabId: 99}); } catch (e) { return 'caught: ' + e.message; }");
    assert_eq!(
        out,
        Ok(Some(json!(
            "caught: Tab 99 is not in the automation tab group."
        )))
    );
    let e = fails("await browser.navigate({url: 'x', tabId: 99});");
    assert!(
        e.contains("Tab 99 is not in the automation tab group"),
        "{e}"
    );
}

#[test]
fn only_the_namespaces_are_in_scope() {
    let out = run(
        "return [typeof window, typeof document, typeof chrome, typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof WebAssembly, typeof setTimeout, typeof performance, typeof Atomics, typeof SharedArrayBuffer, typeof eval, typeof require, typeof process]",
    )
    .unwrap()
    .unwrap();
    for v in out.as_array().unwrap() {
        assert_eq!(v, "undefined");
    }
    let names = run("return Object.keys(globalThis).sort()")
        .unwrap()
        .unwrap();
    assert_eq!(
        names,
        json!([
            "__getToolInterface",
            "__interfaces",
            "browser",
            "console",
            "todo"
        ])
    );
}

#[test]
fn no_code_from_strings() {
    for script in [
        "return Function('return 1')()",
        "return (function(){}).constructor('return 1')()",
        "return (async function(){}).constructor('return 1')()",
        "return Object.getPrototypeOf(function*(){}).constructor('yield 1')().next()",
        "return Object.getPrototypeOf(async function*(){}).constructor('yield 1')",
        "return todo.list.constructor('return globalThis')()",
        "return new (console.log.constructor)('return 1')()",
        "return Reflect.construct(todo.add.constructor, ['return 1'])()",
    ] {
        let e = fails(script);
        assert!(e.contains("not allowed in the sandbox"), "{script}: {e}");
    }
    let e = fails("return eval('1+1')");
    assert!(e.contains("eval is not defined"), "{e}");
    let e = fails("return globalThis.eval('1')");
    assert!(e.contains("not a function"), "{e}");
}

#[test]
fn dynamic_import_fails() {
    let e = fails("return await import('data:text/javascript,export default 1')");
    assert!(!e.is_empty());
}

#[test]
fn namespaces_are_frozen() {
    for script in [
        "todo.add = () => 'pwned'",
        "todo.__proto__.x = 1",
        "Object.setPrototypeOf(todo, {list: () => 1})",
        "Object.defineProperty(todo, 'list', {value: 1})",
        "delete todo.list",
        "todo.list.call = 1",
        "globalThis.todo = {}",
        "Object.prototype.list = () => 'polluted'",
        "Array.prototype.includes = () => true",
        "__interfaces.todo.methods.push({name: 'x'})",
        "console.log = () => 1",
    ] {
        let e = fails(script);
        assert!(
            e.contains("TypeError") || e.contains("read-only") || e.contains("not extensible"),
            "{script}: {e}"
        );
    }
    // The namespace still works afterwards, in the same run.
    let out = run("try { todo.list = () => 'x'; } catch (e) {} return await todo.list();");
    assert_eq!(out, Ok(Some(json!(["milk"]))));
}

#[test]
fn interfaces_are_introspectable() {
    let out = run(
        "return [Object.keys(__interfaces), __getToolInterface('todo').methods.map(m => m.name)]",
    );
    assert_eq!(
        out,
        Ok(Some(json!([["browser", "todo"], ["list", "add", "hang"]])))
    );
    let e = fails("__getToolInterface('gmail')");
    assert!(e.contains("No tool namespace \"gmail\""), "{e}");
}

#[test]
fn endless_loop_is_stopped() {
    let limits = Limits {
        step_ms: 200.0,
        ..Limits::default()
    };
    let (out, _) = run_with("while (true) {}", limits);
    let e = out.unwrap_err();
    assert!(e.contains("without waiting on a tool call"), "{e}");
    // Catching does not help: the interrupt can't be caught.
    let (out, _) = run_with("for (;;) { try { while (true) {} } catch (e) {} }", limits);
    assert!(out.unwrap_err().contains("was stopped"));
    // A loop after a tool call is stopped too.
    let (out, trace) = run_with("await todo.list(); for (;;) {}", limits);
    assert!(out.unwrap_err().contains("was stopped"));
    assert_eq!(trace.len(), 1);
}

#[test]
fn time_limit_covers_the_whole_run() {
    let limits = Limits {
        time_ms: 300.0,
        step_ms: 10_000.0,
        ..Limits::default()
    };
    let (out, _) = run_with("while (true) {}", limits);
    assert!(out.unwrap_err().contains("time limit of 300 ms"));
}

#[test]
fn deep_recursion_is_a_clean_error() {
    let e = fails("function f(n) { return f(n + 1) + 1; } return f(0);");
    assert!(e.contains("stack") || e.contains("recursion"), "{e}");
}

#[test]
fn huge_allocation_hits_the_memory_limit() {
    let e = fails("const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);");
    assert!(e.contains("memory"), "{e}");
    let e = fails("return 'x'.repeat(1 << 30).length");
    assert!(
        e.contains("memory") || e.contains("RangeError") || e.contains("invalid"),
        "{e}"
    );
}

#[test]
fn huge_return_value_is_refused() {
    let e = fails("return 'x'.repeat(200000)");
    assert!(e.contains("the limit is 100000"), "{e}");
}

#[test]
fn call_limit() {
    let limits = Limits {
        max_calls: 3,
        ..Limits::default()
    };
    let (out, trace) = run_with("for (let i = 0; i < 10; i++) await todo.list();", limits);
    assert!(out.unwrap_err().contains("at most 3 tool calls"));
    assert_eq!(trace.len(), 3);
}

#[test]
fn a_promise_nothing_settles_is_reported() {
    let e = fails("await new Promise(() => {});");
    assert!(e.contains("nothing will ever settle"), "{e}");
}

#[test]
fn syntax_errors_name_the_line() {
    let e = fails("const a = 1;\nconst = 2;");
    assert!(e.contains("SyntaxError") && e.contains("line 2"), "{e}");
    let e = fails("\n\nnull.x");
    assert!(e.contains("TypeError") && e.contains("line 3"), "{e}");
}

#[test]
fn bad_arguments_are_explained() {
    let e = fails("await todo.add('milk')");
    assert!(e.contains("todo.add takes one object of arguments"), "{e}");
    let e = fails("const a = {}; a.self = a; await todo.add(a)");
    assert!(e.contains("can't be turned into JSON"), "{e}");
}

#[test]
fn concurrent_calls_resolve_in_any_order() {
    let mut s = Sandbox::new(&interfaces(), Limits::default()).unwrap();
    let step = s.start(
        "const [a, b] = await Promise.all([todo.list(), todo.add({text: 'x'})]); return [a, b];",
    );
    let Step::Calls(calls) = step else {
        panic!("{step:?}")
    };
    assert_eq!(calls.len(), 2);
    let step = s.resume(vec![(calls[1].id, Ok("2".into()))]);
    assert_eq!(step, Step::Calls(vec![]));
    let step = s.resume(vec![(calls[0].id, Ok("[1]".into()))]);
    assert_eq!(done(step), Ok(Some(json!([[1], 2]))));
}

/// Prepares as the worker does: the base namespaces first, in small steps, then the page's.
fn prepared(limits: Limits) -> Sandbox {
    let all: serde_json::Map<String, Json> = serde_json::from_str(&interfaces()).unwrap();
    let base = json!({"browser": all["browser"]}).to_string();
    let page = json!({"todo": all["todo"]}).to_string();
    let mut s = Sandbox::prepare(limits, &base).unwrap();
    let mut steps = 0;
    while !s.prepare_more(50) {
        steps += 1;
    }
    assert!(steps > 3, "preparing took {steps} steps");
    s.open(&page, limits.time_ms).unwrap();
    s
}

#[test]
fn an_isolate_prepared_in_steps_is_as_closed_as_a_new_one() {
    for script in [
        "todo.add = () => 'pwned'",
        "browser.navigate = () => 1",
        "globalThis.todo = {}",
        "globalThis.x = 1",
        "Object.prototype.list = () => 'polluted'",
        "Array.prototype.includes = () => true",
        "todo.add.prototype.x = 1",
        "console.log.prototype.x = 1",
        "__interfaces.browser.methods.push({name: 'x'})",
        "Object.getPrototypeOf(async function () {}).x = 1",
    ] {
        let mut s = prepared(Limits::default());
        match s.start(script) {
            Step::Done(Err(e)) => assert!(
                e.contains("TypeError") || e.contains("read-only") || e.contains("not extensible"),
                "{script}: {e}"
            ),
            other => panic!("{script}: {other:?}"),
        }
    }
    let mut s = prepared(Limits::default());
    assert_eq!(
        done(s.start("return [Object.keys(globalThis), Object.keys(__interfaces)]")),
        Ok(Some(json!([
            [
                "browser",
                "todo",
                "__interfaces",
                "__getToolInterface",
                "console"
            ],
            ["browser", "todo"]
        ])))
    );
    // Unprepared: open does all of it.
    let mut s = Sandbox::prepare(Limits::default(), "{}").unwrap();
    s.open(&interfaces(), 1000.0).unwrap();
    assert_eq!(
        done(s.start("return typeof todo.add")),
        Ok(Some(json!("function")))
    );
}

#[test]
fn a_second_run_sees_nothing_of_the_first() {
    let mut first = prepared(Limits::default());
    let changed = first.start(
        r#"
        const changed = [];
        const tryTo = (what, f) => { try { f(); changed.push(what); } catch (e) {} };
        tryTo("global", () => { globalThis.leak = 1; });
        tryTo("Object.prototype", () => { Object.prototype.leak = 1; });
        tryTo("Map iterator", () => { Object.getPrototypeOf(new Map().entries()).leak = 1; });
        tryTo("Set iterator", () => { Object.getPrototypeOf(new Set().values()).leak = 1; });
        console.log("first");
        return [changed, Object.getPrototypeOf(new Map().entries()).leak];
        "#,
    );
    // The first run did change what is not frozen (so the check below means something).
    assert_eq!(
        done(changed),
        Ok(Some(json!([["Map iterator", "Set iterator"], 1])))
    );
    let mut second = prepared(Limits::default());
    assert_eq!(
        done(second.start("return [typeof leak, ({}).leak, Object.getPrototypeOf(new Map().entries()).leak, Object.getPrototypeOf(new Set().values()).leak]")),
        Ok(Some(json!(["undefined", null, null, null])))
    );
    assert!(second.console().0.is_empty());
}

#[test]
fn steps_are_json_whatever_the_strings_hold() {
    let tricky =
        "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} sep \u{2028}\u{2029} é 🦀";
    let step = Step::Calls(vec![ToolCall {
        id: 3,
        namespace: tricky.into(),
        method: "m\"".into(),
        args: r#"{"text":"x"}"#.into(),
    }]);
    let back: Json = serde_json::from_str(&step.to_json()).unwrap();
    assert_eq!(
        back,
        json!({"calls": [{"id": 3, "namespace": tricky, "method": "m\"", "args": {"text": "x"}}]})
    );
    let back: Json = serde_json::from_str(&Step::Done(Err(tricky.into())).to_json()).unwrap();
    assert_eq!(back, json!({"done": {"error": tricky}}));
    let back: Json = serde_json::from_str(&Step::Done(Ok(None)).to_json()).unwrap();
    assert_eq!(back, json!({"done": {}}));
    // A value straight from the engine's JSON.stringify, strings and all.
    let mut s = Sandbox::new(&interfaces(), Limits::default()).unwrap();
    let text = s
        .start(r#"return {s: "a\u2028b\"c\\d\u0001", n: [1.5, -0, 1e21], u: undefined}"#)
        .to_json();
    let back: Json = serde_json::from_str(&text).unwrap();
    assert_eq!(
        back,
        json!({"done": {"value": {"s": "a\u{2028}b\"c\\d\u{1}", "n": [1.5, 0, 1e21]}}})
    );
}

#[test]
fn the_everyday_library_is_there_and_typed_arrays_are_not() {
    assert_eq!(
        run("return [typeof Date.now(), typeof /a/.test, typeof new Map(), typeof new Set(), typeof Promise.all, typeof Proxy, typeof WeakRef, typeof JSON.parse, typeof BigInt(1), typeof Uint8Array, typeof ArrayBuffer, typeof Atomics]"),
        Ok(Some(json!(["number", "function", "object", "object", "function", "function", "function", "function", "bigint", "undefined", "undefined", "undefined"])))
    );
}

#[test]
fn interfaces_that_are_not_an_object_are_refused() {
    for bad in ["[]", "null", "\"x\"", "1"] {
        let err = Sandbox::new(bad, Limits::default())
            .err()
            .unwrap_or_default();
        assert!(err.contains("not a JSON object"), "{bad}: {err}");
    }
}
