//! The WebSocket transport's JSON frames.

use crate::message::{kind, take, top_level_field, Command, Malformed, Outcome};
use serde::{de, Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// Close code with which a backend rejects a token; the extension clears it and stops.
pub const CLOSE_UNAUTHORIZED: u16 = 4001;
/// Close code with which a backend refuses a second live connection for the same target.
pub const CLOSE_TARGET_TAKEN: u16 = 4009;

/// Backend → extension. Read by hand (as serde's derive of the internally tagged enum reads it,
/// without the `Content` buffering that costs the worker's wasm).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// Optional acknowledgement of the `auth` frame.
    AuthOk,
    Command {
        id: String,
        tool: String,
        #[serde(default)]
        args: Map<String, Value>,
        /// See [`Command::agent`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
    Error {
        message: String,
    },
    /// A frame type this version does not know: ignored, never fatal.
    #[serde(other)]
    Unknown,
}

impl<'de> Deserialize<'de> for ServerFrame {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::<String, Value>::deserialize(d)?;
        let kind: String = take(&mut m, "type")?;
        Ok(match kind.as_str() {
            "auth_ok" => ServerFrame::AuthOk,
            "command" => ServerFrame::Command {
                id: take(&mut m, "id")?,
                tool: take(&mut m, "tool")?,
                args: match m.remove("args") {
                    Some(v) => crate::json::from_value(v).map_err(de::Error::custom)?,
                    None => Map::new(),
                },
                agent: match m.remove("agent") {
                    Some(v) => crate::json::from_value(v).map_err(de::Error::custom)?,
                    None => None,
                },
            },
            "error" => ServerFrame::Error {
                message: take(&mut m, "message")?,
            },
            _ => ServerFrame::Unknown,
        })
    }
}

impl ServerFrame {
    pub fn command(c: Command) -> Self {
        ServerFrame::Command {
            id: c.id,
            tool: c.tool,
            args: c.args,
            agent: c.agent,
        }
    }
}

impl ServerFrame {
    /// Reads a frame as liberally as the protocol allows: unknown types and extra fields are
    /// ignored; a `command` frame (or a frame without a type that carries an id) that can't be
    /// run is `Err` with the id when one could be read, so it is answered with an error rather
    /// than dropped. Other broken frames are `Err` without an id (logged, nothing to answer).
    pub fn parse(text: &str) -> Result<ServerFrame, Malformed> {
        let typ = top_level_field(text, "type").map(serde_json::from_str::<Value>);
        let is_command = match &typ {
            Some(Ok(Value::String(t))) => t == "command",
            None => top_level_field(text, "id").is_some(),
            Some(_) => false,
        };
        if is_command {
            return Command::parse(text).map(ServerFrame::command);
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => {
                if !matches!(o.get("type"), Some(Value::String(_))) {
                    return Err(Malformed {
                        id: None,
                        error: "a frame without a string `type`".into(),
                    });
                }
                crate::json::from_value(Value::Object(o)).map_err(|e| Malformed {
                    id: None,
                    error: format!("a malformed frame ({e})"),
                })
            }
            Ok(other) => Err(Malformed {
                id: None,
                error: format!("a frame that is {} rather than an object", kind(&other)),
            }),
            Err(e) => Err(Malformed {
                id: None,
                error: format!("a frame that is not JSON ({e})"),
            }),
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
        /// See [`crate::CommandResult::paused`].
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        paused: bool,
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
                },
                paused: false,
            }
        );
        extension(json!({"type": "result", "commandId": "1", "error": "boom"}));
        // A result the person's Stop caused says so; one without the field is not paused.
        assert!(matches!(
            extension(
                json!({"type": "result", "commandId": "1", "error": "Stopped by the user", "paused": true})
            ),
            ExtensionFrame::Result { paused: true, .. }
        ));
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
    fn command_frames_that_cannot_run_are_answered_by_id() {
        let e = ServerFrame::parse(r#"{"type":"command","id":"x1","tool":"navigate","args":"go"}"#)
            .expect_err("args not an object");
        assert_eq!(e.id.as_deref(), Some("x1"));
        assert!(
            e.error.contains("`args` must be an object, got a string"),
            "{}",
            e.error
        );
        let e = ServerFrame::parse(r#"{"type":"command","id":"x2"}"#).expect_err("no tool");
        assert_eq!(e.id.as_deref(), Some("x2"));
        // No type but an id: taken as a command.
        let e = ServerFrame::parse(r#"{"id":"x3","tool":[]}"#).expect_err("tool not a string");
        assert_eq!(e.id.as_deref(), Some("x3"));
        // Unknown types stay ignored, even with an id.
        assert_eq!(
            ServerFrame::parse(r#"{"type":"cancel","id":"x4"}"#),
            Ok(ServerFrame::Unknown)
        );
        // Nothing to answer: no id.
        for bad in ["", "{", "[]", "7", r#"{"type":"error"}"#, r#"{"type":5}"#] {
            assert_eq!(ServerFrame::parse(bad).expect_err(bad).id, None, "{bad}");
        }
        assert!(matches!(
            ServerFrame::parse(r#"{"type":"command","id":"ok","tool":"t","args":{"a":1}}"#),
            Ok(ServerFrame::Command { ref id, .. }) if id == "ok"
        ));
        assert_eq!(
            ServerFrame::parse(r#"{"type":"auth_ok"}"#),
            Ok(ServerFrame::AuthOk)
        );
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
