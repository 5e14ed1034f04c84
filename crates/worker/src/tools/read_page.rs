//! read_page: the page's elements as a tree, one element a line (`role "name" [ref_D_N]
//! attributes`), indented one space per level, unnamed wrappers collapsed into their children.
//! The walk runs in the page (the isolated world's library, frame by frame); each
//! iframe's document is hung under its `<iframe>` line, out-of-process iframes (another site)
//! included: their documents are walked in their own debugger session.

use crate::cdp::{self, Target};
use crate::isolated_world::{self as world, Doc};
use crate::tools::{typed, Access, Tool};
use crate::vec_map::VecMap;
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};
use std::cell::RefCell;

pub const TOOL: Tool = Tool {
    name: "read_page",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

thread_local! {
    /// Each document's last whole rendering (every element, from the top), by tab, frame and
    /// load, with the page's token for it. The page keeps its own and what it was made from;
    /// while none of that changed it answers `same` instead of sending the text again.
    static KEPT: RefCell<VecMap<(i32, String, String), Rendered>> = const { RefCell::new(VecMap::new()) };
}

/// Forgets a closed tab's kept renderings.
pub fn forget(tab: i32) {
    KEPT.with(|k| k.borrow_mut().retain(|(t, _, _), _| *t != tab));
}

/// Whether renderings of the tab are kept.
pub fn holds(tab: i32) -> bool {
    KEPT.with(|k| k.borrow().keys().any(|(t, _, _)| *t == tab))
}

fn kept_key(tab: i32, doc: &Doc) -> (i32, String, String) {
    (tab, doc.frame.clone(), doc.loader.clone())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    depth: Option<u32>,
    #[serde(default, rename = "ref_id")]
    ref_id: Option<String>,
    #[serde(default, rename = "max_chars")]
    max_chars: Option<usize>,
}

const DEFAULT_DEPTH: u32 = 15;
const DEFAULT_MAX_CHARS: usize = 50_000;
/// "Near" the viewport: this many viewport heights above and below it.
const NEAR_VIEWPORTS: f64 = 1.0;

/// Which elements a read lists.
#[derive(Clone, Copy, PartialEq)]
enum Filter {
    /// Every element, off-viewport ones included.
    All,
    /// Every element in the viewport (the rest of the page is left out).
    Visible,
    /// Only what can be acted on, in or near the viewport.
    Interactive,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    // Not a layout that Chrome's debugging bar is about to move.
    crate::debugging_bar::steady(args.tab_id).await;
    let tab = args.tab_id;
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
    let max_chars = args.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let filter = match args.filter.as_deref() {
        None | Some("all") => Filter::All,
        Some("visible") => Filter::Visible,
        Some("interactive") => Filter::Interactive,
        Some(other) => {
            return Err(format!(
                "Invalid argument `filter`: expected \"all\", \"visible\" or \"interactive\", got \"{other}\"."
            ))
        }
    };
    let interactive = filter == Filter::Interactive;
    let frames = world::frames(tab).await?;
    let live = frames
        .iter()
        .map(|d| (d.frame.clone(), d.loader.clone()))
        .collect();
    world::begin(tab, &live).await;
    KEPT.with(|k| {
        k.borrow_mut()
            .retain(|(t, f, l), _| *t != tab || live.get(f) == Some(l))
    });
    let walk = Walk {
        tab,
        depth,
        filter,
        frames: &frames,
        waited: std::cell::Cell::new(false),
    };
    let mut unreadable = Vec::new();
    let top = match &args.ref_id {
        Some(r) => {
            let element = world::resolve(tab, r).await?;
            walk.frame(&element.doc, element.context, Some(element.id), 0, 0)
                .await?
        }
        None => {
            let context = world::world(tab, &frames[0]).await?;
            walk.frame(&frames[0], context, None, 0, 0).await?
        }
    };
    let mut regions = top.regions.clone();
    let mut out = String::new();
    walk.splice(&top, &mut out, &mut regions, &mut unreadable)
        .await;
    if interactive && out.is_empty() {
        out.push_str("(no interactive elements in or near the viewport)\n");
    }
    for u in &unreadable {
        out.push_str(&format!("(not read: {u})\n"));
    }
    // The walk of the main document measured the viewport already.
    let (vw, vh) = match top.viewport {
        Some(v) if top.doc.as_ref() == Some(&frames[0]) => v,
        _ => crate::geometry::viewport(tab).await?,
    };
    let size = out.chars().count();
    let result = if size > max_chars {
        Err(too_big(&regions, size, max_chars, depth))
    } else {
        out.push_str(&format!("Viewport: {vw}x{vh}"));
        if filter == Filter::Visible {
            out.push_str(" (only what is in it is listed)");
        }
        Ok(ToolResult::text(out))
    };
    world::commit(tab).await;
    result
}

/// One frame's rendering by the isolated world's library.
#[derive(Deserialize, Clone)]
struct Rendered {
    #[serde(default)]
    text: String,
    /// (id of an `<iframe>` element, level of its document's lines, how many document lines
    /// are above them: their indent is the level less that).
    #[serde(default)]
    frames: Vec<(u32, u32, u32)>,
    #[serde(default)]
    regions: Vec<String>,
    #[serde(default)]
    stale: bool,
    /// Elements that may host a closed shadow root, to be asked about.
    #[serde(default)]
    hosts: u32,
    /// The frame's viewport (innerWidth, innerHeight).
    #[serde(default)]
    viewport: Option<(i64, i64)>,
    /// The page's name for this rendering, when it keeps it.
    #[serde(default)]
    token: Option<String>,
    /// The rendering named by `have` is still right.
    #[serde(default)]
    same: bool,
    /// A new rendering sent as a difference from the one named by `base` (which was `have`):
    /// its first `head` and last `tail` lines are base's, `text` is what comes between, `lines`
    /// how many there are in all.
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    head: usize,
    #[serde(default)]
    tail: usize,
    #[serde(default)]
    lines: usize,
    /// The next id the document's world gives.
    #[serde(default)]
    next: u32,
    #[serde(skip)]
    doc: Option<Doc>,
    #[serde(skip)]
    context: i64,
}

struct Walk<'a> {
    tab: i32,
    depth: u32,
    filter: Filter,
    frames: &'a [Doc],
    /// Whether this snapshot already waited for an out-of-process iframe's session.
    waited: std::cell::Cell<bool>,
}

