//! The coordinate space agents use: that of the tab's last screenshot. Each tab remembers the
//! ratio of screenshot pixels to CSS pixels of its viewport; points going out (find) are scaled
//! by it and points coming in (clicks) are mapped back. Before any screenshot the ratio is 1.
//! The ratios are kept in chrome.storage.session too (written after the screenshot is
//! answered, not before), so a restarted worker reads coordinates as the agent meant them.

use crate::chrome::storage::{self, Area};
use crate::vec_map::VecMap;
use std::cell::{Cell, RefCell};

const SCALES_KEY: &str = "coordScales";

thread_local! {
    static SCALE: RefCell<VecMap<i32, f64>> = const { RefCell::new(VecMap::new()) };
    /// The stored ratios were read (once per worker start).
    static LOADED: Cell<bool> = const { Cell::new(false) };
}

/// Reads the ratios a previous worker kept; at once after the first call.
pub async fn load() {
    if LOADED.with(|l| l.replace(true)) {
        return;
    }
    // Stored as a JSON object of tab id to ratio, read as JSON values: the types the worker
    // already reads everything else with, not a map type of its own.
    let stored: serde_json::Map<String, serde_json::Value> =
        storage::get(Area::Session, SCALES_KEY)
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
    SCALE.with(|s| {
        let mut s = s.borrow_mut();
        for (tab, scale) in stored {
            if let (Ok(tab), Some(scale)) = (tab.parse::<i32>(), scale.as_f64()) {
                // A screenshot taken meanwhile wins.
                s.entry(tab).or_insert(scale);
            }
        }
    });
}

/// Screenshot pixels per CSS pixel for the tab.
pub fn scale(tab: i32) -> f64 {
    SCALE.with(|s| s.borrow().get(&tab).copied().unwrap_or(1.0))
}

pub fn set_scale(tab: i32, scale: f64) {
    if scale.is_finite() && scale > 0.0 {
        let changed = SCALE.with(|s| s.borrow_mut().insert(tab, scale)) != Some(scale);
        if changed {
            store();
        }
    }
}

/// Whether the tab has a ratio.
pub fn holds(tab: i32) -> bool {
    SCALE.with(|s| s.borrow().contains_key(&tab))
}

/// A tab closed: its ratio goes.
pub fn forget(tab: i32) {
    if SCALE.with(|s| s.borrow_mut().remove(&tab)).is_some() {
        store();
    }
}

/// Writes the ratios, off the caller's path.
fn store() {
    let all: serde_json::Map<String, serde_json::Value> = SCALE.with(|s| {
        s.borrow()
            .iter()
            .map(|(t, v)| (t.to_string(), (*v).into()))
            .collect()
    });
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = storage::set(Area::Session, SCALES_KEY, &all).await {
            crate::js::log(&format!("cannot keep the screenshot scales: {e}"));
        }
    });
}

/// A viewport point (CSS px) as the agent sees it (screenshot px), rounded.
pub fn to_screenshot(tab: i32, x: f64, y: f64) -> (i64, i64) {
    let s = scale(tab);
    ((x * s).round() as i64, (y * s).round() as i64)
}

/// An agent's point (screenshot px) in CSS pixels of the viewport.
pub fn to_viewport(tab: i32, x: f64, y: f64) -> (f64, f64) {
    let s = scale(tab);
    (x / s, y / s)
}
