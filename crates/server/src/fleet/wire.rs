//! What instances of a fleet publish to each other on Redis channels: a command for a browser
//! another instance holds and its answer (on each instance's own channel), and notes for every
//! instance (tokens changed, disconnect a browser). JSON, one message per publish.

use crate::relay::WaitBound;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The largest message an instance reads: a result as large as a browser may send
/// (`ws::MAX_MESSAGE_SIZE`) and room for the envelope. Larger ones are dropped, logged.
pub const MAX_MESSAGE: usize = crate::ws::MAX_MESSAGE_SIZE + (64 << 10);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Message {
    /// Run this in the browser of `target`, which you hold; answer on `from`'s channel.
    Command {
        id: String,
        from: String,
        tool: String,
        #[serde(default)]
        args: Map<String, Value>,
        target: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// How long the caller waits.
        wait_ms: u64,
        bound: Bound,
    },
    /// The browser's result (a `CommandResult` as JSON).
    Result { id: String, result: Value },
    /// The holding instance could not run it: `status` and `message` as the API answers.
    Failed {
        id: String,
        status: u16,
        message: String,
    },
    /// The tokens changed: reload them.
    Tokens,
    /// Disconnect the browser of `target`, or those that use the token `token_id`.
    Disconnect {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_id: Option<String>,
        reason: String,
    },
}

/// [`WaitBound`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Server,
    Request,
    Tool,
}

impl From<WaitBound> for Bound {
    fn from(b: WaitBound) -> Self {
        match b {
            WaitBound::Server => Bound::Server,
            WaitBound::Request => Bound::Request,
            WaitBound::Tool => Bound::Tool,
        }
    }
}

impl From<Bound> for WaitBound {
    fn from(b: Bound) -> Self {
        match b {
            Bound::Server => WaitBound::Server,
            Bound::Request => WaitBound::Request,
            Bound::Tool => WaitBound::Tool,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        let m = Message::Command {
            id: "cmd-1".into(),
            from: "a".into(),
            tool: "t".into(),
            args: Map::new(),
            target: "w".into(),
            agent: None,
            wait_ms: 5,
            bound: Bound::Request,
        };
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["t"], "command");
        assert_eq!(serde_json::from_value::<Message>(v).unwrap(), m);
        let t: Message = serde_json::from_value(json!({"t": "tokens"})).unwrap();
        assert_eq!(t, Message::Tokens);
    }
}
