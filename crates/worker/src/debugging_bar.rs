//! Chrome's "… started debugging this browser" bar, and the viewport it is about to take away.
//! Chrome shows the bar on the active tab of every window once a debugger attaches to any tab,
//! 130–200 ms after the attach, and on each tab created while it shows, about as long after the
//! tab's creation; it takes 43–56 CSS px of the viewport's height. It starts to close 5.0 s after
//! the last debugger detaches (gone at 5.15 s); an attach before that keeps it. A first look
//! measured in that window (read_page's viewport, a screenshot and its coordinate scale, find's
//! points) would be stale for the next command. So an attach that may be followed by the bar's
//! change waits, bounded, until the tab's viewport has changed and holds still; every other
//! attach goes on at once (no CDP call, no wait). While the bar shows, a navigation also moves
//! the viewport by 1–16 px for up to 100 ms, 0–190 ms after the page's load event (the bar is
//! laid out again): what measures the page (screenshot, read_page, find, computer) within
//! 300 ms of a load waits until the viewport holds still. Measured: docs/pages-and-computer.md.

use crate::chrome::{debugger, tabs};
use crate::js::{log, now_ms, sleep_ms, with_timeout};
use crate::vec_map::{VecMap, VecSet};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};

/// How long after the attach (or the tab's creation) the change may come, until this worker has
/// seen the bar move a viewport. On a quiet machine the slowest seen was 268 ms; on a 2-core CI
/// machine running three browsers at once the bar once came more than 600 ms after the attach
/// (the bound this replaced), after the agent's next command had scrolled the page. A wait only
/// lasts this long when no change comes at all.
const BOUND_MS: f64 = 1_200.0;
/// The same for a wait first measured before any change could come, once the bar has moved a
/// viewport in this worker's life: this browser shows it, so such a wait ends with its change
/// however late a loaded machine brings it, and the bound is only a backstop.
const SEEN_BOUND_MS: f64 = 3_000.0;
/// After the change, the viewport must hold still this long (closing the bar is animated).
const STILL_MS: f64 = 40.0;
/// Past this, a change that started still has to hold still.
const STILL_BOUND_MS: f64 = 300.0;
const POLL_MS: u32 = 10;
/// The bar starts closing 5.0 s after the last detach: from this long on, it may come back.
const BAR_KEPT_MS: f64 = 4_500.0;
/// Waits in a row that saw no change before this browser counts as not showing the bar (e.g.
/// `--silent-debugger-extension-api`): later attaches no longer wait for it.
const QUIET_LIMIT: u32 = 3;
/// A wait counts towards that only when its first reading came this soon after the attach or
/// the tab's creation (before the earliest change seen, 46 ms).
const EARLY_MS: f64 = 40.0;
/// After a top-level navigation commits or loads, while the bar shows: how long the viewport may
/// still move (the latest seen: 190 ms after the load event, 242 ms after the commit).
const NAVIGATION_BOUND_MS: f64 = 300.0;

thread_local! {
    /// When the last of this worker's debugger sessions ended; `None`: not since the worker
    /// started (unknown).
    static ALL_DETACHED_AT: Cell<Option<f64>> = const { Cell::new(None) };
    /// When the bar is due on every window's active tab (an attach that may show it).
    static BAR_DUE: Cell<f64> = const { Cell::new(0.0) };
    /// Tabs created lately, by the worker's clock.
    static CREATED: RefCell<VecMap<i32, f64>> = const { RefCell::new(VecMap::new()) };
    /// Tabs whose viewport is being settled: other callers wait for it.
    static SETTLING: RefCell<VecSet<i32>> = const { RefCell::new(VecSet::new()) };
    static QUIET: Cell<u32> = const { Cell::new(0) };
    /// The bar has moved a viewport since this worker started.
    static SEEN: Cell<bool> = const { Cell::new(false) };
    /// Per tab, until when a navigation may still move its viewport.
    static NAVIGATED: RefCell<VecMap<i32, f64>> = const { RefCell::new(VecMap::new()) };
}

