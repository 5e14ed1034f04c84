//! find: elements matching a plain-language query, ranked, with refs and points in screenshot
//! coordinates. Each frame is searched by read_page's own page-side walk (the isolated world's library, op
//! "find"): the same roles, names and refs as read_page; the words are matched there against
//! role, accessible name (which holds label, alt, title or placeholder when they name it), the
//! element's text, title, placeholder and value. This merges the frames' best matches.

use crate::cdp::{self, Target};
use crate::geometry::scale as coords;
use crate::isolated_world::{self as world, Doc};
use crate::tools::{typed, Access, Tool};
use crate::vec_map::VecMap;
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "find",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

const MAX_RESULTS: usize = 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    query: String,
    tab_id: i32,
}

/// One frame's answer from the isolated world's library.
#[derive(Deserialize, Default)]
struct Found {
    #[serde(default)]
    matches: Vec<Match>,
    #[serde(default)]
    total: usize,
    #[serde(default)]
    hosts: u32,
    /// The next id the document's world gives.
    #[serde(default)]
    next: u32,
}

#[derive(Deserialize)]
struct Match {
    /// `[ref_N] role "name"` (`ref_D_N` in a frame).
    line: String,
    score: u32,
    /// Centre of the element's first box, CSS pixels of its frame's viewport.
    point: Option<(f64, f64)>,
}

/// A match with where it was found: frame order, rank within the frame, frame origin.
struct Hit {
    m: Match,
    frame: usize,
    rank: usize,
    origin: (f64, f64),
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    // Not a layout that Chrome's debugging bar is about to move.
    crate::debugging_bar::steady(args.tab_id).await;
    crate::geometry::scale::load().await;
    let tab = args.tab_id;
    // The page lowercases it (`toLowerCase`, as it does the text it compares it with): no
    // Unicode case tables in the wasm.
    let query = args.query.trim();
    if query.is_empty() {
        return Err("Invalid argument `query`: it must not be empty.".into());
    }
    let frames = world::frames(tab).await?;
    let live: VecMap<String, String> = frames
        .iter()
        .map(|d| (d.frame.clone(), d.loader.clone()))
        .collect();
    world::begin(tab, &live).await;
    let mut hits = Vec::new();
    let mut total = 0;
    let mut unread = Vec::new();
    for (i, doc) in frames.iter().enumerate() {
        // A frame's points are relative to its own viewport: add where it sits in the page.
        let Some(origin) = frame_origin(tab, doc, i == 0).await else {
            // Its <iframe> has no box: nothing in it can be seen.
            continue;
        };
        match search(tab, doc, i == 0, query).await {
            Ok(found) => {
                total += found.total;
                hits.extend(found.matches.into_iter().enumerate().map(|(rank, m)| Hit {
                    m,
                    frame: i,
                    rank,
                    origin,
                }));
            }
            Err(e) => unread.push(format!("frame {}: {e}", doc.frame)),
        }
    }
    world::commit(tab).await;
    // Best first; among equals the main document first, then each frame's own order.
    protocol::sort::sort_by(&mut hits, |a, b| {
        b.m.score
            .cmp(&a.m.score)
            .then(a.frame.cmp(&b.frame))
            .then(a.rank.cmp(&b.rank))
    });
    let q = args.query.trim();
    let mut lines: Vec<String> = hits
        .iter()
        .take(MAX_RESULTS)
        .map(|h| match h.m.point {
            Some((x, y)) => {
                let (sx, sy) = coords::to_screenshot(tab, x + h.origin.0, y + h.origin.1);
                format!("{} at ({sx}, {sy})", h.m.line)
            }
            None => format!("{} (not visible)", h.m.line),
        })
        .collect();
    for u in &unread {
        lines.push(format!("(not searched: {u})"));
    }
    if hits.is_empty() {
        let mut text =
            format!("No elements match \"{q}\". Try other words, or read_page to see the page.");
        for u in &unread {
            text.push_str(&format!("\n(not searched: {u})"));
        }
        return Ok(ToolResult::text(text));
    }
    let head = if total > MAX_RESULTS {
        format!(
            "Found {total} elements matching \"{q}\"; the best {MAX_RESULTS} (refine the query to see others):"
        )
    } else {
        format!("Found {total} element(s) matching \"{q}\":")
    };
    Ok(ToolResult::text(format!("{head}\n{}", lines.join("\n"))))
}

/// One frame's best matches, closed shadow roots included.
async fn search(tab: i32, doc: &Doc, top: bool, query: &str) -> Result<Found, String> {
    let target = doc.target(tab);
    let context = world::world(&target, doc).await?;
    let naming = world::naming(tab, doc, top);
    let arg = json!({
        "query": query,
        "prefix": naming.prefix,
        "base": naming.base,
        "max": MAX_RESULTS,
    });
    let mut found = ask(&target, context, &arg).await?;
    if found.hosts > 0 && world::attach_closed_roots(&target, context).await? {
        found = ask(&target, context, &arg).await?;
    }
    world::noted(tab, &naming, found.next);
    Ok(found)
}

async fn ask(target: &Target, context: i64, arg: &Value) -> Result<Found, String> {
    let out = world::call_world(target, context, None, "find", arg.clone(), true).await?;
    crate::js::from_json(out.get("value").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("the page-side search returned something unexpected: {e}"))
}

/// Where a frame's viewport starts in the tab's viewport: the content box of its `<iframe>` in
/// its debugger session, moved by where that session sits in the top viewport (frames of another
/// site). `top`: the tab's main frame.
async fn frame_origin(tab: i32, doc: &Doc, top: bool) -> Option<(f64, f64)> {
    let target = doc.target(tab);
    let session_root = top || cdp::embedder(&target).is_some_and(|(_, f)| f == doc.frame);
    let (x, y) = if session_root {
        (0.0, 0.0)
    } else {
        let owner = cdp::send_to(&target, "DOM.getFrameOwner", json!({"frameId": doc.frame}))
            .await
            .ok()?;
        let backend = owner.get("backendNodeId").and_then(Value::as_i64)?;
        let model = cdp::send_to(
            &target,
            "DOM.getBoxModel",
            json!({"backendNodeId": backend}),
        )
        .await
        .ok()?;
        let content = model.pointer("/model/content")?.as_array()?;
        (content.first()?.as_f64()?, content.get(1)?.as_f64()?)
    };
    let (dx, dy) = crate::geometry::frame_offset(&target).await.ok()?;
    Some((x + dx, y + dy))
}
