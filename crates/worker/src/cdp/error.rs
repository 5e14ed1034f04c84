//! The one error type of CDP calls and of what the page does in them. Each kind is told apart by
//! its variant, never by its text; `Display` is the text the model reads. Chrome's messages are
//! read in one place ([`Error::from_chrome`]), and a page's exception (`exceptionDetails`) becomes
//! an error in one place ([`thrown`]).

use crate::js::Timeout;
use serde_json::Value;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// A step ran past its bound (the CDP method, or the step it was part of).
    Timeout(Timeout),
    /// The debugger can't attach to the page the tab shows (chrome://, the Web Store, another
    /// extension).
    CannotAttach { tab: i32, chrome: String },
    /// Attaching the debugger failed for another reason.
    Attach { tab: i32, chrome: String },
    /// The tab's debugger session ended (the tab closed, the user cancelled the bar).
    Detached { method: String, chrome: String },
    /// The child session of an out-of-process frame is gone (the frame navigated to another
    /// process or was removed).
    FrameGone { method: String },
    /// The node a call names is no longer in its document.
    NoNode { method: String, chrome: String },
    /// A JavaScript dialog opened while the call waited for the page.
    Dialog {
        method: String,
        kind: String,
        message: String,
    },
    /// The page threw.
    Exception(Exception),
    /// The page is outside the boundary: the rule's own message.
    Refused(String),
    /// The execution context a call named is gone (its document went away).
    NoContext { method: String, chrome: String },
    /// Chrome's own error for the call.
    Chrome { method: String, chrome: String },
    /// An answer the worker can't use (a result without the field it must have, a page-side
    /// function that failed): said as is.
    Other(String),
}

impl Error {
    /// Chrome's message for a failed `method`, read once, here. `child`: the call went to a
    /// child session, whose loss means its frame is gone.
    pub fn from_chrome(method: &str, chrome: String, child: bool) -> Error {
        let method = method.to_string();
        let not_attached = chrome.contains("not attached");
        if child && (not_attached || chrome.contains("Session with given id not found")) {
            return Error::FrameGone { method };
        }
        if not_attached || chrome.contains("Detached") {
            return Error::Detached { method, chrome };
        }
        if chrome.contains("Cannot find context") {
            return Error::NoContext { method, chrome };
        }
        if chrome.contains("No node") || chrome.contains("not found") {
            return Error::NoNode { method, chrome };
        }
        Error::Chrome { method, chrome }
    }

    /// Chrome's answer to `chrome.debugger.attach`.
    pub fn from_attach(tab: i32, chrome: String) -> Error {
        if chrome.contains("Cannot access") || chrome.contains("Cannot attach") {
            Error::CannotAttach { tab, chrome }
        } else {
            Error::Attach { tab, chrome }
        }
    }

    /// Attach found the tab attached already: from before a worker restart, the session is ours.
    pub fn already_attached(chrome: &str) -> bool {
        chrome.contains("already attached")
    }

    /// The element or frame a call named has gone from the page.
    pub fn is_gone(&self) -> bool {
        matches!(self, Error::NoNode { .. } | Error::FrameGone { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Timeout(t) => t.fmt(f),
            Error::CannotAttach { tab, chrome } => write!(
                f,
                "The debugger can't attach to tab {tab} ({chrome}). Pages such as chrome://, the Chrome Web Store and other extensions can't be automated: navigate the tab to a web page first."
            ),
            Error::Attach { tab, chrome } => {
                write!(f, "Attaching the debugger to tab {tab} failed: {chrome}")
            }
            Error::Detached { method, chrome }
            | Error::NoNode { method, chrome }
            | Error::NoContext { method, chrome }
            | Error::Chrome { method, chrome } => write!(f, "{method}: {chrome}"),
            Error::FrameGone { method } => {
                write!(f, "{method}: the frame's debugger session is gone")
            }
            Error::Dialog {
                method,
                kind,
                message,
            } => write!(
                f,
                "{method}: a JavaScript {kind} dialog opened (\"{message}\"); answer it with handle_dialog"
            ),
            Error::Exception(e) => e.fmt(f),
            Error::Refused(text) | Error::Other(text) => f.write_str(text),
        }
    }
}

impl From<Timeout> for Error {
    fn from(t: Timeout) -> Error {
        Error::Timeout(t)
    }
}

/// Every tool answers the model with text: a CDP error becomes its message.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// What the page threw: CDP's `exceptionDetails`.
#[derive(Clone, Debug, PartialEq)]
pub struct Exception {
    details: Value,
}

impl Exception {
    /// The exception of a `Runtime.evaluate` / `callFunctionOn` / `awaitPromise` result, or of a
    /// `Runtime.exceptionThrown` event.
    pub fn new(details: Value) -> Exception {
        Exception { details }
    }

    fn text(&self) -> Option<&str> {
        self.details.get("text").and_then(Value::as_str)
    }

    /// The thrown Error's description (its message and stack).
    pub fn description(&self) -> Option<&str> {
        self.details
            .pointer("/exception/description")
            .and_then(Value::as_str)
    }

    /// Its description, or CDP's text for it.
    pub fn summary(&self) -> Option<&str> {
        self.description().or_else(|| self.text())
    }

