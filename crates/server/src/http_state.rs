//! What the HTTP transports (`http.rs`) keep between requests: which connection holds each
//! target, and the polling browsers' mailboxes. Held in `AppState`, so it sits below `state.rs`
//! and the handlers.

use crate::relay::{ConnectionId, Registration};
use protocol::ServerFrame;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc;

/// What the HTTP transports share: the polling browsers' mailboxes, and which targets are held
/// by an HTTP connection (a new stream or poll from the same target replaces it).
#[derive(Default)]
pub(crate) struct HttpState {
    inner: Mutex<HttpInner>,
}

#[derive(Default)]
pub(crate) struct HttpInner {
    /// target → connection id of the SSE stream or poll mailbox holding it.
    pub(crate) holders: HashMap<String, ConnectionId>,
    pub(crate) mailboxes: HashMap<String, Arc<Mailbox>>,
}

/// A polling browser: its registration and the commands waiting for its next poll.
pub(crate) struct Mailbox {
    pub(crate) connection: ConnectionId,
    pub(crate) commands: tokio::sync::Mutex<mpsc::UnboundedReceiver<ServerFrame>>,
    pub(crate) _registration: Registration,
    pub(crate) last_poll: Mutex<Instant>,
    pub(crate) polling: Mutex<usize>,
    /// A newer poll arrived: the one holding the mailbox answers now (its browser may be gone,
    /// e.g. a stopped service worker whose request the server still holds).
    pub(crate) superseded: tokio::sync::Notify,
}

impl HttpState {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HttpInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
