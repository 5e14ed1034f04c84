//! The worker's isolated world in each frame's document (`Page.createIsolatedWorld`, one fixed
//! name: asking again returns the same world, even from a new debugger session after a worker
//! restart). The page cannot see it. In it, the library (`library.js`) keeps the element table
//! (element → small id) and runs the walks of read_page and find. This module installs the
//! library and calls it (`call_world`); `documents` numbers the tab's documents (kept across a
//! worker restart); `refs` resolves a ref to the element it names.

mod documents;
mod refs;

pub use documents::{begin, commit, frames, naming, noted, Doc};
pub use refs::{resolve, stale};

use crate::cdp::{self, Error, Target};
use crate::vec_map::VecMap;
use serde_json::{json, Value};
use std::cell::RefCell;

/// The isolated world's name: the same name finds the same world again.
const WORLD: &str = "browser-operator";
/// The isolated world's library: the element table, and the walks of read_page and find.
const WORLD_JS: &str = crate::js::page_js!("isolated_world/library.js");
/// A hash of `WORLD_JS`: a world that holds an older version replaces its functions (not its
/// element table).
const WORLD_JS_VERSION: u32 = fnv1a(WORLD_JS.as_bytes());

const fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash = 0x811c_9dc5_u32;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u32;
        hash = hash.wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}

/// The world's execution context of each document (its session, frame and loader), as
/// `Page.createIsolatedWorld` gave it: the world lives as long as its document, and a new
/// document (a navigation, a reload, a move to another process) has a new loader, so the same
/// key names the same live context. Asked once per document instead of once per call.
#[derive(PartialEq)]
struct Known {
    session: Option<String>,
    frame: String,
    loader: String,
    context: i64,
}

thread_local! {
    static CONTEXTS: RefCell<VecMap<i32, Vec<Known>>> = const { RefCell::new(VecMap::new()) };
}

/// At most this many documents' contexts are kept per tab (frames come and go).
const KEPT_CONTEXTS: usize = 32;

/// The execution context of the worker's isolated world in `doc` (created on first use), in
/// the session of `target` (a tab id for the tab's own session).
pub async fn world(target: impl Into<Target>, doc: &Doc) -> Result<i64, Error> {
    let target = target.into();
    let known = CONTEXTS.with(|c| {
        c.borrow().get(&target.tab).and_then(|list| {
            list.iter()
                .find(|k| {
                    k.session == target.session && k.frame == doc.frame && k.loader == doc.loader
                })
                .map(|k| k.context)
        })
    });
    if let Some(context) = known {
        return Ok(context);
    }
    let out = cdp::send_to(
        &target,
        "Page.createIsolatedWorld",
        json!({"frameId": doc.frame, "worldName": WORLD}),
    )
    .await?;
    let context = out
        .get("executionContextId")
        .and_then(Value::as_i64)
        .ok_or_else(|| cdp::Error::Other("Page.createIsolatedWorld returned no context".into()))?;
    CONTEXTS.with(|c| {
        let mut c = c.borrow_mut();
        let list = c.entry(target.tab).or_default();
        list.retain(|k| !(k.session == target.session && k.frame == doc.frame));
        if list.len() >= KEPT_CONTEXTS {
            list.remove(0);
        }
        list.push(Known {
            session: target.session.clone(),
            frame: doc.frame.clone(),
            loader: doc.loader.clone(),
            context,
        });
    });
    Ok(context)
}

/// Forgets a tab's refs and its worlds' contexts (it closed or left the group).
pub fn forget(tab: i32) {
    CONTEXTS.with(|c| c.borrow_mut().remove(&tab));
    documents::forget(tab);
}

/// Whether the tab's documents are numbered, or their worlds' contexts kept (in memory).
pub fn holds(tab: i32) -> bool {
    documents::holds(tab) || CONTEXTS.with(|c| c.borrow().contains_key(&tab))
}

/// Calls the library in a world: `op` with `arg`, on `this` = `object` if given.
pub async fn call_world(
    target: impl Into<Target>,
    context: i64,
    object: Option<&str>,
    op: &str,
    arg: Value,
    by_value: bool,
) -> Result<Value, Error> {
    let arg = json!({ "value": arg });
    call_world_with(&target.into(), context, object, op, arg, by_value).await
}

