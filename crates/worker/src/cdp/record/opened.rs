//! The opened-tabs recorder: when the page last opened a window (`window.open`,
//! `target=_blank`), so that the tab Chrome creates next joins the group (`lifetime::adopt`).

use crate::cdp::events::Event;

/// When the page last opened a window, by the worker's clock.
#[derive(Default)]
pub struct Opened(pub f64);

impl Opened {
    pub fn on(&mut self, event: &Event, now: f64) {
        if matches!(event, Event::WindowOpen) {
            self.0 = now;
        }
    }

    pub fn within(&self, now: f64, ms: f64) -> bool {
        now - self.0 <= ms
    }
}
