//! The WebSocket endpoint (`GET /ws`) the extension connects to: the auth handshake (main or
//! per-target token), one registered connection per target, commands out and results in, and
//! closing on shutdown or when the server disconnects it (close 4001 with the reason).

use crate::relay::{ConnectionId, Delivery, Identity, RegisterError, DEFAULT_TARGET};
use crate::secret::constant_time_eq;
use crate::state::AppState;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::response::Response;
use protocol::{
    CommandResult, ExtensionFrame, ServerFrame, CLOSE_TARGET_TAKEN, CLOSE_UNAUTHORIZED,
};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::mpsc;

/// Largest message accepted from the extension (screenshots are big).
pub const MAX_MESSAGE_SIZE: usize = 32 << 20;
/// Close code ("going away") used when the server shuts down.
const CLOSE_GOING_AWAY: u16 = 1001;
/// Close code ("message too big") for a frame past [`MAX_MESSAGE_SIZE`] or otherwise refused.
const CLOSE_TOO_BIG: u16 = 1009;
/// Close code ("policy violation") for an auth frame whose target is unusable.
const CLOSE_POLICY: u16 = 1008;
/// How long to wait for the peer to acknowledge our Close frame before dropping the socket.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// `GET /ws`: upgrades and hands the socket to [`session`].
pub(crate) async fn upgrade(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    ws.max_message_size(MAX_MESSAGE_SIZE)
        .max_frame_size(MAX_MESSAGE_SIZE)
        .on_upgrade(move |socket| session(app, peer, socket))
}

