//! The WebSocket transport: first frame `auth`, then `command` frames in and `result` frames out.

use super::{Ended, Handoff, Reply};
use crate::js::{error_text, with_timeout};
use futures_channel::mpsc;
use futures_util::future::{select, Either};
use futures_util::{SinkExt, StreamExt};
use gloo_net::websocket::{futures::WebSocket, Message, WebSocketError};
use js_sys::JsString;
use protocol::{Command, ConnectionConfig, ExtensionFrame, ServerFrame, CLOSE_UNAUTHORIZED};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// The browser's WebSocket, to send a frame that is a JS string already (gloo's and
    /// web-sys's `send` take a Rust string and copy it out).
    type Socket;
    #[wasm_bindgen(method, catch, js_name = send)]
    fn send_text(this: &Socket, frame: &JsString) -> Result<(), JsValue>;
}

const OPEN_TIMEOUT_MS: u32 = 10_000;

/// Runs one connection until it ends. Results to send arrive on `outgoing`;
/// when the session drops its sender, the socket is closed and `Stopped` returned.
pub async fn run(
    config: &ConnectionConfig,
    handoff: Handoff,
    mut outgoing: mpsc::UnboundedReceiver<Reply>,
    mut on_auth: impl FnMut(),
) -> Ended {
    let url = &config.server_url;
    // Opened here and handed to gloo, which reads it; results are sent on it directly.
    let opened = web_sys::WebSocket::new(url)
        .map_err(|e| error_text(&e))
        .and_then(|raw| {
            let socket: Socket = raw.clone().unchecked_into();
            WebSocket::try_from(raw)
                .map(|ws| (ws, socket))
                .map_err(|e| e.to_string())
        });
    let (mut ws, socket) = match opened {
        Ok(opened) => opened,
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
            // The socket is open: the auth frame was sent on it.
            Either::Right(Some(reply)) => {
                if let Err(e) = socket.send_text(&reply.frame()) {
                    return Ended::Lost {
                        authenticated,
                        detail: format!("Sending to {url} failed: {}", error_text(&e)),
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
