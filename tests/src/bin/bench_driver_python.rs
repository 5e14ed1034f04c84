//! A `left_click` through the Python driver (`clients/python`: a `tool_use` through the SDK's
//! `tool_result()`, with its browser_state) beside the same click as a direct `POST /commands`,
//! median of N rounds (default 50): `clients/python/tests/bench_click.py`, run against the real
//! server and headless Chromium with the built extension.
//!
//! Run: `./build.sh setup && ./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_driver_python [N]`

use browser_operator_e2e::process::{tie_to_parent, Group};
use browser_operator_e2e::{connected_with, repo_root, BrowserOptions, Error, Result};

#[tokio::main]
async fn main() -> Result<()> {
    let rounds = browser_operator_e2e::count_arg(50);
    let python = repo_root().join(".tools/py/bin/python");
    if !python.is_file() {
        return Err(Error::new(format!(
            "{} is missing: run ./build.sh setup",
            python.display()
        )));
    }
    let (fixtures, backend, browser) = connected_with(BrowserOptions {
        window_size: Some((1024, 768)),
        ..BrowserOptions::default()
    })
    .await?;
    let client = repo_root().join("clients/python");
    let mut command = tokio::process::Command::new(&python);
    command
        .arg("tests/bench_click.py")
        .arg(rounds.to_string())
        .current_dir(&client)
        .env("PYTHONPATH", client.join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("BROWSER_OPERATOR_URL", backend.http_url())
        .env("BROWSER_OPERATOR_TOKEN", backend.token())
        .env("BROWSER_OPERATOR_FIXTURES", fixtures.url(""))
        .kill_on_drop(true);
    tie_to_parent(command.as_std_mut(), Group::Own);
    let status = command
        .status()
        .await
        .map_err(|e| Error::new(format!("running {}: {e}", python.display())))?;
    browser.close().await?;
    if !status.success() {
        return Err(Error::new(format!("bench_click.py failed: {status}")));
    }
    Ok(())
}
