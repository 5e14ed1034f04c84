//! get_page_text: the readable text of a group tab (main content when marked, else the body),
//! whitespace collapsed, bounded. `extension/page-text.js` writes the whole answer in the page,
//! and the worker passes it on as the one JS string it is ([`Output::PageText`]: not copied into
//! wasm memory, nor parsed and formatted again).
//!
//! It asks the content script first, on the port the worker keeps to the tab's top frame
//! (`content_script`): on the bench's article the port carries the 50,000 characters in 2.5-3.2 ms
//! where a `tabs.sendMessage` took 3.4-4.1 ms and `Runtime.evaluate` through `chrome.debugger`
//! more (on an AMD EPYC machine, from the worker: the same function installed in an isolated
//! world for CDP took 6.4 / 7.0 ms against 5.4 / 6.0 ms by message, 40 calls each,
//! alternating). A small answer goes faster over CDP than by message (the bench's form: 1.2 ms
//! against 1.5 / 1.7 ms), but a small answer is a fast one either way. Where no content script
//! answers (about:blank, a page loaded before the extension), the same function runs over CDP.

use crate::cdp;
use crate::content_script;
use crate::js::{field, with_timeout};
use crate::tools::{typed, Access, Output, Tool};
use js_sys::JsString;
use serde::Deserialize;
use serde_json::json;
use wasm_bindgen::JsCast;

pub const TOOL: Tool = Tool {
    name: "get_page_text",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

const MAX_TEXT_CHARS: usize = 50_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<Output, String> {
    if let Some(answer) = from_content_script(args.tab_id).await? {
        return Ok(Output::PageText(answer));
    }
    let expression = format!(
        "({})({MAX_TEXT_CHARS})",
        crate::js::page_js!("page-text.js")
    );
    let out = cdp::send_js(
        args.tab_id,
        "Runtime.evaluate",
        json!({"expression": expression, "returnByValue": true, "timeout": 5000}),
    )
    .await?;
    let out = cdp::thrown_js(out).map_err(|e| match e {
        cdp::Error::Exception(_) => {
            "Reading the page's text failed (the page threw an exception).".to_string()
        }
        e => e.to_string(),
    })?;
    match field(&field(&out, "result"), "value").dyn_into::<JsString>() {
        Ok(answer) => Ok(Output::PageText(answer)),
        Err(_) => Err("Reading the page's text failed (the page gave no text).".into()),
    }
}

/// The content script's answer; `None` when there is none to ask (or it could not read the
/// page), and the caller reads it over CDP. A page that does not answer at all (a hung
/// renderer) is an error at the bound a CDP call would have.
async fn from_content_script(tab_id: i32) -> Result<Option<JsString>, String> {
    let asked = content_script::ask(tab_id, json!({"type": "pageText", "max": MAX_TEXT_CHARS}));
    let answer = with_timeout(
        cdp::DEFAULT_TIMEOUT_MS,
        "Reading the page's text over chrome.tabs.connect",
        asked,
    )
    .await?;
    Ok(answer.and_then(|a| a.dyn_into::<JsString>().ok()))
}
