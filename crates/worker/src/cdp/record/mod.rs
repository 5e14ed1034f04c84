//! What group tabs do while nobody is asking, recorded from CDP events
//! (`chrome.debugger.onEvent`, which worker.js forwards) from the moment the tab joins the group:
//! one recorder per concern (`console`, `network`, `dialogs`, `downloads`, `opened`), each fed
//! typed events (`cdp::events`). Buffers are bounded.
//!
//! Recording needs the debugger attached. A tab idle for a while is detached (`cdp::idle`) so
//! Chrome's "is debugging this browser" bar goes; across that gap console messages and
//! exceptions that the page still holds are replayed when recording starts again (each kept
//! once), network requests are not: the gap is recorded, and filled as far as the page's own
//! resource timing entries tell. A dialog that opens while detached blocks the page without a
//! word to a debugger that attaches later: a page that does not answer then counts as having
//! one (`Dialog::unknown`). A tab that closes or leaves the group is forgotten here.

mod console;
mod dialogs;
mod downloads;
mod network;
mod opened;

pub use console::ConsoleEntry;
pub use dialogs::Dialog;
pub use network::{Gap, Request, TimedResource};

use crate::cdp::{self, events::Event};
use crate::vec_map::{VecMap, VecSet};
use serde_json::{json, Value};
use std::cell::RefCell;
use wasm_bindgen_futures::spawn_local;

/// How long a page may take to answer `Page.enable` before it counts as blocked.
const BLOCKED_MS: u32 = 3_000;

#[derive(Default)]
struct Recording {
    enabled: bool,
    console: console::Console,
    network: network::Network,
    dialog: Option<Dialog>,
    opened: opened::Opened,
    downloads: downloads::Downloads,
}

thread_local! {
    static TABS: RefCell<VecMap<i32, Recording>> = const { RefCell::new(VecMap::new()) };
    /// Tabs whose recording is being started: a second caller waits for the first.
    static STARTING: RefCell<VecSet<i32>> = const { RefCell::new(VecSet::new()) };
}

fn with<R>(tab: i32, f: impl FnOnce(&mut Recording) -> R) -> R {
    TABS.with(|t| f(t.borrow_mut().entry(tab).or_default()))
}

fn read<R>(tab: i32, f: impl FnOnce(&Recording) -> R) -> Option<R> {
    TABS.with(|t| t.borrow().get(&tab).map(f))
}

/// Starts recording on a group tab (attach and enable the domains), once per debugger session.
pub async fn observe(tab: i32) -> Result<(), cdp::Error> {
    // The tab joining the group and the command that put it there both ask: one starts it.
    for _ in 0..200 {
        if STARTING.with(|s| s.borrow_mut().insert(tab)) {
            break;
        }
        crate::js::sleep_ms(20).await;
    }
    let started = start(tab).await;
    STARTING.with(|s| s.borrow_mut().remove(&tab));
    started
}

async fn start(tab: i32) -> Result<(), cdp::Error> {
    if with(tab, |r| r.enabled) && cdp::is_attached(tab) {
        return Ok(());
    }
    // A page found blocked stays so (every command says so at once) until it answers again:
    // handle_dialog closed the dialog, or the user did.
    if open_dialog(tab).is_some_and(|d| d.unknown) {
        if !answers(tab, 500).await {
            return Ok(());
        }
        dialog_closed(tab);
    }
    // Page first: dialogs are reported from here on, and a dialog blocks Runtime.enable's reply.
    for domain in ["Page", "Network", "Log", "Runtime"] {
        let enabled =
            cdp::send_unsettled(tab, &format!("{domain}.enable"), json!({}), BLOCKED_MS).await;
        match enabled {
            Err(e @ cdp::Error::Timeout(_)) if domain == "Page" && after_idle(tab) => {
                // A dialog opened while no debugger was attached blocks the page, and Chrome
                // reports it only to a debugger that was attached when it opened.
                with(tab, |r| r.dialog = Some(Dialog::unknown()));
                return Err(e);
            }
            other => {
                other?;
            }
        }
    }
    // The main frame, so that the boundary sees its navigations from their start.
    // Without it, the tab is looked up before each command as before.
    let tree = cdp::send_unsettled(tab, "Page.getFrameTree", json!({}), BLOCKED_MS).await;
    if let Some(frame) = tree
        .ok()
        .as_ref()
        .and_then(|t| t.pointer("/frameTree/frame/id"))
        .and_then(Value::as_str)
    {
        crate::boundary::main_frame_is(tab, frame);
    }
    with(tab, |r| r.enabled = true);
    if let Some(from) = with(tab, |r| r.network.open_gap()) {
        let timing = resources_since(tab, from).await;
        with(tab, |r| {
            if let Some(g) = r.network.gaps.back_mut() {
                g.to = Some(crate::js::now_ms());
                g.timing = timing;
            }
        });
    }
    Ok(())
}

