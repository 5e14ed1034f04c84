//! A small raw Chrome DevTools Protocol client over one WebSocket.
//!
//! Commands are matched to responses by id; every command has a timeout and its error
//! names the method. Everything without an id is an event and is broadcast to all
//! subscribers of [`Cdp::events`]. Flat sessions (`Target.attachToTarget` with
//! `flatten: true`) share the connection: pass their `sessionId` to
//! [`Cdp::call_session`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{SplitSink, StreamExt};
use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::error::{abbreviate, Error, Result};

/// Default timeout of one CDP command.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// How many events a slow subscriber may fall behind before it misses some.
const EVENT_CAPACITY: usize = 4096;

type WsStream = WebSocketStream<MaybeTlsStream<TcpStream>>;
type Reply = std::result::Result<Value, Value>;

/// A CDP event: `method`, `params` and the flat session it came from (if any).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<String>,
}

/// State shared with the reader task.
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    events: broadcast::Sender<Event>,
    closed: AtomicBool,
}

struct Inner {
    url: String,
    sink: tokio::sync::Mutex<SplitSink<WsStream, Message>>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    timeout: Mutex<Duration>,
    reader: JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A CDP connection. Cheap to clone: clones share the WebSocket.
#[derive(Clone)]
pub struct Cdp {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp").field("url", &self.inner.url).finish()
    }
}

impl Cdp {
    /// Connect to a DevTools WebSocket URL (`ws://127.0.0.1:<port>/devtools/browser/<id>`).
    pub async fn connect(ws_url: &str) -> Result<Cdp> {
        let connect = tokio_tungstenite::connect_async(ws_url);
        let (ws, _response) = tokio::time::timeout(DEFAULT_CALL_TIMEOUT, connect)
            .await
            .map_err(|_| {
                Error::new(format!(
                    "connecting to CDP at {ws_url} timed out after {DEFAULT_CALL_TIMEOUT:?}"
                ))
            })?
            .map_err(|e| Error::new(format!("connecting to CDP at {ws_url} failed: {e}")))?;
        let (sink, stream) = ws.split();
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            events,
            closed: AtomicBool::new(false),
        });
        let reader = tokio::spawn(read_loop(stream, shared.clone()));
        Ok(Cdp {
            inner: Arc::new(Inner {
                url: ws_url.to_string(),
                sink: tokio::sync::Mutex::new(sink),
                shared,
                next_id: AtomicU64::new(1),
                timeout: Mutex::new(DEFAULT_CALL_TIMEOUT),
                reader,
            }),
        })
    }

    /// The WebSocket URL this client is connected to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The timeout used by [`Cdp::call`] and [`Cdp::call_session`].
    pub fn timeout(&self) -> Duration {
        *self.inner.timeout.lock().unwrap()
    }

    /// Change the default command timeout (for all clones of this connection).
    pub fn set_timeout(&self, timeout: Duration) {
        *self.inner.timeout.lock().unwrap() = timeout;
    }

    /// Whether the WebSocket has closed (the browser exited or closed the connection).
    pub fn is_closed(&self) -> bool {
        self.inner.shared.closed.load(Ordering::SeqCst)
    }

    /// Send a browser-level command and wait for its result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.send(None, method, params, self.timeout()).await
    }

    /// Send a command to a flat session (from `Target.attachToTarget {flatten: true}`).
    pub async fn call_session(
        &self,
        session_id: &str,
        method: &str,
        params: Value,
    ) -> Result<Value> {
        self.send(Some(session_id), method, params, self.timeout())
            .await
    }

    /// Send a command, to the browser (`session_id: None`) or a flat session, with an
    /// explicit timeout.
    pub async fn send(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let what = match session_id {
            Some(s) => format!("CDP {method} (session {s})"),
            None => format!("CDP {method}"),
        };
        if self.is_closed() {
            return Err(Error::new(format!(
                "{what}: the connection to the browser is closed"
            )));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session_id {
            message["sessionId"] = Value::String(s.to_string());
        }
        let (tx, rx) = oneshot::channel();
        self.inner.shared.pending.lock().unwrap().insert(id, tx);
        // Removes the pending entry however this function ends (error, timeout, cancel).
        let _guard = PendingGuard {
            shared: &self.inner.shared,
            id,
        };

        let text = message.to_string();
        let sent = tokio::time::timeout(timeout, async {
            self.inner.sink.lock().await.send(Message::text(text)).await
        })
        .await;
        match sent {
            Err(_) => {
                return Err(Error::new(format!(
                    "{what}: sending timed out after {timeout:?}"
                )))
            }
            Ok(Err(e)) => return Err(Error::new(format!("{what}: sending failed: {e}"))),
            Ok(Ok(())) => {}
        }
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => Err(Error::new(format!(
                "{what}: no response within {timeout:?}"
            ))),
            Ok(Err(_)) => Err(Error::new(format!(
                "{what}: the connection to the browser closed before the response"
            ))),
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Error::new(format!(
                "{what} failed: {}",
                describe_cdp_error(&error)
            ))),
        }
    }

    /// Subscribe to all events received from now on (from every session).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.shared.events.subscribe()
    }

    /// Subscribe now and wait for the first event matching `pred`.
    ///
    /// Only events that arrive after this call are seen. To avoid missing an event that
    /// a command triggers, subscribe with [`Cdp::events`] *before* sending the command
    /// and use [`wait_event_on`].
    pub async fn wait_event(
        &self,
        pred: impl FnMut(&Event) -> bool,
        timeout: Duration,
    ) -> Result<Event> {
        let mut rx = self.events();
        wait_event_on(&mut rx, pred, timeout).await
    }
}

