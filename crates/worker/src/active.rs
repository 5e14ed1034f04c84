//! The automation group's active tab: the one a driver acts on when the model names none, and
//! the one `tabs_context_mcp` and `browser_state` mark `"active": true`. A tab becomes active
//! when a command creates it (`tabs_create_mcp`, the group's first tab), when a group tab's page
//! opens it (window.open, a target=_blank link), or by `switch_tab`. A person selecting a tab in
//! Chrome does not change it. When the active tab closes or leaves the group, the most recently
//! active remaining tab becomes active. Every tab that joins the group is reported once as
//! `changes::Change::TabOpened`. Kept in chrome.storage.session, so a restarted worker knows it.

use crate::changes::{self, Change};
use crate::chrome::storage::{self, Area};
use crate::chrome::tabs::Tab;
use std::cell::{Cell, RefCell};

const ORDER_KEY: &str = "activeOrder";

thread_local! {
    /// The group's tabs the worker saw join, by when each was last made active: least recent
    /// first, the active tab last. A tab that joined without being made active (a person
    /// dragged it into the group) is at the front.
    static ORDER: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// The stored order was read (once per worker start).
    static LOADED: Cell<bool> = const { Cell::new(false) };
    /// Tabs forgotten before the stored order was read: it does not bring them back.
    static GONE_BEFORE_LOAD: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// Tabs a group tab opened whose joining is being decided (`lifetime::adopt`): Chrome lists
    /// such a tab in the group from its creation, before the worker knows whether its page
    /// opened it (and so whether it is the active tab).
    static DECIDING: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

/// How long a report waits, at most, for the tabs being decided.
const SETTLE_MS: f64 = 1_500.0;

/// A tab a group tab opened: whether it joins as the active tab is being decided.
pub fn deciding(tab: i32) {
    DECIDING.with(|d| d.borrow_mut().push(tab));
}

/// The decision on the tab is made (or it could not be).
pub fn decided(tab: i32) {
    DECIDING.with(|d| d.borrow_mut().retain(|t| *t != tab));
}

/// Whether the tab's joining is being decided.
pub fn is_deciding(tab: i32) -> bool {
    DECIDING.with(|d| d.borrow().contains(&tab))
}

/// Waits (at most [`SETTLE_MS`]) until no tab's joining is being decided: what a report lists
/// next shows a tab a page just opened as the active one, not as one that joined beside it.
pub async fn settled() {
    let start = crate::js::now_ms();
    while DECIDING.with(|d| !d.borrow().is_empty()) && crate::js::now_ms() - start < SETTLE_MS {
        crate::js::sleep_ms(20).await;
    }
}

/// Reads the order a previous worker kept; at once after the first call.
async fn load() {
    if LOADED.with(|l| l.replace(true)) {
        return;
    }
    let stored: Vec<i32> = storage::get(Area::Session, ORDER_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let gone = GONE_BEFORE_LOAD.with(|g| std::mem::take(&mut *g.borrow_mut()));
    ORDER.with(|o| merge_stored(&mut o.borrow_mut(), &stored, &gone));
}

/// A tab joined the automation group: reported once as `TabOpened`; with `activate` it becomes
/// the active tab.
pub async fn joined(tab: i32, activate: bool) {
    load().await;
    let (new, changed) = ORDER.with(|o| note(&mut o.borrow_mut(), tab, activate));
    if new {
        changes::push(Change::TabOpened { tab_id: tab });
    }
    if changed {
        store();
    }
}

/// A tab a group tab's page opened, reported as `TabOpened` once it joined the group (it was
/// made active before it joined, so that no report lists it in the group without it active).
pub fn opened(tab: i32) {
    changes::push(Change::TabOpened { tab_id: tab });
}

/// The tab becomes the active one: `switch_tab` (the tab checked to be in the group), or a tab
/// a page opened, just before it joins.
pub async fn activate(tab: i32) {
    load().await;
    if ORDER.with(|o| note(&mut o.borrow_mut(), tab, true)).1 {
        store();
    }
}

/// Which of the group's tabs (as `chrome.tabs.query` just listed them) is active: the most
/// recently made active of them; when the worker saw none of them made active, the one Chrome
/// shows selected in its window, else the first.
pub async fn among(tabs: &[Tab]) -> Option<i32> {
    load().await;
    let listed: Vec<(i32, bool)> = tabs
        .iter()
        .filter_map(|t| Some((t.id?, t.active)))
        .collect();
    ORDER.with(|o| pick(&o.borrow(), &listed))
}

/// The tab closed or left the group: the most recently active remaining tab is active now.
pub fn forget(tab: i32) {
    if !LOADED.with(Cell::get) {
        GONE_BEFORE_LOAD.with(|g| g.borrow_mut().push(tab));
    }
    let removed = ORDER.with(|o| {
        let mut o = o.borrow_mut();
        let before = o.len();
        o.retain(|t| *t != tab);
        o.len() != before
    });
    if removed {
        store();
    }
}

/// Whether the order holds the tab.
pub fn holds(tab: i32) -> bool {
    ORDER.with(|o| o.borrow().contains(&tab))
}

/// Writes the order, off the caller's path.
fn store() {
    let order = ORDER.with(|o| o.borrow().clone());
    wasm_bindgen_futures::spawn_local(async move {
        if let Err(e) = storage::set(Area::Session, ORDER_KEY, &order).await {
            crate::js::log(&format!("cannot keep the active tab: {e}"));
        }
    });
}

/// Notes a tab in the order: whether it is new to it, and whether the order changed.
fn note(order: &mut Vec<i32>, tab: i32, activate: bool) -> (bool, bool) {
    let at = order.iter().position(|t| *t == tab);
    match (at, activate) {
        (None, true) => {
            order.push(tab);
            (true, true)
        }
        (None, false) => {
            order.insert(0, tab);
            (true, true)
        }
        (Some(i), true) if i + 1 != order.len() => {
            order.remove(i);
            order.push(tab);
            (false, true)
        }
        (Some(_), _) => (false, false),
    }
}

/// The stored order under what this worker noted since it started (which is newer), without
/// the tabs forgotten meanwhile.
fn merge_stored(order: &mut Vec<i32>, stored: &[i32], gone: &[i32]) {
    let older: Vec<i32> = stored
        .iter()
        .copied()
        .filter(|t| !order.contains(t) && !gone.contains(t))
        .collect();
    order.splice(0..0, older);
}

/// The active tab of `listed` (each tab id with whether Chrome shows it selected in its window).
fn pick(order: &[i32], listed: &[(i32, bool)]) -> Option<i32> {
    order
        .iter()
        .rev()
        .find(|t| listed.iter().any(|(id, _)| id == *t))
        .copied()
        .or_else(|| listed.iter().find(|(_, selected)| *selected).map(|t| t.0))
        .or_else(|| listed.first().map(|t| t.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recently_activated_tab_is_active() {
        let mut order = Vec::new();
        assert_eq!(note(&mut order, 1, true), (true, true));
        assert_eq!(note(&mut order, 2, true), (true, true));
        assert_eq!(pick(&order, &[(1, false), (2, false)]), Some(2));
        // Activating 1 again: not new, the order changes.
        assert_eq!(note(&mut order, 1, true), (false, true));
        assert_eq!(pick(&order, &[(1, false), (2, false)]), Some(1));
        // Already active: nothing changes (nothing is written).
        assert_eq!(note(&mut order, 1, true), (false, false));
        // 1 closed: the most recently active remaining tab, 2.
        assert_eq!(pick(&order, &[(2, false)]), Some(2));
    }

    #[test]
    fn a_tab_that_joins_without_activation_is_least_recent() {
        let mut order = vec![1];
        assert_eq!(note(&mut order, 5, false), (true, true));
        assert_eq!(order, [5, 1]);
        assert_eq!(pick(&order, &[(1, false), (5, true)]), Some(1));
        // Joining again (its group event after the command noted it) changes nothing.
        assert_eq!(note(&mut order, 5, false), (false, false));
        assert_eq!(note(&mut order, 1, false), (false, false));
        // Only 5 is left: it is active.
        assert_eq!(pick(&order, &[(5, false)]), Some(5));
    }

    #[test]
    fn without_a_known_tab_chrome_s_selection_then_the_first() {
        assert_eq!(pick(&[9], &[(3, false), (4, true)]), Some(4));
        assert_eq!(pick(&[], &[(3, false), (4, false)]), Some(3));
        assert_eq!(pick(&[3], &[]), None);
    }

    #[test]
    fn the_stored_order_goes_under_what_was_noted_since() {
        let mut order = vec![7];
        merge_stored(&mut order, &[1, 7, 2, 3], &[2]);
        assert_eq!(order, [1, 3, 7]);
    }
}
