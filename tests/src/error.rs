//! The harness's error type: a message that says what failed.

use std::fmt;

/// An error from the harness. It carries a human-readable message that names what failed
/// (the CDP method, the selector, the condition waited for, ...), sometimes followed by
/// the tail of Chromium's log.
///
/// `Debug` prints the message as-is so a test returning `Result<()>` shows it readably.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

/// The harness's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Append the tail of Chromium's log (if any) to the message.
    pub fn with_log(self, tail: &str) -> Self {
        if tail.trim().is_empty() {
            self
        } else {
            Error::new(format!("{self}\n--- Chromium log (tail) ---\n{tail}"))
        }
    }

    /// Prefix the message with what was being done: `"<context>: <message>"`.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error {
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(format!("I/O error: {e}"))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(format!("JSON error: {e}"))
    }
}

impl From<tokio_tungstenite::tungstenite::Error> for Error {
    fn from(e: tokio_tungstenite::tungstenite::Error) -> Self {
        Error::new(format!("WebSocket error: {e}"))
    }
}

/// Add context to the error of a `Result`.
pub trait ResultExt<T> {
    /// Prefix the error message with `context` (computed only on error).
    fn context_with<C: fmt::Display>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> ResultExt<T> for std::result::Result<T, E> {
    fn context_with<C: fmt::Display>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.into().context(context()))
    }
}

/// Shorten `s` to at most `max` characters for an error message.
pub(crate) fn abbreviate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max).collect();
        format!("{head}…")
    }
}
