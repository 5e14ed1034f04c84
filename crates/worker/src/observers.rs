//! What group tabs do while nobody is asking: console messages, uncaught exceptions, network
//! requests and JavaScript dialogs, recorded from CDP events (`chrome.debugger.onEvent`, which
//! worker.js forwards) from the moment the tab joins the group. Buffers are bounded; the network
//! list is cleared when the top frame moves to another site.
//!
//! Recording needs the debugger attached, so group tabs stay attached while they are in the
//! group (Chrome shows its "is debugging this browser" bar meanwhile); a tab that leaves the
//! group or closes is detached by Chrome or forgotten here.

use crate::cdp;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

const MAX_CONSOLE: usize = 1_000;
const MAX_REQUESTS: usize = 1_000;

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
}

#[derive(Clone)]
pub struct Dialog {
    pub kind: String,
    pub message: String,
    pub default_prompt: String,
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
}

thread_local! {
    static TABS: RefCell<HashMap<i32, Recording>> = RefCell::new(HashMap::new());
}

fn with<R>(tab: i32, f: impl FnOnce(&mut Recording) -> R) -> R {
    TABS.with(|t| f(t.borrow_mut().entry(tab).or_default()))
}

/// Starts recording on a group tab (attach and enable the domains), once per debugger session.
pub async fn observe(tab: i32) -> Result<(), String> {
    if with(tab, |r| r.enabled) && cdp::is_attached(tab) {
        return Ok(());
    }
    // Page first: dialogs are reported from here on, and a dialog blocks Runtime.enable's reply.
    for domain in ["Page", "Network", "Log", "Runtime"] {
        cdp::send_with_timeout(tab, &format!("{domain}.enable"), json!({}), 3_000).await?;
    }
    with(tab, |r| r.enabled = true);
    Ok(())
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

pub fn requests(tab: i32, clear: bool) -> Vec<Request> {
    with(tab, |r| {
        let out = r.requests.iter().cloned().collect();
        if clear {
            r.requests.clear();
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
/// nothing else of theirs is recorded yet.
pub fn on_event(tab: i32, session: Option<&str>, method: &str, p: &Value) {
    if method.starts_with("Target.") {
        cdp::on_target_event(tab, session, method, p);
    } else if session.is_none() {
        with(tab, |r| handle(r, method, p));
    }
}

fn handle(r: &mut Recording, method: &str, p: &Value) {
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
            let description = s(&d, "/exception/description");
            let text = match description.lines().next() {
                Some(first) if !first.is_empty() => format!("Uncaught {first}"),
                _ => s(&d, "/text"),
            };
            push_console(
                r,
                ConsoleEntry {
                    level: "error".into(),
                    text,
                    source: s(&d, "/url"),
                    line: d.get("lineNumber").and_then(Value::as_i64).map(|l| l + 1),
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
            }
            r.site = site;
        }
        "Page.javascriptDialogOpening" => {
            r.dialog = Some(Dialog {
                kind: s(p, "/type"),
                message: s(p, "/message"),
                default_prompt: s(p, "/defaultPrompt"),
            });
        }
        "Page.javascriptDialogClosed" => r.dialog = None,
        "Page.windowOpen" => r.window_opened_at = crate::js::now_ms(),
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
        handle(&mut r, "Runtime.consoleAPICalled", &call);
        handle(&mut r, "Runtime.consoleAPICalled", &call);
        assert_eq!(r.console.len(), 1);
        assert_eq!(r.console[0].text, "boom 3");
        assert_eq!(r.console[0].line, Some(10));
        for i in 0..(MAX_CONSOLE + 5) {
            let c = json!({"type": "log", "args": [{"type": "string", "value": "m"}], "timestamp": 10.0 + i as f64});
            handle(&mut r, "Runtime.consoleAPICalled", &c);
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
        );
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "1", "type": "Fetch", "request": {"method": "GET", "url": "http://a.test/ok"}}),
        );
        handle(
            &mut r,
            "Network.responseReceived",
            &json!({"requestId": "1", "response": {"status": 200}}),
        );
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "2", "type": "Fetch", "request": {"method": "POST", "url": "http://a.test/no"}}),
        );
        handle(
            &mut r,
            "Network.loadingFailed",
            &json!({"requestId": "2", "errorText": "net::ERR_FAILED"}),
        );
        assert_eq!(r.requests[0].status, Some(200));
        assert_eq!(r.requests[1].failure.as_deref(), Some("net::ERR_FAILED"));
        handle(
            &mut r,
            "Page.frameNavigated",
            &json!({"frame": {"url": "http://a.test/other", "loaderId": "L2"}}),
        );
        assert_eq!(r.requests.len(), 2);
        handle(
            &mut r,
            "Network.requestWillBeSent",
            &json!({"requestId": "L3", "type": "Document", "request": {"method": "GET", "url": "http://b.test/"}}),
        );
        handle(
            &mut r,
            "Page.frameNavigated",
            &json!({"frame": {"url": "http://b.test/", "loaderId": "L3"}}),
        );
        assert_eq!(r.requests.len(), 1);
        assert_eq!(r.requests[0].url, "http://b.test/");
    }
}