impl Walk<'_> {
    /// Renders one frame's document (or the subtree of element `root`) from `level` on, under
    /// `shift` document lines.
    async fn frame(
        &self,
        doc: &Doc,
        context: i64,
        root: Option<u32>,
        level: u32,
        shift: u32,
    ) -> Result<Rendered, String> {
        let naming = world::naming(self.tab, doc, *doc == self.frames[0]);
        // What depends on the scroll position is walked each time.
        let key = (root.is_none() && self.filter == Filter::All).then(|| kept_key(self.tab, doc));
        let have = key
            .as_ref()
            .and_then(|k| KEPT.with(|kept| kept.borrow().get(k).and_then(|r| r.token.clone())));
        let mut arg = json!({
            "depth": self.depth,
            "level": level,
            "shift": shift,
            "interactive": self.filter == Filter::Interactive,
            "visible": self.filter == Filter::Visible,
            "root": root,
            "prefix": naming.prefix,
            "base": naming.base,
            "near": if self.filter == Filter::Visible { 0.0 } else { NEAR_VIEWPORTS },
            "have": have,
        });
        let target = doc.target(self.tab);
        let mut r = self.render(&target, context, &arg).await?;
        if r.hosts > 0 && world::attach_closed_roots(&target, context).await? {
            r = self.render(&target, context, &arg).await?;
        }
        world::noted(self.tab, &naming, r.next);
        let kept = || {
            key.as_ref()
                .and_then(|k| KEPT.with(|kept| kept.borrow().get(k).cloned()))
        };
        let mut fresh = true;
        if r.same {
            let viewport = r.viewport;
            r = match kept() {
                Some(k) => {
                    fresh = false;
                    k
                }
                None => {
                    arg["have"] = Value::Null;
                    self.render(&target, context, &arg).await?
                }
            };
            r.viewport = viewport.or(r.viewport);
        } else if let Some(base) = r.base.take() {
            // Spliced where it is kept: the last text is not copied first.
            let text = key.as_ref().and_then(|k| {
                KEPT.with(|kept| {
                    kept.borrow()
                        .get(k)
                        .filter(|k| k.token.as_deref() == Some(base.as_str()))
                        .and_then(|k| splice_lines(&k.text, r.head, &r.text, r.tail, r.lines))
                })
            });
            match text {
                Some(t) => r.text = t,
                None => {
                    arg["have"] = Value::Null;
                    r = self.render(&target, context, &arg).await?;
                }
            }
        }
        if let (Some(k), Some(_), true) = (&key, &r.token, fresh) {
            KEPT.with(|kept| kept.borrow_mut().insert(k.clone(), r.clone()));
        }
        if r.stale {
            return Err("Stale ref: the element is no longer in the page. Call read_page or find again for fresh refs.".into());
        }
        r.doc = Some(doc.clone());
        r.context = context;
        Ok(r)
    }

    async fn render(&self, target: &Target, context: i64, arg: &Value) -> Result<Rendered, String> {
        let mut out = world::call_world(target, context, None, "tree", arg.clone(), true).await?;
        crate::js::from_json(out.get_mut("value").map(Value::take).unwrap_or(Value::Null))
            .map_err(|e| format!("the page-side walk returned something unexpected: {e}"))
    }

    /// Appends a frame's lines to `out`, with each iframe's document in place of its marker.
    async fn splice(
        &self,
        r: &Rendered,
        out: &mut String,
        regions: &mut Vec<String>,
        unreadable: &mut Vec<String>,
    ) {
        let mut children: Vec<(u32, Rendered)> = Vec::new();
        for &(iframe, level, shift) in &r.frames {
            match self.child(r, iframe, level, shift).await {
                Ok(Some(c)) => children.push((iframe, c)),
                Ok(None) => {}
                Err(e) => unreadable.push(e),
            }
        }
        for l in r.text.lines() {
            if let Some(id) = l.strip_prefix('\u{1}') {
                let child = id
                    .parse::<u32>()
                    .ok()
                    .and_then(|id| children.iter().find(|(i, _)| *i == id));
                if let Some((_, c)) = child {
                    regions.extend(c.regions.iter().cloned());
                    Box::pin(self.splice(c, out, regions, unreadable)).await;
                }
                continue;
            }
            out.push_str(l);
            out.push('\n');
        }
    }

    /// The rendering of the document in the `<iframe>` with id `iframe` of frame `r`.
    async fn child(
        &self,
        r: &Rendered,
        iframe: u32,
        level: u32,
        shift: u32,
    ) -> Result<Option<Rendered>, String> {
        let Some(parent) = &r.doc else {
            return Ok(None);
        };
        // The iframe's element in the parent world, then the frame it owns.
        let parent_target = parent.target(self.tab);
        let element =
            world::call_world(&parent_target, r.context, None, "get", json!(iframe), false).await?;
        let Some(object) = element.get("objectId").and_then(Value::as_str) else {
            return Ok(None);
        };
        let node = cdp::send_to(
            &parent_target,
            "DOM.describeNode",
            json!({"objectId": object}),
        )
        .await?;
        let Some(frame_id) = node.pointer("/node/frameId").and_then(Value::as_str) else {
            return Ok(None);
        };
        let doc = match self.frames.iter().find(|d| d.frame == frame_id) {
            Some(doc) => doc.clone(),
            None => match out_of_process(self.tab, frame_id, !self.waited.replace(true)).await {
                Some(doc) => doc,
                None => {
                    let src = attribute(&node, "src").unwrap_or(frame_id);
                    return Err(format!(
                        "iframe {src}: its document is in another process that the debugger has not reached"
                    ));
                }
            },
        };
        if doc.frame == parent.frame {
            return Ok(None);
        }
        let context = world::world(doc.target(self.tab), &doc)
            .await
            .map_err(|e| format!("frame {frame_id}: {e}"))?;
        self.frame(&doc, context, None, level, shift)
            .await
            .map(Some)
            .map_err(|e| format!("frame {frame_id}: {e}"))
    }
}

