//! Transports: each turns a connection config into commands in and results out, and nothing
//! more. The session decides when to connect, what to do with commands, and when to stop.

pub mod http;
pub mod http_poll;
pub mod sse_http;
pub mod websocket;

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
