//! computer: act on and look at a group tab. `screenshot` captures the viewport.

use crate::cdp;
use crate::chrome::tabs::{self, UpdateProperties};
use protocol::{ContentBlock, ToolResult};
use serde::Deserialize;
use serde_json::{json, Value};
use std::cell::Cell;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    action: String,
    tab_id: i32,
}

thread_local! {
    static NEXT_IMAGE: Cell<u32> = const { Cell::new(1) };
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    match args.action.as_str() {
        "screenshot" => screenshot(args.tab_id).await,
        other => Err(format!(
            "Invalid argument `action`: {other} is not supported"
        )),
    }
}

async fn screenshot(tab_id: i32) -> Result<ToolResult, String> {
    // A background tab never paints, so its capture would hang: bring it to the front first.
    if !tabs::get(tab_id).await?.active {
        tabs::update(
            tab_id,
            &UpdateProperties {
                active: Some(true),
                ..Default::default()
            },
        )
        .await?;
    }
    let out = cdp::send(
        tab_id,
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": false}),
    )
    .await?;
    let data = out
        .get("data")
        .and_then(Value::as_str)
        .ok_or("Page.captureScreenshot returned no image")?
        .to_string();
    let (w, h) =
        png_size(&data).ok_or("Page.captureScreenshot returned an image that is not a PNG")?;
    let id = NEXT_IMAGE.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    Ok(ToolResult {
        content: vec![
            ContentBlock::text(format!(
                "Successfully captured screenshot ({w}x{h}, png) - ID: ss_{tab_id}_{id}"
            )),
            ContentBlock::Image {
                data,
                mime_type: "image/png".into(),
            },
        ],
    })
}

/// Width and height from a base64 PNG's IHDR chunk (bytes 16..24).
pub fn png_size(b64: &str) -> Option<(u32, u32)> {
    let head = decode_base64_prefix(b64.get(..32)?)?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let w = u32::from_be_bytes(head.get(16..20)?.try_into().ok()?);
    let h = u32::from_be_bytes(head.get(20..24)?.try_into().ok()?);
    Some((w, h))
}

fn decode_base64_prefix(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for chunk in s.as_bytes().chunks_exact(4) {
        let n = chunk
            .iter()
            .try_fold(0u32, |acc, &c| Some((acc << 6) | val(c)?))?;
        out.extend_from_slice(&n.to_be_bytes()[1..]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::png_size;

    #[test]
    fn reads_png_dimensions() {
        // A 1x1 PNG, then a header claiming 800x600.
        let one = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        assert_eq!(png_size(one), Some((1, 1)));
        let big = "iVBORw0KGgoAAAANSUhEUgAAAyAAAAJYCAYAAAA";
        assert_eq!(png_size(big), Some((800, 600)));
        assert_eq!(png_size("/9j/4AAQSkZJRgABAQAAAQABAAD/2wBD"), None);
        assert_eq!(png_size("short"), None);
    }
}
