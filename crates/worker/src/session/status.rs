//! The status the pages show (Options, the popup): each connection's state and a line saying
//! why, stored in chrome.storage.session so a page opened later reads it (`status` for the
//! first connection, as it always was; `status:<n>` for connection n), and the state kept in
//! memory so the session knows it without an await.

use crate::chrome::storage::{self, Area};
use crate::js::{log, now_ms};
use crate::vec_map::VecMap;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
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
    /// Per connection, the state of the status last set.
    static STATE: RefCell<VecMap<u32, State>> = const { RefCell::new(VecMap::new()) };
}

/// Where connection `conn`'s status is stored.
pub fn key(conn: u32) -> String {
    if conn == 0 {
        STATUS_KEY.to_string()
    } else {
        format!("{STATUS_KEY}:{conn}")
    }
}

pub async fn set_status_of(conn: u32, state: State, message: impl Into<String>) {
    STATE.with(|s| s.borrow_mut().insert(conn, state));
    let status = Status {
        state,
        message: message.into(),
        since: now_ms(),
    };
    if let Err(e) = storage::set(Area::Session, &key(conn), &status).await {
        log(&format!("cannot store status: {e}"));
    }
}

/// The first connection's status.
pub async fn status() -> Status {
    status_of(0).await
}

pub async fn status_of(conn: u32) -> Status {
    storage::get(Area::Session, &key(conn))
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
pub fn server_said(conn: u32, message: &str) {
    let message = format!("Server says: {message}");
    // The state as it is now, not after an await: a status set meanwhile must win.
    let state = STATE
        .with(|s| s.borrow().get(&conn).copied())
        .unwrap_or(State::Connecting);
    spawn_local(set_status_of(conn, state, message));
}
