//! Element refs: the one mechanism by which tools name elements. Each frame's document gets an
//! isolated world (`Page.createIsolatedWorld`, one fixed name: asking again returns the same
//! world, even from a new debugger session after a worker restart). The page cannot see it; in it,
//! read_page.js keeps a table element → small id. A ref in the tab's top document is `ref_N`, id N
//! in its world; in a frame's document it is `ref_D_N`, id N in the world of document D, where D
//! numbers the (frame, loader) pairs of the tab. Each new top document numbers its elements above
//! every id the tab's earlier top documents gave, and a ref from a document that has gone away is
//! reported stale instead of hitting whatever now has the same id. (`ref_D_N` naming the top
//! document, as refs were written before, still resolves.) The table of documents is kept in
//! chrome.storage.session so it survives a worker restart. Resolving a ref
//! gives a node (a RemoteObject id in the isolated world), its backend node id, or a point in the
//! viewport.
//!
//! Out-of-process iframes (another site) are documents like the others: they live in a child
//! debugger session (`cdp::Target`), which each live `Doc` names; their points are moved into the
//! top viewport by the iframe elements' content boxes, parent by parent.

use crate::cdp::{self, Target};
use crate::chrome::storage::{self, Area};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// The isolated world's name: the same name finds the same world again.
const WORLD: &str = "browser-operator";
/// The page-side functions that own the element table (and read_page's walk).
const WORLD_JS: &str = crate::js::page_js!("tools/read_page.js");
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

/// A document: a frame and the load that put it there. The debugger session it lives in (`None`:
/// the tab's own) is where it is now, not part of its identity.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Doc {
    pub frame: String,
    pub loader: String,
    #[serde(skip)]
    pub session: Option<String>,
}

impl PartialEq for Doc {
    fn eq(&self, other: &Doc) -> bool {
        self.frame == other.frame && self.loader == other.loader
    }
}