/// How much longer than `BOUND_MS` a wait first measured early may last: `SEEN_BOUND_MS` once the
/// bar has moved a viewport in this worker's life. A wait measured late cannot tell whether the
/// change came before it, so it keeps `BOUND_MS`: a tab attached a while after its creation
/// waits no longer than it did.
fn extension_when_early() -> f64 {
    if SEEN.with(Cell::get) {
        SEEN_BOUND_MS - BOUND_MS
    } else {
        0.0
    }
}

/// The tab's top frame committed a navigation or fired its load event (CDP `Page` events; the
/// debugger is attached, so the bar shows).
pub fn navigated(tab: i32) {
    let now = now_ms();
    NAVIGATED.with(|n| {
        let mut n = n.borrow_mut();
        n.retain(|_, until| *until > now);
        n.insert(tab, now + NAVIGATION_BOUND_MS);
    });
}

/// Before measuring the tab's page: waits, bounded, while a navigation a moment ago may still
/// move the viewport (until it moved and holds still, or the bound passed). At once otherwise.
pub async fn steady(tab: i32) {
    settled(tab).await;
    if QUIET.with(Cell::get) >= QUIET_LIMIT {
        return;
    }
    loop {
        let Some(until) = NAVIGATED.with(|n| n.borrow().get(&tab).copied()) else {
            return;
        };
        if until <= now_ms() {
            NAVIGATED.with(|n| n.borrow_mut().remove(&tab));
            return;
        }
        let moved = watch(tab, until).await.is_some();
        // A later event (the load after the commit) may have moved the bound on.
        let later = NAVIGATED.with(|n| n.borrow().get(&tab).is_some_and(|u| *u > until));
        if moved || !later {
            NAVIGATED.with(|n| {
                let mut n = n.borrow_mut();
                if n.get(&tab).is_some_and(|u| *u <= until || moved) {
                    n.remove(&tab);
                }
            });
            return;
        }
    }
}

/// The tab closed or left the group.
pub fn forget(tab: i32) {
    CREATED.with(|c| c.borrow_mut().remove(&tab));
    NAVIGATED.with(|n| n.borrow_mut().remove(&tab));
}

/// Whether something is known of the tab.
pub fn holds(tab: i32) -> bool {
    CREATED.with(|c| c.borrow().contains_key(&tab))
        || NAVIGATED.with(|n| n.borrow().contains_key(&tab))
}

/// A tab was created (chrome.tabs.onCreated, or by this worker): while the bar shows, Chrome
/// adds it to the new tab a moment later.
pub fn tab_created(tab: i32) {
    let now = now_ms();
    CREATED.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|_, at| now - *at < BOUND_MS);
        c.entry(tab).or_insert(now);
    });
}

/// The last debugger session of this worker ended: the bar closes about 5 s from now.
pub fn all_detached() {
    ALL_DETACHED_AT.with(|t| t.set(Some(now_ms())));
}

/// Called right after the debugger attached to `tab` at `attached_at` (the worker's clock);
/// `bar_shown`: some other session of ours was attached already (the bar is up). When the tab's
/// viewport may be about to change, the tab is marked settling at once and watched in the
/// background: what measures the page waits for that ([`settled`], which `cdp` calls before
/// every call that may measure), while what only records the tab (`cdp::send_unsettled`: the
/// recorders' domains) goes on, so a tab that joins the group is recorded from its attach.
pub fn after_attach(tab: i32, bar_shown: bool, attached_at: f64) {
    let may_show = !bar_shown
        && ALL_DETACHED_AT
            .with(Cell::get)
            .is_none_or(|t| attached_at - t >= BAR_KEPT_MS);
    if may_show {
        BAR_DUE.with(|d| d.set(d.get().max(attached_at + BOUND_MS)));
    }
    // Another tab's attach a moment ago may have shown the bar; a new tab gets it late.
    let bar_due = BAR_DUE.with(Cell::get);
    let created = CREATED.with(|c| c.borrow().get(&tab).copied());
    let young = created.map(|at| at + BOUND_MS);
    let deadline = young.unwrap_or(0.0).max(bar_due);
    if deadline <= now_ms() || QUIET.with(Cell::get) >= QUIET_LIMIT {
        return;
    }
    SETTLING.with(|s| s.borrow_mut().insert(tab));
    let settling = Settling(tab);
    // What the bar's change follows: this attach, or the tab's creation.
    let trigger = if may_show {
        attached_at
    } else {
        created.unwrap_or(attached_at)
    };
    wasm_bindgen_futures::spawn_local(async move {
        let _settling = settling;
        // A tab in the background keeps its size until it is shown, and is right when shown.
        if !tabs::get(tab).await.is_ok_and(|t| t.active) {
            return;
        }
        let early = now_ms() - trigger < EARLY_MS;
        let deadline = if early {
            deadline + extension_when_early()
        } else {
            deadline
        };
        watch_after_attach(tab, deadline, attached_at, early).await;
    });
}

