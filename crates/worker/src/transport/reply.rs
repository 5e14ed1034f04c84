//! A command's result as the wire carries it: its JSON text (`{commandId, result | error,
//! paused?}`: the HTTP transports' POST body, and after `"type":"result"` the WebSocket frame),
//! made once when the command ends and kept as a JS string. Every transport sends it as it is,
//! the outbox stores it as it is, a redelivered id is answered with it, and a page's text goes
//! into it without entering wasm memory ([`Reply::page_text`]).

use js_sys::JsString;
use protocol::{CommandResult, ToolResult};
use wasm_bindgen::JsValue;

/// A result's JSON text, and the id the session keeps its command by (which connection's
/// it is; the JSON holds the backend's own id).
#[derive(Clone, Debug)]
pub struct Reply {
    id: String,
    /// The JSON after its opening brace: each transport puts its own opening before it (the
    /// WebSocket frame its type), and Chrome copies the two into one string once, as it sends.
    fields: JsString,
    /// Its size: the UTF-8 bytes of JSON made in wasm; for one a page's text went into, that
    /// text's UTF-16 length (its bytes for ASCII text, fewer otherwise: measuring a text in
    /// JS would copy it).
    size: usize,
}

/// What the WebSocket frame has before the result's own fields.
const FRAME_HEAD: &str = r#"{"type":"result","#;

impl Reply {
    /// `result`, whose `command_id` is the backend's id, kept by the session's `id`.
    pub fn of(id: String, result: &CommandResult) -> Reply {
        let json = json_of(result);
        Reply {
            id,
            size: json.len(),
            fields: JsString::from(json.get(1..).unwrap_or_default()),
        }
    }

    /// The result of a command whose answer is one text a page wrote: the text is quoted by
    /// `JSON.stringify` into the result's JSON, never copied into wasm memory and out again
    /// (get_page_text's 50,000 characters held the worker 0.5 ms that way).
    pub fn page_text(id: String, command_id: &str, text: &JsString) -> Reply {
        let (head, tail) = text_envelope(command_id);
        match js_sys::JSON::stringify(text) {
            Ok(quoted) => Reply {
                id,
                size: head.len() + quoted.length() as usize + tail.len(),
                fields: JsString::from(head.get(1..).unwrap_or_default())
                    .concat(&quoted)
                    .concat(&JsValue::from_str(tail)),
            },
            // Not reached for a string; the result is made the slow way then.
            Err(_) => Reply::of(
                id,
                &CommandResult::ok(command_id, ToolResult::text(String::from(text))),
            ),
        }
    }

    /// The session's id of the command.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The JSON text (an HTTP transport's POST body).
    pub fn json(&self) -> JsString {
        JsString::from("{").concat(&self.fields)
    }

    /// Its size (see [`Reply`]), for the bounds of the outbox and of the results kept.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The WebSocket `result` frame: the type, then the result's fields.
    pub fn frame(&self) -> JsString {
        JsString::from(FRAME_HEAD).concat(&self.fields)
    }
}

fn json_of(result: &CommandResult) -> String {
    // A result is strings and a bool: serializing it cannot fail.
    serde_json::to_string(result).unwrap_or_default()
}

/// The JSON of a one-text result of `command_id` around the quoted text.
fn text_envelope(command_id: &str) -> (String, &'static str) {
    let id = serde_json::to_string(command_id).unwrap_or_default();
    (
        format!(r#"{{"commandId":{id},"result":{{"content":[{{"type":"text","text":"#),
        "}]}}",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ExtensionFrame;

    /// A page's text quoted into the envelope is the JSON serde writes for the same result,
    /// whatever the id holds.
    #[test]
    fn a_page_text_result_is_the_result_serde_writes() {
        for id in ["c1", "with \"quotes\" and \u{1e} a separator"] {
            let text = "Title: x\n\"quoted\" \\ é \u{1}";
            let (head, tail) = text_envelope(id);
            let quoted = serde_json::to_string(text).unwrap();
            assert_eq!(
                format!("{head}{quoted}{tail}"),
                json_of(&CommandResult::ok(id, ToolResult::text(text)))
            );
        }
    }

    /// The frame is the type, then the result's JSON after its opening brace: what serde
    /// writes for the protocol's `result` frame, for results, errors and paused ones.
    #[test]
    fn the_websocket_frame_is_the_protocol_frame() {
        let paused = CommandResult {
            paused: true,
            ..CommandResult::error("c3", "Stopped by the user")
        };
        for r in [
            CommandResult::ok("c1", ToolResult::text("ok")),
            CommandResult::error("c2", "boom"),
            paused,
        ] {
            let json = json_of(&r);
            assert!(json.starts_with('{'));
            let frame = ExtensionFrame::Result {
                command_id: r.command_id.clone(),
                outcome: r.outcome.clone(),
                paused: r.paused,
            };
            assert_eq!(
                format!("{FRAME_HEAD}{}", &json[1..]),
                serde_json::to_string(&frame).unwrap()
            );
        }
    }
}