/// The document of an out-of-process iframe that attached after the snapshot began (its
/// `Target.attachedToTarget` may trail the page's load): waits up to a second for its session
/// (once per snapshot: `wait`).
async fn out_of_process(tab: i32, frame: &str, wait: bool) -> Option<Doc> {
    let tries = if wait { 10 } else { 1 };
    for i in 1..=tries {
        if let Some(target) = cdp::session_of_frame(tab, frame) {
            let tree = cdp::send_to(&target, "Page.getFrameTree", json!({}))
                .await
                .ok()?;
            let loader = tree.pointer("/frameTree/frame/loaderId")?.as_str()?;
            return Some(Doc {
                frame: frame.to_string(),
                loader: loader.to_string(),
                session: target.session,
            });
        }
        if i < tries {
            crate::js::sleep_ms(100).await;
        }
    }
    None
}

/// The text of a rendering sent as a difference: the first `head` and the last `tail` lines of
/// `old` with `middle` between them; `None` unless that makes `lines` lines.
fn splice_lines(old: &str, head: usize, middle: &str, tail: usize, lines: usize) -> Option<String> {
    let old: Vec<&str> = old.split('\n').collect();
    let middle: Vec<&str> = if middle.is_empty() {
        Vec::new()
    } else {
        middle.split('\n').collect()
    };
    if head + tail > old.len() || head + middle.len() + tail != lines {
        return None;
    }
    let parts: Vec<&str> = old[..head]
        .iter()
        .chain(&middle)
        .chain(&old[old.len() - tail..])
        .copied()
        .collect();
    Some(parts.join("\n"))
}