    /// The first line of [`Exception::summary`] (the message without the stack).
    pub fn first_line(&self) -> Option<&str> {
        self.summary().map(|s| s.lines().next().unwrap_or(s))
    }

    /// As a page's console shows an uncaught one: `Uncaught TypeError: …`, else CDP's text.
    pub fn uncaught(&self) -> String {
        match self.description().and_then(|d| d.lines().next()) {
            Some(first) if !first.is_empty() => format!("Uncaught {first}"),
            _ => self.text().unwrap_or("").to_string(),
        }
    }

    pub fn url(&self) -> &str {
        self.details
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The 1-based line it was thrown at, as CDP reports it.
    pub fn line(&self) -> Option<i64> {
        self.details
            .get("lineNumber")
            .and_then(Value::as_i64)
            .map(|l| l + 1)
    }
}

/// A script's exception as the model reads it: the message and the line of the agent's script
/// (`ReferenceError: nope is not defined (line 2)`), or a thrown value that is not an Error after
/// CDP's text (`Uncaught 42`).
impl fmt::Display for Exception {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let description = self.description();
        let thrown = self
            .details
            .pointer("/exception/value")
            .filter(|v| !v.is_null());
        if let (None, Some(v)) = (description, thrown) {
            let text = self.text().unwrap_or("Uncaught");
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            return write!(f, "{text} {v}");
        }
        let message = description
            .and_then(|d| d.lines().next())
            .or_else(|| self.text())
            .unwrap_or("Uncaught exception");
        match description.and_then(script_line) {
            Some(line) => write!(f, "{message} (line {line})"),
            None => f.write_str(message),
        }
    }
}

/// The line in the agent's script where the exception was thrown: the first
/// `<anonymous>:LINE:COL` frame of the stack (the script has no URL of its own).
fn script_line(stack: &str) -> Option<u32> {
    let rest = &stack[stack.find("<anonymous>:")? + "<anonymous>:".len()..];
    rest.split(':').next()?.parse().ok()
}

/// A CDP result in which the page may have thrown: the one place `exceptionDetails` becomes an
/// error ([`Error::Exception`]).
pub fn thrown(mut out: Value) -> Result<Value, Error> {
    match out.get_mut("exceptionDetails").map(Value::take) {
        Some(details) => Err(Error::Exception(Exception::new(details))),
        None => Ok(out),
    }
}

/// [`thrown`] for a result kept as the JS object Chrome gave ([`super::send_js`]): only the
/// exception's details, when there are any, are read into JSON.
pub fn thrown_js(out: wasm_bindgen::JsValue) -> Result<wasm_bindgen::JsValue, Error> {
    let details = crate::js::field(&out, "exceptionDetails");
    if details.is_undefined() {
        return Ok(out);
    }
    let details = crate::chrome::debugger::json_result(details).map_err(Error::Other)?;
    Err(Error::Exception(Exception::new(details)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exceptions_say_message_and_line() {
        let say = |d: Value| Exception::new(d).to_string();
        let d = json!({"text": "Uncaught", "lineNumber": 0, "exception": {"description": "ReferenceError: nope is not defined\n    at <anonymous>:2:1"}});
        assert_eq!(say(d), "ReferenceError: nope is not defined (line 2)");
        let thrown = json!({"text": "Uncaught", "exception": {"description": "boom"}});
        assert_eq!(say(thrown), "boom");
        assert_eq!(
            say(json!({"text": "Uncaught SyntaxError: x"})),
            "Uncaught SyntaxError: x"
        );
        assert_eq!(
            say(json!({"text": "Uncaught", "exception": {"value": 42}})),
            "Uncaught 42"
        );
    }

    #[test]
    fn chrome_messages_become_kinds() {
        let e = |m: &str, child| Error::from_chrome("DOM.getContentQuads", m.into(), child);
        assert!(matches!(
            e("Debugger is not attached to the tab with id: 3.", false),
            Error::Detached { .. }
        ));
        assert!(matches!(
            e("Session with given id not found.", true),
            Error::FrameGone { .. }
        ));
        assert!(e("No node with given id found", false).is_gone());
        assert!(matches!(
            e("Could not compute content quads.", false),
            Error::Chrome { .. }
        ));
        assert_eq!(
            e("Could not compute content quads.", false).to_string(),
            "DOM.getContentQuads: Could not compute content quads."
        );
        assert_eq!(
            e("Debugger is not attached to the target.", true).to_string(),
            "DOM.getContentQuads: the frame's debugger session is gone"
        );
        assert!(matches!(
            Error::from_attach(4, "Cannot access a chrome:// URL".into()),
            Error::CannotAttach { tab: 4, .. }
        ));
    }

    #[test]
    fn one_place_reads_exception_details() {
        let ok = json!({"result": {"type": "number", "value": 1}});
        assert_eq!(thrown(ok.clone()), Ok(ok));
        let threw = json!({"result": {}, "exceptionDetails": {"text": "Uncaught", "exception": {"description": "Error: no\n    at x"}}});
        match thrown(threw) {
            Err(Error::Exception(x)) => assert_eq!(x.first_line(), Some("Error: no")),
            other => panic!("expected an exception, got {other:?}"),
        }
    }
}