/// True while the tab's recording has a gap that is still open (detached for idleness).
fn after_idle(tab: i32) -> bool {
    read(tab, |r| r.network.open_gap().is_some()).unwrap_or(false)
}

/// True when the page evaluates a trivial expression within `ms`.
pub async fn answers(tab: i32, ms: u32) -> bool {
    cdp::send_with_timeout(tab, "Runtime.evaluate", json!({"expression": "0"}), ms)
        .await
        .is_ok()
}

/// What the page's resource timing lists since `from` (ms since the epoch): the requests the
/// page made while no debugger watched, as far as the page itself knows.
async fn resources_since(tab: i32, from: f64) -> Vec<TimedResource> {
    let expression = format!(
        "performance.getEntriesByType('resource').map((e) => ({{url: e.name, initiator: e.initiatorType, \
         status: e.responseStatus || 0, at: performance.timeOrigin + e.startTime}})).filter((e) => e.at >= {from})"
    );
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        json!({"expression": expression, "returnByValue": true}),
        BLOCKED_MS,
    )
    .await;
    out.ok()
        .and_then(|v| v.pointer("/result/value").cloned())
        .and_then(|v| crate::js::from_json::<Vec<TimedResource>>(v).ok())
        .unwrap_or_default()
}

/// The debugger is being detached from an idle tab: what happens from now on is a gap.
pub fn idle_detached(tab: i32) {
    with(tab, |r| {
        if r.enabled {
            r.network.gap_starts(crate::js::now_ms());
        }
        r.enabled = false;
    });
}

/// True while the tab has a download in progress.
pub fn downloading(tab: i32) -> bool {
    let now = crate::js::now_ms();
    read(tab, |r| r.downloads.any(now)).unwrap_or(false)
}

/// True while the tab is recorded: attached, with its domains enabled.
pub fn recording(tab: i32) -> bool {
    cdp::is_attached(tab) && read(tab, |r| r.enabled).unwrap_or(false)
}

/// The debugger session ended: the next command enables recording again.
pub fn on_detach(tab: i32) {
    // Not `with`: a tab that closed (Chrome detaches it after `onRemoved` too) is not recorded
    // again.
    TABS.with(|t| {
        if let Some(r) = t.borrow_mut().get_mut(&tab) {
            r.enabled = false;
        }
    });
}

/// The tab closed or left the group: its recordings go.
pub fn forget(tab: i32) {
    TABS.with(|t| t.borrow_mut().remove(&tab));
    dialogs::forget(tab);
}

/// Whether something is recorded of the tab.
pub fn holds(tab: i32) -> bool {
    TABS.with(|t| t.borrow().contains_key(&tab))
}

/// True when the tab's page opened a window within the last `ms` milliseconds.
pub fn opened_window_within(tab: i32, ms: f64) -> bool {
    let now = crate::js::now_ms();
    read(tab, |r| r.opened.within(now, ms)).unwrap_or(false)
}

/// handle_dialog answered it (the closing event may come later).
pub fn dialog_closed(tab: i32) {
    with(tab, |r| r.dialog = None);
}

pub fn open_dialog(tab: i32) -> Option<Dialog> {
    read(tab, |r| r.dialog.clone()).flatten()
}

