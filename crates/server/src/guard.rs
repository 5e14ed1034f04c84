//! Who may talk to the server: the bearer-token and `Host` / `Origin` checks (constant-time
//! token comparison, DNS-rebinding and cross-site protection) and the middleware applying them.

use crate::secret::constant_time_eq;
use crate::state::AppState;
use crate::throttle::{FREE_FAILURES_PER_PEER, FREE_FAILURES_TOTAL, THROTTLE_WINDOW};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

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
pub(crate) async fn auth_failed(app: &AppState, peer: IpAddr, what: String) {
    app.relay.auth_failed();
    let failure = app.throttle.failed(peer);
    if failure.log {
        crate::log::line(format_args!("auth failure from {peer}: {what}"));
    }
    if failure.announce {
        crate::log::line(format_args!(
            "more than {FREE_FAILURES_PER_PEER} failed authentications from {peer} (or {FREE_FAILURES_TOTAL} in all) within {} s: every further failure is answered after {} ms and not logged one by one; right tokens are not delayed",
            THROTTLE_WINDOW.as_secs(),
            app.throttle.delay().as_millis()
        ));
    }
    if !failure.delay.is_zero() {
        tokio::time::sleep(failure.delay).await;
    }
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
    State(app): State<AppState>,
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
