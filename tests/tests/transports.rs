//! Every transport end to end (WebSocket, SSE + HTTP, long and short polling), and a
//! connection that survives: server restarts, worker stops, disconnects that stick, a long
//! idle period, SSE split at every byte, and many commands in flight across tabs.

use browser_operator_e2e::{connected_over, Backend, Browser, BrowserOptions, Caller, Result};
use protocol::Outcome;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CONNECT: Duration = Duration::from_secs(30);

/// One test per `name = "transport"` pair, each running `check(transport)`.
macro_rules! on_each_transport {
    ($check:ident => $($name:ident = $transport:literal),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() -> Result<()> {
                $check($transport).await
            }
        )+
    };
}

async fn runs_commands(transport: &str) -> Result<()> {
    let (fixtures, backend, browser) = connected_over(transport).await?;
    let status = browser.wait_status("connected", CONNECT).await?;
    assert!(status.contains(&format!("({transport})")), "{status}");
    let (tab, _) = backend.first_tab().await?;
    let url = fixtures.url("hello.html");
    let nav = backend.navigate(tab, &url).await?;
    assert_eq!(
        nav,
        format!("Navigated to {url}\nHTTP status: 200\nTitle: Fixture: hello")
    );
    let title = backend.js(tab, "document.title").await?;
    assert_eq!(title, "Fixture: hello");
    // Non-ASCII text survives every transport both ways.
    let echo = backend.js(tab, "'é✓🦀 ' + 'x'.repeat(3)").await?;
    assert_eq!(echo, "é✓🦀 xxx");
    // An error is a result too.
    let err = backend
        .error(
            "javascript_tool",
            json!({"tabId": tab, "text": "throw new Error('boom')"}),
        )
        .await?;
    assert!(err.contains("boom"), "{err}");
    Ok(())
}

on_each_transport!(runs_commands =>
    websocket_connects_through_options_and_runs_commands = "websocket",
    sse_http_connects_through_options_and_runs_commands = "sse-http",
    long_polling_connects_through_options_and_runs_commands = "http-poll",
    short_polling_connects_through_options_and_runs_commands = "http-short-poll",
);

/// Median and worst of a list of durations, for the report.
fn summary(label: &str, times: &mut [Duration]) {
    times.sort();
    let median = times[times.len() / 2];
    let worst = times[times.len() - 1];
    println!("{label}: median {median:?}, worst {worst:?}, all {times:?}");
}

/// JS that counts its own execution under `id` in the page and answers the id.
fn counted(id: &str) -> String {
    format!(
        "window.__runs = window.__runs || {{}}; window.__runs['{id}'] = (window.__runs['{id}'] || 0) + 1; '{id}'"
    )
}

/// How often each command id ran in the tab.
async fn runs_in_page(backend: &Backend, tab: i64) -> Result<serde_json::Map<String, Value>> {
    let text = backend
        .js(tab, "JSON.stringify(window.__runs || {})")
        .await?;
    Ok(serde_json::from_str::<Value>(&text)?
        .as_object()
        .cloned()
        .unwrap_or_default())
}

/// The server is killed and restarted 5 times while commands stream in: every command gets one
/// answer (a result, or an error while the server was down), none runs twice.
async fn survives_server_restarts(transport: &str) -> Result<()> {
    let (fixtures, mut backend, _browser) = connected_over(transport).await?;
    let (tab, group) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("hello.html")).await?;
    let caller: Caller = backend.caller();
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let sender = tokio::spawn(async move {
        let mut outcomes = Vec::new();
        let mut n = 0;
        while !*stop_rx.borrow_and_update() {
            n += 1;
            let id = format!("c{n}");
            let r = caller
                .command(
                    "javascript_tool",
                    json!({"tabId": tab, "text": counted(&id)}),
                )
                .await;
            if r.is_err() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            outcomes.push((id, r));
        }
        outcomes
    });
    let mut reconnects = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        backend.stop().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        backend.start_again().await?;
        reconnects.push(backend.wait_browsers(1, CONNECT).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop_tx.send_replace(true);
    let outcomes = sender.await.expect("sender task");
    let runs = runs_in_page(&backend, tab).await?;
    let mut ok = 0;
    for (id, outcome) in &outcomes {
        let count = runs.get(id).and_then(Value::as_u64).unwrap_or(0);
        assert!(count <= 1, "{id} ran {count} times");
        if let Ok(r) = outcome {
            if let Outcome::Result { result } = &r.outcome {
                assert_eq!(result.joined_text(), *id);
                assert_eq!(count, 1, "{id} answered but did not run once");
                ok += 1;
            }
        }
    }
    let ran_total: u64 = runs.values().filter_map(Value::as_u64).sum();
    assert_eq!(
        ran_total as usize,
        runs.len(),
        "some command ran twice: {runs:?}"
    );
    assert!(ok >= 5, "only {ok} of {} commands answered", outcomes.len());
    // Still the same automation group after all that.
    let (_, again) = backend.first_tab().await?;
    assert_eq!(again, group);
    summary(
        &format!("{transport}: reconnect after a server restart"),
        &mut reconnects,
    );
    println!(
        "{transport}: {} commands, {ok} answered, {} ran",
        outcomes.len(),
        runs.len()
    );
    Ok(())
}

