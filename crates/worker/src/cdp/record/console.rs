//! The console recorder: `console.*` calls, uncaught exceptions and the browser's own log
//! entries for the page, bounded, each message kept once.

use crate::cdp::events::Event;
use std::collections::VecDeque;

const MAX_CONSOLE: usize = 1_000;

#[derive(Clone)]
pub struct ConsoleEntry {
    pub level: String,
    pub text: String,
    pub source: String,
    pub line: Option<i64>,
    pub timestamp: f64,
}

#[derive(Default)]
pub struct Console {
    pub entries: VecDeque<ConsoleEntry>,
}

impl Console {
    pub fn on(&mut self, event: &Event) {
        let entry = match event {
            Event::ConsoleApiCalled {
                level,
                text,
                source,
                line,
                timestamp,
            } => ConsoleEntry {
                level: (*level).into(),
                text: text.clone(),
                source: source.clone(),
                line: *line,
                timestamp: *timestamp,
            },
            Event::ExceptionThrown {
                exception,
                timestamp,
            } => ConsoleEntry {
                level: "error".into(),
                text: exception.uncaught(),
                source: exception.url().to_string(),
                line: exception.line(),
                timestamp: *timestamp,
            },
            Event::LogEntry {
                source,
                level,
                text,
                url,
                line,
                timestamp,
            } if source != "console-api" => ConsoleEntry {
                level: level.clone(),
                text: text.clone(),
                source: url.clone(),
                line: *line,
                timestamp: *timestamp,
            },
            _ => return,
        };
        self.push(entry);
    }

    fn push(&mut self, e: ConsoleEntry) {
        // Runtime.enable replays earlier messages after a re-attach: each message is kept once.
        if self
            .entries
            .iter()
            .rev()
            .take_while(|old| old.timestamp >= e.timestamp)
            .any(|old| old.timestamp == e.timestamp && old.text == e.text)
        {
            return;
        }
        self.entries.push_back(e);
        while self.entries.len() > MAX_CONSOLE {
            self.entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn console_messages_are_kept_once_and_bounded() {
        let mut r = Console::default();
        let call = json!({"type": "error", "args": [{"type": "string", "value": "boom"}, {"type": "number", "value": 3}], "timestamp": 5.0,
            "stackTrace": {"callFrames": [{"url": "http://x/a.js", "lineNumber": 9}]}});
        let ev =
            |p: &serde_json::Value| Event::parse("Runtime.consoleAPICalled", p).expect("an event");
        r.on(&ev(&call));
        r.on(&ev(&call));
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.entries[0].text, "boom 3");
        assert_eq!(r.entries[0].line, Some(10));
        for i in 0..(MAX_CONSOLE + 5) {
            let c = json!({"type": "log", "args": [{"type": "string", "value": "m"}], "timestamp": 10.0 + i as f64});
            r.on(&ev(&c));
        }
        assert_eq!(r.entries.len(), MAX_CONSOLE);
    }
}
