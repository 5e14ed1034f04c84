//! handle_dialog (answer a tab's JavaScript dialog, also one that opened while the debugger was
//! detached) and resize_window (the tab's window; in a windowed browser the viewport follows, no
//! device-metrics override is involved: see screenshot's one-capture-at-a-time).

use crate::cdp;
use crate::cdp::record;
use crate::chrome::tabs::{self, CreateProperties, UpdateProperties};
use crate::chrome::windows;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const HANDLE_DIALOG: Tool = Tool {
    name: "handle_dialog",
    tab: Some(Access::Acts),
    during_dialog: true,
    run: |args| typed(args, handle_dialog),
};

pub const RESIZE: Tool = Tool {
    name: "resize_window",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, resize),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialogArgs {
    tab_id: i32,
    accept: bool,
    #[serde(default)]
    prompt_text: Option<String>,
}

pub async fn handle_dialog(args: DialogArgs) -> Result<ToolResult, String> {
    let d = record::open_dialog(args.tab_id)
        .ok_or_else(|| format!("No JavaScript dialog is open on tab {}.", args.tab_id))?;
    if d.unknown {
        return dismiss_unseen(args.tab_id, args.accept).await;
    }
    let mut params = json!({"accept": args.accept});
    if let Some(t) = &args.prompt_text {
        params["promptText"] = json!(t);
    }
    cdp::send(args.tab_id, "Page.handleJavaScriptDialog", params).await?;
    // Only the dialog answered is gone: the page may have opened the next one already (an
    // alert loop), and that one is reported, not forgotten.
    if record::open_dialog(args.tab_id).as_ref() == Some(&d) {
        record::dialog_closed(args.tab_id);
    }
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

/// A dialog that opened while the debugger was detached: no debugger can answer it, but Chrome
/// dismisses a tab's dialog when the tab is hidden and no debugger is attached. So the debugger
/// detaches, the tab is brought to the front (its dialog shows), hidden for a moment behind a
/// blank tab of its window, shown again, and the page must answer once more.
async fn dismiss_unseen(tab_id: i32, accept: bool) -> Result<ToolResult, String> {
    // Chrome does not dismiss the dialog of a hidden tab while a debugger is attached to it.
    crate::cdp::idle::detach(tab_id).await;
    let tab = tabs::get(tab_id).await?;
    let show = UpdateProperties {
        url: None,
        active: Some(true),
    };
    // A dialog of a tab that is not in front waits to be shown before it can be dismissed.
    windows::focus(tab.window_id).await?;
    if !tab.active {
        tabs::update(tab_id, &show).await?;
    }
    crate::js::sleep_ms(100).await;
    let blank = tabs::create(&CreateProperties {
        window_id: Some(tab.window_id),
        url: Some("about:blank"),
        active: true,
    })
    .await?;
    crate::js::sleep_ms(100).await;
    let shown = tabs::update(tab_id, &show).await;
    if let Some(id) = blank.id {
        let _ = tabs::remove(id).await;
    }
    shown?;
    if !record::answers(tab_id, 2_000).await {
        return Err(format!(
            "Tab {tab_id} still does not respond after its dialog was dismissed: the page may be busy running a script. Try again, or navigate the tab."
        ));
    }
    record::dialog_closed(tab_id);
    let note = if accept {
        " (it could not be accepted: a dialog that opened while the debugger was detached can only be dismissed)"
    } else {
        ""
    };
    Ok(ToolResult::text(format!(
        "Dismissed the JavaScript dialog that opened while the debugger was detached; its text is unknown{note}. The page responds again."
    )))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResizeArgs {
    tab_id: i32,
    // Numbers, not u32: `800.0` is an integer to the schema check (range checked there).
    width: f64,
    height: f64,
}

pub async fn resize(args: ResizeArgs) -> Result<ToolResult, String> {
    let tab = tabs::get(args.tab_id).await?;
    let (width, height) = (args.width.round() as u32, args.height.round() as u32);
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
    windows::resize(tab.window_id, width, height).await?;
    // Bounded wait for the renderer to take the new size (an unchanged size is possible when
    // the window already had it), then for it to settle (a restored maximized window passes
    // through an intermediate size).
    let mut size = read().await;
    for _ in 0..40 {
        if size != before {
            break;
        }
        crate::js::sleep_ms(50).await;
        size = read().await;
    }
    for _ in 0..10 {
        crate::js::sleep_ms(100).await;
        let again = read().await;
        if again == size {
            break;
        }
        size = again;
    }
    Ok(ToolResult::text(format!(
        "Resized the window to {width}x{height}; the viewport is now {size}"
    )))
}
