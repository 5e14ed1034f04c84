//! The HTTP transports the extension can connect with besides WebSocket: SSE + HTTP (a command
//! stream, `GET {commandPath}` as `text/event-stream`), long and short polling (the same path
//! with `?wait=<seconds>`, answered with `{"commands": [...]}`), results `POST`ed to
//! `{resultPath}`. (`POST /disconnect`, in api.rs, makes a browser stop on any transport.)
//!
//! Paths: `/browser/events` and `/browser/result` for the default target, and
//! `/browser/{target}/events`, `/browser/{target}/result` for a named one (a commandPath of
//! `/browser/{target}/events` in the extension's config). A per-target token (issued, or from
//! the /pair page) connects only as its own target; on the default paths it becomes that target.

use crate::guard::parse_bearer;
use crate::http_state::Mailbox;
use crate::relay::{ConnectionId, Delivery, Identity, Registration, DEFAULT_TARGET};
use crate::secret::constant_time_eq;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream;
use protocol::{Command, CommandResult, ServerFrame};
use serde::Deserialize;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// An SSE comment this often keeps proxies from closing a quiet stream and lets the server
/// notice a browser that went away.
const SSE_KEEPALIVE: Duration = Duration::from_secs(15);
/// The longest a long poll is held, whatever `wait` asks.
pub const MAX_POLL_WAIT: Duration = Duration::from_secs(60);
/// A polling browser stays registered this long after its last poll ended, so commands sent
/// between two polls wait for the next one.
pub const POLL_LEASE: Duration = Duration::from_secs(10);
/// Largest result body accepted (screenshots are big).
pub const MAX_RESULT_SIZE: usize = 32 << 20;

#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    /// Present for polling: how many seconds the server may hold the request (0: short poll).
    wait: Option<u64>,
}

fn unauthorized() -> Response {
    let mut r = (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": "Missing or wrong bearer token"})),
    )
        .into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": message.into()}))).into_response()
}

/// Whom a request's bearer token admits.
enum Admitted {
    /// The main token: any target.
    Any,
    /// A per-target token: its own target only.
    Only(crate::target_tokens::IssuedToken),
    Nobody,
}

fn admitted(app: &AppState, headers: &HeaderMap) -> Admitted {
    let Some(presented) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_bearer)
    else {
        return Admitted::Nobody;
    };
    if constant_time_eq(presented.as_bytes(), app.token.as_bytes()) {
        return Admitted::Any;
    }
    match app.tokens.find(presented) {
        Some(issued) => Admitted::Only(issued),
        None => Admitted::Nobody,
    }
}

/// `GET /browser/events` (default target).
pub(crate) async fn events_default(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    events(app, peer, None, q, headers).await
}

/// `GET /browser/{target}/events`.
pub(crate) async fn events_target(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(target): Path<String>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    events(app, peer, Some(target), q, headers).await
}

/// `target` is the one the path names (`None`: the default path).
async fn events(
    app: AppState,
    peer: SocketAddr,
    target: Option<String>,
    q: StreamQuery,
    headers: HeaderMap,
) -> Response {
    let connection = app.relay.http_request();
    let (target, token_id) = match admitted(&app, &headers) {
        Admitted::Any => (target.unwrap_or_else(|| DEFAULT_TARGET.to_string()), None),
        Admitted::Only(issued) => {
            if target.as_ref().is_some_and(|t| *t != issued.target) {
                return error(
                    StatusCode::FORBIDDEN,
                    format!(
                        "This token is for target '{}'; use /browser/{}/events or /browser/events.",
                        issued.target, issued.target
                    ),
                );
            }
            (issued.target, Some(issued.id))
        }
        Admitted::Nobody => {
            crate::guard::auth_failed(
                &app,
                peer.ip(),
                format!("wrong or missing token on the command stream (request {connection})"),
            )
            .await;
            return unauthorized();
        }
    };
    let link = Link {
        connection,
        token_id,
    };
    if let Err(why) = protocol::config::check_target(&target) {
        return error(StatusCode::BAD_REQUEST, format!("Invalid target: {why}"));
    }
    match q.wait {
        Some(wait) => {
            poll(
                app,
                target,
                Duration::from_secs(wait).min(MAX_POLL_WAIT),
                link,
            )
            .await
        }
        None => sse(app, target, link),
    }
}

/// One HTTP request's connection id and the per-target token it came with (`None`: the main
/// token), so revoking that token disconnects it.
struct Link {
    connection: ConnectionId,
    token_id: Option<String>,
}

