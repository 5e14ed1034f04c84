//! The HTTP API: `POST /commands` (run a tool in the browser and wait for its result),
//! `GET /status` (connected browsers and counters), `POST /disconnect` and the plain-text index
//! page.

use crate::guard::bearer_matches;
use crate::relay::CommandError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::net::SocketAddr;
use std::time::Duration;

/// The longest `timeoutMs` a command may ask for.
pub const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The largest body `POST /commands` takes: the largest command the extension reads
/// (`protocol::MAX_COMMAND_BYTES`), less room for what the relay adds around it (the command's
/// id and type). It holds the largest valid command of every tool: `file_upload`'s files (at
/// most 1 MiB in all, about 1.4 MB as base64) with room to spare. A larger body is answered
/// 413 with an error naming this limit.
pub const MAX_COMMAND_BODY: usize = protocol::MAX_COMMAND_BYTES - ENVELOPE;
/// What the relay's frame adds to a command's body, at most (`{"type":"command","id":…}`, an
/// id of up to `protocol::MAX_ID_CHARS`), rounded up.
const ENVELOPE: usize = 4 << 10;
const _: () = assert!(ENVELOPE > protocol::MAX_ID_CHARS + 64);
// file_upload's largest valid command: its files as base64, 20 names and types, the keys.
const _: () =
    assert!(protocol::FILE_UPLOAD_MAX_BYTES.div_ceil(3) * 4 + (64 << 10) < MAX_COMMAND_BODY);

/// An API failure: a status and a message, sent as `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Missing or wrong bearer token")
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
}

impl From<CommandError> for ApiError {
    fn from(e: CommandError) -> Self {
        let status = match e {
            CommandError::NoBrowser
            | CommandError::TooManyPending { .. }
            | CommandError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            CommandError::NoRandomness(_) => StatusCode::INTERNAL_SERVER_ERROR,
            CommandError::TargetRequired { .. }
            | CommandError::UnknownTarget { .. }
            | CommandError::IdInUse { .. } => StatusCode::CONFLICT,
            CommandError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            CommandError::Fleet { status, .. } => {
                StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
            }
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

/// The body of `POST /commands`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandRequest {
    pub tool: String,
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The agent the command acts for: the browser gives each agent of a backend its own tab
    /// group (an MCP server sets it per client session).
    #[serde(default)]
    pub agent: Option<String>,
    /// The caller's id for this command, so that a retry (after a timeout, a lost answer, an
    /// instance of the fleet that went away) runs it at most once: the browser answers a
    /// repeated id with the result of its one run. 1 to [`MAX_CALLER_ID`] characters of
    /// `A-Z a-z 0-9 . _ : -`.
    #[serde(default)]
    pub id: Option<String>,
}

/// The longest caller id a command may have.
pub const MAX_CALLER_ID: usize = 128;

/// The id the browser sees for a command the caller named `id`.
pub fn wire_id(id: &str) -> String {
    format!("req-{id}")
}

impl CommandRequest {
    /// Parses and checks a request body, with a message that says what is wrong.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            if body.iter().all(u8::is_ascii_whitespace) {
                "The body is empty; send a JSON object like {\"tool\": \"tabs_context_mcp\", \"args\": {}}.".to_string()
            } else {
                format!("The body is not valid JSON: {e}")
            }
        })?;
        if !value.is_object() {
            return Err(
                "The body must be a JSON object like {\"tool\": \"tabs_context_mcp\", \"args\": {}}."
                    .into(),
            );
        }
        let request: CommandRequest =
            serde_json::from_value(value).map_err(|e| format!("Invalid command request: {e}"))?;
        if request.tool.trim().is_empty() {
            return Err("Invalid command request: `tool` is empty.".into());
        }
        if request.timeout_ms == Some(0) {
            return Err("Invalid command request: `timeoutMs` must be at least 1.".into());
        }
        if let Some(id) = &request.id {
            if id.is_empty()
                || id.len() > MAX_CALLER_ID
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
            {
                return Err(format!(
                    "Invalid command request: `id` must be 1 to {MAX_CALLER_ID} characters of A-Z a-z 0-9 . _ : - (a retry sends the same id)."
                ));
            }
        }
        if let Some(agent) = &request.agent {
            if agent.is_empty()
                || agent.chars().count() > protocol::MAX_AGENT_CHARS
                || agent.chars().any(char::is_control)
            {
                return Err(format!(
                    "Invalid command request: `agent` must be 1 to {} characters without control characters.",
                    protocol::MAX_AGENT_CHARS
                ));
            }
        }
        Ok(request)
    }

    /// The timeout to use: `timeoutMs` capped at [`MAX_COMMAND_TIMEOUT`], else `default`.
    pub fn timeout(&self, default: Duration) -> Duration {
        self.timeout_ms
            .map(Duration::from_millis)
            .map_or(default, |t| t.min(MAX_COMMAND_TIMEOUT))
    }
}

