//! computer: look at and act on a group tab, the 13 actions of TOOLS.md and the browser
//! toolset's `middle_click`, `left_mouse_down` / `mouse_move` / `left_mouse_up` (the left button
//! held across calls) and `hold_key`. Coordinates arrive in the tab's screenshot space and are
//! mapped to CSS pixels (coords); a `ref` resolves through refs to the centre of its element.

mod keyboard;
mod keys;
mod mouse;
pub(super) mod screenshot;

use crate::cdp;
use crate::geometry::scale as coords;
use crate::js::sleep_ms;
use crate::tools::{typed, Access, Tool};
use mouse::Button;
use protocol::bounds::INPUT_DURATION_MAX_S;
use protocol::{ContentBlock, ToolResult};
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "computer",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    action: String,
    tab_id: i32,
    #[serde(default)]
    coordinate: Option<[f64; 2]>,
    #[serde(default, rename = "start_coordinate")]
    start_coordinate: Option<[f64; 2]>,
    #[serde(default)]
    region: Option<[f64; 4]>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    modifiers: Option<String>,
    #[serde(default, rename = "ref")]
    target: Option<String>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default, rename = "scroll_direction")]
    scroll_direction: Option<String>,
    #[serde(default, rename = "scroll_amount")]
    scroll_amount: Option<u32>,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    // Not a layout that Chrome's debugging bar is about to move.
    crate::debugging_bar::steady(args.tab_id).await;
    crate::geometry::scale::load().await;
    let tab = args.tab_id;
    let text = |t: String| Ok(ToolResult::text(t));
    match args.action.as_str() {
        "screenshot" => Ok(ToolResult {
            content: screenshot::screenshot(tab).await?,
        }),
        "zoom" => {
            let region = args
                .region
                .ok_or("Missing required argument `region` for zoom ([x0, y0, x1, y1]).")?;
            Ok(ToolResult {
                content: screenshot::zoom(tab, region).await?,
            })
        }
        "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click" => {
            not_held(tab, &args.action)?;
            let (button, count, verb) = match args.action.as_str() {
                "left_click" => (Button::Left, 1, "Clicked"),
                "right_click" => (Button::Right, 1, "Right-clicked"),
                "middle_click" => (Button::Middle, 1, "Middle-clicked"),
                "double_click" => (Button::Left, 2, "Double-clicked"),
                _ => (Button::Left, 3, "Triple-clicked"),
            };
            let modifiers = modifiers(&args)?;
            let (p, shown) = target(tab, &args).await?;
            mouse::click(tab, p.0, p.1, button, count, modifiers).await?;
            text(format!("{verb} at ({}, {})", shown.0, shown.1))
        }
        "hover" => {
            not_held(tab, "hover")?;
            let (p, shown) = target(tab, &args).await?;
            mouse::move_to(tab, p.0, p.1, 0, 0).await?;
            text(format!("Hovered at ({}, {})", shown.0, shown.1))
        }
        "left_mouse_down" => {
            not_held(tab, "left_mouse_down")?;
            let modifiers = modifiers(&args)?;
            let (p, shown) = target(tab, &args).await?;
            mouse::press(tab, p, modifiers).await?;
            text(format!(
                "Pressed the left mouse button at ({}, {}); it stays down until left_mouse_up",
                shown.0, shown.1
            ))
        }
        "mouse_move" => {
            let modifiers = modifiers(&args)?;
            let (p, shown) = target(tab, &args).await?;
            let held = mouse::holds(tab);
            mouse::move_held(tab, p, modifiers).await?;
            text(if held {
                format!(
                    "Moved the mouse to ({}, {}) with the left button down",
                    shown.0, shown.1
                )
            } else {
                format!("Moved the mouse to ({}, {})", shown.0, shown.1)
            })
        }
        "left_mouse_up" => {
            if !mouse::holds(tab) {
                return Err(format!(
                    "The left mouse button is not down on tab {tab}: press it with left_mouse_down first (nothing was sent)."
                ));
            }
            let modifiers = modifiers(&args)?;
            let (p, shown) = target(tab, &args).await?;
            mouse::release(tab, p, modifiers).await?;
            text(format!(
                "Released the left mouse button at ({}, {})",
                shown.0, shown.1
            ))
        }
        "left_click_drag" => {
            not_held(tab, "left_click_drag")?;
            let start = args.start_coordinate.ok_or(
                "Missing required argument `start_coordinate` for left_click_drag ([x, y]).",
            )?;
            let end = args.coordinate.ok_or(
                "Missing required argument `coordinate` for left_click_drag (the end point).",
            )?;
            let from = coords::to_viewport(tab, start[0], start[1]);
            let to = coords::to_viewport(tab, end[0], end[1]);
            mouse::drag(tab, from, to).await?;
            text(format!(
                "Dragged from ({}, {}) to ({}, {})",
                start[0], start[1], end[0], end[1]
            ))
        }
        "type" => {
            let t = args
                .text
                .as_deref()
                .ok_or("Missing required argument `text` for type.")?;
            text(keyboard::type_text(tab, t).await?)
        }
        "key" => {
            let t = args.text.as_deref().ok_or(
                "Missing required argument `text` for key (e.g. \"Enter\" or \"ctrl+a\").",
            )?;
            text(keyboard::key(tab, t, args.repeat.unwrap_or(1)).await?)
        }
        "hold_key" => {
            let t = args.text.as_deref().ok_or(
                "Missing required argument `text` for hold_key (one key or chord, e.g. \"shift\" or \"ctrl+a\").",
            )?;
            let secs = args.duration.ok_or(
                "Missing required argument `duration` for hold_key (seconds to hold, at most 30).",
            )?;
            within_duration_bound(secs)?;
            text(keyboard::hold(tab, t, secs).await?)
        }
        "scroll" => scroll(tab, &args).await,
        "scroll_to" => {
            let r = args
                .target
                .as_deref()
                .ok_or("Missing required argument `ref` for scroll_to.")?;
            crate::geometry::point(tab, r).await?;
            text(format!("Scrolled {r} into view"))
        }
        "wait" => {
            let secs = args.duration.unwrap_or(1.0);
            within_duration_bound(secs)?;
            sleep_ms((secs * 1000.0) as u32).await;
            text(format!("Waited for {secs} second(s)"))
        }
        other => Err(format!(
            "Invalid argument `action`: {other} is not supported"
        )),
    }
}

