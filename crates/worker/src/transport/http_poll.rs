//! The polling transports: `GET {commandPath}?wait=<s>` answered with `{"commands": [...]}`.
//! Long polling asks the server to hold the request up to 25 s; short polling asks for an
//! immediate answer and polls again after a pause. Results are POSTed as in SSE + HTTP; a 401
//! means the token was revoked or the server disconnected this browser.

use super::http::{post_result, request, Abort};
use super::Reply;
use super::{Ended, Handoff};
use crate::js::{sleep_ms, with_timeout};
use futures_channel::mpsc;
use futures_util::future::{select, Either};
use futures_util::FutureExt;
use futures_util::StreamExt;
use protocol::config::{LONG_POLL_WAIT_S, SHORT_POLL_INTERVAL_MS};
use protocol::{Command, ConnectionConfig, Malformed};
use std::future::Future;
use wasm_bindgen_futures::spawn_local;

/// How one poll ended.
enum Polled {
    Commands(Vec<Result<Command, Malformed>>),
    Ended(Ended),
}

pub async fn run(
    config: &ConnectionConfig,
    long: bool,
    handoff: Handoff,
    mut outgoing: mpsc::UnboundedReceiver<Reply>,
    mut on_auth: impl FnMut(),
) -> Ended {
    let base = config.command_url();
    let sep = if base.contains('?') { '&' } else { '?' };
    let mut authenticated = false;
    loop {
        // The first poll of a connection returns at once, so the user sees "connected" as
        // soon as the backend accepts the token rather than when a long poll ends.
        let wait = if long && authenticated {
            LONG_POLL_WAIT_S
        } else {
            0
        };
        let url = format!("{base}{sep}wait={wait}");
        let abort = Abort::new();
        let poll = poll_once(config, &url, wait, abort.as_ref(), authenticated);
        let polled = match pump(poll, &mut outgoing, config, handoff).await {
            Some(p) => p,
            None => return Ended::Stopped,
        };
        drop(abort);
        match polled {
            Polled::Ended(e) => return e,
            Polled::Commands(list) => {
                if !authenticated {
                    authenticated = true;
                    on_auth();
                }
                let handed = list.len();
                for parsed in list {
                    handoff.command(parsed);
                }
                // The next poll's fetch waits for the results of the commands just handed,
                // posted as they come, for at most SETTLE_MS: its own work (in this thread, in
                // the browser and the network service) would otherwise sit on their path.
                // Measured with bench_path: javascript_tool "1+1"'s evaluate took 4.0 ms with
                // the fetch issued beside it, 2.2 ms over WebSocket. A command that takes longer
                // holds the next poll no longer than that; the server keeps what comes meanwhile.
                if handed > 0
                    && long
                    && settle(handed, &mut outgoing, config, handoff)
                        .await
                        .is_none()
                {
                    return Ended::Stopped;
                }
            }
        }
        if !long
            && pump(
                sleep_ms(SHORT_POLL_INTERVAL_MS),
                &mut outgoing,
                config,
                handoff,
            )
            .await
            .is_none()
        {
            return Ended::Stopped;
        }
    }
}

/// The longest the next long poll waits for the results of the commands the last one brought.
const SETTLE_MS: u32 = 20;

/// Posts results as they come until `n` were posted or SETTLE_MS passed, then lets their
/// POSTs be made; `None` when the session dropped the connection.
async fn settle(
    n: usize,
    outgoing: &mut mpsc::UnboundedReceiver<Reply>,
    config: &ConnectionConfig,
    handoff: Handoff,
) -> Option<()> {
    let mut left = n;
    let mut bound = Box::pin(sleep_ms(SETTLE_MS));
    while left > 0 {
        match select(bound, outgoing.next()).await {
            Either::Left(_) => break,
            Either::Right((Some(result), rest)) => {
                spawn_local(post_result(config.clone(), result, handoff).map(drop));
                left -= 1;
                bound = rest;
            }
            Either::Right((None, _)) => return None,
        }
    }
    crate::js::yield_now().await;
    Some(())
}

/// Runs `fut` while posting the results that arrive meanwhile; `None` when the session
/// dropped the connection. A result ready is posted before `fut` is first polled (the next
/// poll's fetch is made after the POST of a result that was ready, not before it).
async fn pump<T>(
    fut: impl Future<Output = T>,
    outgoing: &mut mpsc::UnboundedReceiver<Reply>,
    config: &ConnectionConfig,
    handoff: Handoff,
) -> Option<T> {
    let post = |result| {
        spawn_local(post_result(config.clone(), result, handoff).map(drop));
    };
    let mut posted = false;
    while let Ok(result) = outgoing.try_recv() {
        post(result);
        posted = true;
    }
    if posted {
        // Their POSTs are made first.
        crate::js::yield_now().await;
    }
    let mut fut = Box::pin(fut);
    loop {
        match select(fut, outgoing.next()).await {
            Either::Left((v, _)) => return Some(v),
            Either::Right((Some(result), rest)) => {
                post(result);
                fut = rest;
            }
            Either::Right((None, _)) => return None,
        }
    }
}

async fn poll_once(
    config: &ConnectionConfig,
    url: &str,
    wait: u32,
    abort: Option<&Abort>,
    authenticated: bool,
) -> Polled {
    let bound = (wait + 15) * 1000;
    let sent = with_timeout(bound, "Polling for commands", async {
        let r = request(config, url, "application/json", None, abort).await?;
        let text = r.text().await?;
        Ok::<_, String>((r.status, text))
    })
    .await;
    let (status, text) = match sent {
        Ok(Ok(v)) => v,
        Ok(Err(detail)) => return Polled::Ended(super::lost(authenticated, detail)),
        Err(e) => return Polled::Ended(super::lost(authenticated, e)),
    };
    match status {
        200 => match protocol::message::parse_batch(&text) {
            Ok(list) => Polled::Commands(list),
            Err(e) => Polled::Ended(super::lost(
                authenticated,
                format!("{url} answered something that is {e}"),
            )),
        },
        401 | 403 => Polled::Ended(Ended::Unauthorized(format!("HTTP {status}"))),
        s => Polled::Ended(super::lost(
            authenticated,
            format!("{url} answered HTTP {s} {}", super::short(&text)),
        )),
    }
}
