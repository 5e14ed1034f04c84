//! upload_image: an image taken by screenshot/zoom, as a real File, into a file input (by ref)
//! or dropped on the element at a point: a File built in the page (`file_input`), as a person's
//! choice or drop gives it.

use crate::geometry::scale as coords;
use crate::isolated_world as world;
use crate::tools::{typed, Access, Tool};
use crate::{file_input, images};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::Value;

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
    let files = [file_input::File {
        data: img.data.clone(),
        mime: img.mime.to_string(),
        name: name.clone(),
    }];
    let v = match (&args.target, args.coordinate) {
        (Some(r), _) => {
            let element = world::resolve(tab, r).await?;
            let mode = file_input::Mode::GiveOrDrop(&files, 0.0, 0.0);
            file_input::call(&element.target, &element.object, mode).await?
        }
        (None, Some(c)) => {
            let (x, y) = coords::to_viewport(tab, c[0], c[1]);
            file_input::give_at(tab, &files, x, y, (c[0], c[1])).await?
        }
        (None, None) => {
            return Err("Missing argument: upload_image needs `ref` (a file input) or `coordinate` (where to drop the image).".into())
        }
    };
    Ok(ToolResult::text(format!(
        "Uploaded {} as \"{name}\" ({} bytes, {}) via {}",
        args.image_id,
        v.pointer("/files/0/size")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        img.mime,
        v.get("how").and_then(Value::as_str).unwrap_or("the page")
    )))
}