/// `duration` of wait and hold_key (the schema says the same; code mode's calls come here too).
fn within_duration_bound(secs: f64) -> Result<(), String> {
    let max = f64::from(INPUT_DURATION_MAX_S);
    if (0.0..=max).contains(&secs) {
        Ok(())
    } else {
        Err(format!(
            "Invalid argument `duration`: must be between 0 and {max} seconds, got {secs}."
        ))
    }
}

fn modifiers(args: &Args) -> Result<u32, String> {
    match &args.modifiers {
        Some(m) => keys::modifier_bits(m),
        None => Ok(0),
    }
}

/// Refuses a pointer action that presses or moves without the button while `left_mouse_down`
/// holds the left button on the tab (nothing is sent).
fn not_held(tab: i32, action: &str) -> Result<(), String> {
    let Some((x, y)) = mouse::held(tab) else {
        return Ok(());
    };
    let (x, y) = coords::to_screenshot(tab, x, y);
    Err(format!(
        "The left mouse button is down on tab {tab} (left_mouse_down; the pointer is at ({x}, {y})): release it with left_mouse_up before {action} (mouse_move moves it while held; nothing was sent)."
    ))
}

/// The tab closed or left the group: what computer keeps of it goes (the capture mode, a held
/// mouse button).
pub fn forget(tab: i32) {
    screenshot::forget(tab);
    mouse::forget(tab);
}

/// The person's Stop: input the agent holds down is released (a left button held by
/// `left_mouse_down`; keys of a `hold_key` that was ended are released as it ends).
pub async fn release_held() {
    mouse::release_all().await;
}

/// Whether computer keeps the tab's capture mode.
pub fn holds(tab: i32) -> bool {
    screenshot::holds(tab)
}

/// Whether the tab's left mouse button is held down (`left_mouse_down`, not yet released).
pub fn button_held(tab: i32) -> bool {
    mouse::holds(tab)
}

