//! The Browser Operator Protocol as plain data: what a backend and the extension say to each
//! other (commands, results, WebSocket frames), the connection config a user gives the extension,
//! and the tool catalog with the JSON Schema of every tool's arguments.
//!
//! Pure Rust with no I/O, shared by the wasm worker, the server and the tests.

pub mod bounds;
pub mod btcp;
pub mod catalog;
pub mod config;
pub mod frames;
pub mod host_rules;
pub mod json;
pub mod message;
pub mod pairing;
pub mod schema;
pub mod sort;
pub mod sse;
pub mod url_policy;

pub use catalog::{catalog, tool, ToolSpec};
pub use config::{ConfigError, ConnectionConfig, Transport, TRANSPORTS};
pub use frames::{ExtensionFrame, ServerFrame, CLOSE_TARGET_TAKEN, CLOSE_UNAUTHORIZED};
pub use message::{
    Command, CommandResult, ContentBlock, Malformed, Outcome, ToolResult, FILE_UPLOAD_MAX_BYTES,
    MAX_AGENT_CHARS, MAX_COMMAND_BYTES, MAX_ID_CHARS,
};
pub use pairing::{PairOffer, ParkedOffer};

#[cfg(test)]
mod fuzz_tests;
/// The fuzz tests' random driver (the `fuzz` feature, and this crate's own tests).
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzzing;
