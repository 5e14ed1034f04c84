//! file_upload: sets a file input's files (by ref), as a person's choice in the file chooser
//! does. `files`: bytes the backend sends (base64), built into Files in the element's world;
//! `paths`: files on the browser's own machine, set by Chrome (`DOM.setFileInputFiles`) and
//! each read once to prove it is there. Bounds and name rules are `file_input`'s.

use crate::cdp;
use crate::file_input::{self, File, Mode, MAX_FILES, MAX_TOTAL_BYTES};
use crate::isolated_world as world;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "file_upload",
    tab: Some(Access::Acts),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
    #[serde(rename = "ref")]
    target: String,
    #[serde(default)]
    files: Option<Vec<Sent>>,
    #[serde(default)]
    paths: Option<Vec<String>>,
}

/// A file as the backend sends it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    name: String,
    #[serde(default)]
    mime_type: Option<String>,
    data: String,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    match (args.files, args.paths) {
        (Some(files), None) => {
            let files = checked_files(files)?;
            let element = world::resolve(args.tab_id, &args.target).await?;
            let v = file_input::call(&element.target, &element.object, Mode::Give(&files)).await?;
            Ok(ToolResult::text(format!(
                "Set the file input {}'s files: {}.",
                args.target,
                file_input::listed(&v)
            )))
        }
        (None, Some(paths)) => from_paths(args.tab_id, &args.target, paths).await,
        (Some(_), Some(_)) => Err(
            "file_upload takes `files` (bytes sent with the command) or `paths` (files on the browser's machine), not both."
                .into(),
        ),
        (None, None) => Err(
            "Missing argument: file_upload needs `files` ([{name, mimeType?, data: base64}]) or `paths` (absolute paths on the browser's machine)."
                .into(),
        ),
    }
}

/// The sent files, checked against the bounds, named and typed as the page will see them.
fn checked_files(sent: Vec<Sent>) -> Result<Vec<File>, String> {
    if sent.is_empty() || sent.len() > MAX_FILES {
        return Err(format!(
            "file_upload takes 1 to {MAX_FILES} files; {} were given.",
            sent.len()
        ));
    }
    let mut total = 0usize;
    let mut files = Vec::with_capacity(sent.len());
    for (i, f) in sent.into_iter().enumerate() {
        let size = file_input::decoded_len(&f.data)
            .map_err(|why| format!("files[{i}].data is not base64: {why}."))?;
        total = total.saturating_add(size);
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "The files are larger than file_upload's limit of {MAX_TOTAL_BYTES} bytes (1 MiB) in all (the limit is reached at files[{i}]); send fewer or smaller files."
            ));
        }
        let name = file_input::sanitized_name(&f.name);
        let mime = match f.mime_type.as_deref().map(str::trim) {
            None | Some("") => file_input::mime_for(&name).to_string(),
            Some(m) => file_input::checked_mime(m).ok_or_else(|| {
                format!("files[{i}].mimeType \"{m}\" is not a MIME type (type/subtype, such as text/plain).")
            })?,
        };
        files.push(File {
            data: f.data,
            mime,
            name,
        });
    }
    Ok(files)
}

/// `paths`: Chrome sets the files from the browser's disk; each is read once in the page, and
/// an input whose file cannot be read is cleared again (a person cannot choose a missing file).
async fn from_paths(tab: i32, target: &str, paths: Vec<String>) -> Result<ToolResult, String> {
    if paths.is_empty() || paths.len() > MAX_FILES {
        return Err(format!(
            "file_upload takes 1 to {MAX_FILES} paths; {} were given.",
            paths.len()
        ));
    }
    if let Some((i, _)) = paths
        .iter()
        .enumerate()
        .find(|(_, p)| !file_input::is_absolute_path(p) || p.chars().any(char::is_control))
    {
        return Err(format!(
            "paths[{i}] is not an absolute path on the browser's machine (such as /home/me/report.pdf or C:\\Users\\me\\report.pdf)."
        ));
    }
    let element = world::resolve(tab, target).await?;
    file_input::call(&element.target, &element.object, Mode::Check(paths.len())).await?;
    cdp::send_to(
        &element.target,
        "DOM.setFileInputFiles",
        json!({"files": paths, "objectId": element.object}),
    )
    .await
    .map_err(|e| match e {
        cdp::Error::Chrome { chrome, .. } if chrome.contains("Not allowed") => {
            format!(
                "Chrome refused to set files from paths: the extension may not read local files. Allow it under chrome://extensions ({}, Details, \"Allow access to file URLs\"), or send the files' bytes in `files` instead.",
                crate::brand::brand().product_name
            )
        }
        e => e.to_string(),
    })?;
    let v = file_input::call(&element.target, &element.object, Mode::Read).await?;
    if let Some(name) = v.get("unreadable").and_then(Value::as_str) {
        let why = v.get("why").and_then(Value::as_str).unwrap_or("unknown");
        let cleared = file_input::call(&element.target, &element.object, Mode::Clear)
            .await
            .is_ok();
        let left = if cleared {
            "The file input was cleared again."
        } else {
            "Clearing the file input again failed."
        };
        return Err(format!(
            "The browser could not read the file \"{name}\" ({why}): check that each path names a readable file on the browser's machine. {left}"
        ));
    }
    Ok(ToolResult::text(format!(
        "Set the file input {target}'s files: {}.",
        file_input::listed(&v)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(name: &str, mime: Option<&str>, data: &str) -> Sent {
        Sent {
            name: name.into(),
            mime_type: mime.map(Into::into),
            data: data.into(),
        }
    }

    #[test]
    fn files_are_named_typed_and_bounded() {
        let files = checked_files(vec![
            sent("../notes.txt", None, "aGk="),
            sent("a.bin", Some("Application/Octet-Stream"), ""),
        ])
        .expect("accepted");
        assert_eq!(files[0].name, "notes.txt");
        assert_eq!(files[0].mime, "text/plain");
        assert_eq!(files[1].mime, "application/octet-stream");

        let e = checked_files(vec![sent("a", Some("nonsense"), "")]).err();
        assert!(e.is_some_and(|e| e.contains("not a MIME type")));
        let e = checked_files(vec![sent("a", None, "!!")]).err();
        assert!(e.is_some_and(|e| e.contains("files[0].data is not base64")));
        let e = checked_files(vec![]).err();
        assert!(e.is_some_and(|e| e.contains("1 to 20 files")));

        // The total cap: exactly 1 MiB passes, one byte more does not (and the error says it).
        let mib = "A".repeat(MAX_TOTAL_BYTES / 3 * 4) + "AA==";
        assert_eq!(file_input::decoded_len(&mib), Ok(MAX_TOTAL_BYTES));
        assert!(checked_files(vec![sent("a", None, &mib), sent("b", None, "")]).is_ok());
        let e = checked_files(vec![sent("a", None, &mib), sent("b", None, "AA==")]).err();
        assert!(
            e.as_deref().is_some_and(
                |e| e.contains("limit of 1048576 bytes (1 MiB)") && e.contains("files[1]")
            ),
            "{e:?}"
        );
    }
}
