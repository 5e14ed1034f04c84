//! The Chrome Web Store zip (`./build.sh package`) is the extension a user installs: unpacked,
//! it loads in Chromium without the manifest's "key" (so under another id, which the harness
//! finds), connects, answers a command, calls a page tool of a fixture, and runs a code-mode
//! script (the sandbox's wasm is in the zip).
//!
//! `./build.sh test` builds the zip first and passes its path in `BROWSER_OPERATOR_PACKAGE`.
//! Without it, `dist/browser-operator-<version>.zip` is used; if there is none, the test fails
//! under `CI=true` and says how to make one elsewhere.

use browser_operator_e2e::{
    connect, repo_root, temp_dir, Backend, Browser, BrowserOptions, FixtureServer, Result,
};
use serde_json::{json, Value};
use std::path::PathBuf;

fn zip_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BROWSER_OPERATOR_PACKAGE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_root().join("manifest.json")).ok()?)
            .ok()?;
    let version = manifest["version"].as_str()?;
    let zip = repo_root().join(format!("dist/browser-operator-{version}.zip"));
    zip.is_file().then_some(zip)
}

#[tokio::test]
async fn the_store_zip_connects_and_serves_commands_page_tools_and_scripts() -> Result<()> {
    let Some(zip) = zip_path() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "no store zip to test: BROWSER_OPERATOR_PACKAGE is unset and dist/ has none (./build.sh test runs ./build.sh package first)"
        );
        eprintln!(
            "SKIPPED: no store zip (run ./build.sh package, or set BROWSER_OPERATOR_PACKAGE)"
        );
        return Ok(());
    };
    assert!(zip.is_file(), "{} does not exist", zip.display());
    let dir = temp_dir("package");
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
        ])
        .arg(&zip)
        .arg(&dir)
        .status()?;
    assert!(status.success(), "unpacking {} failed", zip.display());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json"))?)?;
    assert!(manifest.get("key").is_none(), "the store zip has no key");
    for file in [
        "extension/page-tools.js",
        "extension/sandbox.js",
        "extension/pkg/sandbox/browser_operator_sandbox_bg.wasm",
    ] {
        assert!(dir.join(file).is_file(), "{file} is missing from the zip");
    }

    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions {
        extension_dir: Some(dir.clone()),
        ..Default::default()
    })
    .await?;
    let id = browser.extension_id().await?;
    eprintln!("the unpacked zip runs as extension {id}");
    connect(&browser, &backend, "websocket").await?;

    // A command.
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url("todo.html")).await?;
    assert_eq!(backend.js(tab, "document.title").await?, "Fixture: todo");
    // A page tool of the fixture (page-tools.js is in the zip).
    let added = backend
        .text(
            "btcp_call",
            json!({"tabId": tab, "namespace": "todo", "method": "add", "args": {"text": "From the zip"}}),
        )
        .await?;
    assert_eq!(added, "{\"id\":1}");
    // A code-mode script (the sandbox and its wasm are in the zip).
    let out: Value = serde_json::from_str(
        &backend
            .text(
                "btcp_run_script",
                json!({"tabId": tab, "script": "const items = await todo.list(); return [items.length, items[0].text, await browser.javascript_tool({text: 'document.title'})];"}),
            )
            .await?,
    )?;
    assert_eq!(out["result"], json!([1, "From the zip", "Fixture: todo"]));
    browser.close().await?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
