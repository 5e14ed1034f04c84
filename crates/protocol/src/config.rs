//! The connection config a user gives the extension (Options page or an accepted pair-offer),
//! and its validation, with messages that say which field is wrong and how to fix it.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    #[serde(rename = "websocket")]
    WebSocket,
    #[serde(rename = "sse-http")]
    SseHttp,
    /// HTTP long polling: the server holds each poll until a command arrives or its bound passes.
    #[serde(rename = "http-poll")]
    HttpPoll,
    /// HTTP short polling: a poll every [`SHORT_POLL_INTERVAL_MS`], answered at once.
    #[serde(rename = "http-short-poll")]
    HttpShortPoll,
}

/// Every transport, in the order the Options page lists them.
pub const TRANSPORTS: [Transport; 4] = [
    Transport::WebSocket,
    Transport::SseHttp,
    Transport::HttpPoll,
    Transport::HttpShortPoll,
];

/// How long a long poll may be held by the server (the `wait` query parameter, seconds).
pub const LONG_POLL_WAIT_S: u32 = 25;
/// The pause between two short polls.
pub const SHORT_POLL_INTERVAL_MS: u32 = 1_000;

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::WebSocket => "websocket",
            Transport::SseHttp => "sse-http",
            Transport::HttpPoll => "http-poll",
            Transport::HttpShortPoll => "http-short-poll",
        }
    }

    /// Whether commands come over HTTP (paths and results POSTed), not one WebSocket.
    pub fn is_http(self) -> bool {
        self != Transport::WebSocket
    }

    fn url_schemes(self) -> &'static [&'static str] {
        match self {
            Transport::WebSocket => &["ws", "wss"],
            _ => &["http", "https"],
        }
    }
}

pub const DEFAULT_COMMAND_PATH: &str = "/browser/events";
pub const DEFAULT_RESULT_PATH: &str = "/browser/result";
pub const MAX_TOKEN_LEN: usize = 4096;
pub const MAX_URL_LEN: usize = 2048;
pub const MAX_TARGET_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionConfig {
    pub transport: Transport,
    pub server_url: String,
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A validation failure, tied to the field the user has to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigError {
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn err(field: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field,
        message: message.into(),
    }
}

impl ConnectionConfig {
    /// Trims what users paste (surrounding spaces, a trailing slash on the URL), turns empty
    /// optional fields into `None`, then validates.
    pub fn normalized(mut self) -> Result<Self, ConfigError> {
        self.server_url = self.server_url.trim().trim_end_matches('/').to_string();
        self.token = self.token.trim().to_string();
        for opt in [
            &mut self.command_path,
            &mut self.result_path,
            &mut self.target,
        ] {
            *opt = opt
                .take()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
        }
        self.validate()?;
        Ok(self)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_url(self.transport, &self.server_url)?;
        if self.token.is_empty() {
            return Err(err(
                "token",
                "Paste the token your backend issued (browser-operator prints it at start).",
            ));
        }
        if self.token.len() > MAX_TOKEN_LEN {
            return Err(err(
                "token",
                format!("The token is longer than {MAX_TOKEN_LEN} characters."),
            ));
        }
        if self
            .token
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(err(
                "token",
                "The token contains spaces or line breaks; paste it again as one word.",
            ));
        }
        if let Some(target) = &self.target {
            check_target(target).map_err(|m| err("target", m))?;
        }
        for (field, path) in [
            ("commandPath", &self.command_path),
            ("resultPath", &self.result_path),
        ] {
            if let Some(p) = path {
                if !p.starts_with('/')
                    || p.len() > MAX_URL_LEN
                    || p.chars().any(char::is_whitespace)
                {
                    return Err(err(field, "A path starts with '/' and has no spaces."));
                }
                if p.contains("{target}") && self.target.is_none() {
                    return Err(err(
                        field,
                        "The path uses {target} but no target is set: set one or remove {target}.",
                    ));
                }
            }
        }
        Ok(())
    }

    /// `serverUrl + commandPath` with `{target}` substituted (SSE + HTTP and polling).
    pub fn command_url(&self) -> String {
        self.join(self.command_path.as_deref().unwrap_or(DEFAULT_COMMAND_PATH))
    }

    /// `serverUrl + resultPath` with `{target}` substituted (SSE + HTTP and polling).
    pub fn result_url(&self) -> String {
        self.join(self.result_path.as_deref().unwrap_or(DEFAULT_RESULT_PATH))
    }

    fn join(&self, path: &str) -> String {
        format!(
            "{}{}",
            self.server_url,
            substitute_target(path, self.target.as_deref())
        )
    }
}

/// A target names a browser: at most 128 letters, digits, '-', '_' or '.', so it is safe in a
/// path, a log line and a list.
pub fn check_target(target: &str) -> Result<(), String> {
    if !target.is_empty()
        && target.len() <= MAX_TARGET_LEN
        && target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        Ok(())
    } else {
        Err(format!(
            "Use 1 to {MAX_TARGET_LEN} letters, digits, '-', '_' or '.'."
        ))
    }
}

