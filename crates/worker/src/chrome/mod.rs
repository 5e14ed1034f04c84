//! Typed bindings to the chrome.* APIs the worker uses: one file per API, nothing else in them.
//! Every call returns `Result<_, String>` with Chrome's own message on failure.

pub mod action;
pub mod alarms;
pub mod debugger;
pub mod declarative_net_request;
pub mod downloads;
pub mod notifications;
pub mod offscreen;
pub mod runtime;
pub mod storage;
pub mod tab_groups;
pub mod tabs;
pub mod web_navigation;
pub mod windows;
