//! Commands (backend → extension) and their results (extension → backend).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool invocation. `id` is echoed back as `commandId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    pub id: String,
    pub tool: String,
    /// Tool-specific arguments; a missing `args` is an empty object.
    #[serde(default)]
    pub args: Map<String, Value>,
}

/// What a tool produced: a list of content blocks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResult {
    pub content: Vec<ContentBlock>,
}

impl ToolResult {
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The text blocks joined by newlines (images left out).
    pub fn joined_text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                ContentBlock::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    Image {
        /// Base64 of the encoded image.
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// A command's outcome: content, or an error message a model can act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    Result { result: ToolResult },
    Error { error: String },
}

/// `{commandId, result: {content}}` or `{commandId, error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    #[serde(rename = "commandId")]
    pub command_id: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl CommandResult {
    pub fn ok(command_id: impl Into<String>, result: ToolResult) -> Self {
        CommandResult {
            command_id: command_id.into(),
            outcome: Outcome::Result { result },
        }
    }

    pub fn error(command_id: impl Into<String>, error: impl Into<String>) -> Self {
        CommandResult {
            command_id: command_id.into(),
            outcome: Outcome::Error {
                error: error.into(),
            },
        }
    }

    /// The bytes of its strings: about its size as JSON, without writing it (a large page's
    /// tree takes milliseconds to write).
    pub fn payload_len(&self) -> usize {
        let body = match &self.outcome {
            Outcome::Error { error } => error.len(),
            Outcome::Result { result } => result
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Image { data, mime_type } => data.len() + mime_type.len(),
                })
                .sum(),
        };
        self.command_id.len() + body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
        v: Value,
    ) -> T {
        let parsed: T = serde_json::from_value(v.clone()).expect("parses");
        assert_eq!(serde_json::to_value(&parsed).expect("serializes"), v);
        parsed
    }

    #[test]
    fn payload_len_counts_the_strings_it_carries() {
        let r = CommandResult::ok("c1", ToolResult::text("héllo"));
        assert_eq!(r.payload_len(), 2 + 6);
        let json_len = serde_json::to_string(&r).expect("serializes").len();
        assert!(json_len > r.payload_len() && json_len < r.payload_len() + 100);
        assert_eq!(CommandResult::error("c2", "no").payload_len(), 4);
    }

    #[test]
    fn command_example_round_trips() {
        let c: Command = round_trip(
            json!({"id": "c1", "tool": "navigate", "args": {"url": "https://example.com", "tabId": 7}}),
        );
        assert_eq!(c.tool, "navigate");
        assert_eq!(c.args["tabId"], 7);
    }

    #[test]
    fn command_without_args_has_empty_args() {
        let c: Command = serde_json::from_str(r#"{"id":"1","tool":"tabs_create_mcp"}"#).unwrap();
        assert!(c.args.is_empty());
    }

    #[test]
    fn result_examples_round_trip() {
        let ok: CommandResult = round_trip(json!({"commandId": "c1", "result": {"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "aGk=", "mimeType": "image/jpeg"}
        ]}}));
        assert!(matches!(ok.outcome, Outcome::Result { ref result } if result.content.len() == 2));
        let err: CommandResult =
            round_trip(json!({"commandId": "c2", "error": "Unknown tool: nope"}));
        assert_eq!(err, CommandResult::error("c2", "Unknown tool: nope"));
    }

    #[test]
    fn content_block_examples_round_trip() {
        let t: ContentBlock = round_trip(json!({"type": "text", "text": "string"}));
        assert_eq!(t, ContentBlock::text("string"));
        let i: ContentBlock =
            round_trip(json!({"type": "image", "data": "<base64>", "mimeType": "image/jpeg"}));
        assert!(matches!(i, ContentBlock::Image { .. }));
    }

    #[test]
    fn joined_text_skips_images() {
        let r = ToolResult {
            content: vec![
                ContentBlock::text("a"),
                ContentBlock::Image {
                    data: String::new(),
                    mime_type: "image/png".into(),
                },
                ContentBlock::text("b"),
            ],
        };
        assert_eq!(r.joined_text(), "a\nb");
    }
}
