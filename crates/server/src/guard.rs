//! Who may talk to the server: the bearer-token and `Host` / `Origin` checks (constant-time
//! token comparison, DNS-rebinding and cross-site protection) and the middleware applying them.

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed authentication attempts answered at once, per peer address and for all peers
/// together, in each [`THROTTLE_WINDOW`]; past that, every failure is answered only after the
/// throttle's delay. A right token is never delayed nor refused, so a guesser sharing the real
/// browser's address (on loopback every local program does) cannot lock it out.
pub const FREE_FAILURES_PER_PEER: u32 = 10;
pub const FREE_FAILURES_TOTAL: u32 = 30;
pub const THROTTLE_WINDOW: Duration = Duration::from_secs(60);
/// How long a throttled failure waits for its answer (401 / close 4001) by default.
pub const DEFAULT_FAILURE_DELAY: Duration = Duration::from_secs(1);
/// Peers remembered at most; past that the window starts again for everyone.
const MAX_PEERS: usize = 4096;

/// Counts failed authentication attempts and says how long to hold each answer.
#[derive(Debug)]
pub struct AuthThrottle {
    delay: Duration,
    state: Mutex<ThrottleState>,
}

#[derive(Debug)]
struct ThrottleState {
    window_start: Instant,
    total: u32,
    peers: HashMap<IpAddr, u32>,
    /// The window's first throttled failure was logged (one line per window, not a flood).
    logged: bool,
}

/// What to do with one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Hold the answer this long.
    pub delay: Duration,
    /// This is the window's first throttled failure: say so in the log (later ones are not
    /// logged one by one).
    pub announce: bool,
    /// Log this failure on its own line (not throttled).
    pub log: bool,
}

impl AuthThrottle {
    pub fn new(delay: Duration) -> Self {
        AuthThrottle {
            delay,
            state: Mutex::new(ThrottleState {
                window_start: Instant::now(),
                total: 0,
                peers: HashMap::new(),
                logged: false,
            }),
        }
    }

    /// Records a failed attempt from `peer`.
    pub fn failed(&self, peer: IpAddr) -> Failure {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.window_start.elapsed() >= THROTTLE_WINDOW || s.peers.len() >= MAX_PEERS {
            s.window_start = Instant::now();
            s.total = 0;
            s.peers.clear();
            s.logged = false;
        }
        s.total = s.total.saturating_add(1);
        let total = s.total;
        let mine = s.peers.entry(peer).or_insert(0);
        *mine = mine.saturating_add(1);
        let throttled = *mine > FREE_FAILURES_PER_PEER || total > FREE_FAILURES_TOTAL;
        if !throttled {
            return Failure {
                delay: Duration::ZERO,
                announce: false,
                log: true,
            };
        }
        let announce = !s.logged;
        s.logged = true;
        Failure {
            delay: self.delay,
            announce,
            log: false,
        }
    }
}

/// The peer of a request, from the connection (unknown: the unspecified address, which then
/// shares one allowance).
pub fn peer_of(request_extensions: &axum::http::Extensions) -> IpAddr {
    request_extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

/// Counts a failed authentication from `peer` (the `/status` counter and the throttle), logs
/// it (`what` says which check failed) unless the throttle is already holding failures, and
/// waits out the throttle's delay before the caller answers.
pub(crate) async fn auth_failed(app: &crate::AppState, peer: IpAddr, what: String) {
    app.relay.auth_failed();
    let failure = app.throttle.failed(peer);
    if failure.log {
        crate::log(format_args!("auth failure from {peer}: {what}"));
    }
    if failure.announce {
        crate::log(format_args!(
            "more than {FREE_FAILURES_PER_PEER} failed authentications from {peer} (or {FREE_FAILURES_TOTAL} in all) within {} s: every further failure is answered after {} ms and not logged one by one; right tokens are not delayed",
            THROTTLE_WINDOW.as_secs(),
            app.throttle.delay.as_millis()
        ));
    }
    if !failure.delay.is_zero() {
        tokio::time::sleep(failure.delay).await;
    }
}

/// Compares two secrets in time that depends only on their lengths, not their contents.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

/// The token of an `Authorization: Bearer <token>` value (scheme case-insensitive).
pub fn parse_bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let token = rest.trim_start();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Whether the request carries `Authorization: Bearer <expected>`.
pub fn bearer_matches(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_bearer)
        .is_some_and(|t| constant_time_eq(t.as_bytes(), expected.as_bytes()))
}

/// Whether a `Host` header names this machine's loopback interface (`localhost`,
/// `127.0.0.1`, `[::1]`, with or without a port). A web page that rebinds its own DNS name to
/// 127.0.0.1 still sends its own name here, so this stops DNS-rebinding attacks.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || is_port(after) => {
                return inside == "::1";
            }
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1"
}