/// The point to act on, in CSS px, and as the agent sees it: from `ref` (scrolled into view)
/// or from `coordinate`.
async fn target(tab: i32, args: &Args) -> Result<((f64, f64), (i64, i64)), String> {
    if let Some(r) = &args.target {
        let p = crate::geometry::point(tab, r).await?;
        return Ok((p, coords::to_screenshot(tab, p.0, p.1)));
    }
    let c = args.coordinate.ok_or_else(|| {
        format!(
            "Missing argument: {} needs `coordinate` ([x, y]) or `ref`.",
            args.action
        )
    })?;
    if c[0] < 0.0 || c[1] < 0.0 {
        return Err("Invalid argument `coordinate`: x and y must not be negative.".into());
    }
    Ok((
        coords::to_viewport(tab, c[0], c[1]),
        (c[0].round() as i64, c[1].round() as i64),
    ))
}

/// Scroll positions of the window and of the scrollable ancestors of a point: compared before
/// and after a wheel event to see whether anything moved.
const SCROLL_STATE: &str = r#"(x, y, dx, dy, fallback) => {
  const chain = [];
  for (let el = document.elementFromPoint(x, y); el; el = el.parentElement) chain.push(el);
  const state = () => [scrollX, scrollY].concat(chain.map((e) => e.scrollLeft + ',' + e.scrollTop)).join(';');
  if (!fallback) return state();
  const can = (e) => {
    const s = getComputedStyle(e);
    return (dy && e.scrollHeight > e.clientHeight && /(auto|scroll)/.test(s.overflowY))
      || (dx && e.scrollWidth > e.clientWidth && /(auto|scroll)/.test(s.overflowX));
  };
  const target = chain.find(can);
  if (target) target.scrollBy(dx, dy); else window.scrollBy(dx, dy);
  return state();
}"#;

async fn scroll_state(tab: i32, x: f64, y: f64, dx: f64, dy: f64, fallback: bool) -> String {
    let expr = format!("({SCROLL_STATE})({x}, {y}, {dx}, {dy}, {fallback})");
    cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": expr, "returnByValue": true}),
    )
    .await
    .ok()
    .and_then(|v| {
        v.pointer("/result/value")
            .and_then(Value::as_str)
            .map(str::to_string)
    })
    .unwrap_or_default()
}

async fn scroll(tab: i32, args: &Args) -> Result<ToolResult, String> {
    let dir = args.scroll_direction.as_deref().unwrap_or("down");
    let ticks = args.scroll_amount.unwrap_or(3);
    let px = f64::from(ticks) * 100.0;
    let (dx, dy) = match dir {
        "up" => (0.0, -px),
        "down" => (0.0, px),
        "left" => (-px, 0.0),
        "right" => (px, 0.0),
        other => {
            return Err(format!(
                "Invalid argument `scroll_direction`: expected up, down, left or right, got \"{other}\"."
            ))
        }
    };
    let ((x, y), shown) = match (&args.target, args.coordinate) {
        (None, None) => {
            let vp = screenshot::viewport(tab).await?;
            let c = (vp.width / 2.0, vp.height / 2.0);
            (c, coords::to_screenshot(tab, c.0, c.1))
        }
        _ => target(tab, args).await?,
    };
    let before = scroll_state(tab, x, y, dx, dy, false).await;
    mouse::wheel(tab, x, y, dx, dy).await?;
    // The wheel scrolls asynchronously: give it a moment before deciding nothing moved.
    let mut moved = false;
    for _ in 0..6 {
        sleep_ms(50).await;
        if scroll_state(tab, x, y, dx, dy, false).await != before {
            moved = true;
            break;
        }
    }
    if !moved {
        scroll_state(tab, x, y, dx, dy, true).await;
    }
    let mut content = vec![ContentBlock::text(format!(
        "Scrolled {dir} by {ticks} ticks at ({}, {})",
        shown.0, shown.1
    ))];
    if let Ok(shot) = screenshot::screenshot(tab).await {
        content.extend(
            shot.into_iter()
                .filter(|b| matches!(b, ContentBlock::Image { .. })),
        );
    }
    Ok(ToolResult { content })
}
