//! The Python driver (`clients/python`, the `anthropic` SDK's browser toolset) end to end: the
//! real server and headless Chromium with the built extension, and the Python test files run
//! against them with the real, pinned SDK (in `.tools/py`, which `./build.sh setup` makes): no
//! model, no API key. The Python tests hand `tool_use` blocks to the toolset's `tool_result()` and
//! check each effect on the fixture pages (`tests/fixtures/toolset/`).

use browser_operator_e2e::process::{tie_to_parent, Group};
use browser_operator_e2e::{connected_with, repo_root, BrowserOptions, Error, Result};
use std::path::PathBuf;
use std::time::Duration;

/// The whole Python run's bound (it takes about a minute; a hang must not hold the suite).
const PYTHON_BOUND: Duration = Duration::from_secs(420);

/// The extension's idle period for the run (seconds).
const IDLE_SECONDS: u32 = 2;

/// The venv `./build.sh setup` makes, with the pinned SDK.
fn python() -> Result<PathBuf> {
    let python = repo_root().join(".tools/py/bin/python");
    if python.is_file() {
        Ok(python)
    } else {
        Err(Error::new(format!(
            "{} is missing: run ./build.sh setup (it makes the venv with the pinned anthropic SDK)",
            python.display()
        )))
    }
}

#[tokio::test]
async fn the_python_driver_serves_every_member_in_the_browser() -> Result<()> {
    let python = python()?;
    let (fixtures, backend, browser) = connected_with(BrowserOptions {
        window_size: Some((1024, 768)),
        ..BrowserOptions::default()
    })
    .await?;
    let worker = browser.worker().await?;
    // A short idle period, so the Idle test can leave a tab unused past it (the extension
    // detaches such a tab, but not while the policy answers dialogs).
    worker.set_idle_seconds(IDLE_SECONDS).await?;
    // A person's own tab, outside the automation group: every member naming it is refused.
    let persons = fixtures.url("hello.html");
    let outside = worker
        .eval(&format!(
            "chrome.tabs.create({{url: {persons:?}, active: false}}).then((t) => t.id)"
        ))
        .await?;
    let client = repo_root().join("clients/python");
    let mut command = tokio::process::Command::new(&python);
    command
        .args([
            "-m",
            "unittest",
            "-v",
            "tests.test_unit",
            "tests.test_toolset",
        ])
        .current_dir(&client)
        // The working tree's driver, not a copy installed earlier.
        .env("PYTHONPATH", client.join("src"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("BROWSER_OPERATOR_URL", backend.http_url())
        .env("BROWSER_OPERATOR_TOKEN", backend.token())
        .env("BROWSER_OPERATOR_FIXTURES", fixtures.url(""))
        .env("BROWSER_OPERATOR_IDLE_SECONDS", IDLE_SECONDS.to_string())
        .env("BROWSER_OPERATOR_OUTSIDE_TAB", outside.to_string())
        .env_remove("BROWSER_OPERATOR_CONFIG_DIR")
        .kill_on_drop(true);
    tie_to_parent(command.as_std_mut(), Group::Own);
    let run = tokio::time::timeout(PYTHON_BOUND, command.output()).await;
    let output = match run {
        Ok(output) => {
            output.map_err(|e| Error::new(format!("running {}: {e}", python.display())))?
        }
        Err(_) => {
            eprintln!("--- Chromium log (tail) ---\n{}", browser.log_tail());
            return Err(Error::new(format!(
                "the Python tests did not finish within {PYTHON_BOUND:?}"
            )));
        }
    };
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let ran = report
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    if !output.status.success() || report.contains("skipped") || ran < 20 {
        eprintln!("--- Chromium log (tail) ---\n{}", browser.log_tail());
        return Err(Error::new(format!(
            "the Python driver's tests failed ({} tests ran, {}):\n{report}",
            ran, output.status
        )));
    }
    eprintln!("{report}");
    // The person's tab was never acted on: still outside the group, on its page.
    let tab = worker
        .eval(&format!(
            "chrome.tabs.get({outside}).then((t) => [t.groupId, t.url])"
        ))
        .await?;
    assert_eq!(
        tab,
        serde_json::json!([-1, persons]),
        "the tab outside the group"
    );
    Ok(())
}
