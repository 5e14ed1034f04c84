//! The WebSocket transport: first frame `auth`, then `command` frames in and `result` frames out.

use super::{Ended, Handoff};
use crate::js::with_timeout;
use futures_channel::mpsc;
use futures_util::future::{select, Either};
use futures_util::{SinkExt, StreamExt};
use gloo_net::websocket::{futures::WebSocket, Message, WebSocketError};
use protocol::{
    Command, CommandResult, ConnectionConfig, ExtensionFrame, ServerFrame, CLOSE_UNAUTHORIZED,
};

const OPEN_TIMEOUT_MS: u32 = 10_000;

/// Runs one connection until it ends. Results to send arrive on `outgoing`;
/// when the session drops its sender, the socket is closed and `Stopped` returned.
pub async fn run(
    config: &ConnectionConfig,
    handoff: Handoff,
    mut outgoing: mpsc::UnboundedReceiver<CommandResult>,
    mut on_auth: impl FnMut(),
) -> Ended {
    let url = &config.server_url;
    let mut ws = match WebSocket::open(url) {
        Ok(ws) => ws,
        Err(e) => {
            return Ended::Lost {
                authenticated: false,
                detail: format!("Cannot open a WebSocket to {url}: {e}"),
            }
        }
    };
    let auth = ExtensionFrame::Auth {
        token: config.token.clone(),
        target: config.target.clone(),
    };
    let auth = serde_json::to_string(&auth).unwrap_or_default();
    match with_timeout(
        OPEN_TIMEOUT_MS,
        "Opening the WebSocket",
        ws.send(Message::Text(auth)),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Ended::Lost {
                authenticated: false,
                detail: format!("Sending auth to {url} failed: {e}"),
            }
        }
        Err(e) => {
            return Ended::Lost {
                authenticated: false,
                detail: format!("{e} ({url} does not answer)"),
            }
        }
    }
    let mut authenticated = false;
    loop {
        let event = match select(ws.next(), outgoing.next()).await {
            Either::Left((incoming, _)) => Either::Left(incoming),
            Either::Right((out, _)) => Either::Right(out),
        };
        match event {
            Either::Right(Some(result)) => {
                let frame = ExtensionFrame::Result {
                    command_id: result.command_id,
                    outcome: result.outcome,
                    paused: result.paused,
                };
                let frame = serde_json::to_string(&frame).unwrap_or_default();
                if let Err(e) = ws.send(Message::Text(frame)).await {
                    return Ended::Lost {
                        authenticated,
                        detail: format!("Sending to {url} failed: {e}"),
                    };
                }
            }
            Either::Right(None) => {
                let _ = ws.close(Some(1000), Some("extension disconnected"));
                return Ended::Stopped;
            }
            Either::Left(Some(Ok(Message::Text(text)))) => match ServerFrame::parse(&text) {
                Ok(ServerFrame::AuthOk) => {
                    if !authenticated {
                        authenticated = true;
                        on_auth();
                    }
                }
                Ok(ServerFrame::Command {
                    id,
                    tool,
                    args,
                    agent,
                }) => {
                    // auth_ok is optional: a command also means the token was accepted.
                    if !authenticated {
                        authenticated = true;
                        on_auth();
                    }
                    handoff.command(Ok(Command {
                        id,
                        tool,
                        args,
                        agent,
                    }));
                }
                Ok(ServerFrame::Error { message }) => handoff.server_said(&message),
                Ok(ServerFrame::Unknown) => {}
                // A command that can't run is answered by its id; other broken frames are
                // logged.
                Err(malformed) => {
                    if malformed.id.is_some() && !authenticated {
                        authenticated = true;
                        on_auth();
                    }
                    handoff.command(Err(malformed));
                }
            },
            Either::Left(Some(Ok(Message::Bytes(_)))) => {}
            Either::Left(Some(Err(WebSocketError::ConnectionClose(ev)))) => {
                return if ev.code == CLOSE_UNAUTHORIZED && ev.reason.contains("disconnect") {
                    Ended::Disconnected(ev.reason)
                } else if ev.code == CLOSE_UNAUTHORIZED {
                    Ended::Unauthorized(ev.reason)
                } else {
                    Ended::Lost {
                        authenticated,
                        detail: describe_close(url, ev.code, &ev.reason, authenticated),
                    }
                };
            }
            // An `error` event is always followed by a `close` event.
            Either::Left(Some(Err(_))) => {}
            Either::Left(None) => {
                return Ended::Lost {
                    authenticated,
                    detail: format!("The connection to {url} ended."),
                }
            }
        }
    }
}

fn describe_close(url: &str, code: u16, reason: &str, authenticated: bool) -> String {
    let reason = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    match code {
        1006 if !authenticated => {
            format!("Cannot reach {url} (is the server running?)")
        }
        1006 => format!("The connection to {url} dropped"),
        _ => format!("{url} closed the connection (code {code}{reason})"),
    }
}