/// What the first frame amounted to.
enum Auth {
    Accepted {
        target: String,
        /// The per-target token used, if not the main token.
        token_id: Option<String>,
    },
    Refused(&'static str),
    BadTarget(String),
    /// The peer left or the server is shutting down: nothing to answer.
    Gone,
}

async fn session(app: AppState, peer: SocketAddr, mut socket: WebSocket) {
    let _live = app.live.enter();
    let connection = app.relay.connection_opened();
    let mut shutdown = app.shutdown.clone();

    let auth = tokio::select! {
        auth = authenticate(&app, &mut socket) => auth,
        _ = stopped(&mut shutdown) => Auth::Gone,
    };
    let (target, token_id) = match auth {
        Auth::Accepted { target, token_id } => (target, token_id),
        Auth::Refused(why) => {
            crate::guard::auth_failed(
                &app,
                peer.ip(),
                format!("{why} (WebSocket connection {connection})"),
            )
            .await;
            close(&mut socket, CLOSE_UNAUTHORIZED, "invalid token").await;
            return;
        }
        Auth::BadTarget(why) => {
            crate::log::line(format_args!(
                "refused connection {connection} from {peer}: {why}"
            ));
            send_frame(&mut socket, &ServerFrame::Error { message: why }).await;
            close(&mut socket, CLOSE_POLICY, "invalid target").await;
            return;
        }
        Auth::Gone => {
            close(&mut socket, CLOSE_GOING_AWAY, "server shutting down").await;
            return;
        }
    };

    let (frames, mut outgoing) = mpsc::unbounded_channel();
    let registration = app
        .relay
        .register_as(&target, connection, frames, token_id.as_deref());
    let mut registration = match registration {
        Ok(r) => r,
        Err(e) => {
            crate::log::line(format_args!(
                "refused connection {connection} from {peer} for target '{target}': {}",
                match e {
                    RegisterError::TargetTaken(_) => "target already connected",
                    RegisterError::ShuttingDown => "shutting down",
                }
            ));
            let (code, reason) = match e {
                RegisterError::TargetTaken(_) => (CLOSE_TARGET_TAKEN, "target already connected"),
                RegisterError::ShuttingDown => (CLOSE_GOING_AWAY, "server shutting down"),
            };
            let message = e.to_string();
            send_frame(&mut socket, &ServerFrame::Error { message }).await;
            close(&mut socket, code, reason).await;
            return;
        }
    };
    if !send_frame(&mut socket, &ServerFrame::AuthOk).await {
        return;
    }
    crate::log::line(format_args!(
        "browser connected: target '{target}' from {peer} (connection {connection})"
    ));

    let reason = loop {
        tokio::select! {
            // First: a disconnect also closes `outgoing`, and must win over "unregistered".
            biased;
            reason = registration.disconnected() => {
                app.relay.take_kicked(connection);
                // Say why in a frame too: the close reason is limited to 123 bytes.
                send_frame(&mut socket, &ServerFrame::Error { message: format!("Disconnected by the server: {reason}") }).await;
                close(&mut socket, CLOSE_UNAUTHORIZED, &reason).await;
                break "disconnected by the server";
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Some(reply) = handle_frame(&app, connection, registration.identity(), text.as_str()) {
                        if !send_frame(&mut socket, &reply).await {
                            break "send failed";
                        }
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let reply = ServerFrame::Error {
                        message: "Malformed frame: binary frames are not part of the protocol; send JSON text frames".into(),
                    };
                    if !send_frame(&mut socket, &reply).await {
                        break "send failed";
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | None => break "closed by the browser",
                Some(Err(e)) => {
                    // A frame past the size limit, or one that breaks the WebSocket rules:
                    // say why in the close frame (1009 "message too big" covers the limit;
                    // the reason carries the library's words).
                    crate::log::line(format_args!("closing connection {connection} of '{target}': {e}"));
                    close(&mut socket, CLOSE_TOO_BIG, &format!("refused: {e} (limit {} MB)", MAX_MESSAGE_SIZE >> 20)).await;
                    break "refused a frame";
                }
            },
            frame = outgoing.recv() => match frame {
                Some(frame) => {
                    if !send_frame(&mut socket, &frame).await {
                        break "send failed";
                    }
                }
                None => {
                    if app.relay.take_kicked(connection) {
                        close(&mut socket, CLOSE_UNAUTHORIZED, "disconnected by the server").await;
                        break "disconnected by the server";
                    }
                    break "unregistered";
                }
            },
            _ = stopped(&mut shutdown) => {
                close(&mut socket, CLOSE_GOING_AWAY, "server shutting down").await;
                break "server shutting down";
            }
        }
    };
    drop(registration);
    crate::log::line(format_args!(
        "browser disconnected: target '{target}' (connection {connection}, {reason})"
    ));
}

/// Resolves once the server is shutting down (or gone).
async fn stopped(shutdown: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; drop it here, not across an await.
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Waits up to the auth timeout for the first data frame and checks it.
async fn authenticate(app: &AppState, socket: &mut WebSocket) -> Auth {
    let first = tokio::time::timeout(app.auth_timeout, first_text(socket)).await;
    let text = match first {
        Err(_) => return Auth::Refused("no auth frame in time"),
        Ok(None) => return Auth::Gone,
        Ok(Some(None)) => return Auth::Refused("first frame was binary, not auth"),
        Ok(Some(Some(text))) => text,
    };
    match serde_json::from_str::<ExtensionFrame>(&text) {
        Ok(ExtensionFrame::Auth { token, target }) => {
            let asked = target
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty());
            // The main token may connect as any target; a per-target token (issued, or handed
            // out by the /pair page) only as its own.
            let (target, token_id) = if constant_time_eq(token.as_bytes(), app.token.as_bytes()) {
                (asked.unwrap_or_else(|| DEFAULT_TARGET.to_string()), None)
            } else if let Some(issued) = app.tokens.find(&token) {
                if asked.as_ref().is_some_and(|t| *t != issued.target) {
                    return Auth::BadTarget(format!(
                        "This token is for target '{}'; set that target in Options or leave it empty.",
                        issued.target
                    ));
                }
                (issued.target, Some(issued.id))
            } else {
                return Auth::Refused("wrong or revoked token");
            };
            match check_target(&target) {
                Ok(()) => Auth::Accepted { target, token_id },
                Err(why) => Auth::BadTarget(why),
            }
        }
        Ok(ExtensionFrame::Result { .. }) => Auth::Refused("first frame was a result, not auth"),
        Err(_) => Auth::Refused("first frame was not an auth frame"),
    }
}

/// The first text frame: `None` if the peer left, `Some(None)` for a binary frame.
async fn first_text(socket: &mut WebSocket) -> Option<Option<Utf8Bytes>> {
    loop {
        match socket.recv().await? {
            Ok(Message::Text(text)) => return Some(Some(text)),
            Ok(Message::Binary(_)) => return Some(None),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return None,
        }
    }
}

/// Targets follow the Options page's rule, so they are safe to log and list.
fn check_target(target: &str) -> Result<(), String> {
    protocol::config::check_target(target).map_err(|m| format!("Invalid target: {m}"))
}

/// Handles one text frame after auth from the browser `me`; returns the reply to send, if any.
fn handle_frame(
    app: &AppState,
    connection: ConnectionId,
    me: &Identity,
    text: &str,
) -> Option<ServerFrame> {
    match serde_json::from_str::<ExtensionFrame>(text) {
        Ok(ExtensionFrame::Result {
            command_id,
            outcome,
            paused,
        }) => {
            let result = CommandResult {
                command_id,
                outcome,
                paused,
            };
            let id = result.command_id.clone();
            match app.relay.deliver(result, me) {
                Delivery::Accepted => None,
                Delivery::Unknown => {
                    crate::log::line(format_args!(
                        "ignored a result for unknown or expired command {} (connection {connection})",
                        shown(&id)
                    ));
                    None
                }
                Delivery::NotYours { owner } => {
                    crate::log::line(format_args!(
                        "refused a result for command {} from {me} (connection {connection}): it was sent to {owner}",
                        shown(&id)
                    ));
                    Some(ServerFrame::Error {
                        message: format!(
                            "Result refused: command {} was not sent to this browser ({me}); only the browser a command was sent to may answer it.",
                            shown(&id)
                        ),
                    })
                }
            }
        }
        // Already authenticated: a repeated auth frame changes nothing.
        Ok(ExtensionFrame::Auth { .. }) => None,
        Err(e) => Some(ServerFrame::Error {
            message: format!("Malformed frame: {e}"),
        }),
    }
}

/// An id from the network, cut short for the log.
fn shown(id: &str) -> String {
    let mut s: String = id.chars().take(80).filter(|c| !c.is_control()).collect();
    if id.chars().count() > 80 {
        s.push('…');
    }
    s
}

/// Sends a frame; false if the socket is gone.
async fn send_frame(socket: &mut WebSocket, frame: &ServerFrame) -> bool {
    match serde_json::to_string(frame) {
        Ok(text) => socket.send(Message::Text(text.into())).await.is_ok(),
        Err(_) => false,
    }
}

/// Sends a Close frame and waits briefly for the peer's answer, so the close code arrives
/// before the TCP connection goes away.
async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    // A close reason is at most 123 bytes.
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason[..end].to_string()),
    };
    let drain = async {
        if socket.send(Message::Close(Some(frame))).await.is_err() {
            return;
        }
        while let Some(Ok(msg)) = socket.recv().await {
            if matches!(msg, Message::Close(_)) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert!(check_target("default").is_ok());
        assert!(check_target("work-1.a_b").is_ok());
        assert!(check_target("bad target").is_err());
        assert!(check_target(&"x".repeat(129)).is_err());
    }

    #[test]
    fn shown_cuts_long_ids() {
        assert_eq!(shown("abc"), "abc");
        assert_eq!(shown(&"x".repeat(100)).chars().count(), 81);
    }
}
