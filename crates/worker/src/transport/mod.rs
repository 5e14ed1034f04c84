//! Transports: each turns a connection config into commands in and results out, and nothing
//! more. The session decides when to connect, what to do with commands, and when to stop; it
//! gives each connection a [`Handoff`], and a transport knows nothing else of it.

use protocol::{Command, Malformed};

pub mod http;
pub mod http_poll;
mod reply;
pub mod sse_http;
pub mod websocket;

pub use reply::Reply;

/// Where a transport hands on what it reads, given by the session, for one connection.
#[derive(Clone, Copy)]
pub struct Handoff {
    /// The connection (0: the first) this transport serves; handed back with everything.
    pub conn: u32,
    /// A command as read, or why it could not be read (answered by its id when it has one).
    pub on_command: fn(u32, Result<Command, Malformed>),
    /// The backend's `error` frame: shown in the status; the connection stays.
    pub on_server_said: fn(u32, &str),
    /// A result that could not be delivered (a POST that kept failing): kept for the next
    /// connection.
    pub on_undelivered: fn(Reply),
}

impl Handoff {
    pub fn command(&self, parsed: Result<Command, Malformed>) {
        (self.on_command)(self.conn, parsed)
    }

    pub fn server_said(&self, message: &str) {
        (self.on_server_said)(self.conn, message)
    }

    pub fn undelivered(&self, reply: Reply) {
        (self.on_undelivered)(reply)
    }
}

/// Why a connection ended.
#[derive(Debug)]
pub enum Ended {
    /// The backend rejected the token (WebSocket close 4001, HTTP 401): clear it and stop.
    Unauthorized(String),
    /// The backend told this browser to stop (`event: disconnect`): clear the token and stop.
    Disconnected(String),
    /// Lost or refused; `authenticated` says whether the backend had accepted the token.
    Lost { authenticated: bool, detail: String },
    /// The session asked the transport to stop (Disconnect, or a new config).
    Stopped,
}

pub(crate) fn lost(authenticated: bool, detail: String) -> Ended {
    Ended::Lost {
        authenticated,
        detail,
    }
}

/// A server's text cut short for a status line.
pub(crate) fn short(text: &str) -> String {
    let t: String = text.chars().take(200).filter(|c| !c.is_control()).collect();
    t.trim().to_string()
}
