//! The SSE + HTTP transport: `GET {commandPath}` read as an event stream from the fetch body
//! (EventSource can't send the bearer header), commands as `data:` events, `event: disconnect`
//! to stop; results POSTed to `{resultPath}`.
//!
//! A quiet stream is kept however long it is quiet: the protocol asks for no keep-alive
//! comments, and a backend that sends none must not see the extension reconnect. A dead stream
//! is told by what the connection itself says, without asking the backend for anything: the
//! read fails or ends (the backend closed or reset it, the network changed), or a result POST
//! gets no HTTP answer at all (the backend is unreachable): the stream is then dropped and made
//! again. A backend that vanished without a word while nothing is posted is found at the next
//! result.

use super::http::{post_result, request, Abort};
use super::Reply;
use super::{Ended, Handoff};
use crate::js::with_timeout;
use futures_channel::mpsc;
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use protocol::sse::SseDecoder;
use protocol::{Command, ConnectionConfig};
use wasm_bindgen_futures::spawn_local;

const OPEN_TIMEOUT_MS: u32 = 10_000;

pub async fn run(
    config: &ConnectionConfig,
    handoff: Handoff,
    mut outgoing: mpsc::UnboundedReceiver<Reply>,
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
    // Result POSTs that got no HTTP answer at all say the backend is gone.
    let (unreachable_tx, mut unreachable) = mpsc::unbounded::<()>();
    // A pending read is kept across results sent meanwhile: dropping it would lose its chunk.
    let mut read = Box::pin(reader.next());
    loop {
        let others = select(outgoing.next(), unreachable.next());
        let event = match select(read, others).await {
            Either::Left((r, _)) => {
                read = Box::pin(reader.next());
                Either::Left(r)
            }
            Either::Right((out, pending)) => {
                read = pending;
                Either::Right(out)
            }
        };
        match event {
            Either::Right(Either::Left((Some(result), _))) => {
                let (config, gone) = (config.clone(), unreachable_tx.clone());
                spawn_local(async move {
                    if !post_result(config, result, handoff).await {
                        let _ = gone.unbounded_send(());
                    }
                });
            }
            Either::Right(Either::Left((None, _))) => return Ended::Stopped,
            Either::Right(Either::Right(_)) => {
                let results = config.result_url();
                return super::lost(
                    true,
                    format!("{results} does not answer (a result could not be posted): the backend is unreachable, so the command stream is made again"),
                );
            }
            Either::Left(Err(e)) => {
                return super::lost(true, format!("The command stream from {url} broke: {e}"))
            }
            Either::Left(Ok(None)) => {
                return super::lost(true, format!("{url} ended the command stream"))
            }
            Either::Left(Ok(Some(chunk))) => {
                let events = match decoder.push(&chunk) {
                    Ok(e) => e,
                    Err(e) => return super::lost(true, e.to_string()),
                };
                for ev in events {
                    match ev.event.as_str() {
                        "message" => handoff.command(Command::parse(&ev.data)),
                        "disconnect" => return Ended::Disconnected(super::short(&ev.data)),
                        _ => {}
                    }
                }
            }
        }
    }
}
