//! handle_dialog (answer a tab's JavaScript dialog) and resize_window (the tab's window; the
//! viewport follows, no device-metrics override is involved).

use crate::cdp;
use crate::chrome::{tabs, windows};
use crate::observers;
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogArgs {
    tab_id: i32,
    accept: bool,
    #[serde(default)]
    prompt_text: Option<String>,
}

pub async fn handle_dialog(args: DialogArgs) -> Result<ToolResult, String> {
    let d = observers::open_dialog(args.tab_id)
        .ok_or_else(|| format!("No JavaScript dialog is open on tab {}.", args.tab_id))?;
    let mut params = json!({"accept": args.accept});
    if let Some(t) = &args.prompt_text {
        params["promptText"] = json!(t);
    }
    cdp::send(args.tab_id, "Page.handleJavaScriptDialog", params).await?;
    observers::dialog_closed(args.tab_id);
    let answer = match (&args.prompt_text, args.accept) {
        (Some(t), true) if d.kind == "prompt" => format!(" with \"{t}\""),
        _ => String::new(),
    };
    Ok(ToolResult::text(format!(
        "{} the {} dialog \"{}\"{answer}",
        if args.accept { "Accepted" } else { "Dismissed" },
        d.kind,
        d.message
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResizeArgs {
    tab_id: i32,
    width: u32,
    height: u32,
}

pub async fn resize(args: ResizeArgs) -> Result<ToolResult, String> {
    let tab = tabs::get(args.tab_id).await?;
    windows::resize(tab.window_id, args.width, args.height).await?;
    // The viewport follows the window once the renderer has resized.
    let read = || async {
        cdp::send(
            args.tab_id,
            "Runtime.evaluate",
            json!({"expression": "innerWidth + 'x' + innerHeight", "returnByValue": true}),
        )
        .await
        .ok()
        .and_then(|out| {
            out.pointer("/result/value")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
    };
    let before = read().await;
    let mut size = before.clone();
    // Bounded wait for the renderer to take the new size (an unchanged size is possible when
    // the window already had it).
    for _ in 0..40 {
        crate::js::sleep_ms(50).await;
        size = read().await;
        if size != before {
            crate::js::sleep_ms(100).await;
            size = read().await;
            break;
        }
    }
    Ok(ToolResult::text(format!(
        "Resized the window to {}x{}; the viewport is now {size}",
        args.width, args.height
    )))
}
