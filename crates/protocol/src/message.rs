//! Commands (backend → extension) and their results (extension → backend).

use serde::{de, Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// One tool invocation. `id` is echoed back as `commandId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    pub id: String,
    pub tool: String,
    /// Tool-specific arguments; a missing `args` is an empty object.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The agent the backend acts for, when one backend serves several (an MCP server's client
    /// sessions): the extension gives each agent of a connection its own tab group. Optional;
    /// a backend that serves one agent leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// The longest `agent` name accepted.
pub const MAX_AGENT_CHARS: usize = 64;

/// The largest command the extension reads, as JSON text (a frame, an SSE event, one command
/// of a poll batch). A bigger one is answered with an error, not run.
pub const MAX_COMMAND_BYTES: usize = 4 << 20;
/// The most bytes of files (decoded) one `file_upload` command may carry, in all. As base64
/// they are about 1.4 MB: well within [`MAX_COMMAND_BYTES`].
pub const FILE_UPLOAD_MAX_BYTES: usize = 1 << 20;
/// The deepest nesting of a command's JSON that is read (serde_json's own bound).
pub const MAX_COMMAND_DEPTH: usize = 128;
/// The longest command id accepted.
pub const MAX_ID_CHARS: usize = 1024;

/// A command that can't be run as sent: the id when one could be read (then it is answered
/// with `error`), and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub id: Option<String>,
    pub error: String,
}

impl Malformed {
    fn new(id: Option<String>, what: impl std::fmt::Display) -> Malformed {
        Malformed {
            id,
            error: format!("Malformed command: {what}. Send {{\"id\": string, \"tool\": string, \"args\": object}}."),
        }
    }
}

impl Command {
    /// Reads a command leniently enough to recover its id: whatever else is wrong (no `tool`,
    /// `args` that are not an object, invalid or too deeply nested JSON, too large), a frame
    /// that carries an id gets an error answer instead of being dropped.
    pub fn parse(text: &str) -> Result<Command, Malformed> {
        if text.len() > MAX_COMMAND_BYTES {
            return Err(Malformed::new(
                scan_id(text),
                format!(
                    "{} bytes is more than the {} MiB a command may have",
                    text.len(),
                    MAX_COMMAND_BYTES >> 20
                ),
            ));
        }
        match serde_json::from_str::<Value>(text) {
            Ok(v) => Command::from_value(v),
            Err(e) if e.to_string().contains("recursion limit") => Err(Malformed::new(
                scan_id(text),
                format!("its JSON is nested deeper than the {MAX_COMMAND_DEPTH} levels the extension reads"),
            )),
            Err(e) => Err(Malformed::new(scan_id(text), format!("not valid JSON ({e})"))),
        }
    }

    /// [`Command::parse`] for JSON already read.
    pub fn from_value(v: Value) -> Result<Command, Malformed> {
        let Value::Object(mut o) = v else {
            return Err(Malformed::new(
                None,
                format!("expected an object, got {}", kind(&v)),
            ));
        };
        let id = match o.remove("id") {
            Some(Value::String(s)) if s.chars().count() > MAX_ID_CHARS => {
                return Err(Malformed::new(
                    Some(s),
                    format!("`id` is longer than {MAX_ID_CHARS} characters"),
                ))
            }
            Some(Value::String(s)) => s,
            Some(Value::Number(n)) => {
                return Err(Malformed::new(
                    Some(n.to_string()),
                    "`id` must be a string, got a number",
                ))
            }
            None | Some(Value::Null) => return Err(Malformed::new(None, "it has no `id`")),
            Some(other) => {
                return Err(Malformed::new(
                    None,
                    format!("`id` must be a string, got {}", kind(&other)),
                ))
            }
        };
        let tool = match o.remove("tool") {
            Some(Value::String(t)) => t,
            None | Some(Value::Null) => return Err(Malformed::new(Some(id), "`tool` is missing")),
            Some(other) => {
                return Err(Malformed::new(
                    Some(id),
                    format!(
                        "`tool` must be a string naming a tool, got {}",
                        kind(&other)
                    ),
                ))
            }
        };
        let args = match o.remove("args") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a,
            Some(other) => {
                return Err(Malformed::new(
                    Some(id),
                    format!("`args` must be an object, got {}", kind(&other)),
                ))
            }
        };
        let agent = match o.remove("agent") {
            None | Some(Value::Null) => None,
            Some(Value::String(a))
                if !a.is_empty()
                    && a.chars().count() <= MAX_AGENT_CHARS
                    && !a.chars().any(char::is_control) =>
            {
                Some(a)
            }
            Some(Value::String(_)) => {
                return Err(Malformed::new(
                    Some(id),
                    format!(
                    "`agent` must be 1 to {MAX_AGENT_CHARS} characters without control characters"
                ),
                ))
            }
            Some(other) => {
                return Err(Malformed::new(
                    Some(id),
                    format!("`agent` must be a string, got {}", kind(&other)),
                ))
            }
        };
        Ok(Command {
            id,
            tool,
            args,
            agent,
        })
    }
}

