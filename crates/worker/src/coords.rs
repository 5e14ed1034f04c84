//! The coordinate space agents use: that of the tab's last screenshot. Each tab remembers the
//! ratio of screenshot pixels to CSS pixels of its viewport; points going out (find) are scaled
//! by it and points coming in (clicks) are mapped back. Before any screenshot the ratio is 1.

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    static SCALE: RefCell<HashMap<i32, f64>> = RefCell::new(HashMap::new());
}

/// Screenshot pixels per CSS pixel for the tab.
pub fn scale(tab: i32) -> f64 {
    SCALE.with(|s| s.borrow().get(&tab).copied().unwrap_or(1.0))
}

pub fn set_scale(tab: i32, scale: f64) {
    if scale.is_finite() && scale > 0.0 {
        SCALE.with(|s| s.borrow_mut().insert(tab, scale));
    }
}

/// A viewport point (CSS px) as the agent sees it (screenshot px), rounded.
pub fn to_screenshot(tab: i32, x: f64, y: f64) -> (i64, i64) {
    let s = scale(tab);
    ((x * s).round() as i64, (y * s).round() as i64)
}

/// An agent's point (screenshot px) in CSS pixels of the viewport.
pub fn to_viewport(tab: i32, x: f64, y: f64) -> (f64, f64) {
    let s = scale(tab);
    (x / s, y / s)
}
