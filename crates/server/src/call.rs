//! The `call` client: sends one tool call to a running server's `POST /commands` and renders
//! the result for a terminal.

use protocol::{CommandResult, ContentBlock, ToolResult};
use serde_json::{json, Map, Value};
use std::fmt;
use std::time::Duration;

/// Largest response body read (a full-page screenshot in base64 fits comfortably).
const MAX_RESPONSE: u64 = 64 << 20;
/// Extra time the HTTP request gets beyond the command's own timeout, so the server's 504
/// arrives before the client gives up.
const HTTP_MARGIN: Duration = Duration::from_secs(10);

/// One call to make.
#[derive(Clone)]
pub struct Call {
    /// The server's base URL, e.g. `http://127.0.0.1:8787`.
    pub url: String,
    pub token: String,
    pub tool: String,
    pub args: Map<String, Value>,
    pub target: Option<String>,
    /// Sent as `timeoutMs`; `None` leaves the server's default.
    pub timeout: Option<Duration>,
    /// Sent as `agent` when set: the agent (its own tab group) the command acts for.
    pub agent: Option<String>,
    /// Sent as `id` when set: a retry with the same id runs the command at most once.
    pub id: Option<String>,
}

/// The server's answer to a call that reached the browser.
#[derive(Debug, Clone)]
pub struct Answer {
    pub result: CommandResult,
    /// The response body exactly as received.
    pub raw: String,
}

/// Why a call produced no result.
#[derive(Debug)]
pub enum CallError {
    /// No server answered at this URL.
    Unreachable {
        url: String,
    },
    /// The server answered with an error status.
    Http {
        status: u16,
        message: String,
    },
    InvalidUrl {
        url: String,
        reason: String,
    },
    /// The server accepted the request but never answered.
    NoAnswer {
        url: String,
    },
    /// The server answered 200 with something that isn't a command result.
    UnexpectedAnswer(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Unreachable { url } => write!(
                f,
                "Cannot reach the Browser Operator server at {url}: is `browser-operator serve` running?"
            ),
            CallError::Http { status: 401, message } => write!(
                f,
                "The server refused the token (HTTP 401: {message}). Use the token `browser-operator serve` printed (`browser-operator token` shows it), or pass --token."
            ),
            CallError::Http { status, message } => write!(f, "{message} (HTTP {status})"),
            CallError::InvalidUrl { url, reason } => write!(f, "Invalid server URL {url}: {reason}"),
            CallError::NoAnswer { url } => {
                write!(f, "The Browser Operator server at {url} did not answer in time.")
            }
            CallError::UnexpectedAnswer(why) => {
                write!(f, "Unexpected answer from the server: {why}")
            }
        }
    }
}

impl std::error::Error for CallError {}

/// Parses the `args` argument: a JSON object.
pub fn parse_args(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "The arguments must be a JSON object like '{{\"tabId\": 1}}', not {}.",
            protocol::message::kind(&other)
        )),
        Err(e) => Err(format!("The arguments are not valid JSON ({e}).")),
    }
}

/// The server's base URL: `--url` if given (a `ws://…/ws` URL from the Options page works
/// too), else `http://127.0.0.1:<port>`.
pub fn base_url(url: Option<&str>, port: u16) -> String {
    match url {
        None => format!("http://127.0.0.1:{port}"),
        Some(u) => {
            let u = u.trim().trim_end_matches('/');
            let u = if let Some(rest) = u.strip_prefix("ws://") {
                format!("http://{}", rest.strip_suffix("/ws").unwrap_or(rest))
            } else if let Some(rest) = u.strip_prefix("wss://") {
                format!("https://{}", rest.strip_suffix("/ws").unwrap_or(rest))
            } else {
                u.to_string()
            };
            if u.contains("://") {
                u
            } else {
                format!("http://{u}")
            }
        }
    }
}

/// Makes the call and waits for the answer.
pub fn call(call: &Call) -> Result<Answer, CallError> {
    let url = call.url.trim_end_matches('/').to_string();
    let mut body = json!({ "tool": call.tool, "args": call.args });
    if let Some(id) = &call.id {
        body["id"] = json!(id);
    }
    if let Some(agent) = &call.agent {
        body["agent"] = json!(agent);
    }
    if let Some(target) = &call.target {
        body["target"] = json!(target);
    }
    if let Some(t) = call.timeout {
        body["timeoutMs"] = json!(t.as_millis().max(1) as u64);
    }
    // The server may wait longer than asked for a tool that declares a longer limit.
    let asked = call
        .timeout
        .unwrap_or(crate::api::MAX_COMMAND_TIMEOUT)
        .min(crate::api::MAX_COMMAND_TIMEOUT);
    let (waits, _) = crate::relay::wait_for(
        &call.tool,
        &call.args,
        asked,
        crate::relay::WaitBound::Request,
    );
    let http_timeout = waits + HTTP_MARGIN;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(http_timeout))
        .build()
        .into();
    let response = agent
        .post(format!("{url}/commands"))
        .header("Authorization", format!("Bearer {}", call.token))
        .send_json(&body);
    let mut response = match response {
        Ok(r) => r,
        Err(e) => return Err(transport_error(&url, e)),
    };
    let status = response.status().as_u16();
    let raw = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE)
        .read_to_string()
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => CallError::NoAnswer { url: url.clone() },
            other => CallError::UnexpectedAnswer(format!("cannot read the response: {other}")),
        })?;
    if status != 200 {
        let message = serde_json::from_str::<Value>(&raw)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| {
                let text = raw.trim();
                if text.is_empty() {
                    "The server answered with an error".to_string()
                } else {
                    text.chars().take(500).collect()
                }
            });
        return Err(CallError::Http { status, message });
    }
    let result = serde_json::from_str::<CommandResult>(&raw)
        .map_err(|e| CallError::UnexpectedAnswer(e.to_string()))?;
    Ok(Answer { result, raw })
}

