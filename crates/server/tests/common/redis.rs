//! A `redis-server` of the test's own (Debian's package; `./build.sh setup` installs it) on a
//! free loopback port, without persistence unless asked, killed when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    pub port: u16,
    dir: PathBuf,
    password: Option<String>,
    child: Option<Child>,
}

impl Redis {
    /// Starts one on a free port.
    pub fn start(name: &str) -> Redis {
        Self::start_with(name, None)
    }

    /// Starts one that requires `password` (`requirepass`).
    pub fn start_with(name: &str, password: Option<&str>) -> Redis {
        let dir = super::temp_dir(&format!("redis-{name}"));
        std::fs::create_dir_all(&dir).expect("redis dir");
        let mut redis = Redis {
            port: super::free_port(),
            dir,
            password: password.map(str::to_string),
            child: None,
        };
        redis.spawn();
        redis
    }

    /// `redis://` URL of this server (with its password).
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    fn spawn(&mut self) {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = &self.password {
            command.args(["--requirepass", p]);
        }
        let child = command
            .spawn()
            .expect("redis-server starts (apt-get install redis-server, or ./build.sh setup)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.ping() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} never answered PING", self.port);
    }

    fn ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut request = String::new();
        if let Some(p) = &self.password {
            request.push_str(&format!("AUTH {p}\r\n"));
        }
        request.push_str("PING\r\n");
        if s.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        let mut got = String::new();
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
            if got.contains("PONG") {
                return true;
            }
        }
        false
    }

    /// Kills it (its data goes: no persistence).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
