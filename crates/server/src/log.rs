//! The server's log: one line on stderr per event, with the UTC time. Below every other module.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// One log line on stderr, with the UTC time. Never given the token.
pub(crate) fn line(args: fmt::Arguments<'_>) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    eprintln!("{h:02}:{m:02}:{s:02} {args}");
}
