//! Who may talk to the server: the bearer-token and `Host` / `Origin` checks (constant-time
//! token comparison, DNS-rebinding and cross-site protection) and the middleware applying them.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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
        if let Some(host) = request.headers().get(header::HOST) {
            let ok = host.to_str().is_ok_and(is_loopback_host);
            if !ok {
                return forbidden(format!(
                    "Forbidden: this Browser Operator server only answers requests addressed to localhost, 127.0.0.1 or [::1] (got Host: {}).",
                    String::from_utf8_lossy(host.as_bytes())
                ));
            }
        }
    }
    next.run(request).await
}

/// Middleware: refuse requests without `Authorization: Bearer <the main token>` (401).
pub(crate) async fn require_bearer(
    State(app): State<crate::AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !bearer_matches(request.headers(), &app.token) {
        crate::log(format_args!(
            "refused a request to {}: missing or wrong bearer token",
            request.uri().path()
        ));
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
