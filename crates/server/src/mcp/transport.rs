//! The two ways an MCP client reaches [`BrowserTools`]: streamable HTTP at `/mcp` of a running
//! server (one session per client, each with its own selected browser), and stdin/stdout for
//! `browser-operator mcp`.

use super::backend::Backend;
use super::handler::BrowserTools;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use std::sync::Arc;

/// At most this many MCP HTTP sessions live at once.
pub const MAX_SESSIONS: usize = 64;

/// The `/mcp` route (streamable HTTP) for a server's relay, behind the main bearer token.
/// Sessions (each with its own selected browser) end after 5 minutes without a request, or
/// when `stop` is cancelled at shutdown; at most [`MAX_SESSIONS`] live at once. `Host` and
/// `Origin` are checked by the server's own guard for every route, so the SDK's checks are
/// off here (one rule for all routes).
pub(crate) fn router(app: AppState, stop: tokio_util::sync::CancellationToken) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_cancellation_token(stop);
    let sessions = Arc::new(LocalSessionManager::default());
    let relay = Arc::clone(&app.relay);
    let command_timeout = app.command_timeout;
    let per_session = app.group_per_session;
    let service = StreamableHttpService::new(
        move || {
            Ok(
                BrowserTools::new(Backend::Relay(Arc::clone(&relay)), command_timeout)
                    .with_group_per_session(per_session),
            )
        },
        Arc::clone(&sessions),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn_with_state(sessions, limit_sessions))
        .route_layer(middleware::from_fn_with_state(
            app,
            crate::guard::require_bearer,
        ))
}

/// Middleware: a request that would open a new session (no `Mcp-Session-Id`) is refused with
/// 503 while [`MAX_SESSIONS`] sessions are live.
async fn limit_sessions(
    State(sessions): State<Arc<LocalSessionManager>>,
    request: Request,
    next: Next,
) -> Response {
    if !request.headers().contains_key("mcp-session-id")
        && sessions.sessions.read().await.len() >= MAX_SESSIONS
    {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("Too many MCP sessions (limit {MAX_SESSIONS}); close one or wait for idle ones to expire (5 minutes)."),
        )
            .into_response();
    }
    next.run(request).await
}

/// Serves one MCP client on stdin/stdout until it closes them.
pub async fn serve_stdio(tools: BrowserTools) -> Result<(), String> {
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client did not initialize: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP session failed: {e}"))
}