/// A polling answer `{"commands": [...]}`: each command read as [`Command::parse`] does, so one
/// broken or too deeply nested command is answered by its id and the others still run. `Err`
/// when the answer is not a batch at all.
pub fn parse_batch(text: &str) -> Result<Vec<Result<Command, Malformed>>, String> {
    #[derive(Deserialize)]
    struct Batch {
        #[serde(default)]
        commands: Vec<Value>,
    }
    match serde_json::from_str(text).and_then(crate::json::from_value::<Batch>) {
        Ok(b) => Ok(b.commands.into_iter().map(Command::from_value).collect()),
        Err(e) => {
            let list = top_level_field(text, "commands")
                .filter(|raw| raw.starts_with('['))
                .and_then(top_level_members)
                .ok_or_else(|| format!("not a command batch ({e})"))?;
            Ok(list
                .into_iter()
                .map(|(_, raw)| Command::parse(raw))
                .collect())
        }
    }
}

/// "an array", "a string", … for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The raw JSON text of each member of the object or array `text` holds (for an array, the key
/// is `None`), found without recursion, so JSON nested too deeply to parse still gives its
/// top-level members. `None` when `text` is not an object or array up to where it was read.
pub fn top_level_members(text: &str) -> Option<Vec<(Option<String>, &str)>> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    let object = match b.get(i)? {
        b'{' => true,
        b'[' => false,
        _ => return None,
    };
    i += 1;
    let mut out = Vec::new();
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' | b']' => return Some(out),
            b',' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let key = if object {
            let end = skip_string(b, i)?;
            let key: String = serde_json::from_str(&text[i..end]).ok()?;
            i = skip_ws(b, end);
            if b.get(i)? != &b':' {
                return None;
            }
            i = skip_ws(b, i + 1);
            Some(key)
        } else {
            None
        };
        let end = skip_value(b, i)?;
        out.push((key, &text[i..end]));
        i = end;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The end of the string starting at `b[i] == '"'`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i)? != &b'"' {
        return None;
    }
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end of the value starting at `i`: a counter, not recursion, tracks the nesting.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match b.get(i)? {
            b'"' => i = skip_string(b, i)?,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' if depth == 0 => return Some(i),
            b'}' | b']' => {
                depth -= 1;
                i += 1;
            }
            b',' if depth == 0 => return Some(i),
            c if depth == 0 && c.is_ascii_whitespace() => return Some(i),
            _ => i += 1,
        }
        if depth == 0 && matches!(b.get(i - 1), Some(b'"' | b'}' | b']')) {
            return Some(i);
        }
    }
}

/// The string `id` of the object `text` holds, however broken the rest is.
pub fn scan_id(text: &str) -> Option<String> {
    top_level_field(text, "id").and_then(|raw| match serde_json::from_str::<Value>(raw).ok()? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// The raw text of one top-level field, when the object can be scanned up to it.
pub fn top_level_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    // A truncated or broken object still yields the members before the break.
    let mut found = None;
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i)? != &b'{' {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b',') => {
                i += 1;
                continue;
            }
            Some(b'"') => {}
            _ => return found,
        }
        let end = skip_string(b, i)?;
        let key: Option<String> = serde_json::from_str(&text[i..end]).ok();
        i = skip_ws(b, end);
        if b.get(i) != Some(&b':') {
            return found;
        }
        i = skip_ws(b, i + 1);
        let Some(vend) = skip_value(b, i) else {
            return found;
        };
        if key.as_deref() == Some(name) && found.is_none() {
            found = Some(&text[i..vend]);
        }
        i = vend;
    }
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

/// Read by hand (as serde's derive would read it): the derive buffers tagged and untagged
/// enums through serde's `Content`, which made these three types a tenth of the worker's
/// serde code.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Result { result: ToolResult },
    Error { error: String },
}

/// `{commandId, result: {content}}` or `{commandId, error}`; an error the person caused by
/// pausing the browser (Stop in the popup) also says `"paused": true` (**added**; a backend
/// that does not know it ignores it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandResult {
    #[serde(rename = "commandId")]
    pub command_id: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The person stopped this command, or it came while they had paused the browser.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
}

