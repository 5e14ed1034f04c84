//! Files given to a page as a person's choice gives them: set as a file input's files (by ref),
//! or dropped on an element. Below the tools: `upload_image` gives a kept image, `file_upload`
//! the files a backend sends or paths on the browser's machine. The page side is
//! `file_input.js`, run in the element's world (the isolated world, for a ref).
//!
//! The bounds of what a backend may send, checked before anything reaches the page: at most
//! [`MAX_FILES`] files and [`MAX_TOTAL_BYTES`] decoded bytes in all. The cap sits under the
//! smallest limit a command passes on its way: the bytes travel as base64 (4 characters per 3
//! bytes), so 1 MiB of files is about 1.4 MB of command, within the 4 MiB the extension reads
//! (`protocol::MAX_COMMAND_BYTES`) and the body `POST /commands` takes (the same, less the
//! relay's envelope).

use crate::cdp::{self, Target};
use serde_json::{json, Value};

/// The page side (see the file's head).
const FUNCTION: &str = crate::js::page_js!("file_input.js");

/// At most this many files in one call.
pub const MAX_FILES: usize = 20;
/// At most this many bytes of files (decoded) in one call.
pub const MAX_TOTAL_BYTES: usize = protocol::FILE_UPLOAD_MAX_BYTES;
/// A file's name is cut to this many characters.
pub const MAX_NAME_CHARS: usize = 255;

/// One file as the page receives it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct File {
    /// Its bytes, base64.
    pub data: String,
    /// Its MIME type.
    #[serde(rename = "type")]
    pub mime: String,
    pub name: String,
}

/// What the page is asked to do with the element.
pub enum Mode<'a> {
    /// The element must be a file input: `files` become its files.
    Give(&'a [File]),
    /// A file input gets `files`; any other element has them dropped on it at the point.
    GiveOrDrop(&'a [File], f64, f64),
    /// The element must be a file input taking this many files.
    Check(usize),
    /// The input's files, each read once.
    Read,
    /// The input's files go (after `Read` found one the browser cannot read).
    Clear,
}

/// Runs the page side on the element (`object`, a RemoteObject id in `target`'s session). The
/// page's own refusal (not a file input, disabled, one file only) is the error.
pub async fn call(target: &Target, object: &str, mode: Mode<'_>) -> Result<Value, String> {
    let (name, files, count, x, y) = match mode {
        Mode::Give(f) => ("give", f, 0, 0.0, 0.0),
        Mode::GiveOrDrop(f, x, y) => ("give or drop", f, 0, x, y),
        Mode::Check(n) => ("check", &[][..], n, 0.0, 0.0),
        Mode::Read => ("read", &[][..], 0, 0.0, 0.0),
        Mode::Clear => ("clear", &[][..], 0, 0.0, 0.0),
    };
    let out = cdp::send_to(
        target,
        "Runtime.callFunctionOn",
        json!({
            "objectId": object,
            "functionDeclaration": FUNCTION,
            "arguments": [{"value": name}, {"value": files}, {"value": count}, {"value": x}, {"value": y}],
            "returnByValue": true,
            "awaitPromise": true,
        }),
    )
    .await?;
    answer(out)
}

/// `upload_image` at a point: the element there, in the page's main world (as a person's drop
/// lands), gets the files.
pub async fn give_at(
    tab: i32,
    files: &[File],
    x: f64,
    y: f64,
    shown: (f64, f64),
) -> Result<Value, String> {
    let expr = format!(
        "(() => {{ const el = document.elementFromPoint({x}, {y}); if (!el) return {{error: 'Nothing at ({}, {}) to drop the image on.'}}; return ({FUNCTION}).call(el, 'give or drop', {}, 0, {x}, {y}); }})()",
        shown.0,
        shown.1,
        json!(files),
    );
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": expr, "returnByValue": true}),
    )
    .await?;
    answer(out)
}

fn answer(out: Value) -> Result<Value, String> {
    let v = out.pointer("/result/value").cloned().unwrap_or(Value::Null);
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(e.to_string());
    }
    cdp::thrown(out).map_err(|e| match e {
        cdp::Error::Exception(_) => {
            "Giving the files to the page failed (the page threw an exception).".to_string()
        }
        e => e.to_string(),
    })?;
    Ok(v)
}

/// "\"a.txt\" (12 bytes, text/plain), …": the files the page now has, from its answer.
pub fn listed(v: &Value) -> String {
    v.get("files")
        .and_then(Value::as_array)
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    let name = f.get("name").and_then(Value::as_str).unwrap_or("");
                    let size = f.get("size").and_then(Value::as_u64).unwrap_or(0);
                    let mime = f.get("type").and_then(Value::as_str).unwrap_or("");
                    let mime = if mime.is_empty() { "no type" } else { mime };
                    format!("\"{name}\" ({size} bytes, {mime})")
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// A file name as a page may see it: its last path component, without control or bidi
/// characters, trimmed, at most [`MAX_NAME_CHARS`] characters; "file" when nothing is left.
pub fn sanitized_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control() && !is_bidi(*c))
        .take(MAX_NAME_CHARS)
        .collect();
    let clean = clean.trim_matches(|c: char| c.is_whitespace());
    if clean.is_empty() || clean.chars().all(|c| c == '.') {
        "file".into()
    } else {
        clean.to_string()
    }
}

