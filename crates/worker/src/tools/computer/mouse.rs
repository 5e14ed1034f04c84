//! Mouse actions through `Input.dispatchMouseEvent`: clicks (1–3, any button, modifiers), hover,
//! drag with intermediate moves, the left button held across calls (`left_mouse_down`,
//! `mouse_move`, `left_mouse_up`), and wheel scrolling. Points are CSS pixels of the viewport.

use crate::cdp::{self, idle};
use crate::vec_map::VecMap;
use serde_json::json;
use std::cell::RefCell;

#[derive(Clone, Copy)]
pub enum Button {
    Left,
    Right,
    Middle,
}

impl Button {
    fn name(self) -> &'static str {
        match self {
            Button::Left => "left",
            Button::Right => "right",
            Button::Middle => "middle",
        }
    }
    /// The button's bit in `buttons` (MouseEvent.buttons: 1 left, 2 right, 4 middle).
    fn mask(self) -> u32 {
        match self {
            Button::Left => 1,
            Button::Right => 2,
            Button::Middle => 4,
        }
    }
}

async fn event(tab: i32, params: serde_json::Value) -> Result<(), String> {
    cdp::send(tab, "Input.dispatchMouseEvent", params)
        .await
        .map(drop)
        .map_err(String::from)
}

pub async fn move_to(tab: i32, x: f64, y: f64, buttons: u32, modifiers: u32) -> Result<(), String> {
    let button = if buttons & 1 != 0 { "left" } else { "none" };
    event(tab, json!({"type": "mouseMoved", "x": x, "y": y, "button": button, "buttons": buttons, "modifiers": modifiers})).await
}

pub async fn click(
    tab: i32,
    x: f64,
    y: f64,
    button: Button,
    count: u32,
    modifiers: u32,
) -> Result<(), String> {
    move_to(tab, x, y, 0, modifiers).await?;
    for n in 1..=count {
        event(tab, json!({"type": "mousePressed", "x": x, "y": y, "button": button.name(), "buttons": button.mask(), "clickCount": n, "modifiers": modifiers})).await?;
        event(tab, json!({"type": "mouseReleased", "x": x, "y": y, "button": button.name(), "buttons": 0, "clickCount": n, "modifiers": modifiers})).await?;
    }
    Ok(())
}

/// Press at `from`, move in steps, release at `to`.
pub async fn drag(tab: i32, from: (f64, f64), to: (f64, f64)) -> Result<(), String> {
    move_to(tab, from.0, from.1, 0, 0).await?;
    event(tab, json!({"type": "mousePressed", "x": from.0, "y": from.1, "button": "left", "buttons": 1, "clickCount": 1})).await?;
    for p in path(from, to, 10) {
        move_to(tab, p.0, p.1, 1, 0).await?;
    }
    event(tab, json!({"type": "mouseReleased", "x": to.0, "y": to.1, "button": "left", "buttons": 0, "clickCount": 1})).await
}

/// The points a pointer passes from `from` to `to` in `steps` equal steps, `to` last.
pub fn path(from: (f64, f64), to: (f64, f64), steps: u32) -> Vec<(f64, f64)> {
    let steps = steps.max(1);
    (1..=steps)
        .map(|i| {
            let t = f64::from(i) / f64::from(steps);
            (from.0 + (to.0 - from.0) * t, from.1 + (to.1 - from.1) * t)
        })
        .collect()
}

/// Steps of a move with the button held: one per 20 CSS px, 1 to 10 (enough moves for a page's
/// drag threshold, as a hand passes through the points between).
pub fn held_steps(from: (f64, f64), to: (f64, f64)) -> u32 {
    let d = (to.0 - from.0).hypot(to.1 - from.1);
    ((d / 20.0).ceil() as u32).clamp(1, 10)
}

/// The left button held down across calls on one tab: where the pointer is now (CSS px), and
/// the tab kept in use while it is (no idle detach, which would drop Chrome's input state).
struct Held {
    at: (f64, f64),
    _in_use: idle::Busy,
}