/// `key`'s value, read as a `T`; serde's "missing field" when absent.
pub(crate) fn take<T: de::DeserializeOwned, E: de::Error>(
    m: &mut Map<String, Value>,
    key: &'static str,
) -> Result<T, E> {
    match m.remove(key) {
        Some(v) => crate::json::from_value(v).map_err(E::custom),
        None => Err(E::missing_field(key)),
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::<String, Value>::deserialize(d)?;
        let kind: String = take(&mut m, "type")?;
        match kind.as_str() {
            "text" => Ok(ContentBlock::Text {
                text: take(&mut m, "text")?,
            }),
            "image" => Ok(ContentBlock::Image {
                data: take(&mut m, "data")?,
                mime_type: take(&mut m, "mimeType")?,
            }),
            other => Err(de::Error::unknown_variant(other, &["text", "image"])),
        }
    }
}

/// The untagged enum's reading: `result` when it reads as a tool result, else `error`.
fn outcome_of<E: de::Error>(mut m: Map<String, Value>) -> Result<Outcome, E> {
    if let Some(r) = m.remove("result") {
        if let Ok(result) = crate::json::from_value::<ToolResult>(r) {
            return Ok(Outcome::Result { result });
        }
    }
    match m.remove("error") {
        Some(Value::String(error)) => Ok(Outcome::Error { error }),
        _ => Err(E::custom(
            "data did not match any variant of untagged enum Outcome",
        )),
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        outcome_of(Map::<String, Value>::deserialize(d)?)
    }
}

impl<'de> Deserialize<'de> for CommandResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::<String, Value>::deserialize(d)?;
        let command_id = take(&mut m, "commandId")?;
        let paused = m
            .remove("paused")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        Ok(CommandResult {
            command_id,
            outcome: outcome_of(m)?,
            paused,
        })
    }
}

impl CommandResult {
    pub fn ok(command_id: impl Into<String>, result: ToolResult) -> Self {
        CommandResult {
            command_id: command_id.into(),
            outcome: Outcome::Result { result },
            paused: false,
        }
    }

