//! What group tabs do while nobody is asking: console messages, uncaught exceptions, network
//! requests and JavaScript dialogs, recorded from CDP events (`chrome.debugger.onEvent`, which
//! worker.js forwards) from the moment the tab joins the group. Buffers are bounded; the network
//! list is cleared when the top frame moves to another site.
//!
//! Recording needs the debugger attached. A tab idle for a while is detached (`idle`) so
//! Chrome's "is debugging this browser" bar goes; across that gap console messages and
//! exceptions that the page still holds are replayed when recording starts again (each kept
//! once), network requests are not: the gap is recorded, and filled as far as the page's own
//! resource timing entries tell. A dialog that opens while detached blocks the page without a
//! word to a debugger that attaches later: a page that does not answer then counts as having
//! one (`Dialog::unknown`). A tab that closes is forgotten here.

use crate::cdp;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use wasm_bindgen_futures::spawn_local;

const MAX_CONSOLE: usize = 1_000;
const MAX_REQUESTS: usize = 1_000;
const MAX_GAPS: usize = 50;
/// A download not heard of for this long no longer holds the debugger.
const DOWNLOAD_QUIET_MS: f64 = 10.0 * 60_000.0;
/// How long a page may take to answer `Page.enable` before it counts as blocked.
const BLOCKED_MS: u32 = 3_000;

#[derive(Clone)]
pub struct ConsoleEntry {
    pub level: String,
    pub text: String,
    pub source: String,
    pub line: Option<i64>,
    pub timestamp: f64,
}

#[derive(Clone)]
pub struct Request {
    pub id: String,
    pub method: String,
    pub url: String,
    pub kind: String,
    pub status: Option<i64>,
    pub failure: Option<String>,
    /// When it was sent, in ms since the epoch.
    pub at: f64,
}

