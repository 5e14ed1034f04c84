//! upload_image: an image taken by screenshot/zoom, as a real File, into a file input (by ref)
//! or dropped on the element at a point. DataTransfer from page JS (upload.js), since
//! DOM.setFileInputFiles is refused under chrome.debugger.

use crate::cdp;
use crate::geometry::scale as coords;
use crate::images;
use crate::isolated_world as world;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "upload_image",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    image_id: String,
    tab_id: i32,
    #[serde(default, rename = "ref")]
    target: Option<String>,
    #[serde(default)]
    coordinate: Option<[f64; 2]>,
    #[serde(default)]
    filename: Option<String>,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    coords::load().await;
    let img = images::image(&args.image_id).await.ok_or_else(|| {
        format!(
            "Unknown imageId \"{}\": use the ID that a screenshot or zoom returned (the last few per tab are kept).",
            args.image_id
        )
    })?;
    let name = args.filename.unwrap_or_else(|| "image.png".into());
    let function = crate::js::page_js!("tools/upload.js");
    let out = match (&args.target, args.coordinate) {
        (Some(r), _) => {
            let element = world::resolve(tab, r).await?;
            cdp::send_to(
                &element.target,
                "Runtime.callFunctionOn",
                json!({
                    "objectId": element.object,
                    "functionDeclaration": function,
                    "arguments": [{"value": img.data}, {"value": img.mime}, {"value": name}, {"value": 0}, {"value": 0}],
                    "returnByValue": true,
                }),
            )
            .await?
        }
        (None, Some(c)) => {
            let (x, y) = coords::to_viewport(tab, c[0], c[1]);
            let expr = format!(
                "(() => {{ const el = document.elementFromPoint({x}, {y}); if (!el) return {{error: 'Nothing at ({}, {}) to drop the image on.'}}; return ({function}).call(el, {}, {}, {}, {x}, {y}); }})()",
                c[0],
                c[1],
                json!(img.data),
                json!(img.mime),
                json!(name)
            );
            cdp::send(tab, "Runtime.evaluate", json!({"expression": expr, "returnByValue": true})).await?
        }
        (None, None) => {
            return Err("Missing argument: upload_image needs `ref` (a file input) or `coordinate` (where to drop the image).".into())
        }
    };
    let v = out.pointer("/result/value").cloned().unwrap_or(Value::Null);
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(e.to_string());
    }
    cdp::thrown(out).map_err(|e| match e {
        cdp::Error::Exception(_) => {
            "Giving the file to the page failed (the page threw an exception).".to_string()
        }
        e => e.to_string(),
    })?;
    Ok(ToolResult::text(format!(
        "Uploaded {} as \"{name}\" ({} bytes, {}) via {}",
        args.image_id,
        v.get("size").and_then(Value::as_u64).unwrap_or(0),
        img.mime,
        v.get("how").and_then(Value::as_str).unwrap_or("the page")
    )))
}
