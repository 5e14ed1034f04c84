//! Element refs: the one mechanism by which tools name elements. A ref (`ref_N`) stands for a
//! CDP backend node id qualified by its frame and that frame's document (loader id), so the same
//! element keeps its ref across snapshots, a ref from a document that has gone away is reported
//! stale instead of hitting whatever now has the same id, and the page can neither read nor forge
//! refs (they live only here). Each tab's table is kept in chrome.storage.session so refs survive
//! a worker restart. Resolving a ref gives a node (a RemoteObject id) or a point in the viewport.

use crate::cdp;
use crate::chrome::storage::{self, Area};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// Bound on refs remembered per tab; past it the oldest are forgotten.
const MAX_REFS_PER_TAB: usize = 50_000;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Target {
    pub frame: String,
    pub loader: String,
    pub backend: i64,
}

#[derive(Default, Serialize, Deserialize)]
struct Table {
    next: u32,
    targets: BTreeMap<u32, Target>,
    #[serde(skip)]
    by_node: HashMap<(String, i64), u32>,
    #[serde(skip)]
    dirty: bool,
}

impl Table {
    fn index(&mut self) {
        self.by_node = self
            .targets
            .iter()
            .map(|(n, t)| ((t.loader.clone(), t.backend), *n))
            .collect();
    }

    fn assign(&mut self, target: Target) -> u32 {
        let key = (target.loader.clone(), target.backend);
        if let Some(n) = self.by_node.get(&key) {
            return *n;
        }
        self.next += 1;
        let n = self.next;
        self.targets.insert(n, target);
        self.by_node.insert(key, n);
        self.dirty = true;
        while self.targets.len() > MAX_REFS_PER_TAB {
            if let Some((_, old)) = self.targets.pop_first() {
                self.by_node.remove(&(old.loader, old.backend));
            }
        }
        n
    }