/// What the stub answers in a world that holds no functions of this version yet.
const MISSING: &str = "\u{1}missing";
/// Calls the functions a world keeps: a few bytes to compile instead of the library's 30 KB.
const WORLD_STUB: &str = "function (op, arg, version) { const S = globalThis.__browserOperator; \
    return S && S.version === version && S.run ? S.run.call(this, op, arg, S) : '\u{1}missing'; }";

/// [`call_world`] with `arg` as a CDP call argument (`{"value": …}` or `{"objectId": …}`). The
/// stub goes first; a world without the functions (new, or made by an older version) is sent
/// the whole source, which installs them.
pub async fn call_world_with(
    target: &Target,
    context: i64,
    object: Option<&str>,
    op: &str,
    arg: Value,
    by_value: bool,
) -> Result<Value, Error> {
    for source in [WORLD_STUB, WORLD_JS] {
        let mut params = json!({
            "functionDeclaration": source,
            "arguments": [{"value": op}, arg, {"value": WORLD_JS_VERSION}],
            "returnByValue": by_value,
            "objectGroup": "browser-operator-refs",
        });
        match object {
            Some(o) => params["objectId"] = json!(o),
            None => params["executionContextId"] = json!(context),
        }
        let out = cdp::send_to_with_timeout(target, "Runtime.callFunctionOn", params, 20_000)
            .await
            .inspect_err(|e| {
                if matches!(e, cdp::Error::NoContext { .. }) {
                    // A context kept for a document that is gone after all: asked again next time.
                    CONTEXTS.with(|c| c.borrow_mut().remove(&target.tab));
                }
            })?;
        let mut out = cdp::thrown(out).map_err(|e| match e {
            cdp::Error::Exception(x) => cdp::Error::Other(format!(
                "the page-side walk failed: {}",
                x.summary().unwrap_or("an exception")
            )),
            e => e,
        })?;
        let result = out
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null);
        if source == WORLD_STUB && result.get("value").and_then(Value::as_str) == Some(MISSING) {
            continue;
        }
        return Ok(result);
    }
    Err(cdp::Error::Other(
        "the page-side functions could not be installed".into(),
    ))
}

/// Closed shadow roots are out of the page's reach; the debugger finds them. Candidates the walk
/// found (elements that may host one, not checked before) are asked for their shadow roots once;
/// those found are handed to the world. Returns whether any was found.
pub async fn attach_closed_roots(tab: &Target, context: i64) -> Result<bool, Error> {
    let hosts = call_world(tab, context, None, "hosts", Value::Null, false).await?;
    let Some(array) = hosts.get("objectId").and_then(Value::as_str) else {
        return Ok(false);
    };
    let props = cdp::send_to(
        tab,
        "Runtime.getProperties",
        json!({"objectId": array, "ownProperties": true}),
    )
    .await?;
    let mut found = false;
    let list = props
        .get("result")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for p in list {
        let is_index = p
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.parse::<u32>().is_ok());
        let Some(host) = p.pointer("/value/objectId").and_then(Value::as_str) else {
            continue;
        };
        if !is_index {
            continue;
        }
        let Ok(node) = cdp::send_to(
            tab,
            "DOM.describeNode",
            json!({"objectId": host, "depth": 0, "pierce": true}),
        )
        .await
        else {
            continue;
        };
        let roots = node
            .pointer("/node/shadowRoots")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for root in roots {
            let Some(backend) = root.get("backendNodeId").and_then(Value::as_i64) else {
                continue;
            };
            let Ok(resolved) = cdp::send_to(
                tab,
                "DOM.resolveNode",
                json!({"backendNodeId": backend, "executionContextId": context, "objectGroup": "browser-operator-refs"}),
            )
            .await
            else {
                continue;
            };
            if let Some(object) = resolved.pointer("/object/objectId").and_then(Value::as_str) {
                let arg = json!({"objectId": host});
                let closed = call_world_with(tab, context, Some(object), "closed", arg, true).await;
                if closed.is_ok() {
                    found = true;
                }
            }
        }
    }
    Ok(found)
}
