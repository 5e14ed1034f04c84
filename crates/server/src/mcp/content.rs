//! A browser's results as MCP content: text → text, image → image, error → `isError: true`.

use protocol::{CommandResult, ContentBlock as Block, Outcome};
use rmcp::model::{CallToolResult, ContentBlock as Content};

/// A browser's result as MCP content.
pub fn to_mcp(result: CommandResult) -> CallToolResult {
    match result.outcome {
        Outcome::Result { result } => CallToolResult::success(
            result
                .content
                .into_iter()
                .map(|block| match block {
                    Block::Text { text } => Content::text(text),
                    Block::Image { data, mime_type } => Content::image(data, mime_type),
                })
                .collect(),
        ),
        Outcome::Error { error } => error_result(error),
    }
}

/// The first text block of a successful result.
pub(super) fn first_text(result: &CommandResult) -> Option<&str> {
    match &result.outcome {
        Outcome::Result { result } => result.content.iter().find_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            Block::Image { .. } => None,
        }),
        Outcome::Error { .. } => None,
    }
}

/// A tool call that failed with `message` (`isError: true`).
pub(super) fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(message.into())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ToolResult;
    use serde_json::json;

    #[test]
    fn results_map_to_content() {
        let ok = to_mcp(CommandResult::ok(
            "c",
            ToolResult {
                content: vec![
                    Block::Text { text: "a".into() },
                    Block::Image {
                        data: "AAAA".into(),
                        mime_type: "image/png".into(),
                    },
                ],
            },
        ));
        let v = serde_json::to_value(&ok).unwrap();
        assert_eq!(v["isError"], false);
        assert_eq!(v["content"][0], json!({"type": "text", "text": "a"}));
        assert_eq!(
            v["content"][1],
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        );
        let err = serde_json::to_value(to_mcp(CommandResult::error("c", "boom"))).unwrap();
        assert_eq!(err["isError"], true);
        assert_eq!(err["content"][0]["text"], "boom");
    }
}
