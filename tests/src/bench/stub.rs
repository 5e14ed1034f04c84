//! A stub extension: connects to a server over a real WebSocket, authenticates as a browser
//! does, and answers every command at once with a text of the length its `text` argument names
//! (`"50000"`: 50,000 characters, lines of 80), else `"2"`. Against it a command through
//! `POST /commands` is the server's relay and the wire alone, without a browser: the bench's
//! measure of the server's share of a command.

use crate::{Error, Result};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

/// The stub, on a thread of its own (as an extension is in a process of its own, it does not
/// take the bench's thread); dropping it disconnects it.
pub struct StubExtension {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for StubExtension {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl StubExtension {
    /// Connected and authenticated to the server at `ws_url` with `token` (returns once the
    /// server said `auth_ok`).
    pub async fn connect(ws_url: &str, token: &str) -> Result<StubExtension> {
        let (ready_tx, ready_rx) = oneshot::channel::<Result<()>>();
        let (stop, stopped) = oneshot::channel();
        let (ws_url, token) = (ws_url.to_string(), token.to_string());
        let thread = std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = ready_tx.send(Err(Error::new(format!("stub extension: {e}"))));
                    return;
                }
            };
            runtime.block_on(serve(ws_url, token, ready_tx, stopped));
        });
        let stub = StubExtension {
            stop: Some(stop),
            thread: Some(thread),
        };
        ready_rx
            .await
            .map_err(|_| Error::new("stub extension: its thread ended"))??;
        Ok(stub)
    }
}

async fn serve(
    ws_url: String,
    token: String,
    ready: oneshot::Sender<Result<()>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut ws = match connect(&ws_url, &token).await {
        Ok(ws) => {
            let _ = ready.send(Ok(()));
            ws
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    // Each length's text, JSON-escaped once.
    let mut texts: HashMap<Option<usize>, String> = HashMap::new();
    loop {
        let message = tokio::select! {
            m = ws.next() => m,
            _ = &mut stopped => return,
        };
        let Some(Ok(message)) = message else {
            return;
        };
        let Message::Text(frame) = message else {
            continue;
        };
        let Some(answer) = answer(&frame, &mut texts) else {
            continue;
        };
        if ws.send(Message::text(answer)).await.is_err() {
            return;
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(ws_url: &str, token: &str) -> Result<Socket> {
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url)
        .await
        .map_err(|e| Error::new(format!("stub extension: connecting to {ws_url}: {e}")))?;
    let auth = json!({"type": "auth", "token": token}).to_string();
    ws.send(Message::text(auth))
        .await
        .map_err(|e| Error::new(format!("stub extension: auth: {e}")))?;
    match ws.next().await {
        Some(Ok(Message::Text(t))) if t.contains("auth_ok") => Ok(ws),
        other => Err(Error::new(format!(
            "stub extension: the server did not accept its token: {other:?}"
        ))),
    }
}

/// The stub's answer to one server frame: a command's result, else nothing (WebSocket pings are
/// answered by the socket itself).
fn answer(frame: &str, texts: &mut HashMap<Option<usize>, String>) -> Option<String> {
    let frame: Value = serde_json::from_str(frame).ok()?;
    if frame["type"] != "command" {
        return None;
    }
    let size = frame["args"]["text"]
        .as_str()
        .and_then(|t| t.parse::<usize>().ok());
    let text = texts.entry(size).or_insert_with(|| {
        let text: String = match size {
            Some(n) => (0..n)
                .map(|i| if i % 80 == 79 { '\n' } else { 'a' })
                .collect(),
            None => "2".into(),
        };
        Value::String(text).to_string()
    });
    Some(format!(
        r#"{{"type":"result","commandId":{},"result":{{"content":[{{"type":"text","text":{text}}}]}}}}"#,
        frame["id"]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_commands_with_the_length_asked() {
        let mut texts = HashMap::new();
        let a = answer(
            r#"{"type":"command","id":"c1","tool":"javascript_tool","args":{"text":"100"}}"#,
            &mut texts,
        )
        .expect("an answer");
        let a: Value = serde_json::from_str(&a).expect("JSON");
        assert_eq!(a["commandId"], "c1");
        assert_eq!(
            a["result"]["content"][0]["text"].as_str().map(str::len),
            Some(100)
        );
        let b = answer(
            r#"{"type":"command","id":"c2","tool":"x","args":{}}"#,
            &mut texts,
        )
        .expect("an answer");
        assert!(b.contains(r#""text":"2""#));
        assert_eq!(answer(r#"{"type":"auth_ok"}"#, &mut texts), None);
        assert_eq!(answer("not json", &mut texts), None);
    }
}
