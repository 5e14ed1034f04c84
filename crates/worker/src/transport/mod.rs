//! Transports: each turns a connection config into commands in and results out, and nothing
//! more. The session decides when to connect, what to do with commands, and when to stop.

pub mod websocket;

/// Why a connection ended.
#[derive(Debug)]
pub enum Ended {
    /// The backend rejected the token (WebSocket close 4001): clear it and stop.
    Unauthorized(String),
    /// Lost or refused; `authenticated` says whether the backend had accepted the token.
    Lost { authenticated: bool, detail: String },
    /// The session asked the transport to stop (Disconnect, or a new config).
    Stopped,
}