on_each_transport!(survives_server_restarts =>
    websocket_survives_server_restarts = "websocket",
    sse_http_survives_server_restarts = "sse-http",
    long_polling_survives_server_restarts = "http-poll",
    short_polling_survives_server_restarts = "http-short-poll",
);

/// Waits, without waking the worker, until the server sees a new connection attempt (more than
/// `before`) and the browser is registered again; the time it took.
async fn wait_reconnected(backend: &Backend, before: u64, timeout: Duration) -> Result<Duration> {
    let start = Instant::now();
    loop {
        if attempts(backend).await? > before && backend.browsers().await? == 1 {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            return Err(browser_operator_e2e::Error::new(format!(
                "no new connection within {timeout:?}: {}",
                backend.status().await?
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The worker is stopped mid-command and while idle: it comes back by itself, reconnects,
/// recognises its group, and the interrupted command gets an error (from the outbox), not
/// silence and not a second run.
async fn survives_worker_stops(transport: &str) -> Result<()> {
    let (fixtures, backend, browser) = connected_over(transport).await?;
    let (tab, group) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("hello.html")).await?;
    let mut times = Vec::new();

    // Mid-command: a command that takes 3 s in the page, the worker stopped after 1 s.
    let caller = backend.caller();
    let slow = tokio::spawn(async move {
        caller
            .command(
                "javascript_tool",
                json!({"tabId": tab, "text": "await new Promise(r => setTimeout(r, 3000)); window.__slow = (window.__slow || 0) + 1; 'slow done'"}),
            )
            .await
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = attempts(&backend).await?;
    browser.stop_worker().await?;
    let answer = slow.await.expect("slow task")?;
    match answer.outcome {
        Outcome::Error { error } => {
            assert!(error.contains("service worker was stopped"), "{error}")
        }
        Outcome::Result { result } => panic!("expected an error, got {}", result.joined_text()),
    }
    println!("{transport}: the interrupted command was answered with an error");
    times.push(wait_reconnected(&backend, before, Duration::from_secs(60)).await?);
    // The watchdog brings the worker back before the slow script (3 s) ends in the page: its
    // count is read until it finished, and it must never run again.
    let waited = Instant::now();
    loop {
        let slow_runs = backend.js(tab, "String(window.__slow)").await?;
        assert!(
            slow_runs == "undefined" || slow_runs == "1",
            "the interrupted command ran once in the page, never again: {slow_runs}"
        );
        if slow_runs == "1" {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(20),
            "the slow script never finished in the page"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, again) = backend.first_tab().await?;
    assert_eq!(again, group, "the restarted worker recognises its group");

    // Idle, twice.
    for round in 0..2 {
        println!("{transport}: idle stop {round}");
        let before = attempts(&backend).await?;
        browser.stop_worker().await?;
        times.push(wait_reconnected(&backend, before, Duration::from_secs(60)).await?);
        let (_, again) = backend.first_tab().await?;
        assert_eq!(again, group);
    }
    let status = browser.wait_status("connected", CONNECT).await?;
    assert!(status.contains(transport), "{status}");
    summary(
        &format!("{transport}: reconnect after a worker stop"),
        &mut times,
    );
    Ok(())
}

on_each_transport!(survives_worker_stops =>
    websocket_survives_worker_stops = "websocket",
    sse_http_survives_worker_stops = "sse-http",
    long_polling_survives_worker_stops = "http-poll",
);

/// Connection attempts the server has seen (WebSocket upgrades and HTTP stream/poll requests).
async fn attempts(backend: &Backend) -> Result<u64> {
    let s = backend.status().await?;
    Ok(s["wsConnections"].as_u64().unwrap_or(0) + s["httpRequests"].as_u64().unwrap_or(0))
}

/// Two alarm periods (30 s each) and a margin.
const STICK: Duration = Duration::from_secs(65);

/// After a disconnect: nothing reaches the server for longer than two alarm periods, then a
/// token typed again reconnects.
async fn stays_disconnected(backend: &Backend, browser: &Browser, transport: &str) -> Result<()> {
    let before = attempts(backend).await?;
    tokio::time::sleep(STICK).await;
    assert_eq!(
        attempts(backend).await?,
        before,
        "the extension tried to reconnect"
    );
    assert_eq!(backend.browsers().await?, 0);
    browser_operator_e2e::connect(browser, backend, transport).await
}

#[tokio::test]
async fn a_wrong_token_401_sticks_until_a_new_token() -> Result<()> {
    browser_operator_e2e::init();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_transport("sse-http", &backend.http_url(), "not-the-token", None)
        .await?;
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("rejected the token"), "{status}");
    assert!(backend.status().await?["authFailures"].as_u64() >= Some(1));
    stays_disconnected(&backend, &browser, "sse-http").await
}

#[tokio::test]
async fn close_4001_from_the_server_sticks() -> Result<()> {
    let (_fixtures, backend, browser) = connected_over("websocket").await?;
    backend.disconnect(None).await?;
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("disconnected this browser"), "{status}");
    stays_disconnected(&backend, &browser, "websocket").await
}

#[tokio::test]
async fn event_disconnect_sticks() -> Result<()> {
    let (_fixtures, backend, browser) = connected_over("sse-http").await?;
    let answer = backend.disconnect(Some("default")).await?;
    assert_eq!(answer["targets"], serde_json::json!(["default"]));
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(
        status.contains("disconnected this browser (bye)"),
        "{status}"
    );
    stays_disconnected(&backend, &browser, "sse-http").await
}

#[tokio::test]
async fn a_401_on_a_poll_sticks() -> Result<()> {
    let (_fixtures, backend, browser) = connected_over("http-poll").await?;
    backend.disconnect(None).await?;
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(status.contains("rejected the token"), "{status}");
    stays_disconnected(&backend, &browser, "http-poll").await
}

#[tokio::test]
async fn the_users_disconnect_sticks() -> Result<()> {
    let (_fixtures, backend, browser) = connected_over("http-short-poll").await?;
    let page = browser.options_page().await?;
    page.click("#disconnect").await?;
    let status = page.wait_status("disconnected", CONNECT).await?;
    assert!(status.contains("Disconnected by you"), "{status}");
    page.close().await?;
    // The server forgets a polling browser after its lease.
    backend.wait_browsers(0, CONNECT).await?;
    stays_disconnected(&backend, &browser, "http-short-poll").await
}

/// 200 commands in flight across 4 tabs: all answered, each tab's commands one at a time.
#[tokio::test]
async fn two_hundred_commands_across_four_tabs() -> Result<()> {
    let (fixtures, backend, _browser) = connected_over("sse-http").await?;
    let (first, _) = backend.first_tab().await?;
    let mut tabs = vec![first];
    for _ in 0..3 {
        tabs.push(backend.new_tab().await?);
    }
    for &tab in &tabs {
        backend.navigate(tab, &fixtures.url("hello.html")).await?;
    }
    // Each command stays in the page for 5 ms, yielding to the event loop all the while, so a
    // second command for the tab run meanwhile would see it. The yield is a message, not a
    // timer: Chrome runs a hidden tab's timers once a second, and three of the four are hidden.
    let script =
        "window.__active = (window.__active || 0) + 1; const overlap = window.__active > 1; \
        const until = performance.now() + 5; \
        while (performance.now() < until) { await new Promise(r => { const c = new MessageChannel(); \
        c.port1.onmessage = () => r(); c.port2.postMessage(0); }); } \
        window.__active--; window.__count = (window.__count || 0) + 1; overlap ? 'overlap' : 'alone'";
    let mut calls = Vec::new();
    for i in 0..200 {
        let caller = backend.caller();
        let tab = tabs[i % 4];
        calls.push(tokio::spawn(async move {
            caller
                .command("javascript_tool", json!({"tabId": tab, "text": script}))
                .await
        }));
    }
    for call in calls {
        let r = call.await.expect("call task")?;
        match r.outcome {
            Outcome::Result { result } => assert_eq!(result.joined_text(), "alone"),
            Outcome::Error { error } => panic!("a command failed: {error}"),
        }
    }
    for &tab in &tabs {
        let count = backend.js(tab, "String(window.__count)").await?;
        assert_eq!(count, "50");
    }
    Ok(())
}

/// A bare HTTP server that sends a fixed SSE script one byte per chunk and records posted
/// results: the SSE parsing edge cases, end to end.
mod byte_server {
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    pub async fn start(script: &'static [u8]) -> (String, mpsc::UnboundedReceiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(serve(socket, script, tx));
            }
        });
        (url, rx)
    }

    async fn serve(
        mut socket: TcpStream,
        script: &'static [u8],
        results: mpsc::UnboundedSender<String>,
    ) {
        let _ = socket.set_nodelay(true);
        loop {
            let Some((head, body)) = browser_operator_e2e::read_http_request(&mut socket).await
            else {
                return;
            };
            let authorized = head.contains("Bearer byte-token");
            if !authorized {
                let _ = socket
                    .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                    .await;
                return;
            }
            if head.starts_with("POST /browser/result") {
                let _ = results.send(String::from_utf8_lossy(&body).to_string());
                let _ = socket.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await;
                continue;
            }
            if head.starts_with("GET /browser/events") {
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                for b in script {
                    let chunk = [b"1\r\n".as_slice(), std::slice::from_ref(b), b"\r\n"].concat();
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                // Hold the stream open (a keep-alive comment now and then), as a server does.
                loop {
                    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                    if socket.write_all(b"3\r\n:\n\n\r\n").await.is_err() {
                        return;
                    }
                }
            }
            let _ = socket
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    }
}

/// Comments, CRLF, lone CR, multi-line data, ids and retry, an unknown event type, UTF-8 split
/// across chunks: every byte arrives in its own chunk.
const SPLIT_SCRIPT: &[u8] = "\u{feff}: hello\r\nid: 1\r\nretry: 1000\r\n\
data: {\"id\":\"a1\",\"tool\":\"nope_é🦀\",\"args\":{}}\r\n\r\n\
data: {\"id\":\"a2\",\n\
data: \"tool\":\"nope_two\"}\n\n\
data:{\"id\":\"a3\",\"tool\":\"nope_three\"}\r\r\
event: other\ndata: {\"id\":\"a4\",\"tool\":\"nope_four\"}\n\n\
: a comment between events\n\
data: {\"id\":\"a5\",\"tool\":\"nope_five\"}\n\n\
event: disconnect\ndata: bye\n\n"
    .as_bytes();

#[tokio::test]
async fn sse_split_at_every_byte() -> Result<()> {
    browser_operator_e2e::init();
    let (url, mut results) = byte_server::start(SPLIT_SCRIPT).await;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_transport("sse-http", &url, "byte-token", None)
        .await?;
    let mut got = std::collections::BTreeMap::new();
    while got.len() < 4 {
        let body = tokio::time::timeout(CONNECT, results.recv())
            .await
            .map_err(|_| browser_operator_e2e::Error::new(format!("only got {got:?}")))?
            .expect("results channel");
        let v: Value = serde_json::from_str(&body)?;
        let id = v["commandId"].as_str().unwrap_or("").to_string();
        got.insert(id, v["error"].as_str().unwrap_or("").to_string());
    }
    assert_eq!(got["a1"], "Unknown tool: nope_é🦀");
    assert_eq!(got["a2"], "Unknown tool: nope_two");
    assert_eq!(got["a3"], "Unknown tool: nope_three");
    assert_eq!(got["a5"], "Unknown tool: nope_five");
    assert!(!got.contains_key("a4"), "an event of another type ran");
    let status = browser.wait_status("error", CONNECT).await?;
    assert!(
        status.contains("disconnected this browser (bye)"),
        "{status}"
    );
    Ok(())
}

/// A backend of the test's own that sends nothing at all on its command stream (no keep-alive
/// comments: the protocol asks for none) for `silence`, then one command; it counts the stream
/// requests it gets and hands on the results posted to it.
mod silent_server {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    pub struct Silent {
        pub url: String,
        pub streams: Arc<AtomicUsize>,
        pub results: mpsc::UnboundedReceiver<String>,
    }

    pub async fn start(silence: Duration) -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, results) = mpsc::unbounded_channel();
        let streams = Arc::new(AtomicUsize::new(0));
        let count = streams.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, silence, tx.clone(), count.clone()));
            }
        });
        Silent {
            url,
            streams,
            results,
        }
    }

    async fn serve(
        mut socket: TcpStream,
        silence: Duration,
        results: mpsc::UnboundedSender<String>,
        streams: Arc<AtomicUsize>,
    ) {
        loop {
            let Some((head, body)) = browser_operator_e2e::read_http_request(&mut socket).await
            else {
                return;
            };
            if head.starts_with("POST /browser/result") {
                let _ = results.send(String::from_utf8_lossy(&body).to_string());
                let _ = socket.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await;
                continue;
            }
            if head.starts_with("GET /browser/events") {
                let n = streams.fetch_add(1, Ordering::SeqCst) + 1;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                let _ = socket.flush().await;
                tokio::time::sleep(silence).await;
                let event = format!("data: {{\"id\":\"quiet-{n}\",\"tool\":\"update_plan\",\"args\":{{\"domains\":[\"example.com\"],\"approach\":[\"after the silence\"]}}}}\n\n");
                let chunk = format!("{:x}\r\n{event}\r\n", event.len());
                if socket.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
                // Quiet again, for good.
                let mut rest = [0u8; 1];
                let _ = socket.read(&mut rest).await;
                return;
            }
            let _ = socket
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    }
}

