//! The accept loop: every connection served by hyper with a deadline on reading each request's
//! head (a client that trickles its headers, or opens a connection and says nothing, is cut off
//! instead of holding a slot for ever), a bound on open connections, the peer address for the
//! handlers, and a graceful stop.

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::pin::pin;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The connection limits of [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request's head (request line and headers) must arrive within this; a new connection
    /// must send its first byte within it too.
    pub header_timeout: Duration,
    /// Connections open at once; a connection past that is closed at once.
    pub max_connections: usize,
    /// How long a stop waits for open connections to finish before cutting them off.
    pub grace: Duration,
}

/// Serves `router` on `listener` until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let (closing, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut refused_logged = false;
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: wait a moment instead of spinning.
                crate::log::line(format_args!("accepting a connection failed: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if connections.len() >= limits.max_connections {
            if !refused_logged {
                crate::log::line(format_args!(
                    "{} connections are open (the limit): closing new ones until some end",
                    limits.max_connections
                ));
                refused_logged = true;
            }
            drop(tcp);
            continue;
        }
        refused_logged = false;
        // Small frames (commands, results) go out at once instead of waiting on Nagle.
        let _ = tcp.set_nodelay(true);
        let router = router.clone();
        let mut closing = closing_rx.clone();
        connections.spawn(async move {
            let service =
                hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(peer));
                    let mut router = router.clone();
                    async move {
                        tower_service::Service::call(
                            &mut router,
                            request.map(axum::body::Body::new),
                        )
                        .await
                    }
                });
            // hyper's deadline starts with the first byte: a connection that sends nothing
            // at all gets the same time to begin.
            let mut first = [0u8; 1];
            match tokio::time::timeout(limits.header_timeout, tcp.peek(&mut first)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
            let mut builder = Builder::new(TokioExecutor::new()).http1_only();
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let mut connection =
                pin!(builder.serve_connection_with_upgrades(TokioIo::new(tcp), service));
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = closing.wait_for(|c| *c) => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    // Free the port at once; let open requests finish for a moment, then cut them off.
    drop(listener);
    closing.send_replace(true);
    let _ = tokio::time::timeout(limits.grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}
