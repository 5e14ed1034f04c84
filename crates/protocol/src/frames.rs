//! The WebSocket transport's JSON frames.

use crate::message::{Command, Outcome};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Close code with which a backend rejects a token; the extension clears it and stops.
pub const CLOSE_UNAUTHORIZED: u16 = 4001;
/// Close code with which a backend refuses a second live connection for the same target.
pub const CLOSE_TARGET_TAKEN: u16 = 4009;

/// Backend → extension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// Optional acknowledgement of the `auth` frame.
    AuthOk,
    Command {
        id: String,
        tool: String,
        #[serde(default)]
        args: Map<String, Value>,
    },
    Error {
        message: String,
    },
    /// A frame type this version does not know: ignored, never fatal.
    #[serde(other)]
    Unknown,
}

impl ServerFrame {
    pub fn command(c: Command) -> Self {
        ServerFrame::Command {
            id: c.id,
            tool: c.tool,
            args: c.args,
        }
    }
}

/// Extension → backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtensionFrame {
    /// The first frame after the socket opens.
    Auth {
        token: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        target: Option<String>,
    },
    Result {
        #[serde(rename = "commandId")]
        command_id: String,
        #[serde(flatten)]
        outcome: Outcome,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolResult;
    use serde_json::json;

    fn server(v: Value) -> ServerFrame {
        let f: ServerFrame = serde_json::from_value(v.clone()).expect("parses");
        assert_eq!(serde_json::to_value(&f).unwrap(), v, "round trip");
        f
    }

    fn extension(v: Value) -> ExtensionFrame {
        let f: ExtensionFrame = serde_json::from_value(v.clone()).expect("parses");
        assert_eq!(serde_json::to_value(&f).unwrap(), v, "round trip");
        f
    }

    #[test]
    fn protocol_examples_round_trip() {
        assert_eq!(
            extension(json!({"type": "auth", "token": "string", "target": "string?"})),
            ExtensionFrame::Auth {
                token: "string".into(),
                target: Some("string?".into())
            }
        );
        extension(json!({"type": "auth", "token": "t"}));
        assert_eq!(server(json!({"type": "auth_ok"})), ServerFrame::AuthOk);
        let cmd =
            server(json!({"type": "command", "id": "1", "tool": "navigate", "args": {"url": "x"}}));
        assert!(matches!(cmd, ServerFrame::Command { ref tool, .. } if tool == "navigate"));
        server(json!({"type": "error", "message": "string"}));
        let r = extension(
            json!({"type": "result", "commandId": "1", "result": {"content": [{"type": "text", "text": "ok"}]}}),
        );
        assert_eq!(
            r,
            ExtensionFrame::Result {
                command_id: "1".into(),
                outcome: Outcome::Result {
                    result: ToolResult::text("ok")
                }
            }
        );
        extension(json!({"type": "result", "commandId": "1", "error": "boom"}));
    }

    #[test]
    fn unknown_frames_and_extra_fields_are_tolerated() {
        let f: ServerFrame = serde_json::from_str(r#"{"type":"ping","x":1}"#).unwrap();
        assert_eq!(f, ServerFrame::Unknown);
        let f: ServerFrame = serde_json::from_str(r#"{"type":"auth_ok","session":"s"}"#).unwrap();
        assert_eq!(f, ServerFrame::AuthOk);
        let f: ServerFrame =
            serde_json::from_str(r#"{"type":"command","id":"9","tool":"tabs_create_mcp"}"#)
                .unwrap();
        assert!(matches!(f, ServerFrame::Command { ref args, .. } if args.is_empty()));
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for bad in [
            "",
            "{",
            "[]",
            r#"{"id":"1"}"#,
            r#"{"type":"command","tool":"x"}"#,
            r#"{"type":"command","id":1,"tool":"x"}"#,
        ] {
            assert!(serde_json::from_str::<ServerFrame>(bad).is_err(), "{bad}");
        }
    }
}