async fn watch_after_attach(tab: i32, deadline: f64, attached_at: f64, early: bool) {
    match watch(tab, deadline).await {
        Some((before, after, at)) => {
            QUIET.with(|q| q.set(0));
            SEEN.with(|s| s.set(true));
            log(&format!(
                "tab {tab}: the debugging bar moved the viewport from {}x{} to {}x{}, {} ms after the attach",
                before.0,
                before.1,
                after.0,
                after.1,
                (at - attached_at).round()
            ));
        }
        // Measured too late to tell (the change may have come before): proves nothing.
        None if !early => log(&format!(
            "tab {tab}: the viewport did not change within {} ms after the attach (first measured too late to tell whether the debugging bar had come)",
            (now_ms() - attached_at).round()
        )),
        None => {
            log(&format!(
                "tab {tab}: the debugging bar did not move the viewport within {} ms after the attach",
                (now_ms() - attached_at).round()
            ));
            let quiet = QUIET.with(|q| {
                q.set(q.get() + 1);
                q.get()
            });
            if quiet == QUIET_LIMIT {
                log(&format!(
                    "the debugging bar did not move the viewport after {QUIET_LIMIT} attaches: attaches no longer wait for it"
                ));
            }
        }
    }
}

struct Settling(i32);

impl Drop for Settling {
    fn drop(&mut self) {
        SETTLING.with(|s| s.borrow_mut().remove(&self.0));
    }
}

/// Waits (bounded) while another caller settles the tab's viewport after its attach.
pub async fn settled(tab: i32) {
    let until = now_ms() + SEEN_BOUND_MS + STILL_BOUND_MS + 1_000.0;
    while SETTLING.with(|s| s.borrow().contains(&tab)) && now_ms() < until {
        sleep_ms(POLL_MS).await;
    }
}

type Size = (f64, f64);

/// The viewport's CSS size as Chrome lays it out (not the page's own `innerHeight`, which a
/// script may replace).
async fn size(tab: i32, within_ms: f64) -> Option<Size> {
    let ms = within_ms.clamp(50.0, 1_000.0) as u32;
    let out = with_timeout(
        ms,
        "Page.getLayoutMetrics",
        debugger::send_command(tab, "Page.getLayoutMetrics", &json!({})),
    )
    .await
    .ok()?
    .ok()?;
    let v = out.get("cssLayoutViewport")?;
    Some((
        v.get("clientWidth").and_then(Value::as_f64)?,
        v.get("clientHeight").and_then(Value::as_f64)?,
    ))
}

/// Polls the viewport until it changes and holds still, or `deadline` passes without a change.
/// Returns the size before, the size after and when the change was first seen.
async fn watch(tab: i32, deadline: f64) -> Option<(Size, Size, f64)> {
    let before = size(tab, deadline - now_ms()).await?;
    // The first change seen, and the size now with when it was first seen.
    let mut first: Option<f64> = None;
    let (mut last, mut last_at) = (before, 0.0);
    loop {
        sleep_ms(POLL_MS).await;
        let limit = match first {
            Some(at) => deadline.max(at) + STILL_BOUND_MS,
            None => deadline,
        };
        let current = size(tab, limit - now_ms()).await;
        let now = now_ms();
        match current {
            Some(s) if s != last => {
                first.get_or_insert(now);
                (last, last_at) = (s, now);
            }
            Some(_) if first.is_some() && now - last_at >= STILL_MS => break,
            Some(_) => {}
            // The page stopped answering (a dialog, a navigation): go on with what was seen.
            None => break,
        }
        if now >= limit {
            break;
        }
    }
    first.map(|at| (before, last, at))
}
