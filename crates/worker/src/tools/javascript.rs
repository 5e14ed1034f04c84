//! javascript_tool: evaluate in the page, REPL style (last expression's value, promises awaited,
//! top-level await), bounded in time and output. REPL mode is asked for only where the text
//! may need it ([`needs_repl_mode`]).

use crate::cdp;
use crate::tools::bounded;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "javascript_tool",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

const EVAL_TIMEOUT_MS: u32 = 10_000;
const MAX_OUTPUT_CHARS: usize = 50_000;
const GROUP: &str = "browser-operator-js";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    text: String,
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    let start = crate::js::now_ms();
    // A script still running at the bound is stopped by V8, and Chrome answers the evaluate
    // with a bare "Internal error": an error that comes after the bound is that one.
    let timed_out = |e: cdp::Error| {
        let past_bound = crate::js::now_ms() - start >= f64::from(EVAL_TIMEOUT_MS);
        match e {
            cdp::Error::Timeout(_) => format!("The script did not finish within {} s (a promise that never settles, or a dialog open on the page).", EVAL_TIMEOUT_MS / 1000),
            cdp::Error::Chrome { .. } if past_bound => format!("The script did not finish within {} s and was stopped (a loop that never ends?).", EVAL_TIMEOUT_MS / 1000),
            e => e.to_string(),
        }
    };
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        json!({
            "replMode": needs_repl_mode(&args.text),
            "expression": args.text,
            "awaitPromise": true,
            "userGesture": true,
            "objectGroup": GROUP,
            "timeout": EVAL_TIMEOUT_MS,
        }),
        EVAL_TIMEOUT_MS + 1_000,
    )
    .await
    .map_err(timed_out)?;
    // REPL mode awaits top-level `await`, not a promise that is the value of the last
    // expression (`fetch(url)`, `Promise.resolve(5)`): that one is awaited here, within what
    // is left of the same bound.
    let promise = out
        .pointer("/result/subtype")
        .filter(|s| s.as_str() == Some("promise"))
        .and_then(|_| out.pointer("/result/objectId"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let out = match (cdp::thrown(out), promise) {
        (Ok(_), Some(promise)) => {
            let spent = (crate::js::now_ms() - start).max(0.0) as u32;
            let left = (EVAL_TIMEOUT_MS + 1_000).saturating_sub(spent).max(100);
            let awaited = cdp::send_with_timeout(
                tab,
                "Runtime.awaitPromise",
                json!({"promiseObjectId": promise, "returnByValue": false}),
                left,
            )
            .await;
            match awaited {
                Ok(v) => cdp::thrown(v),
                Err(e) => {
                    release(tab).await;
                    return Err(timed_out(e));
                }
            }
        }
        (out, _) => out,
    };
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            // Objects stay alive in the page until their group is released.
            release(tab).await;
            return Err(e.into());
        }
    };
    let text = describe_value(tab, out.get("result").unwrap_or(&Value::Null)).await;
    if out.pointer("/result/objectId").is_some() {
        release(tab).await;
    }
    Ok(ToolResult::text(bounded(text, MAX_OUTPUT_CHARS)))
}

/// Whether `text` may need REPL mode: top-level `await`, or a top-level `let`, `const`, `class`
/// or `using` that another evaluation on the page may declare again (REPL mode lets it; a plain
/// script's second `let x` is a SyntaxError). Anything else runs the same as a plain script,
/// which V8 compiles and runs 0.08–0.14 ms sooner (Runtime.evaluate "1+1" from the worker, 400
/// calls each, alternating: 0.49 ms plain against 0.57 ms in REPL mode, the tool's other
/// parameters alike). A word is found anywhere, in strings and comments too: a false match
/// costs only that time.
fn needs_repl_mode(text: &str) -> bool {
    const WORDS: [&str; 5] = ["await", "let", "const", "class", "using"];
    // Only ASCII letters, digits, `_`, `$` and `\` join a word here: any other character
    // (whitespace of any kind, punctuation, non-ASCII) may border a keyword.
    let joins = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'\\');
    let bytes = text.as_bytes();
    WORDS.iter().any(|word| {
        text.match_indices(word).any(|(i, _)| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + word.len()).copied();
            !before.is_some_and(joins) && !after.is_some_and(joins)
        })
    })
}

async fn release(tab: i32) {
    let _ = cdp::send(
        tab,
        "Runtime.releaseObjectGroup",
        json!({"objectGroup": GROUP}),
    )
    .await;
}

/// A CDP RemoteObject as text: primitives as themselves, DOM nodes and errors by their
/// description, other objects as JSON.
async fn describe_value(tab: i32, obj: &Value) -> String {
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("undefined");
    let subtype = obj.get("subtype").and_then(Value::as_str);
    let description = obj.get("description").and_then(Value::as_str);
    if let Some(u) = obj.get("unserializableValue").and_then(Value::as_str) {
        return u.to_string();
    }
    match (kind, subtype) {
        ("undefined", _) => "undefined".into(),
        ("string", _) => obj
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ("number" | "boolean", _) => obj.get("value").map(Value::to_string).unwrap_or_default(),
        ("object", Some("null")) => "null".into(),
        ("object", Some("node" | "error" | "regexp" | "date"))
        | ("function" | "symbol" | "bigint", _) => description.unwrap_or(kind).to_string(),
        _ => match obj.get("objectId").and_then(Value::as_str) {
            Some(id) => as_json(tab, id)
                .await
                .unwrap_or_else(|| description.unwrap_or("Object").to_string()),
            None => description.unwrap_or("Object").to_string(),
        },
    }
}

async fn as_json(tab: i32, object_id: &str) -> Option<String> {
    let out = cdp::send(
        tab,
        "Runtime.callFunctionOn",
        json!({
            "objectId": object_id,
            "functionDeclaration": crate::js::page_js!("tools/javascript_json.js"),
            "returnByValue": true,
        }),
    )
    .await
    .ok()?;
    out.pointer("/result/value")
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::needs_repl_mode;

    #[test]
    fn repl_mode_where_a_declaration_or_await_may_need_it() {
        for text in [
            "const a = await Promise.resolve(20);\na + 22",
            "let x = 1; x",
            "await fetch('/')",
            "(async () => 1)().then(v => v); class A {}",
            "x=1;\u{a0}let y=2",
            "using r = thing()",
            "let",
            "1;let\ty",
        ] {
            assert!(needs_repl_mode(text), "{text:?}");
        }
        for text in [
            "1+1",
            "document.title",
            "[innerWidth, innerHeight]",
            "outlet.letters + constant + classList + awaited",
            "$let + _const + let_ + class$",
            "",
        ] {
            assert!(!needs_repl_mode(text), "{text:?}");
        }
    }
}
