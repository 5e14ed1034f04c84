//! The tab's documents: a document is a frame and the load that put it there. Each gets a
//! number D, the `D` of the refs `ref_D_N` its elements have (`ref_N` in the tab's top
//! document). Each new top document numbers its elements above every id the tab's earlier top
//! documents gave, so a ref from a document that has gone away is reported stale instead of
//! hitting whatever now has the same id. The table is kept in chrome.storage.session so it
//! survives a worker restart.
//!
//! Out-of-process iframes (another site) are documents like the others: they live in a child
//! debugger session (`cdp::Target`), which each live `Doc` names.

use crate::cdp::{self, Target};
use crate::chrome::storage::{self, Area};
use crate::vec_map::VecMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;

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
pub(super) struct Table {
    pub(super) next: u32,
    pub(super) docs: BTreeMap<u32, Doc>,
    /// The number of the top document that refs `ref_N` name (0: none yet), the first id its
    /// elements may have, and the highest id it has given.
    #[serde(default)]
    pub(super) top: u32,
    #[serde(default)]
    pub(super) base: u32,
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
    fn prune(&mut self, live: &VecMap<String, String>) {
        let before = self.docs.len();
        self.docs
            .retain(|_, d| live.get(&d.frame).is_some_and(|l| *l == d.loader));
        if self.docs.len() != before {
            self.dirty = true;
        }
    }
}

thread_local! {
    pub(super) static TABLES: RefCell<VecMap<i32, Table>> = const { RefCell::new(VecMap::new()) };
}

fn storage_key(tab: i32) -> String {
    format!("refs:{tab}")
}

pub(super) async fn load(tab: i32) {
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
pub async fn begin(tab: i32, live: &VecMap<String, String>) {
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

/// Forgets a tab's refs (it closed or left the group), in memory and in storage.
pub fn forget(tab: i32) {
    TABLES.with(|t| t.borrow_mut().remove(&tab));
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = storage::remove_session(&[storage_key(tab)]).await {
            crate::js::log(&format!("cannot forget tab {tab}'s refs: {e}"));
        }
    });
}

/// Whether the tab's documents are numbered (in memory; the stored table is checked apart).
pub fn holds(tab: i32) -> bool {
    TABLES.with(|t| t.borrow().contains_key(&tab))
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
        table.prune(&[("F".to_string(), "L2".to_string())].into_iter().collect());
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
}
