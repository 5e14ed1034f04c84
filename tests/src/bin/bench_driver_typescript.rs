//! A `left_click` through the TypeScript driver (`clients/typescript`: a `tool_use` through the
//! SDK's `toolResult()`, with its browser_state) beside the same click as a direct
//! `POST /commands`, median of N alternating rounds (default 50):
//! `clients/typescript/scripts/roundtrip.mjs`, run against the real server and headless Chromium
//! with the built extension.
//!
//! Run: `./build.sh setup && ./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_driver_typescript [N]`

use browser_operator_e2e::process::{tie_to_parent, Group};
use browser_operator_e2e::{connected, repo_root, Error, Result};

#[tokio::main]
async fn main() -> Result<()> {
    let rounds = browser_operator_e2e::count_arg(50);
    let dir = repo_root().join("clients/typescript");
    if !dir
        .join("node_modules/@anthropic-ai/sdk/package.json")
        .is_file()
    {
        return Err(Error::new(
            "clients/typescript/node_modules is missing: run ./build.sh setup",
        ));
    }
    let (fixtures, backend, browser) = connected().await?;
    let mut command = tokio::process::Command::new("node");
    command
        .arg("scripts/roundtrip.mjs")
        .current_dir(&dir)
        .env("ROUNDS", rounds.to_string())
        .env("BO_URL", backend.http_url())
        .env("BO_TOKEN", backend.token())
        .env("BO_FIXTURES", fixtures.url("toolset-ts/"))
        .env_remove("BROWSER_OPERATOR_TOKEN")
        .kill_on_drop(true);
    tie_to_parent(command.as_std_mut(), Group::Own);
    let status = command
        .status()
        .await
        .map_err(|e| Error::new(format!("running node: {e}")))?;
    browser.close().await?;
    if !status.success() {
        return Err(Error::new(format!("roundtrip.mjs failed: {status}")));
    }
    Ok(())
}
