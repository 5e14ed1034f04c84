//! Mouse actions through `Input.dispatchMouseEvent`: clicks (1–3, any button, modifiers), hover,
//! drag with intermediate moves, and wheel scrolling. Points are CSS pixels of the viewport.

use crate::cdp;
use serde_json::json;

#[derive(Clone, Copy)]
pub enum Button {
    Left,
    Right,
}

impl Button {
    fn name(self) -> &'static str {
        match self {
            Button::Left => "left",
            Button::Right => "right",
        }
    }
    fn mask(self) -> u32 {
        match self {
            Button::Left => 1,
            Button::Right => 2,
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
    const STEPS: u32 = 10;
    move_to(tab, from.0, from.1, 0, 0).await?;
    event(tab, json!({"type": "mousePressed", "x": from.0, "y": from.1, "button": "left", "buttons": 1, "clickCount": 1})).await?;
    for i in 1..=STEPS {
        let t = f64::from(i) / f64::from(STEPS);
        move_to(
            tab,
            from.0 + (to.0 - from.0) * t,
            from.1 + (to.1 - from.1) * t,
            1,
            0,
        )
        .await?;
    }
    event(tab, json!({"type": "mouseReleased", "x": to.0, "y": to.1, "button": "left", "buttons": 0, "clickCount": 1})).await
}

pub async fn wheel(tab: i32, x: f64, y: f64, dx: f64, dy: f64) -> Result<(), String> {
    event(
        tab,
        json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}),
    )
    .await
}
