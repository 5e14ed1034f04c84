//! The page-side JavaScript next to the tools (`src/**/*.js`, and `extension/page-text.js`, which
//! is a content script too), embedded without its comment lines
//! and indentation (the `page_js!` macro): the same code in two-thirds of the bytes (read_page.js
//! 55.9 KB -> 38.6 KB), comments being for readers of the source. Only whole-line `//` comments
//! and leading and trailing spaces go: line breaks stay (so does automatic semicolon insertion),
//! and no script here continues a string or a template literal over a line break.

use std::fs;
use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rerun-if-changed=src");
    let js = Path::new(&out).join("js");
    copy_scripts(Path::new("src"), &js);
    // get_page_text's reader is also a content script: it lives with the extension's files.
    copy_script(Path::new("../../extension/page-text.js"), &js);
}

fn copy_scripts(dir: &Path, out: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            copy_scripts(&path, &out.join(entry.file_name()));
        } else if path.extension().is_some_and(|e| e == "js") {
            copy_script(&path, out);
        }
    }
}

fn copy_script(path: &Path, out: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
    let source =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let name = path.file_name().expect("a script's path names a file");
    fs::create_dir_all(out).expect("creating OUT_DIR/js");
    fs::write(out.join(name), strip(&source))
        .unwrap_or_else(|e| panic!("writing {} to OUT_DIR: {e}", path.display()));
}

fn strip(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}