thread_local! {
    /// Tabs whose left button `left_mouse_down` pressed and no `left_mouse_up` released yet.
    static HELD: RefCell<VecMap<i32, Held>> = const { RefCell::new(VecMap::new()) };
}

/// Where the pointer is on a tab whose left button is held down, CSS px.
pub fn held(tab: i32) -> Option<(f64, f64)> {
    HELD.with(|h| h.borrow().get(&tab).map(|h| h.at))
}

/// Whether the tab's left button is held down.
pub fn holds(tab: i32) -> bool {
    held(tab).is_some()
}

/// The tab closed or left the group: its held button is forgotten.
pub fn forget(tab: i32) {
    HELD.with(|h| h.borrow_mut().remove(&tab));
}

/// `left_mouse_down`: the pointer moves to `at` and the left button goes down there, and stays
/// down (the caller has checked it was not down already).
pub async fn press(tab: i32, at: (f64, f64), modifiers: u32) -> Result<(), String> {
    move_to(tab, at.0, at.1, 0, modifiers).await?;
    event(tab, json!({"type": "mousePressed", "x": at.0, "y": at.1, "button": "left", "buttons": 1, "clickCount": 1, "modifiers": modifiers})).await?;
    HELD.with(|h| {
        h.borrow_mut().insert(
            tab,
            Held {
                at,
                _in_use: idle::busy(tab),
            },
        )
    });
    Ok(())
}

/// `mouse_move` with the left button held: moves in steps to `to`, each with `buttons` 1.
pub async fn move_held(tab: i32, to: (f64, f64), modifiers: u32) -> Result<(), String> {
    let Some(from) = held(tab) else {
        return move_to(tab, to.0, to.1, 0, modifiers).await;
    };
    for p in path(from, to, held_steps(from, to)) {
        move_to(tab, p.0, p.1, 1, modifiers).await?;
        HELD.with(|h| {
            if let Some(h) = h.borrow_mut().get_mut(&tab) {
                h.at = p;
            }
        });
    }
    Ok(())
}

/// `left_mouse_up`: moves (held) to `at` if the pointer is elsewhere, and releases the button
/// there. The button counts as released even when Chrome refuses the release (the tab closed).
pub async fn release(tab: i32, at: (f64, f64), modifiers: u32) -> Result<(), String> {
    let moved = if held(tab) == Some(at) {
        Ok(())
    } else {
        move_held(tab, at, modifiers).await
    };
    forget(tab);
    moved?;
    event(tab, json!({"type": "mouseReleased", "x": at.0, "y": at.1, "button": "left", "buttons": 0, "clickCount": 1, "modifiers": modifiers})).await
}

/// The person's Stop: every held left button is released where its pointer is.
pub async fn release_all() {
    let held: Vec<(i32, (f64, f64))> =
        HELD.with(|h| h.borrow_mut().drain().map(|(tab, h)| (tab, h.at)).collect());
    for (tab, at) in held {
        let up = json!({"type": "mouseReleased", "x": at.0, "y": at.1, "button": "left", "buttons": 0, "clickCount": 1});
        if let Err(e) = event(tab, up).await {
            crate::js::log(&format!("releasing the mouse button on tab {tab}: {e}"));
        }
    }
}

pub async fn wheel(tab: i32, x: f64, y: f64, dx: f64, dy: f64) -> Result<(), String> {
    event(
        tab,
        json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::{held_steps, path};

    #[test]
    fn a_held_move_passes_the_points_between_and_ends_where_asked() {
        let p = path((0.0, 0.0), (100.0, 50.0), 4);
        assert_eq!(p, [(25.0, 12.5), (50.0, 25.0), (75.0, 37.5), (100.0, 50.0)]);
        assert_eq!(path((1.0, 1.0), (2.0, 2.0), 0), [(2.0, 2.0)]);
        assert_eq!(held_steps((0.0, 0.0), (0.0, 0.0)), 1);
        assert_eq!(held_steps((0.0, 0.0), (30.0, 40.0)), 3);
        assert_eq!(held_steps((0.0, 0.0), (5000.0, 0.0)), 10);
    }
}
