//! Choosing among several connected browsers: the two tools `list_connected_browsers` and
//! `select_browser`, and the browser one MCP session selected.

use super::backend::Backend;
use super::content::error_result;
use crate::relay::CommandError;
use rmcp::model::{CallToolResult, ContentBlock as Content, Tool};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};

/// Lists the connected browsers.
pub const LIST_BROWSERS: &str = "list_connected_browsers";
/// Chooses the browser later calls of this MCP session go to.
pub const SELECT_BROWSER: &str = "select_browser";

/// The browser one MCP session's calls go to (`None`: the only connected one).
#[derive(Clone, Default)]
pub(super) struct Selection(Arc<Mutex<Option<String>>>);

impl Selection {
    pub(super) fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, target: Option<String>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = target;
    }

    /// `list_connected_browsers`: every connected browser's target, and which one is selected.
    pub(super) async fn list(&self, backend: &Backend) -> CallToolResult {
        let targets = match backend.browsers().await {
            Ok(t) => t,
            Err(e) => return error_result(e),
        };
        let selected = self.get();
        let text = json!({
            "browsers": targets.iter().map(|t| json!({"target": t, "selected": selected.as_deref() == Some(t.as_str())})).collect::<Vec<_>>(),
            "selected": selected,
        });
        CallToolResult::success(vec![Content::text(text.to_string())])
    }

    /// `select_browser {target}`: selects a connected browser, or clears the choice (null).
    pub(super) async fn select(
        &self,
        backend: &Backend,
        args: &Map<String, Value>,
    ) -> CallToolResult {
        let target = match args.get("target") {
            None | Some(Value::Null) => {
                self.set(None);
                return CallToolResult::success(vec![Content::text(
                    "No browser selected: calls go to the only connected browser.",
                )]);
            }
            Some(Value::String(t)) if !t.trim().is_empty() => t.trim().to_string(),
            Some(_) => {
                return error_result(
                    "Invalid arguments: 'target' must be a non-empty string (a target from list_connected_browsers) or null.",
                )
            }
        };
        let targets = match backend.browsers().await {
            Ok(t) => t,
            Err(e) => return error_result(e),
        };
        if !targets.contains(&target) {
            return error_result(
                CommandError::UnknownTarget {
                    target,
                    connected: targets,
                }
                .to_string(),
            );
        }
        self.set(Some(target.clone()));
        CallToolResult::success(vec![Content::text(format!(
            "Selected browser '{target}': the following tool calls run there."
        ))])
    }
}

/// The two browser-choosing tools, as listed after the catalog.
pub(super) fn tools() -> [Tool; 2] {
    let object = |v: Value| match v {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    [
        Tool::new(
            LIST_BROWSERS,
            "List the browsers connected to this server, by target, and which one is selected. Only needed when several browsers are connected: with one, every tool uses it.",
            object(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            SELECT_BROWSER,
            "Choose the browser (by target, from list_connected_browsers) that the following tool calls of this session run in. Needed when several browsers are connected; null clears the choice.",
            object(json!({
                "type": "object",
                "properties": {
                    "target": {"type": ["string", "null"], "description": "A target from list_connected_browsers, or null."}
                },
                "required": ["target"]
            })),
        ),
    ]
}
