//! One-click pairing on the server: the `/pair` page (detects the extension, posts a pair-offer
//! with a token issued for this browser, shows when that browser connected), its two
//! same-origin endpoints, and the issued tokens, accepted by every transport besides the
//! server's main token. Tokens are kept in memory: a restarted server forgets them (pair again).

use crate::guard::{constant_time_eq, parse_bearer};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Mutex;

const PAGE: &str = include_str!("page.html");

/// `GET /pair`: a normal web page (no token in it).
pub(crate) async fn page() -> Response {
    Html(PAGE).into_response()
}

/// The pairing endpoints answer only the /pair page itself: a POST whose `Origin` is this
/// server's own (other sites' pages get 403; the Host guard already stops DNS rebinding).
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |h| headers.get(h).and_then(|v| v.to_str().ok());
    match (get(header::ORIGIN), get(header::HOST)) {
        (Some(origin), Some(host)) => origin == format!("http://{host}"),
        _ => false,
    }
}

fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        Json(json!({"error": "Only the server's own /pair page may ask for a pairing offer."})),
    )
        .into_response()
}

/// `POST /pair/offer`: a token issued for a new target, in the shape of a pair-offer.
pub(crate) async fn offer(State(app): State<AppState>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return forbidden();
    }
    let mut random = [0u8; 3];
    let target = match getrandom::fill(&mut random) {
        Ok(()) => format!("browser-{}", crate::token::hex(&random)),
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": e.to_string()})),
            )
                .into_response()
        }
    };
    let token = match app.pairing.issue(&target) {
        Ok(t) => t,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": e.to_string()})),
            )
                .into_response()
        }
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| app.addr.to_string());
    crate::log(format_args!("issued a pairing token for target '{target}'"));
    Json(json!({
        "target": target,
        "offer": {
            "config": {
                "transport": "websocket",
                "serverUrl": format!("ws://{host}/ws"),
                "token": token,
                "target": target,
            },
            "brand": { "name": "Browser Operator server" }
        }
    }))
    .into_response()
}

/// `POST /pair/status {"target"}`: whether that browser is connected now.
pub(crate) async fn status(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return forbidden();
    }
    let target = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("target").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    let connected = app.relay.browsers().iter().any(|b| b.target == target);
    Json(json!({ "connected": connected })).into_response()
}

/// At most this many paired browsers are remembered; the oldest token is forgotten first.
pub const MAX_PAIRED: usize = 64;

#[derive(Default)]
pub struct PairTokens {
    /// (token, target), oldest first.
    issued: Mutex<Vec<(String, String)>>,
}

impl PairTokens {
    /// Issues a fresh token for a browser that will connect as `target`.
    pub fn issue(&self, target: &str) -> std::io::Result<String> {
        let token = crate::token::generate()?;
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        if issued.len() >= MAX_PAIRED {
            issued.remove(0);
        }
        issued.push((token.clone(), target.to_string()));
        Ok(token)
    }

    /// Whether `token` was issued here.
    pub fn accepts_token(&self, token: &str) -> bool {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        // Compare with every entry so the time does not depend on which one matched.
        issued.iter().fold(false, |ok, (t, _)| {
            constant_time_eq(t.as_bytes(), token.as_bytes()) | ok
        })
    }

    /// Whether the request's bearer token was issued here.
    pub fn accepts(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_bearer)
            .is_some_and(|t| self.accepts_token(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_are_accepted_and_bounded() {
        let p = PairTokens::default();
        let first = p.issue("a").unwrap();
        assert!(p.accepts_token(&first));
        assert!(!p.accepts_token("nope"));
        for i in 0..MAX_PAIRED {
            p.issue(&format!("t{i}")).unwrap();
        }
        assert!(!p.accepts_token(&first), "the oldest is forgotten");
    }
}
