//! The download recorder: downloads in progress (a tab with one is not detached for idleness).

use crate::cdp::events::Event;
use std::collections::HashMap;

/// A download not heard of for this long no longer holds the debugger.
const DOWNLOAD_QUIET_MS: f64 = 10.0 * 60_000.0;

/// Downloads in progress: guid → when last heard of (the worker's clock).
#[derive(Default)]
pub struct Downloads(pub HashMap<String, f64>);

impl Downloads {
    pub fn on(&mut self, event: &Event, now: f64) {
        match event {
            Event::DownloadWillBegin { guid } => {
                self.0.insert(guid.clone(), now);
            }
            Event::DownloadProgress { guid, in_progress } => {
                if *in_progress {
                    self.0.insert(guid.clone(), now);
                } else {
                    self.0.remove(guid);
                }
            }
            _ => {}
        }
    }

    /// True while one was heard of lately.
    pub fn any(&self, now: f64) -> bool {
        self.0.values().any(|at| now - at < DOWNLOAD_QUIET_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn downloads_are_tracked_until_they_end() {
        let mut r = Downloads::default();
        let ev = |m: &str, p: serde_json::Value| Event::parse(m, &p).expect("an event");
        r.on(
            &ev(
                "Page.downloadWillBegin",
                json!({"guid": "g1", "url": "http://a.test/f.zip"}),
            ),
            1.0,
        );
        r.on(
            &ev(
                "Page.downloadProgress",
                json!({"guid": "g1", "state": "inProgress"}),
            ),
            2.0,
        );
        assert_eq!(r.0.get("g1"), Some(&2.0));
        r.on(
            &ev(
                "Page.downloadProgress",
                json!({"guid": "g1", "state": "completed"}),
            ),
            3.0,
        );
        assert!(r.0.is_empty());
    }
}