impl Doc {
    /// The debugger session to send this document's commands to.
    pub fn target(&self, tab: i32) -> Target {
        Target {
            tab,
            session: self.session.clone(),
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Table {
    next: u32,
    docs: BTreeMap<u32, Doc>,
    /// The number of the top document that refs `ref_N` name (0: none yet), the first id its
    /// elements may have, and the highest id it has given.
    #[serde(default)]
    top: u32,
    #[serde(default)]
    base: u32,
    #[serde(default)]
    high: u32,
    #[serde(skip)]
    dirty: bool,
}

impl Table {
    fn assign(&mut self, doc: &Doc) -> u32 {
        if let Some((n, _)) = self.docs.iter().find(|(_, d)| *d == doc) {
            return *n;
        }
        self.next += 1;
        self.docs.insert(self.next, doc.clone());
        self.dirty = true;
        self.next
    }

    /// Forgets documents that are no longer loaded in their frame.
    fn prune(&mut self, live: &HashMap<String, String>) {
        let before = self.docs.len();
        self.docs
            .retain(|_, d| live.get(&d.frame).is_some_and(|l| *l == d.loader));
        if self.docs.len() != before {
            self.dirty = true;
        }
    }
}

thread_local! {
    static TABLES: RefCell<HashMap<i32, Table>> = RefCell::new(HashMap::new());
}

fn storage_key(tab: i32) -> String {
    format!("refs:{tab}")
}

async fn load(tab: i32) {
    if TABLES.with(|t| t.borrow().contains_key(&tab)) {
        return;
    }
    // Stored as JSON text: numeric map keys don't survive a trip through a JS object.
    let table: Table = storage::get::<String>(Area::Session, &storage_key(tab))
        .await
        .ok()
        .flatten()
        .and_then(|s| crate::js::parse_json(&s).ok())
        .unwrap_or_default();
    TABLES.with(|t| {
        t.borrow_mut().entry(tab).or_insert(table);
    });
}

/// How the refs of a document are written, and the first id its elements may have.
pub struct Naming {
    /// `ref_` in the tab's top document, `ref_D_` in a frame's.
    pub prefix: String,
    /// Ids below it were given by earlier top documents of the tab (0 in frames).
    pub base: u32,
    top: bool,
}

/// The naming of refs in `doc`, the tab's top document if `top`. A top document seen for the
/// first time numbers its elements above the highest id of the one before.
pub fn naming(tab: i32, doc: &Doc, top: bool) -> Naming {
    TABLES.with(|t| {
        let mut tables = t.borrow_mut();
        let table = tables.entry(tab).or_default();
        let n = table.assign(doc);
        if !top {
            return Naming {
                prefix: format!("ref_{n}_"),
                base: 0,
                top,
            };
        }
        if table.top != n {
            table.base = table.high + 1;
            table.top = n;
            table.dirty = true;
        }
        Naming {
            prefix: "ref_".into(),
            base: table.base,
            top,
        }
    })
}

/// Notes the next id a document's world will give (`next` of its answer): the top document's
/// highest id is where the next top document starts.
pub fn noted(tab: i32, naming: &Naming, next: u32) {
    if !naming.top {
        return;
    }
    TABLES.with(|t| {
        if let Some(table) = t.borrow_mut().get_mut(&tab) {
            if next > table.high {
                table.high = next;
                table.dirty = true;
            }
        }
    });
}

/// Call before a snapshot: loads the table (after a worker restart) and drops documents that are
/// gone. `live` maps frame id to its current loader id.
pub async fn begin(tab: i32, live: &HashMap<String, String>) {
    load(tab).await;
    TABLES.with(|t| {
        if let Some(table) = t.borrow_mut().get_mut(&tab) {
            table.prune(live);
        }
    });
}

/// Call after a snapshot: persists the table if it changed.
pub async fn commit(tab: i32) {
    let snapshot = TABLES.with(|t| {
        let mut tables = t.borrow_mut();
        let table = tables.get_mut(&tab)?;
        if !table.dirty {
            return None;
        }
        table.dirty = false;
        serde_json::to_string(&*table).ok()
    });
    if let Some(v) = snapshot {
        let _ = storage::set(Area::Session, &storage_key(tab), &v).await;
    }
}

/// Forgets a closed tab's refs.
pub fn forget(tab: i32) {
    TABLES.with(|t| t.borrow_mut().remove(&tab));
}

/// The documents of the tab: the frames of its own session, parents before children, then those
/// of each out-of-process iframe's session. The first is the top document.
pub async fn frames(tab: i32) -> Result<Vec<Doc>, String> {
    let tree = cdp::send(tab, "Page.getFrameTree", json!({})).await?;
    let mut out = frame_tree(&tree, None);
    if out.is_empty() {
        return Err("Page.getFrameTree returned no frame".into());
    }
    let children = cdp::child_sessions(tab);
    let trees = futures_util::future::join_all(
        children
            .iter()
            .map(|t| cdp::send_to(t, "Page.getFrameTree", json!({}))),
    )
    .await;
    for (child, tree) in children.iter().zip(trees) {
        // A session that went away meanwhile: its frame is gone.
        if let Ok(tree) = tree {
            out.extend(frame_tree(&tree, child.session.as_deref()));
        }
    }
    Ok(out)
}

/// The frames of one session's `Page.getFrameTree`, parents before children.
fn frame_tree(tree: &Value, session: Option<&str>) -> Vec<Doc> {
    let mut out = Vec::new();
    let mut queue: std::collections::VecDeque<&Value> = tree.get("frameTree").into_iter().collect();
    while let Some(node) = queue.pop_front() {
        if let Some(frame) = node.get("frame") {
            if let (Some(id), Some(loader)) = (
                frame.get("id").and_then(Value::as_str),
                frame.get("loaderId").and_then(Value::as_str),
            ) {
                out.push(Doc {
                    frame: id.to_string(),
                    loader: loader.to_string(),
                    session: session.map(str::to_string),
                });
            }
        }
        if let Some(children) = node.get("childFrames").and_then(Value::as_array) {
            queue.extend(children.iter());
        }
    }
    out
}

/// The execution context of the worker's isolated world in a frame (created on first use), in
/// the session of `target` (a tab id for the tab's own session).
pub async fn world(target: impl Into<Target>, frame: &str) -> Result<i64, String> {
    let out = cdp::send_to(
        &target.into(),
        "Page.createIsolatedWorld",
        json!({"frameId": frame, "worldName": WORLD}),
    )
    .await?;
    out.get("executionContextId")
        .and_then(Value::as_i64)
        .ok_or_else(|| "Page.createIsolatedWorld returned no context".to_string())
}

/// Calls read_page.js in a world: `op` with `arg`, on `this` = `object` if given.
pub async fn call_world(
    target: impl Into<Target>,
    context: i64,
    object: Option<&str>,
    op: &str,
    arg: Value,
    by_value: bool,
) -> Result<Value, String> {
    let arg = json!({ "value": arg });
    call_world_with(&target.into(), context, object, op, arg, by_value).await
}

/// What the stub answers in a world that holds no functions of this version yet.
const MISSING: &str = "\u{1}missing";
/// Calls the functions a world keeps: a few bytes to compile instead of read_page.js's 30 KB.
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
) -> Result<Value, String> {
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
        let mut out =
            cdp::send_to_with_timeout(target, "Runtime.callFunctionOn", params, 20_000).await?;
        if let Some(e) = out.get("exceptionDetails") {
            let text = e
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| e.get("text").and_then(Value::as_str))
                .unwrap_or("an exception");
            return Err(format!("the page-side walk failed: {text}"));
        }
        let result = out
            .get_mut("result")
            .map(Value::take)
            .unwrap_or(Value::Null);
        if source == WORLD_STUB && result.get("value").and_then(Value::as_str) == Some(MISSING) {
            continue;
        }
        return Ok(result);
    }
    Err("the page-side functions could not be installed".into())
}

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
    load(tab).await;
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
    let gone = |e: String| {
        if e.contains(cdp::FRAME_GONE) {
            stale(r, "its frame was navigated or removed")
        } else {
            e
        }
    };
    let context = world(&target, &doc.frame).await.map_err(gone)?;
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