fn is_port(s: &str) -> bool {
    s.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether an `Origin` header may reach the relay and command API: only browser extensions
/// are let in. Web pages (`http(s)://`, and the `null` origin of sandboxed frames and local
/// files) are not: a page the user visits must not drive their browser.
pub fn is_allowed_origin(origin: &str) -> bool {
    let origin = origin.trim().to_ascii_lowercase();
    origin.starts_with("chrome-extension://") || origin.starts_with("moz-extension://")
}

fn forbidden(reason: String) -> Response {
    (StatusCode::FORBIDDEN, reason).into_response()
}

/// Middleware: when the server listens on a loopback address, refuse any request whose `Host`
/// is not a loopback name. `State` is whether the check applies.
pub async fn require_loopback_host(
    State(loopback): State<bool>,
    request: Request,
    next: Next,
) -> Response {
    if loopback {
        match request.headers().get(header::HOST) {
            Some(host) if host.to_str().is_ok_and(is_loopback_host) => {}
            Some(host) => {
                return forbidden(format!(
                    "Forbidden: this Browser Operator server only answers requests addressed to localhost, 127.0.0.1 or [::1] (got Host: {}).",
                    String::from_utf8_lossy(host.as_bytes())
                ));
            }
            // Every browser sends Host; a request without one can't be checked against
            // DNS rebinding, so it is refused too.
            None => {
                return forbidden(
                    "Forbidden: a request needs a Host header naming localhost, 127.0.0.1 or [::1]."
                        .to_string(),
                );
            }
        }
    }
    next.run(request).await
}

/// Middleware: refuse requests without `Authorization: Bearer <the main token>` (401, after
/// the throttle's delay when failures pile up).
pub(crate) async fn require_bearer(
    State(app): State<crate::AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !bearer_matches(request.headers(), &app.token) {
        let peer = peer_of(request.extensions());
        auth_failed(
            &app,
            peer,
            format!("missing or wrong bearer token for {}", request.uri().path()),
        )
        .await;
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Missing or wrong bearer token",
        )
            .into_response();
    }
    next.run(request).await
}

/// Middleware: refuse requests sent by web pages (an `Origin` that isn't a browser extension).
pub async fn reject_web_origin(request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        if !origin.to_str().is_ok_and(is_allowed_origin) {
            return forbidden(format!(
                "Forbidden: requests from web pages are not accepted (Origin: {}); only the browser extension and local programs may connect.",
                String::from_utf8_lossy(origin.as_bytes())
            ));
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"ab", b"abc"));
        assert!(!constant_time_eq(b"", b"a"));
        // A zero-padded prefix must not compare equal to the shorter string.
        assert!(!constant_time_eq(b"ab\0", b"ab"));
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(parse_bearer("Bearer abc"), Some("abc"));
        assert_eq!(parse_bearer("bearer   abc "), Some("abc"));
        assert_eq!(parse_bearer("BEARER abc"), Some("abc"));
        assert_eq!(parse_bearer("Basic abc"), None);
        assert_eq!(parse_bearer("Bearer"), None);
        assert_eq!(parse_bearer("Bearer "), None);
        assert_eq!(parse_bearer("Bearer a b"), None);
        assert_eq!(parse_bearer("abc"), None);
    }

    #[test]
    fn bearer_matches_header() {
        let mut h = HeaderMap::new();
        assert!(!bearer_matches(&h, "t"));
        h.insert(header::AUTHORIZATION, "Bearer t".parse().unwrap());
        assert!(bearer_matches(&h, "t"));
        assert!(!bearer_matches(&h, "u"));
    }

    #[test]
    fn loopback_hosts() {
        for ok in [
            "localhost",
            "LOCALHOST:8787",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:8787",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "evil.example:8787",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "127.0.0.2",
            "[::2]:80",
            "[::1]x",
            "localhost:",
            "localhost:abc",
            "localhost:8787:1",
            "0.0.0.0:8787",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn failures_are_throttled_per_peer_and_in_all() {
        let t = AuthThrottle::new(Duration::from_millis(500));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..FREE_FAILURES_PER_PEER {
            assert_eq!(t.failed(a).delay, Duration::ZERO);
        }
        let first = t.failed(a);
        assert_eq!(first.delay, Duration::from_millis(500));
        assert!(first.announce && !first.log);
        assert!(!t.failed(a).announce, "announced once per window");
        // Other peers keep their own allowance until the total runs out.
        let mut free = 0;
        for i in 0..100u8 {
            let peer = IpAddr::from([10, 0, 1, i]);
            if t.failed(peer).delay.is_zero() {
                free += 1;
            }
        }
        assert_eq!(free, FREE_FAILURES_TOTAL - FREE_FAILURES_PER_PEER - 2);
    }

    #[test]
    fn origins() {
        assert!(is_allowed_origin("chrome-extension://abcdefghijklmnop"));
        assert!(is_allowed_origin("moz-extension://1234"));
        for bad in [
            "http://localhost:8787",
            "https://evil.example",
            "HTTPS://evil.example",
            "null",
            "file://",
            "",
        ] {
            assert!(!is_allowed_origin(bad), "{bad}");
        }
    }
}
