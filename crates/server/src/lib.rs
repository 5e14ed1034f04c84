//! The Browser Operator reference backend: a relay that browsers running the extension connect
//! to over WebSocket, an HTTP command API that sends them tools to run, and the
//! `browser-operator` command line (`serve`, `call`, `token`).
//!
//! Start it in-process with [`RunningServer::start`]; stop it with [`RunningServer::shutdown`].

pub mod api;
pub mod call;
pub mod cli;
mod config;
pub mod fleet;
pub mod guard;
pub mod http;
mod http_state;
pub mod listen;
mod log;
pub mod main_token;
pub mod mcp;
pub mod pair;
pub mod relay;
pub mod secret;
mod server;
mod state;
pub mod target_tokens;
pub mod throttle;
pub mod ws;

pub use config::{
    ServerConfig, DEFAULT_AUTH_TIMEOUT, DEFAULT_COMMAND_TIMEOUT, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_PORT,
};
pub use server::{RunningServer, MAX_CONNECTIONS};