/// Registers `link` for `target`, replacing an HTTP connection that holds it (the same
/// browser reconnecting before the server noticed the old stream was gone).
fn register(
    app: &AppState,
    target: &str,
    link: &Link,
) -> Result<(Registration, mpsc::UnboundedReceiver<ServerFrame>), Box<Response>> {
    let (connection, token_id) = (link.connection, link.token_id.as_deref());
    let (tx, rx) = mpsc::unbounded_channel();
    let mut first = app
        .relay
        .register_as(target, connection, tx.clone(), token_id);
    if first.is_err() {
        let mut http = app.http.lock();
        let held = http.holders.get(target).copied();
        if held.is_some() && held == app.relay.connection_of(target) {
            if let Some(old) = held {
                app.relay.evict(target, old);
                http.mailboxes.remove(target);
            }
            drop(http);
            first = app.relay.register_as(target, connection, tx, token_id);
        }
    }
    match first {
        Ok(reg) => {
            app.http
                .lock()
                .holders
                .insert(target.to_string(), connection);
            crate::log::line(format_args!(
                "browser connected over HTTP: target '{target}' (connection {connection})"
            ));
            Ok((reg, rx))
        }
        Err(e) => Err(Box::new(error(StatusCode::CONFLICT, e.to_string()))),
    }
}

fn release(app: &AppState, target: &str, connection: ConnectionId) {
    let mut http = app.http.lock();
    if http.holders.get(target) == Some(&connection) {
        http.holders.remove(target);
    }
}

/// What one step of an SSE stream ends with.
enum Step {
    Send(String),
    End,
}