/// `GET /status` of the server at `url`.
pub fn status(url: &str, token: &str) -> Result<Value, CallError> {
    small_request(url, "/status", token, None)
}

/// `POST /disconnect` with `body` (`{"target": …}` or `{"tokenId": …}`, `"reason"`).
pub fn disconnect(url: &str, token: &str, body: Value) -> Result<Value, CallError> {
    small_request(url, "/disconnect", token, Some(body))
}

/// A quick JSON request (GET without a body, POST with one) answered with a JSON object.
fn small_request(
    url: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Result<Value, CallError> {
    let url = url.trim_end_matches('/').to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(HTTP_MARGIN))
        .build()
        .into();
    let auth = format!("Bearer {token}");
    let response = match body {
        None => agent
            .get(format!("{url}{path}"))
            .header("Authorization", &auth)
            .call(),
        Some(body) => agent
            .post(format!("{url}{path}"))
            .header("Authorization", &auth)
            .send_json(&body),
    };
    let mut response = response.map_err(|e| transport_error(&url, e))?;
    let status = response.status().as_u16();
    let raw = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .map_err(|e| CallError::UnexpectedAnswer(format!("cannot read the response: {e}")))?;
    let value: Value = serde_json::from_str(&raw).map_err(|_| {
        CallError::UnexpectedAnswer(format!(
            "not a Browser Operator server answer: {}",
            raw.chars().take(200).collect::<String>()
        ))
    })?;
    if status != 200 {
        let message = value["error"]
            .as_str()
            .unwrap_or("The server answered with an error")
            .to_string();
        return Err(CallError::Http { status, message });
    }
    Ok(value)
}

fn transport_error(url: &str, e: ureq::Error) -> CallError {
    match e {
        ureq::Error::Timeout(_) => CallError::NoAnswer {
            url: url.to_string(),
        },
        ureq::Error::BadUri(reason) => CallError::InvalidUrl {
            url: url.to_string(),
            reason,
        },
        ureq::Error::Http(e) => CallError::InvalidUrl {
            url: url.to_string(),
            reason: e.to_string(),
        },
        _ => CallError::Unreachable {
            url: url.to_string(),
        },
    }
}

/// A result for a terminal: each text block on its own line, images as
/// `[image <mimeType>, <N> bytes]`.
pub fn render(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { data, mime_type } => {
                format!("[image {mime_type}, {} bytes]", base64_decoded_len(data))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The number of bytes a base64 string decodes to (padding and whitespace allowed).
pub fn base64_decoded_len(data: &str) -> usize {
    let symbols = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    symbols * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_must_be_a_json_object() {
        assert_eq!(parse_args(r#"{"a": 1}"#).unwrap()["a"], 1);
        assert!(parse_args("{").unwrap_err().contains("not valid JSON"));
        assert!(parse_args("[1]").unwrap_err().contains("an array"));
        assert!(parse_args("").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn base_urls() {
        assert_eq!(base_url(None, 9), "http://127.0.0.1:9");
        assert_eq!(base_url(Some("http://h:1/"), 9), "http://h:1");
        assert_eq!(
            base_url(Some("ws://127.0.0.1:8787/ws"), 9),
            "http://127.0.0.1:8787"
        );
        assert_eq!(base_url(Some("localhost:5"), 9), "http://localhost:5");
    }

    #[test]
    fn renders_text_and_images() {
        let r = ToolResult {
            content: vec![
                ContentBlock::text("line one"),
                ContentBlock::Image {
                    data: "aGVsbG8=".into(),
                    mime_type: "image/png".into(),
                },
                ContentBlock::text("two"),
            ],
        };
        assert_eq!(render(&r), "line one\n[image image/png, 5 bytes]\ntwo");
    }

    #[test]
    fn decoded_lengths() {
        assert_eq!(base64_decoded_len(""), 0);
        assert_eq!(base64_decoded_len("aGk="), 2);
        assert_eq!(base64_decoded_len("aGVsbG8h"), 6);
        assert_eq!(base64_decoded_len("aGVs\nbG8h"), 6);
    }
}