/// A time the debugger was detached while the tab was idle: requests then were not recorded.
#[derive(Clone)]
pub struct Gap {
    pub from: f64,
    /// `None` while still detached.
    pub to: Option<f64>,
    /// What the page's resource timing lists from that time (loaded by the page itself).
    pub timing: Vec<TimedResource>,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimedResource {
    pub url: String,
    pub initiator: String,
    /// 0 when the page may not know it (cross-origin without Timing-Allow-Origin).
    #[serde(default)]
    pub status: i64,
    pub at: f64,
}

#[derive(Clone, PartialEq)]
pub struct Dialog {
    pub kind: String,
    pub message: String,
    pub default_prompt: String,
    /// The page stopped answering while the debugger was away: most likely a dialog that
    /// opened then, which Chrome does not report to a debugger attached later.
    pub unknown: bool,
}

#[derive(Default)]
struct Recording {
    enabled: bool,
    console: VecDeque<ConsoleEntry>,
    requests: VecDeque<Request>,
    site: String,
    dialog: Option<Dialog>,
    /// When the page last opened a window (window.open, target=_blank), by the worker's clock.
    window_opened_at: f64,
    gaps: VecDeque<Gap>,
    /// Downloads in progress (guid → when last heard of).
    downloads: HashMap<String, f64>,
}

thread_local! {
    static TABS: RefCell<HashMap<i32, Recording>> = RefCell::new(HashMap::new());
}

fn with<R>(tab: i32, f: impl FnOnce(&mut Recording) -> R) -> R {
    TABS.with(|t| f(t.borrow_mut().entry(tab).or_default()))
}

thread_local! {
    /// Tabs whose recording is being started: a second caller waits for the first.
    static STARTING: RefCell<std::collections::HashSet<i32>> = RefCell::new(Default::default());
}

/// A tab's group changed (`chrome.tabs.onUpdated`): joining the automation group starts its
/// recording now, not at its first command; leaving it detaches and forgets the recording.
pub async fn group_changed(tab: i32, group: i32) {
    let Ok(Some(ours)) = crate::group::find().await else {
        return;
    };
    if group == ours {
        if let Err(e) = observe(tab).await {
            crate::js::log(&format!("recording tab {tab}, which joined the group: {e}"));
        }
    } else if cdp::is_attached(tab) {
        crate::idle::detach(tab).await;
        forget(tab);
    }
}

/// At worker start: the group's tabs that the debugger is still attached to (a restart while
/// they were recorded) are recorded again at once (console messages Chrome holds are replayed,
/// the idle clock starts). Tabs detached for idleness stay so until a command.
pub async fn resume() {
    let Ok(Some(group)) = crate::group::find().await else {
        return;
    };
    let attached = crate::chrome::debugger::attached_tabs()
        .await
        .unwrap_or_default();
    for t in crate::group::tabs_of(group).await.unwrap_or_default() {
        let Some(id) = t.id.filter(|id| attached.contains(id)) else {
            continue;
        };
        if let Err(e) = observe(id).await {
            crate::js::log(&format!("recording tab {id} again after a restart: {e}"));
        }
    }
}

/// Starts recording on a group tab (attach and enable the domains), once per debugger session.
pub async fn observe(tab: i32) -> Result<(), String> {
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

async fn start(tab: i32) -> Result<(), String> {
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
            cdp::send_with_timeout(tab, &format!("{domain}.enable"), json!({}), BLOCKED_MS).await;
        match enabled {
            Err(e @ cdp::Error::Timeout(_)) if domain == "Page" && after_idle(tab) => {
                // A dialog opened while no debugger was attached blocks the page, and Chrome
                // reports it only to a debugger that was attached when it opened.
                with(tab, |r| {
                    r.dialog = Some(Dialog {
                        kind: "unknown".into(),
                        message: String::new(),
                        default_prompt: String::new(),
                        unknown: true,
                    })
                });
                return Err(e.into());
            }
            other => {
                other?;
            }
        }
    }
    // The main frame, so that the boundary sees its navigations from their start.
    // Without it, the tab is looked up before each command as before.
    let tree = cdp::send_with_timeout(tab, "Page.getFrameTree", json!({}), BLOCKED_MS).await;
    if let Some(frame) = tree
        .ok()
        .as_ref()
        .and_then(|t| t.pointer("/frameTree/frame/id"))
        .and_then(Value::as_str)
    {
        crate::boundary::main_frame_is(tab, frame);
    }
    with(tab, |r| r.enabled = true);
    if let Some(from) = with(tab, |r| {
        r.gaps.back().filter(|g| g.to.is_none()).map(|g| g.from)
    }) {
        let timing = resources_since(tab, from).await;
        with(tab, |r| {
            if let Some(g) = r.gaps.back_mut() {
                g.to = Some(crate::js::now_ms());
                g.timing = timing;
            }
        });
    }
    Ok(())
}

/// True while the tab's recording has a gap that is still open (detached for idleness).
fn after_idle(tab: i32) -> bool {
    TABS.with(|t| {
        t.borrow()
            .get(&tab)
            .and_then(|r| r.gaps.back())
            .is_some_and(|g| g.to.is_none())
    })
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
            r.gaps.push_back(Gap {
                from: crate::js::now_ms(),
                to: None,
                timing: Vec::new(),
            });
            while r.gaps.len() > MAX_GAPS {
                r.gaps.pop_front();
            }
        }
        r.enabled = false;
    });
}

/// True while the tab has a download in progress.
pub fn downloading(tab: i32) -> bool {
    let now = crate::js::now_ms();
    TABS.with(|t| {
        t.borrow()
            .get(&tab)
            .is_some_and(|r| r.downloads.values().any(|at| now - at < DOWNLOAD_QUIET_MS))
    })
}

/// True while the tab is recorded: attached, with its domains enabled.
pub fn recording(tab: i32) -> bool {
    cdp::is_attached(tab) && TABS.with(|t| t.borrow().get(&tab).is_some_and(|r| r.enabled))
}

/// The debugger session ended: the next command enables recording again.
pub fn on_detach(tab: i32) {
    with(tab, |r| r.enabled = false);
}

/// A tab closed: its recordings go.
pub fn forget(tab: i32) {
    TABS.with(|t| t.borrow_mut().remove(&tab));
}

/// True when the tab's page opened a window within the last `ms` milliseconds.
pub fn opened_window_within(tab: i32, ms: f64) -> bool {
    TABS.with(|t| {
        t.borrow()
            .get(&tab)
            .is_some_and(|r| crate::js::now_ms() - r.window_opened_at <= ms)
    })
}