fn stale(r: &str, why: &str) -> String {
    format!("Stale ref {r}: the element no longer exists ({why}). Call read_page or find again for fresh refs.")
}

/// The backend node id of a resolved element.
async fn backend_of(target: &Target, object: &str) -> Result<i64, String> {
    let out = cdp::send_to(target, "DOM.describeNode", json!({"objectId": object})).await?;
    out.pointer("/node/backendNodeId")
        .and_then(Value::as_i64)
        .ok_or_else(|| "DOM.describeNode returned no node".to_string())
}

/// The centre of the element's first box, in CSS pixels of the (top) viewport, after scrolling
/// it into view.
pub async fn point(tab: i32, r: &str) -> Result<(f64, f64), String> {
    let element = resolve(tab, r).await?;
    let target = element.target;
    let backend = backend_of(&target, &element.object).await?;
    // An out-of-process iframe's element: its iframes into view first, outermost first.
    let mut owners = Vec::new();
    let mut inner = target.clone();
    while let Some((parent, frame)) = cdp::embedder(&inner) {
        owners.push((parent.clone(), frame));
        inner = parent;
    }
    for (parent, frame) in owners.iter().rev() {
        if let Ok(owner) = frame_owner(parent, frame).await {
            let node = json!({"backendNodeId": owner});
            let _ = cdp::send_to(parent, "DOM.scrollIntoViewIfNeeded", node).await;
        }
    }
    let node = json!({"backendNodeId": backend});
    if let Err(e) = cdp::send_to(&target, "DOM.scrollIntoViewIfNeeded", node.clone()).await {
        if e.contains("No node") || e.contains(cdp::FRAME_GONE) {
            return Err(stale(r, "it was removed from the page"));
        }
    }
    let why = |e| {
        match e {
        BoxError::Gone => stale(r, "it was removed from the page"),
        BoxError::Hidden => format!("The element {r} is not visible (it has no box on the page), so it can't be clicked or scrolled to."),
    }
    };
    let mut at = box_of(&target, backend).await.map_err(why)?;
    if target.session.is_some() {
        // Scrolling inside a frame of another process moves its ancestors asynchronously (the
        // request crosses processes): measure until two readings a frame apart agree.
        for _ in 0..10 {
            crate::js::sleep_ms(40).await;
            let again = box_of(&target, backend).await.map_err(why)?;
            if again == at {
                break;
            }
            at = again;
        }
    }
    Ok((at.0, at.1))
}

pub enum BoxError {
    Gone,
    Hidden,
}

/// Centre and size of a node's first content quad, CSS pixels of the top viewport (a node of an
/// out-of-process iframe, `target` a child session, is moved by its iframes' offsets).
pub async fn box_of(
    target: impl Into<Target>,
    backend: i64,
) -> Result<(f64, f64, f64, f64), BoxError> {
    let target = target.into();
    let out = cdp::send_to(
        &target,
        "DOM.getContentQuads",
        json!({"backendNodeId": backend}),
    )
    .await
    .map_err(|e| {
        if e.contains("No node") || e.contains("not found") || e.contains(cdp::FRAME_GONE) {
            BoxError::Gone
        } else {
            BoxError::Hidden
        }
    })?;
    let (x, y, w, h) = quad_centre(&out).ok_or(BoxError::Hidden)?;
    let (dx, dy) = frame_offset(&target).await.map_err(|_| BoxError::Hidden)?;
    Ok((x + dx, y + dy, w, h))
}

