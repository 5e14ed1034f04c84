//! The status the pages show (Options, the popup): the connection's state and a line saying
//! why, stored in chrome.storage.session so a page opened later reads it, and the state kept in
//! memory so the session knows it without an await.

use crate::chrome::storage::{self, Area};
use crate::js::{log, now_ms};
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use wasm_bindgen_futures::spawn_local;

const STATUS_KEY: &str = "status";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Disconnected,
    Connecting,
    Connected,
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub state: State,
    pub message: String,
    /// Milliseconds since the epoch when this status was set.
    pub since: f64,
}

thread_local! {
    /// The state of the status last set.
    static STATE: Cell<Option<State>> = const { Cell::new(None) };
}

pub async fn set_status(state: State, message: impl Into<String>) {
    STATE.with(|s| s.set(Some(state)));
    let status = Status {
        state,
        message: message.into(),
        since: now_ms(),
    };
    if let Err(e) = storage::set(Area::Session, STATUS_KEY, &status).await {
        log(&format!("cannot store status: {e}"));
    }
}

pub async fn status() -> Status {
    storage::get(Area::Session, STATUS_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or(Status {
            state: State::Disconnected,
            message: "Not connected.".into(),
            since: now_ms(),
        })
}

/// An `error` frame from the backend: shown in the status, the connection stays.
pub fn server_said(message: &str) {
    let message = format!("Server says: {message}");
    // The state as it is now, not after an await: a status set meanwhile must win.
    let state = STATE.with(Cell::get).unwrap_or(State::Connecting);
    spawn_local(set_status(state, message));
}