/// handle_dialog answered it (the closing event may come later).
pub fn dialog_closed(tab: i32) {
    with(tab, |r| r.dialog = None);
}

pub fn open_dialog(tab: i32) -> Option<Dialog> {
    TABS.with(|t| t.borrow().get(&tab).and_then(|r| r.dialog.clone()))
}

pub fn console(tab: i32, clear: bool) -> Vec<ConsoleEntry> {
    with(tab, |r| {
        let out = r.console.iter().cloned().collect();
        if clear {
            r.console.clear();
        }
        out
    })
}

/// The recorded requests and the idle gaps in the recording.
pub fn requests(tab: i32, clear: bool) -> (Vec<Request>, Vec<Gap>) {
    with(tab, |r| {
        let out = (
            r.requests.iter().cloned().collect(),
            r.gaps.iter().cloned().collect(),
        );
        if clear {
            r.requests.clear();
            r.gaps.clear();
        }
        out
    })
}

fn s(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The scheme and host of a URL: what "another site" means for clearing the network list.
pub fn site_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    format!("{scheme}://{host}")
}

fn remote_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => arg
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| arg.get("unserializableValue").and_then(Value::as_str))
            .or_else(|| arg.get("type").and_then(Value::as_str))
            .unwrap_or("")
            .to_string(),
    }
}

fn push_console(r: &mut Recording, e: ConsoleEntry) {
    // Runtime.enable replays earlier messages after a re-attach: each message is kept once.
    if r.console
        .iter()
        .rev()
        .take_while(|old| old.timestamp >= e.timestamp)
        .any(|old| old.timestamp == e.timestamp && old.text == e.text)
    {
        return;
    }
    r.console.push_back(e);
    while r.console.len() > MAX_CONSOLE {
        r.console.pop_front();
    }
}

/// One CDP event of a tab, from its own session or (`session`) from a child session of an
/// out-of-process iframe. Child sessions come and go with `Target.*` events (kept by `cdp`);
/// their console messages and requests are the tab's, recorded from when they attach (console
/// messages logged before are replayed by `Runtime.enable`).
pub fn on_event(tab: i32, session: Option<&str>, method: &str, p: &Value) {
    if method.starts_with("Target.") {
        if let Some(child) = cdp::on_target_event(tab, session, method, p) {
            spawn_local(async move {
                for domain in ["Network", "Log", "Runtime"] {
                    let _ = cdp::send_to(&child, &format!("{domain}.enable"), json!({})).await;
                }
            });
        }
        return;
    }
    let now = crate::js::now_ms();
    let top_frame = method == "Page.loadEventFired"
        || (method == "Page.frameNavigated" && p.pointer("/frame/parentId").is_none());
    if session.is_none() && top_frame {
        crate::debugging_bar::navigated(tab);
    }
    match session {
        None => with(tab, |r| handle(r, method, p, now)),
        Some(s) if CHILD_DOMAINS.iter().any(|d| method.starts_with(d)) => {
            // Request ids are numbered per process: the child's are made its own.
            match p.get("requestId").and_then(Value::as_str) {
                Some(id) => {
                    let mut p = p.clone();
                    p["requestId"] = json!(format!("{s}/{id}"));
                    with(tab, |r| handle(r, method, &p, now));
                }
                None => with(tab, |r| handle(r, method, p, now)),
            }
        }
        Some(_) => {}
    }
}

/// What is recorded of an out-of-process iframe's session (its Page events are not the tab's).
const CHILD_DOMAINS: [&str; 3] = ["Runtime.", "Log.", "Network."];

