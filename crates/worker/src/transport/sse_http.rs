//! The SSE + HTTP transport: `GET {commandPath}` read as an event stream from the fetch body
//! (EventSource can't send the bearer header), commands as `data:` events, `event: disconnect`
//! to stop; results POSTed to `{resultPath}`.

use super::http::{post_result, request, Abort};
use super::Ended;
use crate::js::with_timeout;
use crate::session;
use futures_channel::mpsc;
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use protocol::sse::SseDecoder;
use protocol::{Command, CommandResult, ConnectionConfig};
use wasm_bindgen_futures::spawn_local;

const OPEN_TIMEOUT_MS: u32 = 10_000;
/// The server sends a comment every 15 s; this long without a byte means the stream is dead.
const SILENCE_MS: u32 = 45_000;

pub async fn run(
    config: &ConnectionConfig,
    mut outgoing: mpsc::UnboundedReceiver<CommandResult>,
    mut on_auth: impl FnMut(),
) -> Ended {
    let url = config.command_url();
    let abort = Abort::new();
    let opened = with_timeout(
        OPEN_TIMEOUT_MS,
        "Opening the command stream",
        request(config, &url, "text/event-stream", None, abort.as_ref()),
    )
    .await;
    let response = match opened {
        Ok(Ok(r)) => r,
        Ok(Err(detail)) => return super::lost(false, detail),
        Err(e) => return super::lost(false, format!("{e} ({url} does not answer)")),
    };
    match response.status {
        200 => {}
        401 | 403 => return Ended::Unauthorized(format!("HTTP {}", response.status)),
        s => {
            let body = response.text().await.unwrap_or_default();
            return super::lost(
                false,
                format!("{url} answered HTTP {s} {}", super::short(&body)),
            );
        }
    }
    let reader = match response.reader() {
        Ok(r) => r,
        Err(e) => return super::lost(false, e),
    };
    on_auth();
    let mut decoder = SseDecoder::new();
    // A pending read is kept across results sent meanwhile: dropping it would lose its chunk.
    let mut read = Box::pin(with_timeout(
        SILENCE_MS,
        "Waiting on the command stream",
        reader.next(),
    ));
    loop {
        let event = match select(read, outgoing.next()).await {
            Either::Left((r, _)) => {
                read = Box::pin(with_timeout(
                    SILENCE_MS,
                    "Waiting on the command stream",
                    reader.next(),
                ));
                Either::Left(r)
            }
            Either::Right((out, pending)) => {
                read = pending;
                Either::Right(out)
            }
        };
        match event {
            Either::Right(Some(result)) => spawn_local(post_result(config.clone(), result)),
            Either::Right(None) => return Ended::Stopped,
            Either::Left(Err(e)) => return super::lost(true, format!("{e}; reconnecting")),
            Either::Left(Ok(Err(e))) => {
                return super::lost(true, format!("The command stream from {url} broke: {e}"))
            }
            Either::Left(Ok(Ok(None))) => {
                return super::lost(true, format!("{url} ended the command stream"))
            }
            Either::Left(Ok(Ok(Some(chunk)))) => {
                let events = match decoder.push(&chunk) {
                    Ok(e) => e,
                    Err(e) => return super::lost(true, e.to_string()),
                };
                for ev in events {
                    match ev.event.as_str() {
                        "message" => session::receive_parsed(Command::parse(&ev.data)),
                        "disconnect" => return Ended::Disconnected(super::short(&ev.data)),
                        _ => {}
                    }
                }
            }
        }
    }
}