    /// Forgets refs of documents that are no longer loaded in their frame.
    fn prune(&mut self, live: &HashMap<String, String>) {
        let before = self.targets.len();
        self.targets
            .retain(|_, t| live.get(&t.frame).is_some_and(|l| *l == t.loader));
        if self.targets.len() != before {
            self.index();
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
    let mut table: Table = storage::get::<String>(Area::Session, &storage_key(tab))
        .await
        .ok()
        .flatten()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    table.index();
    TABLES.with(|t| {
        t.borrow_mut().entry(tab).or_insert(table);
    });
}

/// A ref's text for an element, assigning a new number the first time the element is seen.
pub fn ref_for(tab: i32, target: Target) -> String {
    TABLES.with(|t| {
        let mut tables = t.borrow_mut();
        format!("ref_{}", tables.entry(tab).or_default().assign(target))
    })
}

/// Call before a snapshot: loads the table (after a worker restart) and drops refs of documents
/// that are gone. `live` maps frame id to its current loader id.
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

/// Frame id → loader id of every frame of the tab (the documents now loaded).
pub async fn live_frames(tab: i32) -> Result<HashMap<String, String>, String> {
    let tree = cdp::send(tab, "Page.getFrameTree", json!({})).await?;
    let mut out = HashMap::new();
    let mut stack: Vec<&Value> = tree.get("frameTree").into_iter().collect();
    while let Some(node) = stack.pop() {
        if let Some(frame) = node.get("frame") {
            if let (Some(id), Some(loader)) = (
                frame.get("id").and_then(Value::as_str),
                frame.get("loaderId").and_then(Value::as_str),
            ) {
                out.insert(id.to_string(), loader.to_string());
            }
        }
        if let Some(children) = node.get("childFrames").and_then(Value::as_array) {
            stack.extend(children.iter());
        }
    }
    Ok(out)
}

fn parse_ref(r: &str) -> Option<u32> {
    r.trim().strip_prefix("ref_")?.parse().ok()
}

/// The element a ref stands for, checked to be still in the page.
pub async fn resolve(tab: i32, r: &str) -> Result<Target, String> {
    let n = parse_ref(r).ok_or_else(|| {
        format!("Invalid ref \"{r}\": refs look like ref_12 and come from read_page or find.")
    })?;
    load(tab).await;
    let target = TABLES
        .with(|t| {
            t.borrow()
                .get(&tab)
                .and_then(|t| t.targets.get(&n).cloned())
        })
        .ok_or_else(|| {
            format!("Unknown ref {r} for tab {tab}: call read_page or find to get current refs.")
        })?;
    let live = live_frames(tab).await?;
    if live.get(&target.frame) != Some(&target.loader) {
        return Err(stale(r, "its page was navigated or reloaded"));
    }
    Ok(target)
}

fn stale(r: &str, why: &str) -> String {
    format!("Stale ref {r}: the element no longer exists ({why}). Call read_page or find again for fresh refs.")
}

/// A RemoteObject id for the ref's element, for `Runtime.callFunctionOn`.
pub async fn object_id(tab: i32, r: &str) -> Result<String, String> {
    let target = resolve(tab, r).await?;
    let out = cdp::send(
        tab,
        "DOM.resolveNode",
        json!({"backendNodeId": target.backend, "objectGroup": "browser-operator-refs"}),
    )
    .await
    .map_err(|_| stale(r, "it was removed from the page"))?;
    let id = out
        .pointer("/object/objectId")
        .and_then(Value::as_str)
        .ok_or_else(|| stale(r, "it was removed from the page"))?;
    // A removed element lives on while something holds it: it must still be in the document.
    let connected = cdp::send(
        tab,
        "Runtime.callFunctionOn",
        json!({"objectId": id, "functionDeclaration": "function () { return this.isConnected; }", "returnByValue": true}),
    )
    .await?;
    if connected.pointer("/result/value") != Some(&Value::Bool(true)) {
        return Err(stale(r, "it was removed from the page"));
    }
    Ok(id.to_string())
}

/// The centre of the element's first box, in CSS pixels of the viewport, after scrolling it into
/// view.
pub async fn point(tab: i32, r: &str) -> Result<(f64, f64), String> {
    let target = resolve(tab, r).await?;
    let node = json!({"backendNodeId": target.backend});
    if let Err(e) = cdp::send(tab, "DOM.scrollIntoViewIfNeeded", node.clone()).await {
        if e.contains("No node") {
            return Err(stale(r, "it was removed from the page"));
        }
    }
    let (x, y, _, _) = box_of(tab, target.backend)
        .await
        .map_err(|e| match e {
            BoxError::Gone => stale(r, "it was removed from the page"),
            BoxError::Hidden => format!("The element {r} is not visible (it has no box on the page), so it can't be clicked or scrolled to."),
        })?;
    Ok((x, y))
}

pub enum BoxError {
    Gone,
    Hidden,
}

/// Centre and size of a node's first content quad, viewport CSS pixels.
pub async fn box_of(tab: i32, backend: i64) -> Result<(f64, f64, f64, f64), BoxError> {
    let out = cdp::send(
        tab,
        "DOM.getContentQuads",
        json!({"backendNodeId": backend}),
    )
    .await
    .map_err(|e| {
        if e.contains("No node") || e.contains("not found") {
            BoxError::Gone
        } else {
            BoxError::Hidden
        }
    })?;
    quad_centre(&out).ok_or(BoxError::Hidden)
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

    fn t(frame: &str, loader: &str, backend: i64) -> Target {
        Target {
            frame: frame.into(),
            loader: loader.into(),
            backend,
        }
    }

    #[test]
    fn same_node_same_ref_new_document_new_ref() {
        let mut table = Table::default();
        let a = table.assign(t("F", "L1", 7));
        assert_eq!(table.assign(t("F", "L1", 7)), a);
        let b = table.assign(t("F", "L1", 8));
        assert_ne!(a, b);
        // Same backend id in a new document (a new renderer restarts its counter): a new ref.
        let c = table.assign(t("F", "L2", 7));
        assert_ne!(c, a);
        let live = HashMap::from([("F".to_string(), "L2".to_string())]);
        table.prune(&live);
        assert_eq!(table.targets.len(), 1);
        assert_eq!(table.assign(t("F", "L2", 7)), c);
    }

    #[test]
    fn table_survives_serialization() {
        let mut table = Table::default();
        let a = table.assign(t("F", "L", 3));
        let mut back: Table =
            serde_json::from_value(serde_json::to_value(&table).unwrap()).unwrap();
        back.index();
        assert_eq!(back.assign(t("F", "L", 3)), a);
        assert_eq!(back.assign(t("F", "L", 4)), a + 1);
    }

    #[test]
    fn parses_refs_and_quads() {
        assert_eq!(parse_ref("ref_12"), Some(12));
        assert_eq!(parse_ref("12"), None);
        let q = json!({"quads": [[10.0, 20.0, 30.0, 20.0, 30.0, 40.0, 10.0, 40.0]]});
        assert_eq!(quad_centre(&q), Some((20.0, 30.0, 20.0, 20.0)));
        assert_eq!(quad_centre(&json!({"quads": []})), None);
    }
}
