//! Element refs: the one mechanism by which tools name elements. A ref in the tab's top
//! document is `ref_N`, id N in its world; in a frame's document it is `ref_D_N`, id N in the
//! world of document D (`documents`). (`ref_D_N` naming the top document, as refs were written
//! before, still resolves.) Resolving a ref gives a node: a RemoteObject id in the isolated
//! world, in the debugger session of its document.

use super::documents::{self, frames, Doc, TABLES};
use super::{call_world, world};
use crate::cdp::{self, Target};
use serde_json::{json, Value};

/// `ref_N` (the top document: no number) or `ref_D_N`.
fn parse_ref(r: &str) -> Option<(Option<u32>, u32)> {
    let rest = r.trim().strip_prefix("ref_")?;
    match rest.split_once('_') {
        Some((d, n)) => Some((Some(d.parse().ok()?), n.parse().ok()?)),
        None => Some((None, rest.parse().ok()?)),
    }
}

/// An element a ref names, checked to be still in the page.
pub struct Element {
    /// Its document, as now loaded (with its session).
    pub doc: Doc,
    pub id: u32,
    pub context: i64,
    /// RemoteObject id in the isolated world, valid in `target`'s session.
    pub object: String,
    /// The debugger session of its document: send commands about `object` there.
    pub target: Target,
}

fn unknown(r: &str, tab: i32) -> String {
    format!("Unknown ref {r} for tab {tab}: call read_page or find to get current refs.")
}

/// The element a ref stands for, checked to be still in the page.
pub async fn resolve(tab: i32, r: &str) -> Result<Element, String> {
    let well_formed = r
        .trim()
        .strip_prefix("ref_")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '_'));
    if !well_formed {
        return Err(format!(
            "Invalid ref \"{r}\": refs look like ref_12 (or ref_2_12 in a frame) and come from read_page or find."
        ));
    }
    let (d, id) = parse_ref(r).ok_or_else(|| unknown(r, tab))?;
    documents::load(tab).await;
    // Numbers are never reused: one given out before and no longer listed is a document that
    // has gone (pruned by a later snapshot).
    let (doc, base) = TABLES.with(|t| {
        let t = t.borrow();
        let table = t.get(&tab).ok_or_else(|| unknown(r, tab))?;
        // `ref_N`: the top document the refs were last given in.
        let d = match d {
            Some(d) => d,
            None if table.top == 0 => return Err(unknown(r, tab)),
            None => table.top,
        };
        let base = if d == table.top { table.base } else { 0 };
        match table.docs.get(&d).map(|doc| (doc, base)) {
            Some((doc, base)) => Ok((doc.clone(), base)),
            None if d >= 1 && d <= table.next => Err(stale(
                r,
                "its page or frame was navigated, reloaded or removed",
            )),
            None => Err(unknown(r, tab)),
        }
    })?;
    let doc = frames(tab)
        .await?
        .into_iter()
        .find(|live| *live == doc)
        .ok_or_else(|| stale(r, "its page was navigated or reloaded"))?;
    let target = doc.target(tab);
    let gone = |e: cdp::Error| match e {
        cdp::Error::FrameGone { .. } => stale(r, "its frame was navigated or removed"),
        e => e.to_string(),
    };
    let context = world(&target, &doc).await.map_err(gone)?;
    let out = call_world(&target, context, None, "get", json!(id), false)
        .await
        .map_err(gone)?;
    match (
        out.get("objectId").and_then(Value::as_str),
        out.get("value"),
    ) {
        (Some(object), _) => Ok(Element {
            doc,
            id,
            context,
            object: object.to_string(),
            target,
        }),
        (None, Some(Value::String(s))) if s == "stale" => {
            Err(stale(r, "it was removed from the page"))
        }
        // An id below the document's first: given by a page the tab showed before.
        (None, _) if id < base => Err(stale(r, "its page was navigated or reloaded")),
        _ => Err(unknown(r, tab)),
    }
}

pub fn stale(r: &str, why: &str) -> String {
    format!("Stale ref {r}: the element no longer exists ({why}). Call read_page or find again for fresh refs.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_refs() {
        assert_eq!(parse_ref("ref_3_12"), Some((Some(3), 12)));
        assert_eq!(parse_ref("ref_12"), Some((None, 12)));
        assert_eq!(parse_ref("12"), None);
        assert_eq!(parse_ref("ref_x"), None);
    }
}
