//! The CDP events the worker records, typed: each read from its JSON once, here, so the recorders
//! and the child sessions work on fields rather than on path strings.

use super::Exception;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `Runtime.consoleAPICalled`: `console.log` and friends.
    ConsoleApiCalled {
        /// `error` (also `assert`), `warning`, `info`, `debug` or `log`.
        level: &'static str,
        /// The arguments as text, joined by spaces.
        text: String,
        source: String,
        /// 1-based.
        line: Option<i64>,
        timestamp: f64,
    },
    /// `Runtime.exceptionThrown`: an uncaught exception.
    ExceptionThrown {
        exception: Exception,
        timestamp: f64,
    },
    /// `Log.entryAdded`: what the browser logs for the page (network errors, interventions).
    LogEntry {
        /// `console-api` for what `Runtime.consoleAPICalled` reports already.
        source: String,
        level: String,
        text: String,
        url: String,
        line: Option<i64>,
        timestamp: f64,
    },
    RequestWillBeSent {
        id: String,
        method: String,
        url: String,
        kind: String,
        /// Seconds since the epoch.
        wall_time: Option<f64>,
    },
    ResponseReceived {
        id: String,
        status: Option<i64>,
        kind: String,
    },
    LoadingFailed {
        id: String,
        error: String,
        canceled: bool,
        blocked: Option<String>,
    },
    /// `Page.frameNavigated` of the top frame (`top`) or a subframe.
    FrameNavigated {
        top: bool,
        url: String,
        loader: String,
    },
    LoadEventFired,
    DialogOpening {
        kind: String,
        message: String,
        default_prompt: String,
    },
    DialogClosed,
    WindowOpen,
    DownloadWillBegin {
        guid: String,
        url: String,
        /// The name Chrome suggests (from Content-Disposition or the URL).
        file_name: String,
    },
    DownloadProgress {
        guid: String,
        /// `inProgress`, `completed` or `canceled` (which also means failed).
        state: String,
        received: f64,
        total: f64,
    },
    /// `Target.attachedToTarget` of an out-of-process iframe.
    IframeAttached {
        session: String,
        /// The iframe's frame id (its target id).
        frame: String,
    },
    /// `Target.detachedFromTarget`.
    TargetDetached {
        session: String,
    },
}

fn text(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A CDP RemoteObject (a console argument) as text.
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

impl Event {
    /// The event `method` with its `params`, if it is one the worker records.
    pub fn parse(method: &str, p: &Value) -> Option<Event> {
        let timestamp = |v: &Value| v.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0);
        let line = |v: &Value| v.get("lineNumber").and_then(Value::as_i64).map(|l| l + 1);
        Some(match method {
            "Runtime.consoleAPICalled" => {
                let level = match p.get("type").and_then(Value::as_str).unwrap_or("log") {
                    "error" | "assert" => "error",
                    "warning" => "warning",
                    "info" => "info",
                    "debug" => "debug",
                    _ => "log",
                };
                let frame = p.pointer("/stackTrace/callFrames/0");
                Event::ConsoleApiCalled {
                    level,
                    text: p
                        .get("args")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().map(remote_text).collect::<Vec<_>>().join(" "))
                        .unwrap_or_default(),
                    source: frame.map(|f| text(f, "/url")).unwrap_or_default(),
                    line: frame.and_then(line),
                    timestamp: timestamp(p),
                }
            }
            "Runtime.exceptionThrown" => Event::ExceptionThrown {
                exception: Exception::new(
                    p.get("exceptionDetails").cloned().unwrap_or(Value::Null),
                ),
                timestamp: timestamp(p),
            },
            "Log.entryAdded" => {
                let e = p.get("entry").unwrap_or(&Value::Null);
                Event::LogEntry {
                    source: text(e, "/source"),
                    level: text(e, "/level"),
                    text: text(e, "/text"),
                    url: text(e, "/url"),
                    line: line(e),
                    timestamp: timestamp(e),
                }
            }
            "Network.requestWillBeSent" => Event::RequestWillBeSent {
                id: text(p, "/requestId"),
                method: text(p, "/request/method"),
                url: text(p, "/request/url"),
                kind: text(p, "/type"),
                wall_time: p.get("wallTime").and_then(Value::as_f64),
            },
            "Network.responseReceived" => Event::ResponseReceived {
                id: text(p, "/requestId"),
                status: p.pointer("/response/status").and_then(Value::as_i64),
                kind: text(p, "/type"),
            },
            "Network.loadingFailed" => Event::LoadingFailed {
                id: text(p, "/requestId"),
                error: text(p, "/errorText"),
                canceled: p.get("canceled").and_then(Value::as_bool) == Some(true),
                blocked: p
                    .get("blockedReason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            "Page.frameNavigated" => Event::FrameNavigated {
                top: p.pointer("/frame/parentId").is_none(),
                url: text(p, "/frame/url"),
                loader: text(p, "/frame/loaderId"),
            },
            "Page.loadEventFired" => Event::LoadEventFired,
            "Page.javascriptDialogOpening" => Event::DialogOpening {
                kind: text(p, "/type"),
                message: text(p, "/message"),
                default_prompt: text(p, "/defaultPrompt"),
            },
            "Page.javascriptDialogClosed" => Event::DialogClosed,
            "Page.windowOpen" => Event::WindowOpen,
            "Page.downloadWillBegin" => Event::DownloadWillBegin {
                guid: text(p, "/guid"),
                url: text(p, "/url"),
                file_name: text(p, "/suggestedFilename"),
            },
            "Page.downloadProgress" => Event::DownloadProgress {
                guid: text(p, "/guid"),
                state: text(p, "/state"),
                received: p
                    .get("receivedBytes")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0),
                total: p.get("totalBytes").and_then(Value::as_f64).unwrap_or(0.0),
            },
            "Target.attachedToTarget" => {
                if text(p, "/targetInfo/type") != "iframe" {
                    return None;
                }
                let session = p.get("sessionId").and_then(Value::as_str)?;
                let frame = p.pointer("/targetInfo/targetId").and_then(Value::as_str)?;
                Event::IframeAttached {
                    session: session.to_string(),
                    frame: frame.to_string(),
                }
            }
            "Target.detachedFromTarget" => Event::TargetDetached {
                session: p.get("sessionId").and_then(Value::as_str)?.to_string(),
            },
            _ => return None,
        })
    }

    /// What is recorded of an out-of-process iframe's session: its console, exceptions, logs and
    /// requests (its Page events are not the tab's).
    pub fn of_child_domain(&self) -> bool {
        matches!(
            self,
            Event::ConsoleApiCalled { .. }
                | Event::ExceptionThrown { .. }
                | Event::LogEntry { .. }
                | Event::RequestWillBeSent { .. }
                | Event::ResponseReceived { .. }
                | Event::LoadingFailed { .. }
        )
    }

    /// Request ids are numbered per process: a child session's are made its own.
    pub fn in_session(mut self, session: &str) -> Event {
        if let Event::RequestWillBeSent { id, .. }
        | Event::ResponseReceived { id, .. }
        | Event::LoadingFailed { id, .. } = &mut self
        {
            *id = format!("{session}/{id}");
        }
        self
    }
}
