//! A local HTTP server for the fixture pages in `tests/fixtures/`.
//!
//! Minimal HTTP/1.1: `GET` and `HEAD`, one request per connection (`Connection: close`),
//! `/` serves `index.html`, unknown files are 404. Two routes that are not files:
//! `/__never-ends` sends the start of a page and never the rest (a load that never finishes,
//! held for a minute), `/__redirect?to=<percent-encoded URL>` answers `302` to that URL.
//! Downloads: `/__download?name=<file name>&size=<bytes>` an attachment of that many bytes,
//! `/__download-broken` an attachment whose connection closes a tenth of the way through,
//! `/__download-404` a 404 sent as an attachment, `/__download-stalled` an attachment that
//! sends its first bytes and never the rest (held for a minute).
//! Every request is logged (`Host` header and target, [`FixtureServer::requests`]), so a test
//! can tell that a request never left the browser.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Largest request head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The fixture server; stops when dropped.
#[derive(Debug)]
pub struct FixtureServer {
    addr: SocketAddr,
    root: PathBuf,
    task: JoinHandle<()>,
    log: Arc<Mutex<Vec<String>>>,
}

impl FixtureServer {
    /// Serve `tests/fixtures/` on `127.0.0.1:<free port>`. Call inside a Tokio runtime.
    ///
    /// Panics if no port can be bound (a test can't go on without it).
    pub fn start() -> FixtureServer {
        Self::start_in(fixtures_dir())
    }

    /// Serve another directory.
    pub fn start_in(root: PathBuf) -> FixtureServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("fixture server: binding 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("fixture server: set_nonblocking");
        let addr = listener.local_addr().expect("fixture server: local_addr");
        let listener = TcpListener::from_std(listener)
            .expect("fixture server: FixtureServer::start must run inside a Tokio runtime");
        let serve_root = root.clone();
        let log = Arc::new(Mutex::new(Vec::new()));
        let serve_log = log.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let root = serve_root.clone();
                let log = serve_log.clone();
                tokio::spawn(async move {
                    let _ = handle(stream, &root, &log).await;
                });
            }
        });
        FixtureServer {
            addr,
            root,
            task,
            log,
        }
    }

    /// Every request served so far, as `<Host header> <target>` (`localhost:4321 /hello.html`).
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The address served on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The directory served.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `http://127.0.0.1:<port>/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.addr, path.trim_start_matches('/'))
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `tests/fixtures/`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The Content-Type for a file name.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") | Some("htm") => "text/html; charset=utf-8",
        Some("js") | Some("mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

async fn handle(
    mut stream: TcpStream,
    root: &Path,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) => head,
        _ => return Ok(()),
    };
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let host = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("host")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_default();
    if let Ok(mut l) = log.lock() {
        l.push(format!("{host} {target}"));
    }
    if target.starts_with("/__download") {
        return download(stream, target).await;
    }
    if target.starts_with("/__never-ends") {
        stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                  Cache-Control: no-store\r\nConnection: close\r\n\r\n\
                  <!doctype html><title>Fixture: never ends</title><p>The rest never comes",
            )
            .await?;
        stream.flush().await?;
        tokio::time::sleep(Duration::from_secs(60)).await;
        return stream.shutdown().await;
    }
    if let Some(to) = target.strip_prefix("/__redirect?to=") {
        let to = percent_decode(to).unwrap_or_default();
        let head = format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\
             Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await?;
        return stream.shutdown().await;
    }
    let response = match method {
        "GET" | "HEAD" => match resolve(root, target) {
            Some(file) => match tokio::fs::read(&file).await {
                Ok(body) => response(200, "OK", content_type(&file), body),
                Err(_) => not_found(),
            },
            None => not_found(),
        },
        _ => response(
            405,
            "Method Not Allowed",
            "text/plain; charset=utf-8",
            b"method not allowed\n".to_vec(),
        ),
    };
    let (head_bytes, body) = response;
    stream.write_all(&head_bytes).await?;
    if method != "HEAD" {
        stream.write_all(&body).await?;
    }
    stream.shutdown().await
}

/// The download routes (see the module's comment).
async fn download(mut stream: TcpStream, target: &str) -> std::io::Result<()> {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let param = |key: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .and_then(percent_decode)
    };
    let attachment = |status: &str, name: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/octet-stream\r\n\
             Content-Disposition: attachment; filename=\"{name}\"\r\nContent-Length: {length}\r\n\
             Cache-Control: no-store\r\nConnection: close\r\n\r\n"
        )
    };
    let route = target.split('?').next().unwrap_or("");
    match route {
        "/__download" => {
            let name = param("name").unwrap_or_else(|| "download.bin".into());
            let size: usize = param("size").and_then(|s| s.parse().ok()).unwrap_or(1024);
            stream
                .write_all(attachment("200 OK", &name, size).as_bytes())
                .await?;
            stream.write_all(&vec![b'x'; size]).await?;
        }
        "/__download-broken" => {
            stream
                .write_all(attachment("200 OK", "broken.bin", 100_000).as_bytes())
                .await?;
            stream.write_all(&[b'x'; 10_000]).await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        "/__download-404" => {
            let body = b"no such file\n";
            stream
                .write_all(attachment("404 Not Found", "missing.bin", body.len()).as_bytes())
                .await?;
            stream.write_all(body).await?;
        }
        _ => {
            stream
                .write_all(attachment("200 OK", "stalled.bin", 1_000_000).as_bytes())
                .await?;
            stream.write_all(&[b'x'; 1000]).await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    }
    stream.shutdown().await
}

/// Read until the blank line ending the request head.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(Some(String::from_utf8_lossy(&buf[..end]).into_owned()));
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

/// Map a request target to a file under `root`, refusing anything that leaves it.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let path = percent_decode(path)?;
    let relative = path.trim_start_matches('/');
    let relative = if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html")
    } else {
        relative.to_string()
    };
    let relative = Path::new(&relative);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let file = root.join(relative);
    file.is_file().then_some(file)
}

/// `s` fit to stand in a URL's query (every byte but the unreserved ones percent-encoded): a
/// fixture page's URL passed to another fixture page.
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn response(status: u16, reason: &str, content_type: &str, body: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    (head.into_bytes(), body)
}

fn not_found() -> (Vec<u8>, Vec<u8>) {
    response(
        404,
        "Not Found",
        "text/plain; charset=utf-8",
        b"not found\n".to_vec(),
    )
}

/// One HTTP/1.1 request read from `socket` by a backend of a test's own: its head (request line
/// and headers) and its body (by `Content-Length`); `None` once the connection ends.
pub async fn read_http_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match socket.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    socket.read_exact(&mut body).await.ok()?;
    Some((head, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_inside_root() {
        let root = fixtures_dir();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/hello.html?x=1"),
            Some(root.join("hello.html"))
        );
        assert_eq!(resolve(&root, "/../Cargo.toml"), None);
        assert_eq!(resolve(&root, "/%2e%2e/Cargo.toml"), None);
        assert_eq!(resolve(&root, "/missing.html"), None);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type(Path::new("a.png")), "image/png");
        assert_eq!(
            content_type(Path::new("a.js")),
            "text/javascript; charset=utf-8"
        );
    }
}