/// Replaces every `{target}` in `path` with the target (validated to need no escaping).
pub fn substitute_target(path: &str, target: Option<&str>) -> String {
    path.replace("{target}", target.unwrap_or(""))
}

fn validate_url(transport: Transport, url: &str) -> Result<(), ConfigError> {
    let schemes = transport.url_schemes();
    let example = match transport {
        Transport::WebSocket => "ws://127.0.0.1:8787/ws",
        _ => "http://127.0.0.1:8787",
    };
    if url.is_empty() {
        return Err(err(
            "serverUrl",
            format!("Enter the backend's address, e.g. {example}."),
        ));
    }
    if url.len() > MAX_URL_LEN || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(err("serverUrl", "The address has spaces or is too long."));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(err(
            "serverUrl",
            format!("The address needs a scheme, e.g. {example}."),
        ));
    };
    let scheme = scheme.to_ascii_lowercase();
    if !schemes.contains(&scheme.as_str()) {
        return Err(err(
            "serverUrl",
            format!(
                "The {} transport needs a {} address (got {scheme}://), e.g. {example}.",
                transport.as_str(),
                schemes
                    .iter()
                    .map(|s| format!("{s}://"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        ));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains('@') {
        return Err(err(
            "serverUrl",
            format!("The address has no host, e.g. {example}."),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws(url: &str, token: &str) -> ConnectionConfig {
        ConnectionConfig {
            transport: Transport::WebSocket,
            server_url: url.into(),
            token: token.into(),
            command_path: None,
            result_path: None,
            target: None,
        }
    }

    #[test]
    fn pair_offer_config_example_round_trips() {
        let v = json!({
            "transport": "sse-http",
            "serverUrl": "https://app.example",
            "token": "…",
            "commandPath": "/browser/events",
            "resultPath": "/browser/result",
            "target": "channel-id"
        });
        let c: ConnectionConfig = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn normalizes_what_users_paste() {
        let mut c = ws("  ws://127.0.0.1:8787/ws/ ", "  abc \n");
        c.target = Some("  ".into());
        let c = c.normalized().unwrap();
        assert_eq!(c.server_url, "ws://127.0.0.1:8787/ws");
        assert_eq!(c.token, "abc");
        assert_eq!(c.target, None);
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(ws("", "t").validate().unwrap_err().field, "serverUrl");
        let e = ws("http://127.0.0.1:8787", "t").validate().unwrap_err();
        assert_eq!(e.field, "serverUrl");
        assert!(e.message.contains("ws://"), "{e}");
        assert!(ws("127.0.0.1:8787", "t")
            .validate()
            .unwrap_err()
            .message
            .contains("scheme"));
        assert!(ws("ws:///x", "t").validate().is_err());
        assert_eq!(ws("ws://h", "").validate().unwrap_err().field, "token");
        assert_eq!(ws("ws://h", "a b").validate().unwrap_err().field, "token");
        let mut c = ws("ws://h", "t");
        c.target = Some("bad target!".into());
        assert_eq!(c.validate().unwrap_err().field, "target");
    }

    #[test]
    fn target_substitution() {
        let mut c = ConnectionConfig {
            transport: Transport::SseHttp,
            server_url: "http://h:1".into(),
            token: "t".into(),
            command_path: Some("/b/{target}/events".into()),
            result_path: None,
            target: None,
        };
        assert_eq!(c.validate().unwrap_err().field, "commandPath");
        c.target = Some("chan-1".into());
        c.validate().unwrap();
        assert_eq!(c.command_url(), "http://h:1/b/chan-1/events");
        assert_eq!(c.result_url(), "http://h:1/browser/result");
    }

    #[test]
    fn every_transport_has_its_name_and_schemes() {
        for t in TRANSPORTS {
            let name = serde_json::to_value(t).unwrap();
            assert_eq!(name, t.as_str());
            let url = if t.is_http() {
                "http://h:1"
            } else {
                "ws://h:1/ws"
            };
            let c = ConnectionConfig {
                transport: t,
                server_url: url.into(),
                token: "t".into(),
                command_path: None,
                result_path: None,
                target: None,
            };
            c.validate().unwrap();
        }
        let mut c = ws("ws://h:1", "t");
        c.transport = Transport::HttpPoll;
        assert_eq!(c.validate().unwrap_err().field, "serverUrl");
    }

    #[test]
    fn unknown_transport_is_rejected() {
        let r: Result<ConnectionConfig, _> = serde_json::from_value(
            json!({"transport": "carrier-pigeon", "serverUrl": "x", "token": "t"}),
        );
        assert!(r.is_err());
    }
}