/// Where a session's viewport starts in the top viewport: the sum of the content-box origins of
/// the iframe elements that hold it (zero for the tab's own session).
pub async fn frame_offset(target: &Target) -> Result<(f64, f64), String> {
    let (mut dx, mut dy) = (0.0, 0.0);
    let mut inner = target.clone();
    while let Some((parent, frame)) = cdp::embedder(&inner) {
        let owner = frame_owner(&parent, &frame).await?;
        let model =
            cdp::send_to(&parent, "DOM.getBoxModel", json!({"backendNodeId": owner})).await?;
        let content = model
            .pointer("/model/content")
            .and_then(Value::as_array)
            .ok_or("DOM.getBoxModel returned no content box")?;
        let (Some(x), Some(y)) = (
            content.first().and_then(Value::as_f64),
            content.get(1).and_then(Value::as_f64),
        ) else {
            return Err("DOM.getBoxModel returned no content box".into());
        };
        dx += x;
        dy += y;
        inner = parent;
    }
    Ok((dx, dy))
}

/// The backend node id of the `<iframe>` element that holds `frame`, in the session `parent`.
async fn frame_owner(parent: &Target, frame: &str) -> Result<i64, String> {
    let out = cdp::send_to(parent, "DOM.getFrameOwner", json!({"frameId": frame})).await?;
    out.get("backendNodeId")
        .and_then(Value::as_i64)
        .ok_or_else(|| "DOM.getFrameOwner returned no element".to_string())
}

/// Centre, width and height of the first non-empty quad of a `DOM.getContentQuads` result.
pub fn quad_centre(out: &Value) -> Option<(f64, f64, f64, f64)> {
    for q in out.get("quads")?.as_array()? {
        let p: Vec<f64> = q.as_array()?.iter().filter_map(Value::as_f64).collect();
        if p.len() != 8 {
            continue;
        }
        let xs = [p[0], p[2], p[4], p[6]];
        let ys = [p[1], p[3], p[5], p[7]];
        let (x0, x1) = (
            xs.iter().cloned().fold(f64::MAX, f64::min),
            xs.iter().cloned().fold(f64::MIN, f64::max),
        );
        let (y0, y1) = (
            ys.iter().cloned().fold(f64::MAX, f64::min),
            ys.iter().cloned().fold(f64::MIN, f64::max),
        );
        if x1 - x0 > 0.0 && y1 - y0 > 0.0 {
            return Some(((x0 + x1) / 2.0, (y0 + y1) / 2.0, x1 - x0, y1 - y0));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_document_same_number_and_prune() {
        let mut table = Table::default();
        let d = |f: &str, l: &str| Doc {
            frame: f.into(),
            loader: l.into(),
            session: None,
        };
        let a = table.assign(&d("F", "L1"));
        assert_eq!(table.assign(&d("F", "L1")), a);
        let b = table.assign(&d("F", "L2"));
        assert_ne!(a, b);
        table.prune(&HashMap::from([("F".to_string(), "L2".to_string())]));
        assert_eq!(table.docs.len(), 1);
        let saved = serde_json::to_string(&table).expect("a table serializes");
        let back: Table = serde_json::from_str(&saved).expect("a saved table loads");
        assert_eq!(back.docs.get(&b), Some(&d("F", "L2")));
        // Where a document lives now (its debugger session) is not part of its identity, and is
        // not stored.
        let in_child = Doc {
            session: Some("S".into()),
            ..d("F", "L2")
        };
        assert_eq!(table.assign(&in_child), b);
        assert!(!serde_json::to_string(&table)
            .expect("the table serializes")
            .contains("\"S\""));
    }

    #[test]
    fn parses_refs_and_quads() {
        assert_eq!(parse_ref("ref_3_12"), Some((Some(3), 12)));
        assert_eq!(parse_ref("ref_12"), Some((None, 12)));
        assert_eq!(parse_ref("12"), None);
        assert_eq!(parse_ref("ref_x"), None);
        let q = json!({"quads": [[10.0, 20.0, 30.0, 20.0, 30.0, 40.0, 10.0, 40.0]]});
        assert_eq!(quad_centre(&q), Some((20.0, 30.0, 20.0, 20.0)));
        assert_eq!(quad_centre(&json!({"quads": []})), None);
    }
}