/// `POST /commands`.
pub(crate) async fn command(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        // A caller without the token learns nothing of the limit (and is throttled as always).
        Err(_) if !bearer_matches(&headers, &app.token) => Bytes::new(),
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "The command is larger than the {MAX_COMMAND_BODY} bytes ({} MiB less {} KiB for the relay) a POST /commands body may have: send less (file_upload takes at most {} bytes of files in all; split a larger script or text).",
                    protocol::MAX_COMMAND_BYTES >> 20,
                    ENVELOPE >> 10,
                    protocol::FILE_UPLOAD_MAX_BYTES,
                ),
            )
            .into_response()
        }
        Err(e) => {
            return ApiError::bad_request(format!("The body could not be read: {}", e.body_text()))
                .into_response()
        }
    };
    match run(&app, peer, &headers, &body).await {
        Ok(result) => (StatusCode::OK, Json(result)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn run(
    app: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<protocol::CommandResult, ApiError> {
    if !bearer_matches(headers, &app.token) {
        crate::guard::auth_failed(
            app,
            peer.ip(),
            "missing or wrong bearer token for POST /commands".to_string(),
        )
        .await;
        return Err(ApiError::unauthorized());
    }
    let request = CommandRequest::parse(body).map_err(ApiError::bad_request)?;
    let timeout = request.timeout(app.command_timeout);
    let bound = if request.timeout_ms.is_some() {
        crate::relay::WaitBound::Request
    } else {
        crate::relay::WaitBound::Server
    };
    let target = request
        .target
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let id = request.id.as_deref().map(wire_id);
    let result = app
        .relay
        .run_request(crate::relay::Request {
            tool: &request.tool,
            args: request.args.clone().unwrap_or_default(),
            target,
            base: timeout,
            base_bound: bound,
            agent: request.agent.as_deref(),
            id: id.as_deref(),
        })
        .await;
    // Timeouts and completed commands are logged by the relay, with their id.
    if let Err(e) = &result {
        let why = match e {
            CommandError::NoBrowser => Some("no browser connected"),
            CommandError::TargetRequired { .. } => Some("several browsers and no target"),
            CommandError::UnknownTarget { .. } => Some("unknown target"),
            CommandError::TooManyPending { .. } => Some("too many pending commands"),
            CommandError::IdInUse { .. } => Some("command id in use for another target"),
            CommandError::Timeout { .. }
            | CommandError::ShuttingDown
            | CommandError::NoRandomness(_)
            | CommandError::Fleet { .. } => None,
        };
        if let Some(why) = why {
            crate::log::line(format_args!("command {} refused: {why}", request.tool));
        }
    }
    Ok(result?)
}

/// `GET /status`.
pub(crate) async fn status(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !bearer_matches(&headers, &app.token) {
        crate::guard::auth_failed(
            &app,
            peer.ip(),
            "missing or wrong bearer token for GET /status".to_string(),
        )
        .await;
        return ApiError::unauthorized().into_response();
    }
    let local = app.relay.browsers();
    let mut fleet_report = Value::Null;
    let browsers: Vec<Value> = match app.relay.fleet() {
        None => local
            .into_iter()
            .map(|b| json!({ "target": b.target, "connectedAt": b.connected_at }))
            .collect(),
        Some(fleet) => {
            let me = fleet.instance().to_string();
            let listed = fleet.browsers().await;
            let degraded = fleet.degraded().or_else(|| listed.as_ref().err().cloned());
            fleet_report = json!({
                "instance": me,
                "state": if degraded.is_some() { "degraded" } else { "ok" },
                "error": degraded,
                "localBrowsers": local.len(),
                "tokens": app.tokens.known(),
            });
            match listed {
                Ok(all) => all
                    .into_iter()
                    .map(|b| {
                        json!({
                            "target": b.target,
                            "connectedAt": b.connected_at,
                            "instance": b.instance,
                            "local": b.instance == me,
                        })
                    })
                    .collect(),
                // Degraded: only what this instance knows.
                Err(_) => local
                    .into_iter()
                    .map(|b| {
                        json!({
                            "target": b.target,
                            "connectedAt": b.connected_at,
                            "instance": me,
                            "local": true,
                        })
                    })
                    .collect(),
            }
        }
    };
    let paused: Vec<Value> = app
        .relay
        .paused()
        .into_iter()
        .map(|(target, since)| json!({ "target": target, "since": since }))
        .collect();
    let mut report = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "browsers": browsers,
        "wsConnections": app.relay.ws_connections(),
        "httpRequests": app.relay.http_requests(),
        "authFailures": app.relay.auth_failures(),
        "pendingCommands": app.relay.pending_commands(),
        "paused": paused,
    });
    if !fleet_report.is_null() {
        report["fleet"] = fleet_report;
    }
    Json(report).into_response()
}

/// `POST /disconnect` with `{"target": "…"}` or `{"tokenId": "…"}` (neither: the only
/// connected browser) and an optional `"reason"`: those browsers' connections end with close
/// 4001, `event: disconnect` or a 401, so the extension drops its token and stays disconnected
/// until its user connects again (what `browser-operator disconnect` and `token revoke` call).
/// Answers `{"disconnected": n, "targets": [...]}`.
pub(crate) async fn disconnect(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !bearer_matches(&headers, &app.token) {
        crate::guard::auth_failed(
            &app,
            peer.ip(),
            "missing or wrong bearer token for POST /disconnect".to_string(),
        )
        .await;
        return ApiError::unauthorized().into_response();
    }
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return ApiError::bad_request(format!("The body is not valid JSON: {e}"))
                    .into_response()
            }
        }
    };
    let which = match (value["target"].as_str(), value["tokenId"].as_str()) {
        (Some(t), None) => crate::relay::Disconnect::Target(t.to_string()),
        (None, Some(id)) => crate::relay::Disconnect::TokenId(id.to_string()),
        (None, None) => {
            let connected: Vec<String> = match app.relay.fleet() {
                Some(fleet) => match fleet.browsers().await {
                    Ok(all) => all.into_iter().map(|b| b.target).collect(),
                    Err(_) => app.relay.browsers().into_iter().map(|b| b.target).collect(),
                },
                None => app.relay.browsers().into_iter().map(|b| b.target).collect(),
            };
            match connected.as_slice() {
                [only] => crate::relay::Disconnect::Target(only.clone()),
                [] => {
                    return ApiError::new(StatusCode::NOT_FOUND, "No browser is connected.")
                        .into_response()
                }
                several => {
                    return ApiError::new(
                        StatusCode::CONFLICT,
                        format!(
                            "Several browsers are connected; say which one with \"target\": {}.",
                            several.join(", ")
                        ),
                    )
                    .into_response()
                }
            }
        }
        _ => {
            return ApiError::bad_request(
                "Send at most one of \"target\" or \"tokenId\" (strings).",
            )
            .into_response()
        }
    };
    let reason: String = value["reason"]
        .as_str()
        .unwrap_or("disconnected by the server")
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let mut targets = app.relay.disconnect(&which, &reason);
    if let Some(fleet) = app.relay.fleet() {
        // The browsers on other instances: every instance disconnects its own.
        if let Ok(all) = fleet.browsers().await {
            for b in all.into_iter().filter(|b| b.instance != fleet.instance()) {
                let chosen = match &which {
                    crate::relay::Disconnect::Target(t) => b.target == *t,
                    crate::relay::Disconnect::TokenId(id) => b.token_id.as_deref() == Some(id),
                };
                if chosen {
                    targets.push(b.target);
                }
            }
        }
        let (target, token_id) = match &which {
            crate::relay::Disconnect::Target(t) => (Some(t.as_str()), None),
            crate::relay::Disconnect::TokenId(id) => (None, Some(id.as_str())),
        };
        if let Err(e) = fleet.disconnect(target, token_id, &reason).await {
            return ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Disconnected {} browser(s) on this instance, but the fleet could not be told: {e}", targets.len()),
            )
            .into_response();
        }
    }
    if targets.is_empty() {
        if let crate::relay::Disconnect::Target(t) = &which {
            return ApiError::new(
                StatusCode::NOT_FOUND,
                format!("No browser is connected with target '{t}'."),
            )
            .into_response();
        }
    }
    Json(json!({ "disconnected": targets.len(), "targets": targets })).into_response()
}

