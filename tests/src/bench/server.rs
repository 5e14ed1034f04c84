//! The real `browser-operator serve`, built in release beside the bench binary, as a child
//! process on a free loopback port with a token and config directory of its own. Its log
//! (stderr: one line per command) goes to a file. Dropping it kills it; so does the bench's
//! death (`PR_SET_PDEATHSIG`).

use super::http::Api;
use crate::process::{tie_to_parent, Group};
use crate::{Error, Result};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
    pub token: String,
    pub log: PathBuf,
    dir: PathBuf,
}

impl ServerProcess {
    /// Starts `binary serve` with its log in `log`, and waits until `GET /status` answers.
    pub async fn start(binary: &Path, log: &Path) -> Result<ServerProcess> {
        if !binary.is_file() {
            return Err(Error::new(format!(
                "{} is missing: cargo build --release -p browser-operator-server (./build.sh bench does)",
                binary.display()
            )));
        }
        let port = crate::free_port();
        let token = format!("bench-{:032x}", random_u128());
        let dir = crate::temp_dir("bench-server");
        let log = log.to_path_buf();
        let mut command = Command::new(binary);
        command
            .args(["serve", "--port", &port.to_string(), "--token", &token])
            .env("BROWSER_OPERATOR_CONFIG_DIR", &dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?));
        tie_to_parent(&mut command, Group::Inherit);
        let child = command
            .spawn()
            .map_err(|e| Error::new(format!("starting {}: {e}", binary.display())))?;
        let addr: SocketAddr = format!("127.0.0.1:{port}")
            .parse()
            .map_err(|e| Error::new(format!("address: {e}")))?;
        let mut server = ServerProcess {
            child,
            addr,
            token,
            log,
            dir,
        };
        let api = server.api();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if api.status().await.is_ok() {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(Error::new(format!(
                    "the server exited ({status}): {}",
                    std::fs::read_to_string(&server.log).unwrap_or_default()
                )));
            }
            if Instant::now() > deadline {
                return Err(Error::new(
                    "the server did not answer GET /status within 20 s",
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new kept-alive API connection.
    pub fn api(&self) -> Api {
        Api::new(self.addr, &self.token)
    }

    /// `ws://…/ws`, what the extension's Options take for WebSocket.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// `http://…`, for the HTTP transports.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn random_u128() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    let mut a = state.build_hasher();
    a.write_u128(Instant::now().elapsed().as_nanos());
    let mut b = state.build_hasher();
    b.write_u64(std::process::id() as u64);
    ((a.finish() as u128) << 64) | b.finish() as u128
}