/// Characters that reorder or hide text (a name that shows as "txt.exe" is something else).
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A MIME type as given (`type/subtype`, with parameters), or `None` when it is not one.
pub fn checked_mime(mime: &str) -> Option<String> {
    let mime = mime.trim();
    let (essence, _params) = mime.split_once(';').unwrap_or((mime, ""));
    let (t, sub) = essence.trim().split_once('/')?;
    let token = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
    };
    let printable = mime.chars().all(|c| (' '..='~').contains(&c));
    (token(t) && token(sub) && printable && mime.len() <= 255).then(|| mime.to_ascii_lowercase())
}

/// The MIME type a browser gives a chosen file of this name ("" when it knows none, as for a
/// file the OS has no type for).
pub fn mime_for(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "text" | "log" => "text/plain",
        "csv" => "text/csv",
        "htm" | "html" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "xml" => "text/xml",
        "md" => "text/markdown",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls" => "application/vnd.ms-excel",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt" => "application/vnd.ms-powerpoint",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => "",
    }
}

/// How many bytes standard base64 (padding optional) decodes to, or why it is not base64.
pub fn decoded_len(data: &str) -> Result<usize, &'static str> {
    let body = data.trim_end_matches('=');
    if data.len() - body.len() > 2 {
        return Err("it has more than two '=' of padding");
    }
    if !body
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
    {
        return Err("it has characters outside standard base64 (A-Z a-z 0-9 + / and = padding)");
    }
    if body.len() % 4 == 1 {
        return Err("its length is not that of base64");
    }
    if data.len() != body.len() && !data.len().is_multiple_of(4) {
        return Err("its padding does not match its length");
    }
    Ok(body.len() / 4 * 3 + (body.len() % 4).saturating_sub(1))
}

/// A path on the browser's machine: absolute (`/…`, `C:\…`, `\\server\…`).
pub fn is_absolute_path(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && (b[2] == b'\\' || b[2] == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_last_component_without_controls() {
        assert_eq!(sanitized_name("report.pdf"), "report.pdf");
        assert_eq!(sanitized_name("/etc/passwd"), "passwd");
        assert_eq!(sanitized_name("..\\..\\win.ini"), "win.ini");
        assert_eq!(sanitized_name("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(sanitized_name("invoice\u{202E}fdp.exe"), "invoicefdp.exe");
        assert_eq!(sanitized_name("  spaced.txt "), "spaced.txt");
        assert_eq!(sanitized_name(".."), "file");
        assert_eq!(sanitized_name("dir/"), "file");
        assert_eq!(
            sanitized_name(&"é".repeat(300)).chars().count(),
            MAX_NAME_CHARS
        );
    }

    #[test]
    fn mime_types_are_checked_and_guessed() {
        assert_eq!(checked_mime("text/plain").as_deref(), Some("text/plain"));
        assert_eq!(
            checked_mime("Text/CSV; charset=utf-8").as_deref(),
            Some("text/csv; charset=utf-8")
        );
        assert_eq!(checked_mime("text"), None);
        assert_eq!(checked_mime("text/plain\r\nX: y"), None);
        assert_eq!(checked_mime("/plain"), None);
        assert_eq!(mime_for("a.PDF"), "application/pdf");
        assert_eq!(mime_for("notes.txt"), "text/plain");
        assert_eq!(mime_for("noext"), "");
        assert_eq!(mime_for("x.unknown"), "");
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(decoded_len(""), Ok(0));
        assert_eq!(decoded_len("aGk="), Ok(2));
        assert_eq!(decoded_len("aGk"), Ok(2));
        assert_eq!(decoded_len("aGVsbG8="), Ok(5));
        assert_eq!(decoded_len("aGVsbG8h"), Ok(6));
        assert_eq!(decoded_len("YQ=="), Ok(1));
        assert!(decoded_len("a").is_err());
        assert!(decoded_len("aGk*").is_err());
        assert!(decoded_len("aGk=\n").is_err());
        assert!(decoded_len("YQ===").is_err());
        assert!(decoded_len("YQ=").is_err());
    }

    #[test]
    fn absolute_paths() {
        assert!(is_absolute_path("/home/me/a.txt"));
        assert!(is_absolute_path("C:\\Users\\me\\a.txt"));
        assert!(is_absolute_path("c:/x"));
        assert!(is_absolute_path("\\\\server\\share\\a"));
        assert!(!is_absolute_path("a.txt"));
        assert!(!is_absolute_path("./a.txt"));
        assert!(!is_absolute_path("~/a.txt"));
        assert!(!is_absolute_path("C:a.txt"));
    }
}