/// Wait on an existing subscription for the first event matching `pred`.
///
/// The error on timeout lists the event methods that did arrive, to help see what
/// happened instead.
pub async fn wait_event_on(
    rx: &mut broadcast::Receiver<Event>,
    mut pred: impl FnMut(&Event) -> bool,
    timeout: Duration,
) -> Result<Event> {
    let mut seen: Vec<String> = Vec::new();
    let mut count = 0usize;
    let waited = tokio::time::timeout(timeout, async {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    if pred(&event) {
                        return Ok(event);
                    }
                    count += 1;
                    if !seen.contains(&event.method) && seen.len() < 20 {
                        seen.push(event.method.clone());
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => {
                    return Err(Error::new(
                        "waiting for a CDP event: the connection to the browser closed",
                    ))
                }
            }
        }
    })
    .await;
    match waited {
        Ok(result) => result,
        Err(_) => Err(Error::new(format!(
            "timed out after {timeout:?} waiting for a matching CDP event \
             ({count} other events arrived; methods: [{}])",
            seen.join(", ")
        ))),
    }
}

struct PendingGuard<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.pending.lock().unwrap().remove(&self.id);
    }
}

async fn read_loop(mut stream: futures_util::stream::SplitStream<WsStream>, shared: Arc<Shared>) {
    while let Some(message) = stream.next().await {
        let text = match message {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => continue,
        };
        let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        if let Some(id) = value.get("id").and_then(Value::as_u64) {
            let waiter = shared.pending.lock().unwrap().remove(&id);
            if let Some(waiter) = waiter {
                let reply = match value.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiter.send(reply);
            }
        } else if let Some(method) = value.get("method").and_then(Value::as_str) {
            let event = Event {
                method: method.to_string(),
                params: value.get("params").cloned().unwrap_or(Value::Null),
                session_id: value
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            };
            // No subscribers is fine.
            let _ = shared.events.send(event);
        }
    }
    shared.closed.store(true, Ordering::SeqCst);
    // Dropping the senders wakes every waiting call with "connection closed".
    shared.pending.lock().unwrap().clear();
}

fn describe_cdp_error(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    let mut out = message.to_string();
    if let Some(code) = error.get("code") {
        out.push_str(&format!(" (code {code})"));
    }
    if let Some(data) = error.get("data") {
        let data = match data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!(": {}", abbreviate(&data, 500)));
    }
    out
}