fn sse(app: AppState, target: String, link: Link) -> Response {
    let connection = link.connection;
    let (registration, commands) = match register(&app, &target, &link) {
        Ok(r) => r,
        Err(response) => return *response,
    };
    let app_shutdown = app.shutdown.clone();
    struct Stream {
        app: AppState,
        target: String,
        connection: ConnectionId,
        commands: mpsc::UnboundedReceiver<ServerFrame>,
        shutdown: watch::Receiver<bool>,
        _registration: Registration,
        done: bool,
    }
    impl Drop for Stream {
        fn drop(&mut self) {
            release(&self.app, &self.target, self.connection);
            crate::log::line(format_args!(
                "browser disconnected: target '{}' (connection {}, stream ended)",
                self.target, self.connection
            ));
        }
    }
    let state = Stream {
        app,
        target,
        connection,
        commands,
        shutdown: app_shutdown,
        _registration: registration,
        done: false,
    };
    // The first bytes flush the headers, so the extension knows the token was accepted.
    let hello = stream::once(async {
        Ok::<_, std::convert::Infallible>(Bytes::from_static(b": connected\n\n"))
    });
    let body = stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        let step = tokio::select! {
            frame = s.commands.recv() => match frame {
                Some(ServerFrame::Command { id, tool, args, agent }) => {
                    let cmd = Command { id, tool, args, agent };
                    Step::Send(format!("data: {}\n\n", serde_json::to_string(&cmd).unwrap_or_default()))
                }
                Some(_) => Step::Send(String::new()),
                None => {
                    s.done = true;
                    if s.app.relay.take_kicked(s.connection) {
                        Step::Send("event: disconnect\ndata: bye\n\n".into())
                    } else {
                        Step::End
                    }
                }
            },
            _ = tokio::time::sleep(SSE_KEEPALIVE) => Step::Send(": keep-alive\n\n".into()),
            _ = s.shutdown.wait_for(|stop| *stop) => Step::End,
        };
        match step {
            Step::Send(text) => Some((Ok(Bytes::from(text)), s)),
            Step::End => None,
        }
    });
    let mut response =
        Body::from_stream(futures_util::StreamExt::chain(hello, body)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn poll(app: AppState, target: String, wait: Duration, link: Link) -> Response {
    let existing = app.http.lock().mailboxes.get(&target).cloned();
    let mailbox = match existing {
        Some(m) => m,
        None => {
            let connection = link.connection;
            let (registration, commands) = match register(&app, &target, &link) {
                Ok(r) => r,
                Err(response) => return *response,
            };
            let m = Arc::new(Mailbox {
                connection,
                commands: tokio::sync::Mutex::new(commands),
                _registration: registration,
                last_poll: Mutex::new(Instant::now()),
                polling: Mutex::new(0),
                superseded: tokio::sync::Notify::new(),
            });
            app.http
                .lock()
                .mailboxes
                .insert(target.clone(), Arc::clone(&m));
            m
        }
    };
    *mailbox.polling.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    let mut shutdown = app.shutdown.clone();
    let mut batch = Vec::new();
    let mut ended = false;
    mailbox.superseded.notify_waiters();
    {
        let mut rx = mailbox.commands.lock().await;
        let first = if wait.is_zero() {
            match rx.try_recv() {
                Ok(f) => Some(Some(f)),
                Err(mpsc::error::TryRecvError::Empty) => None,
                Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
            }
        } else {
            tokio::select! {
                r = tokio::time::timeout(wait, rx.recv()) => r.ok(),
                _ = mailbox.superseded.notified() => None,
                _ = shutdown.wait_for(|stop| *stop) => None,
            }
        };
        match first {
            Some(Some(f)) => {
                batch.push(f);
                while let Ok(f) = rx.try_recv() {
                    batch.push(f);
                }
            }
            Some(None) => ended = true,
            None => {}
        }
    }
    *mailbox.last_poll.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    *mailbox.polling.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
    if ended {
        forget_mailbox(&app, &target, mailbox.connection);
        if app.relay.take_kicked(mailbox.connection) {
            crate::log::line(format_args!(
                "told polling browser '{target}' to stop (401)"
            ));
            return unauthorized();
        }
    } else {
        expire_later(app.clone(), target, &mailbox);
    }
    let commands: Vec<Command> = batch
        .into_iter()
        .filter_map(|f| match f {
            ServerFrame::Command {
                id,
                tool,
                args,
                agent,
            } => Some(Command {
                id,
                tool,
                args,
                agent,
            }),
            _ => None,
        })
        .collect();
    Json(json!({ "commands": commands })).into_response()
}

fn forget_mailbox(app: &AppState, target: &str, connection: ConnectionId) {
    // The registration lives as long as the mailbox; don't let a late reference keep the target.
    app.relay.evict(target, connection);
    let mut http = app.http.lock();
    if http
        .mailboxes
        .get(target)
        .is_some_and(|m| m.connection == connection)
    {
        http.mailboxes.remove(target);
    }
    if http.holders.get(target) == Some(&connection) {
        http.holders.remove(target);
    }
}

/// Drops a polling browser's registration once it stopped polling for [`POLL_LEASE`].
fn expire_later(app: AppState, target: String, mailbox: &Arc<Mailbox>) {
    let mailbox = Arc::downgrade(mailbox);
    tokio::spawn(async move {
        tokio::time::sleep(POLL_LEASE).await;
        let Some(mailbox) = mailbox.upgrade() else {
            return;
        };
        let idle = mailbox
            .last_poll
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            >= POLL_LEASE;
        let polling = *mailbox.polling.lock().unwrap_or_else(|e| e.into_inner()) > 0;
        if idle && !polling {
            forget_mailbox(&app, &target, mailbox.connection);
            app.relay.take_kicked(mailbox.connection);
            crate::log::line(format_args!(
                "polling browser gone: target '{target}' (connection {})",
                mailbox.connection
            ));
        }
    });
}

/// `POST /browser/result` and `POST /browser/{target}/result`: one result, as
/// `{"commandId", "result"}` or `{"commandId", "error"}`. Answers 204 whether or not a command
/// still waits for it (a retried result is not an error), and 403 when the command was sent to
/// another browser: the sender is the target of the path (the default path: the per-target
/// token's own target, or `default` for the main token) with the token it presents, and only
/// the browser a command was sent to may answer it.
pub(crate) async fn result(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    post_result(app, peer, None, headers, body).await
}

pub(crate) async fn result_target(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(target): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    post_result(app, peer, Some(target), headers, body).await
}

async fn post_result(
    app: AppState,
    peer: SocketAddr,
    target: Option<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sender = match admitted(&app, &headers) {
        Admitted::Any => Identity::new(target.as_deref().unwrap_or(DEFAULT_TARGET), None),
        Admitted::Only(issued) => {
            if target.as_ref().is_some_and(|t| *t != issued.target) {
                return error(
                    StatusCode::FORBIDDEN,
                    format!(
                        "This token is for target '{}'; post results to /browser/{}/result or /browser/result.",
                        issued.target, issued.target
                    ),
                );
            }
            Identity::new(issued.target, Some(&issued.id))
        }
        Admitted::Nobody => {
            crate::guard::auth_failed(
                &app,
                peer.ip(),
                "wrong or missing token on a result POST".to_string(),
            )
            .await;
            return unauthorized();
        }
    };
    match serde_json::from_slice::<CommandResult>(&body) {
        Ok(result) => {
            let id: String = result.command_id.chars().take(80).filter(|c| !c.is_control()).collect();
            match app.relay.deliver(result, &sender) {
                Delivery::Accepted => StatusCode::NO_CONTENT.into_response(),
                Delivery::Unknown => {
                    crate::log::line(format_args!(
                        "ignored a posted result for unknown or answered command {id}"
                    ));
                    StatusCode::NO_CONTENT.into_response()
                }
                Delivery::NotYours { owner } => {
                    crate::log::line(format_args!(
                        "refused a posted result for command {id} from {sender}: it was sent to {owner}"
                    ));
                    error(
                        StatusCode::FORBIDDEN,
                        format!("Result refused: command {id} was not sent to this browser ({sender}); only the browser a command was sent to may answer it, with the token it connected with, to its own result path (/browser/{{target}}/result, or /browser/result for the default target)."),
                    )
                }
            }
        }
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            format!("Malformed result: {e}; send {{\"commandId\": \"…\", \"result\": {{\"content\": […]}}}} or {{\"commandId\": \"…\", \"error\": \"…\"}}"),
        ),
    }
}