pub fn console(tab: i32, clear: bool) -> Vec<ConsoleEntry> {
    with(tab, |r| {
        let out = r.console.entries.iter().cloned().collect();
        if clear {
            r.console.entries.clear();
        }
        out
    })
}

/// The tab's top document: its loader id and the HTTP status of its response, as recorded.
pub fn top_document(tab: i32) -> Option<(String, Option<i64>)> {
    read(tab, |r| r.network.top_document())
}

/// The recorded requests and the idle gaps in the recording.
pub fn requests(tab: i32, clear: bool) -> (Vec<Request>, Vec<Gap>) {
    with(tab, |r| {
        let out = (
            r.network.requests.iter().cloned().collect(),
            r.network.gaps.iter().cloned().collect(),
        );
        if clear {
            r.network.requests.clear();
            r.network.gaps.clear();
        }
        out
    })
}

/// One CDP event of a tab, from its own session or (`session`) from a child session of an
/// out-of-process iframe. Child sessions come and go with `Target.*` events (kept by
/// `cdp::children`); their console messages and requests are the tab's, recorded from when
/// they attach (console messages logged before are replayed by `Runtime.enable`).
pub fn on_event(tab: i32, session: Option<&str>, method: &str, p: &Value) {
    let Some(event) = Event::parse(method, p) else {
        return;
    };
    if let Event::IframeAttached { .. } | Event::TargetDetached { .. } = event {
        if let Some(child) = cdp::children::on_event(tab, session, &event) {
            spawn_local(async move {
                for domain in ["Network", "Log", "Runtime"] {
                    let _ = cdp::send_to(&child, &format!("{domain}.enable"), json!({})).await;
                }
            });
        }
        return;
    }
    let now = crate::js::now_ms();
    if session.is_none() && answered_by_policy(tab, &event, now) {
        return;
    }
    let top_frame = matches!(
        event,
        Event::LoadEventFired | Event::FrameNavigated { top: true, .. }
    );
    if session.is_none() && top_frame {
        crate::debugging_bar::navigated(tab);
    }
    match session {
        None => with(tab, |r| handle(tab, r, &event, now)),
        Some(s) if event.of_child_domain() => {
            let event = event.in_session(s);
            with(tab, |r| handle(tab, r, &event, now));
        }
        Some(_) => {}
    }
}

/// Each recorder takes what is its own. `now`: the worker's clock, ms since the epoch.
fn handle(tab: i32, r: &mut Recording, event: &Event, now: f64) {
    r.console.on(event);
    r.network.on(event, now);
    dialogs::on(&mut r.dialog, event);
    r.opened.on(event, now);
    if let Some(report) = r.downloads.on(event, now) {
        spawn_local(async move { crate::changes::push(report.change(tab).await) });
    }
}

/// A dialog opening that the policy answers: answered now, reported, and never recorded as
/// open (a command it blocked goes on). Past the loop bound, or when the answer fails, it is
/// recorded as open like any other.
fn answered_by_policy(tab: i32, event: &Event, now: f64) -> bool {
    let Event::DialogOpening {
        kind,
        message,
        default_prompt,
    } = event
    else {
        return false;
    };
    let Some(accept) = dialogs::policy_answer(tab, now) else {
        return false;
    };
    let dialog = Dialog {
        kind: kind.clone(),
        message: message.clone(),
        default_prompt: default_prompt.clone(),
        unknown: false,
    };
    spawn_local(async move {
        let mut params = json!({ "accept": accept });
        if accept && dialog.kind == "prompt" {
            params["promptText"] = json!(dialog.default_prompt);
        }
        let answered =
            cdp::send_with_timeout(tab, "Page.handleJavaScriptDialog", params, BLOCKED_MS).await;
        match answered {
            Ok(_) => crate::changes::push(crate::changes::Change::DialogDismissed {
                tab_id: tab,
                kind: dialog.kind,
                message: dialog.message,
                accepted: accept,
            }),
            Err(e) => {
                crate::js::log(&format!(
                    "answering the {} dialog of tab {tab}: {e}",
                    dialog.kind
                ));
                with(tab, |r| r.dialog = Some(dialog));
            }
        }
    });
    true
}
