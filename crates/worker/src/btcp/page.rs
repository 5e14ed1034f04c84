//! The page side of client-defined tools, reached through the debugger in the page's main
//! world: read the registry that extension/page-tools.js keeps (`btcp.__describe`) and call a
//! registered method (`btcp.__invoke`). Everything the page answers is checked: it is untrusted.

use crate::cdp;
use protocol::btcp::PageTools;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// A method's result is refused past this size (the registry's bound is
/// `protocol::btcp::limits::REGISTRY`).
const MAX_PAGE_TEXT: usize = 1 << 20;
const DESCRIBE: &str = "(() => { const b = globalThis.btcp; return b && typeof b.__describe === 'function' ? b.__describe() : null; })()";

/// The tab's namespaces, `browser` first. A page without tools (or without our script, such as
/// about:blank) offers only `browser`.
pub async fn tools(tab: i32) -> Result<PageTools, String> {
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": DESCRIBE, "returnByValue": true, "timeout": 2_000}),
    )
    .await?;
    let out = cdp::thrown(out).map_err(|e| match e {
        cdp::Error::Exception(_) => {
            "Reading the page's tools failed: the page's btcp object threw.".to_string()
        }
        e => e.to_string(),
    })?;
    let page = match out.pointer("/result/value") {
        Some(Value::String(text)) => PageTools::from_page(text)?,
        _ => PageTools {
            revision: 0,
            namespaces: Vec::new(),
            refused: Vec::new(),
        },
    };
    Ok(page.with_browser())
}

#[derive(Deserialize)]
struct Answer {
    ok: bool,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

/// Calls `namespace.method(args)` in the page; the page gives it `timeout_ms` to settle.
/// Returns the result as JSON (`None` when the method returned undefined).
pub async fn invoke(
    tab: i32,
    namespace: &str,
    method: &str,
    args: &Map<String, Value>,
    timeout_ms: u32,
) -> Result<Option<Value>, String> {
    let args_text = Value::Object(args.clone()).to_string();
    let expression = format!(
        "globalThis.btcp.__invoke({}, {}, {}, {timeout_ms})",
        Value::from(namespace),
        Value::from(method),
        Value::from(args_text),
    );
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        json!({"expression": expression, "awaitPromise": true, "returnByValue": true, "userGesture": true}),
        timeout_ms + 1_000,
    )
    .await
    .and_then(cdp::thrown)
    .map_err(|e| match e {
        cdp::Error::Timeout(_) => {
            format!("{namespace}.{method} did not answer within {} s.", timeout_ms / 1000)
        }
        cdp::Error::Exception(x) => format!(
            "Calling {namespace}.{method} failed in the page: {}",
            x.first_line().unwrap_or("an exception")
        ),
        e => e.to_string(),
    })?;
    let text = match out.pointer("/result/value") {
        Some(Value::String(t)) => t,
        _ => return Err(format!("Calling {namespace}.{method} failed: the page has no tool registry (reload the page?).")),
    };
    if text.len() > MAX_PAGE_TEXT {
        return Err(format!(
            "{namespace}.{method} returned more than {} KB.",
            MAX_PAGE_TEXT >> 10
        ));
    }
    let answer: Answer = crate::js::parse_json(text)
        .map_err(|e| format!("{namespace}.{method}: the page's answer is malformed: {e}"))?;
    if answer.ok {
        Ok(answer.value)
    } else {
        Err(format!(
            "{namespace}.{method} failed: {}",
            answer.error.unwrap_or_else(|| "no reason given".into())
        ))
    }
}
