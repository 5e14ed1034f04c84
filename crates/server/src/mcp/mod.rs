//! The MCP face of the server: the protocol crate's tool catalog offered to any MCP client
//! (stdio for `browser-operator mcp`, streamable HTTP at `/mcp` in `serve`: [`transport`]),
//! tool calls sent to a browser and their results mapped to MCP content ([`handler`],
//! [`content`]), plus the two tools that choose among several connected browsers
//! ([`select`]), and the page tools of the automation group's tabs ([`pages`]): listed with the
//! catalog, called through `btcp_call`, and watched so a session hears
//! `notifications/tools/list_changed`.
//!
//! A call runs either in this process's relay, or — when `browser-operator mcp` finds another
//! server on its port — through that server's `POST /commands`; when that server goes away, the
//! forwarding side takes the port over and runs the relay itself ([`backend`]).
//!
//! Imports run one way: `transport` → `handler` → `select`, `pages` → `backend`, `content`.

mod backend;
mod content;
mod handler;
mod pages;
mod select;
mod transport;

pub use backend::{Backend, Forward, OwnServer, StartServer};
pub use content::to_mcp;
pub use handler::{tools, BrowserTools};
pub use select::{LIST_BROWSERS, SELECT_BROWSER};
pub(crate) use transport::router;
pub use transport::{serve_stdio, MAX_SESSIONS};