    pub fn error(command_id: impl Into<String>, error: impl Into<String>) -> Self {
        CommandResult {
            command_id: command_id.into(),
            outcome: Outcome::Error {
                error: error.into(),
            },
            paused: false,
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
    fn results_read_as_the_derive_read_them() {
        let r: CommandResult = serde_json::from_str(
            r#"{"commandId":"c","result":{"content":[{"type":"text","text":"t"},{"type":"image","data":"d","mimeType":"image/png","x":1}]},"extra":1}"#,
        )
        .unwrap();
        assert_eq!(r.payload_len(), 1 + 1 + 1 + 9);
        let e: CommandResult =
            crate::json::from_value(json!({"commandId": "c", "result": 5, "error": "no"})).unwrap();
        assert_eq!(e, CommandResult::error("c", "no"));
        let f: crate::ExtensionFrame =
            serde_json::from_value(json!({"type": "result", "commandId": "c", "error": "e"}))
                .unwrap();
        assert!(matches!(
            f,
            crate::ExtensionFrame::Result {
                outcome: Outcome::Error { .. },
                ..
            }
        ));
        for (bad, says) in [
            (
                json!({"result": {"content": []}}),
                "missing field `commandId`",
            ),
            (
                json!({"commandId": "c"}),
                "did not match any variant of untagged enum Outcome",
            ),
            (
                json!({"commandId": "c", "error": 3}),
                "did not match any variant",
            ),
        ] {
            let e = serde_json::from_value::<CommandResult>(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
        for (bad, says) in [
            (json!({"text": "t"}), "missing field `type`"),
            (
                json!({"type": "audio"}),
                "unknown variant `audio`, expected `text` or `image`",
            ),
            (
                json!({"type": "image", "data": "d"}),
                "missing field `mimeType`",
            ),
            (
                json!({"type": "text", "text": 1}),
                "invalid type: integer `1`, expected a string",
            ),
        ] {
            let e = crate::json::from_value::<ContentBlock>(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
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

    /// `agent` is optional, read when it is a name, and a command with a bad one is answered by
    /// its id; a command without one is written without it.
    #[test]
    fn the_agent_is_optional_and_checked() {
        let c = Command::parse(r#"{"id":"1","tool":"t","agent":"claude-code 2"}"#).unwrap();
        assert_eq!(c.agent.as_deref(), Some("claude-code 2"));
        let plain = Command::parse(r#"{"id":"1","tool":"t"}"#).unwrap();
        assert_eq!(plain.agent, None);
        assert!(!serde_json::to_string(&plain).unwrap().contains("agent"));
        let long = format!("\"{}\"", "x".repeat(65));
        for bad in ["\"\"", "\"a\\u0007b\"", "7", long.as_str()] {
            let text = format!(r#"{{"id":"9","tool":"t","agent":{bad}}}"#);
            let m = Command::parse(&text).unwrap_err();
            assert_eq!(m.id.as_deref(), Some("9"), "{text}");
            assert!(m.error.contains("`agent`"), "{}", m.error);
        }
    }

    #[test]
    fn malformed_commands_keep_their_id_and_say_what_is_wrong() {
        let err = |text: &str| Command::parse(text).expect_err(text);
        let e = err(r#"{"id":"a","tool":"navigate","args":[1]}"#);
        assert_eq!(e.id.as_deref(), Some("a"));
        assert!(
            e.error.contains("`args` must be an object, got an array"),
            "{}",
            e.error
        );
        let e = err(r#"{"id":"b","args":{}}"#);
        assert_eq!(e.id.as_deref(), Some("b"));
        assert!(e.error.contains("`tool` is missing"), "{}", e.error);
        let e = err(r#"{"id":"c","tool":7}"#);
        assert!(e
            .error
            .contains("`tool` must be a string naming a tool, got a number"));
        let e = err(r#"{"id":5,"tool":"x"}"#);
        assert_eq!(e.id.as_deref(), Some("5"));
        assert_eq!(err(r#"{"tool":"x"}"#).id, None);
        assert_eq!(err(r#"[1,2]"#).id, None);
        // Deeper than serde_json reads: the id is still found.
        let deep = format!(
            r#"{{"tool":"x","args":{{"a":{}1{}}},"id":"deep"}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        let e = err(&deep);
        assert_eq!(e.id.as_deref(), Some("deep"));
        assert!(
            e.error.contains("nested deeper than the 128 levels"),
            "{}",
            e.error
        );
        // Broken JSON after the id.
        let e = err(r#"{"id":"br\"oken","tool":"x","args":{"#);
        assert_eq!(e.id.as_deref(), Some("br\"oken"));
        assert!(e.error.contains("not valid JSON"), "{}", e.error);
        // Too large: refused before it is parsed.
        let big = format!(
            r#"{{"id":"big","tool":"x","args":{{"t":"{}"}}}}"#,
            "x".repeat(MAX_COMMAND_BYTES)
        );
        let e = err(&big);
        assert_eq!(e.id.as_deref(), Some("big"));
        assert!(e.error.contains("4 MiB"), "{}", e.error);
        let e = err(&format!(r#"{{"id":"{}","tool":"x"}}"#, "i".repeat(2000)));
        assert!(e.error.contains("longer than 1024"), "{}", e.error);
        // Null args are empty args.
        let c = Command::parse(r#"{"id":"n","tool":"x","args":null}"#).expect("null args");
        assert!(c.args.is_empty());
    }

    #[test]
    fn a_broken_command_in_a_batch_is_answered_and_the_others_run() {
        let deep = format!(
            r#"{{"commands":[{{"id":"1","tool":"a"}},{{"id":"2","tool":"b","args":{}{}}},{{"id":"3","tool":"c","args":7}}]}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let got = parse_batch(&deep).expect("a batch");
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].as_ref().map(|c| c.tool.as_str()), Ok("a"));
        assert_eq!(got[1].as_ref().unwrap_err().id.as_deref(), Some("2"));
        assert_eq!(got[2].as_ref().unwrap_err().id.as_deref(), Some("3"));
        assert!(parse_batch(r#"{"commands":[]}"#).unwrap().is_empty());
        assert!(parse_batch(r#"{}"#).unwrap().is_empty());
        assert!(parse_batch("<html>").is_err());
    }

    #[test]
    fn top_level_members_are_found_without_recursion() {
        let deep = format!(
            r#"{{"commands":[{{"id":"1"}}, {{"id":"2","a":{}{}}}, 3, "s,]"]}}"#,
            "[".repeat(1000),
            "]".repeat(1000)
        );
        let m = top_level_members(&deep).expect("an object");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0.as_deref(), Some("commands"));
        let items = top_level_members(m[0].1).expect("an array");
        assert_eq!(items.len(), 4);
        assert_eq!(items[0].1, r#"{"id":"1"}"#);
        assert_eq!(scan_id(items[1].1).as_deref(), Some("2"));
        assert_eq!(items[2].1, "3");
        assert_eq!(items[3].1, r#""s,]""#);
        assert_eq!(top_level_members("nope"), None);
        assert_eq!(top_level_members(r#"{"a":"#), None);
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