/// Five quiet minutes over SSE from a backend that sends nothing at all (no keep-alive
/// comments: the protocol asks for none, and the extension used to drop a stream silent for
/// 45 s), then a command: the same worker held the one stream throughout (the backend saw
/// exactly one stream request; stream data does not keep a worker alive, the session's
/// keep-alive does) and answers the command.
#[tokio::test]
async fn a_silent_sse_stream_is_kept() -> Result<()> {
    browser_operator_e2e::init();
    let silence = Duration::from_secs(300);
    let mut server = silent_server::start(silence).await;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_transport("sse-http", &server.url, "quiet-token", None)
        .await?;
    browser.wait_status("connected", CONNECT).await?;
    let worker = browser.worker_target().await?.map(|t| t.id);
    assert!(worker.is_some(), "no worker");
    let body = tokio::time::timeout(silence + CONNECT, server.results.recv())
        .await
        .map_err(|_| browser_operator_e2e::Error::new("no result after the silence"))?
        .expect("results channel");
    let v: Value = serde_json::from_str(&body)?;
    assert_eq!(v["commandId"], "quiet-1", "{v}");
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("after the silence"),
        "{v}"
    );
    assert_eq!(
        server.streams.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the extension dropped the silent stream and opened another"
    );
    assert_eq!(
        browser.worker_target().await?.map(|t| t.id),
        worker,
        "the worker was stopped during the silence"
    );
    let status = browser.wait_status("connected", CONNECT).await?;
    assert!(status.contains("sse-http"), "{status}");
    Ok(())
}

/// The direct transport: code in the worker runs a command through the same dispatch, with no
/// server at all.
#[tokio::test]
async fn direct_transport_runs_commands_in_process() -> Result<()> {
    browser_operator_e2e::init();
    let browser = Browser::launch(BrowserOptions::default()).await?;
    let worker = browser.worker().await?;
    let r = worker
        .eval("self.browserOperator.run({id: 'd1', tool: 'tabs_context_mcp', args: {createIfEmpty: true}})")
        .await?;
    assert_eq!(r["commandId"], "d1");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("tabId"), "{r}");
    let r = worker
        .eval("self.browserOperator.run({id: 'd2', tool: 'nope'})")
        .await?;
    assert_eq!(r, json!({"commandId": "d2", "error": "Unknown tool: nope"}));
    let r = worker.eval("self.browserOperator.run({tool: 1})").await?;
    assert!(
        r["error"]
            .as_str()
            .unwrap_or("")
            .contains("Malformed command"),
        "{r}"
    );
    worker.detach().await?;
    Ok(())
}
