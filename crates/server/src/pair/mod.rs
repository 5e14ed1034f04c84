//! One-click pairing on the server: the `/pair` page (detects the extension, posts a pair-offer
//! with a token issued for this browser, shows when that browser connected) and its two
//! same-origin endpoints. The token is a per-target token in the server's token store
//! ([`crate::target_tokens`]), so it outlives a restart and `token list|revoke` manage it.

use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

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

fn failed(why: impl std::fmt::Display) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({"error": why.to_string()})),
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
        Ok(()) => format!("browser-{}", crate::main_token::hex(&random)),
        Err(e) => return failed(e),
    };
    if !app.tokens.can_store() {
        return failed(format!(
            "This server has no config directory to keep pairing tokens in: set {} or HOME and restart it.",
            crate::main_token::CONFIG_DIR_ENV
        ));
    }
    let connected = app.relay.reachable_targets().await;
    let token = match app
        .tokens
        .issue_paired(&target, |t| connected.iter().any(|c| c == t))
    {
        Ok(t) => t.token,
        Err(e) => return failed(e),
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| app.addr.to_string());
    crate::log::line(format_args!(
        "issued a pairing token for target '{target}' (kept in the token store)"
    ));
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
    let connected = app.relay.reachable_targets().await.contains(&target);
    Json(json!({ "connected": connected })).into_response()
}
