//! Injected backend latency: a TCP proxy on loopback between the extension and the server that
//! holds every chunk of bytes for a settable one-way delay before passing it on, in both
//! directions and in order (a delay, not a bandwidth limit: bytes that follow each other are not
//! held back by each other). A round trip through it takes twice the one-way delay longer.

use crate::Result;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub struct DelayProxy {
    pub addr: SocketAddr,
    one_way_us: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards each connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let one_way_us = Arc::new(AtomicU64::new(0));
        let delay = one_way_us.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = delay.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    let up = tokio::spawn(pump(cr, sw, delay.clone()));
                    let down = tokio::spawn(pump(sr, cw, delay));
                    let _ = tokio::join!(up, down);
                });
            }
        });
        Ok(DelayProxy {
            addr,
            one_way_us,
            task,
        })
    }

    /// From now on every chunk waits `delay` in each direction.
    pub fn set_one_way_delay(&self, delay: Duration) {
        self.one_way_us
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads chunks from `from` and writes each to `to` once its delay has passed.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Arc<AtomicU64>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let due = Instant::now() + Duration::from_micros(delay.load(Ordering::SeqCst));
                if tx.send((due, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