/// An attribute of a `DOM.describeNode` result.
fn attribute<'a>(node: &'a Value, name: &str) -> Option<&'a str> {
    let list = node.pointer("/node/attributes")?.as_array()?;
    list.chunks(2)
        .find(|p| p.first().and_then(Value::as_str) == Some(name))
        .and_then(|p| p.get(1)?.as_str())
}

fn too_big(regions: &[String], size: usize, max: usize, depth: u32) -> String {
    let smaller = (depth / 2).max(1);
    let mut msg = format!(
        "The page's tree is {size} characters, over max_chars ({max}). Call read_page with a smaller depth (e.g. depth: {smaller}), with filter: \"interactive\", or with ref_id set to the element whose subtree you need"
    );
    if regions.is_empty() {
        msg.push('.');
    } else {
        let shown: Vec<&str> = regions.iter().take(12).map(String::as_str).collect();
        msg.push_str(&format!(", e.g. one of: {}.", shown.join(", ")));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::splice_lines;

    #[test]
    fn a_difference_is_spliced_between_the_lines_kept() {
        let old = "a\nb\nc\nd";
        assert_eq!(
            splice_lines(old, 1, "x\ny", 2, 5).as_deref(),
            Some("a\nx\ny\nc\nd")
        );
        // Lines only taken out, or only added at the end.
        assert_eq!(splice_lines(old, 1, "", 1, 2).as_deref(), Some("a\nd"));
        assert_eq!(
            splice_lines(old, 4, "e", 0, 5).as_deref(),
            Some("a\nb\nc\nd\ne")
        );
        // Parts that do not add up are refused, never guessed.
        assert_eq!(splice_lines(old, 3, "x", 2, 6), None);
        assert_eq!(splice_lines(old, 1, "x", 1, 4), None);
    }
}