/// `GET /`: what this is and where to connect; never the token.
pub(crate) async fn index(State(app): State<AppState>) -> Response {
    let addr = app.addr;
    let text = format!(
        "Browser Operator server {version}\n\
         \n\
         The reference backend of the Browser Operator Protocol: it relays commands from\n\
         programs and AI agents to the Browser Operator extension in your browser.\n\
         \n\
         Extension (Options page): Transport WebSocket, Server URL ws://{addr}/ws\n\
         \x20 or SSE + HTTP / HTTP long polling / HTTP short polling, Server URL http://{addr}\n\
         \x20 (commands GET /browser/events, results POST /browser/result)\n\
         Pair this browser in one click: http://{addr}/pair\n\
         Token: printed by `browser-operator serve`, or run `browser-operator token`.\n\
         \n\
         Command API (Authorization: Bearer <token>):\n\
         \x20 POST /commands  {{\"tool\": \"...\", \"args\": {{...}}, \"target\": \"...\", \"timeoutMs\": n}}\n\
         \x20 GET  /status\n\
         \x20 POST /disconnect {{\"target\": \"...\"}}  (the browser stops until its user connects again)\n\
         \n\
         MCP (streamable HTTP, same bearer token): http://{addr}/mcp\n",
        version = env!("CARGO_PKG_VERSION"),
    );
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests() {
        let r = CommandRequest::parse(
            br#"{"tool":"navigate","args":{"url":"x"},"target":"a","timeoutMs":5}"#,
        )
        .unwrap();
        assert_eq!(r.tool, "navigate");
        assert_eq!(r.args.as_ref().unwrap()["url"], "x");
        assert_eq!(r.timeout(Duration::from_secs(60)), Duration::from_millis(5));
        let r = CommandRequest::parse(br#"{"tool":"t","args":null}"#).unwrap();
        assert_eq!(r.args, None);
        assert_eq!(r.timeout(Duration::from_secs(7)), Duration::from_secs(7));
        let r = CommandRequest::parse(br#"{"tool":"t","timeoutMs":99999999}"#).unwrap();
        assert_eq!(r.timeout(Duration::from_secs(7)), MAX_COMMAND_TIMEOUT);
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let e = |b: &[u8]| CommandRequest::parse(b).unwrap_err();
        assert!(e(b"").contains("empty"));
        assert!(e(b"{").contains("not valid JSON"));
        assert!(e(b"[]").contains("JSON object"));
        assert!(e(b"{}").contains("missing field `tool`"), "{}", e(b"{}"));
        assert!(e(br#"{"tool":""}"#).contains("`tool` is empty"));
        assert!(e(br#"{"tool":1}"#).contains("invalid type"));
        assert!(e(br#"{"tool":"t","args":[]}"#).contains("invalid type"));
        assert!(e(br#"{"tool":"t","timeout":1}"#).contains("unknown field `timeout`"));
        assert!(e(br#"{"tool":"t","timeoutMs":0}"#).contains("timeoutMs"));
        assert!(e(br#"{"tool":"t","timeoutMs":-1}"#).contains("invalid value"));
    }

    #[test]
    fn command_errors_map_to_statuses() {
        let s = |e: CommandError| ApiError::from(e).status;
        assert_eq!(s(CommandError::NoBrowser), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            s(CommandError::TooManyPending { limit: 1 }),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            s(CommandError::TargetRequired { connected: vec![] }),
            StatusCode::CONFLICT
        );
        assert_eq!(
            s(CommandError::Timeout {
                after: Duration::from_secs(1),
                id: "i".into(),
                tool: "t".into(),
                bound: crate::relay::WaitBound::Server,
            }),
            StatusCode::GATEWAY_TIMEOUT
        );
    }
}
