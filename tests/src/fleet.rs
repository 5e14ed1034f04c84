//! A fleet on this machine, for the fleet tests and the bench: a `redis-server` of its own
//! (Debian's package, no persistence), instances of `browser-operator serve --redis` as child
//! processes, and nginx (Debian's package) in front of them with a generated config, every
//! one on a free loopback port, each killed when dropped (and with this process).

use crate::process::{tie_to_parent, Group};
use crate::{Error, Result};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a process may take to listen.
const START: Duration = Duration::from_secs(20);

async fn listening(port: u16, what: &str, child: &mut Child) -> Result<()> {
    let deadline = Instant::now() + START;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::new(format!("{what} exited ({status})")));
        }
        if Instant::now() > deadline {
            return Err(Error::new(format!(
                "{what} did not listen on {port} within {START:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// `redis-server` on a free port.
pub struct RedisProcess {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisProcess {
    pub async fn start(name: &str) -> Result<RedisProcess> {
        let mut redis = RedisProcess {
            port: crate::free_port(),
            dir: crate::temp_dir(&format!("redis-{name}")),
            child: None,
        };
        redis.spawn().await?;
        Ok(redis)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn spawn(&mut self) -> Result<()> {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir);
        let mut child = spawn_quiet(command, "redis-server")?;
        listening(self.port, "redis-server", &mut child).await?;
        self.child = Some(child);
        Ok(())
    }

    pub fn kill(&mut self) {
        kill(&mut self.child);
    }

    /// Starts it again on the same port, empty.
    pub async fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn().await
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One `browser-operator serve --redis` instance.
pub struct Instance {
    pub name: String,
    pub addr: SocketAddr,
    pub log: PathBuf,
    child: Option<Child>,
}

impl Instance {
    /// Starts `binary serve` in the fleet of `redis` as `name`, with `token` and the presence
    /// TTL `ttl_secs`, logging to `dir/<name>.log`.
    pub async fn start(
        binary: &Path,
        redis: &str,
        name: &str,
        token: &str,
        ttl_secs: u32,
        dir: &Path,
    ) -> Result<Instance> {
        let port = crate::free_port();
        let log = dir.join(format!("{name}.log"));
        let mut command = Command::new(binary);
        command
            .args(["serve", "--port", &port.to_string(), "--token", token])
            .args(["--redis", redis, "--instance", name])
            .args(["--presence-ttl", &ttl_secs.to_string()])
            .env(
                "BROWSER_OPERATOR_CONFIG_DIR",
                dir.join(format!("{name}-config")),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?));
        tie_to_parent(&mut command, Group::Inherit);
        let mut child = command
            .spawn()
            .map_err(|e| Error::new(format!("starting {}: {e}", binary.display())))?;
        listening(port, &format!("instance {name}"), &mut child).await?;
        Ok(Instance {
            name: name.to_string(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
            child: Some(child),
        })
    }

    /// SIGKILL: gone without a word to anyone.
    pub fn kill(&mut self) {
        kill(&mut self.child);
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

/// nginx in front of the instances: WebSocket upgrades, no buffering (SSE), long timeouts,
/// and the next instance when one does not answer (what docs/DEPLOY.md shows).
pub struct Nginx {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Nginx {
    pub async fn start(upstreams: &[SocketAddr], dir: &Path) -> Result<Nginx> {
        let port = crate::free_port();
        let dir = dir.join("nginx");
        std::fs::create_dir_all(dir.join("logs"))?;
        let servers: String = upstreams
            .iter()
            .map(|a| format!("    server {a} max_fails=1 fail_timeout=2s;\n"))
            .collect();
        let d = dir.display();
        let config = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log warn;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
               fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
               map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}\n\
               upstream fleet {{\n{servers}  }}\n\
               server {{\n    listen 127.0.0.1:{port};\n    client_max_body_size 16m;\n\
                 location / {{\n      proxy_pass http://fleet;\n      proxy_http_version 1.1;\n\
                   proxy_set_header Upgrade $http_upgrade;\n      proxy_set_header Connection $connection_upgrade;\n\
                   proxy_set_header Host $host;\n      proxy_buffering off;\n      proxy_request_buffering off;\n\
                   proxy_connect_timeout 2s;\n      proxy_read_timeout 1h;\n      proxy_send_timeout 1h;\n\
                   proxy_next_upstream error timeout;\n    }}\n  }}\n}}\n"
        );
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config)?;
        // Debian puts nginx in /usr/sbin, which a user's PATH may leave out.
        let sbin = Path::new("/usr/sbin/nginx");
        let mut command = if sbin.exists() {
            Command::new(sbin)
        } else {
            Command::new("nginx")
        };
        command.arg("-c").arg(&conf).arg("-p").arg(&dir);
        let mut child = spawn_quiet(command, "nginx")?;
        listening(port, "nginx", &mut child).await.map_err(|e| {
            e.context(std::fs::read_to_string(dir.join("logs/error.log")).unwrap_or_default())
        })?;
        Ok(Nginx {
            port,
            dir,
            child: Some(child),
        })
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.port)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        kill(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The fleet's browsers in a `/status`: (target, instance), sorted.
pub fn listed(status: &Value) -> Vec<(String, String)> {
    let mut list: Vec<(String, String)> = status["browsers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            (
                b["target"].as_str().unwrap_or("").to_string(),
                b["instance"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    list.sort();
    list
}

/// Starts a service of Debian's package `name` with no terminal, tied to the test's life.
fn spawn_quiet(mut command: Command, name: &str) -> Result<Child> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    tie_to_parent(&mut command, Group::Inherit);
    command.spawn().map_err(|e| {
        Error::new(format!(
            "starting {name} ({e}): apt-get install {name}, or ./build.sh setup"
        ))
    })
}