/// `now`: the worker's clock, ms since the epoch.
fn handle(r: &mut Recording, method: &str, p: &Value, now: f64) {
    match method {
        "Runtime.consoleAPICalled" => {
            let level = match p.get("type").and_then(Value::as_str).unwrap_or("log") {
                "error" | "assert" => "error",
                "warning" => "warning",
                "info" => "info",
                "debug" => "debug",
                _ => "log",
            };
            let text = p
                .get("args")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(remote_text).collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            let frame = p.pointer("/stackTrace/callFrames/0");
            push_console(
                r,
                ConsoleEntry {
                    level: level.into(),
                    text,
                    source: frame.map(|f| s(f, "/url")).unwrap_or_default(),
                    line: frame
                        .and_then(|f| f.get("lineNumber"))
                        .and_then(Value::as_i64)
                        .map(|l| l + 1),
                    timestamp: p.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
                },
            );
        }
        "Runtime.exceptionThrown" => {
            let d = p.get("exceptionDetails").cloned().unwrap_or(Value::Null);
            let x = cdp::Exception::new(d);
            push_console(
                r,
                ConsoleEntry {
                    level: "error".into(),
                    text: x.uncaught(),
                    source: x.url().to_string(),
                    line: x.line(),
                    timestamp: p.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
                },
            );
        }
        "Log.entryAdded" => {
            let e = p.get("entry").cloned().unwrap_or(Value::Null);
            if s(&e, "/source") == "console-api" {
                return;
            }
            push_console(
                r,
                ConsoleEntry {
                    level: s(&e, "/level"),
                    text: s(&e, "/text"),
                    source: s(&e, "/url"),
                    line: e.get("lineNumber").and_then(Value::as_i64).map(|l| l + 1),
                    timestamp: e.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
                },
            );
        }
        "Network.requestWillBeSent" => {
            let id = s(p, "/requestId");
            let url = s(p, "/request/url");
            if url.starts_with("data:") {
                return;
            }
            let entry = Request {
                id: id.clone(),
                method: s(p, "/request/method"),
                url,
                kind: s(p, "/type"),
                status: None,
                failure: None,
                at: p
                    .get("wallTime")
                    .and_then(Value::as_f64)
                    .map_or(now, |s| s * 1000.0),
            };
            // A redirect reuses the id: the request now goes to the new URL.
            if let Some(old) = r.requests.iter_mut().rev().find(|q| q.id == id) {
                *old = entry;
            } else {
                r.requests.push_back(entry);
                while r.requests.len() > MAX_REQUESTS {
                    r.requests.pop_front();
                }
            }
        }
        "Network.responseReceived" => {
            let id = s(p, "/requestId");
            if let Some(q) = r.requests.iter_mut().rev().find(|q| q.id == id) {
                q.status = p.pointer("/response/status").and_then(Value::as_i64);
                if q.kind.is_empty() {
                    q.kind = s(p, "/type");
                }
            }
        }
        "Network.loadingFailed" => {
            let id = s(p, "/requestId");
            if let Some(q) = r.requests.iter_mut().rev().find(|q| q.id == id) {
                let mut why = s(p, "/errorText");
                if p.get("canceled").and_then(Value::as_bool) == Some(true) {
                    why = format!("canceled {why}").trim().to_string();
                }
                if let Some(b) = p.get("blockedReason").and_then(Value::as_str) {
                    why = format!("{why} (blocked: {b})");
                }
                q.failure = Some(why);
            }
        }
        "Page.frameNavigated" => {
            let frame = p.get("frame").cloned().unwrap_or(Value::Null);
            if frame.get("parentId").is_some() {
                return;
            }
            let site = site_of(&s(&frame, "/url"));
            if !r.site.is_empty() && r.site != site {
                // Keep only the request that brought the new page.
                let loader = s(&frame, "/loaderId");
                r.requests.retain(|q| q.id == loader);
                r.gaps.clear();
            }
            r.site = site;
        }
        "Page.javascriptDialogOpening" => {
            r.dialog = Some(Dialog {
                kind: s(p, "/type"),
                message: s(p, "/message"),
                default_prompt: s(p, "/defaultPrompt"),
                unknown: false,
            });
        }
        "Page.javascriptDialogClosed" => r.dialog = None,
        "Page.windowOpen" => r.window_opened_at = now,
        "Page.downloadWillBegin" => {
            r.downloads.insert(s(p, "/guid"), now);
        }
        "Page.downloadProgress" => {
            let guid = s(p, "/guid");
            if s(p, "/state") == "inProgress" {
                r.downloads.insert(guid, now);
            } else {
                r.downloads.remove(&guid);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites() {
        assert_eq!(site_of("http://127.0.0.1:8080/a?b"), "http://127.0.0.1");
        assert_eq!(site_of("https://user@example.com/x"), "https://example.com");
        assert_ne!(site_of("about:blank"), site_of("http://127.0.0.1/"));
    }

    #[test]
    fn console_messages_are_kept_once_and_bounded() {
        let mut r = Recording::default();
        let call = json!({"type": "error", "args": [{"type": "string", "value": "boom"}, {"type": "number", "value": 3}], "timestamp": 5.0,
            "stackTrace": {"callFrames": [{"url": "http://x/a.js", "lineNumber": 9}]}});
        handle(&mut r, "Runtime.consoleAPICalled", &call, 0.0);
        handle(&mut r, "Runtime.consoleAPICalled", &call, 0.0);
        assert_eq!(r.console.len(), 1);
        assert_eq!(r.console[0].text, "boom 3");
        assert_eq!(r.console[0].line, Some(10));
        for i in 0..(MAX_CONSOLE + 5) {
            let c = json!({"type": "log", "args": [{"type": "string", "value": "m"}], "timestamp": 10.0 + i as f64});
            handle(&mut r, "Runtime.consoleAPICalled", &c, 0.0);
        }
        assert_eq!(r.console.len(), MAX_CONSOLE);
    }

    #[test]
    fn requests_follow_their_lifecycle_and_clear_on_site_change() {
        let mut r = Recording::default();
        handle(
            &mut r,
            "Page.frameNavigated",
            &json!({"frame": {"url": "http://a.test/", "loaderId": "L1"}}),
            0.0,
        );
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "1", "type": "Fetch", "request": {"method": "GET", "url": "http://a.test/ok"}}),
            0.0,
        );
        handle(
            &mut r,
            "Network.responseReceived",
            &json!({"requestId": "1", "response": {"status": 200}}),
            0.0,
        );
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "2", "type": "Fetch", "request": {"method": "POST", "url": "http://a.test/no"}}),
            0.0,
        );
        handle(
            &mut r,
            "Network.loadingFailed",
            &json!({"requestId": "2", "errorText": "net::ERR_FAILED"}),
            0.0,
        );
        assert_eq!(r.requests[0].status, Some(200));
        assert_eq!(r.requests[1].failure.as_deref(), Some("net::ERR_FAILED"));
        handle(
            &mut r,
            "Page.frameNavigated",
            &json!({"frame": {"url": "http://a.test/other", "loaderId": "L2"}}),
            0.0,
        );
        assert_eq!(r.requests.len(), 2);
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "L3", "type": "Document", "request": {"method": "GET", "url": "http://b.test/"}}),
            0.0,
        );
        handle(
            &mut r,
            "Page.frameNavigated",
            &json!({"frame": {"url": "http://b.test/", "loaderId": "L3"}}),
            0.0,
        );
        assert_eq!(r.requests.len(), 1);
        assert_eq!(r.requests[0].url, "http://b.test/");
    }

    #[test]
    fn downloads_are_tracked_until_they_end() {
        let mut r = Recording::default();
        handle(
            &mut r,
            "Page.downloadWillBegin",
            &json!({"guid": "g1", "url": "http://a.test/f.zip"}),
            1.0,
        );
        handle(
            &mut r,
            "Page.downloadProgress",
            &json!({"guid": "g1", "state": "inProgress"}),
            2.0,
        );
        assert_eq!(r.downloads.get("g1"), Some(&2.0));
        handle(
            &mut r,
            "Page.downloadProgress",
            &json!({"guid": "g1", "state": "completed"}),
            3.0,
        );
        assert!(r.downloads.is_empty());
    }

    #[test]
    fn requests_carry_their_wall_time() {
        let mut r = Recording::default();
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "1", "wallTime": 1700000000.5, "request": {"method": "GET", "url": "http://a.test/"}}),
            9.0,
        );
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "2", "request": {"method": "GET", "url": "http://a.test/b"}}),
            9.0,
        );
        assert_eq!(r.requests[0].at, 1_700_000_000_500.0);
        assert_eq!(r.requests[1].at, 9.0);
    }
}
