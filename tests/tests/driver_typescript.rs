//! The TypeScript driver (`clients/typescript`) end to end: its node test
//! (`clients/typescript/test/toolset.test.mjs`, node's own test runner) runs with the real
//! `@anthropic-ai/sdk`, no model and no API key, against the real server and headless Chromium
//! with the built extension, on the fixture pages in `tests/fixtures/toolset-ts/`. The test's
//! output is shown when it fails. `./build.sh setup` (and `test`) install the package's
//! dependencies from its package-lock.json.

use browser_operator_e2e::{repo_root, Result};
use std::process::Stdio;
use std::time::Duration;

/// Generous: the node test makes about 120 calls, one of them a 1 s `hold_key`.
const NODE_TEST_BOUND: Duration = Duration::from_secs(300);

#[tokio::test]
async fn the_typescript_driver_serves_every_member() -> Result<()> {
    let dir = repo_root().join("clients/typescript");
    let sdk = dir.join("node_modules/@anthropic-ai/sdk/package.json");
    assert!(
        sdk.is_file(),
        "{} is missing: run ./build.sh setup (npm ci in clients/typescript)",
        sdk.display()
    );
    // The committed dist/ must be what src/ compiles to: it is what `npm install` users get.
    let check = tokio::process::Command::new("node")
        .args(["scripts/build.mjs", "--check"])
        .current_dir(&dir)
        .output()
        .await?;
    assert!(
        check.status.success(),
        "clients/typescript/dist is stale:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    let (fixtures, backend, browser) = browser_operator_e2e::connected().await?;
    // A person's own tab, outside the automation group: every member naming it is refused.
    let worker = browser.worker().await?;
    let persons = fixtures.url("hello.html");
    let outside = worker
        .eval(&format!(
            "chrome.tabs.create({{url: {persons:?}, active: false}}).then((t) => t.id)"
        ))
        .await?;
    let mut node = tokio::process::Command::new("node");
    node.args([
        "--test",
        "--test-reporter=spec",
        "test/unit.test.mjs",
        "test/toolset.test.mjs",
    ])
    .current_dir(&dir)
    .env("BO_URL", backend.http_url())
    .env("BO_TOKEN", backend.token())
    .env("BO_FIXTURES", fixtures.url("toolset-ts/"))
    .env("BO_OUTSIDE_TAB", outside.to_string())
    .env_remove("BROWSER_OPERATOR_TOKEN")
    .stdin(Stdio::null())
    .kill_on_drop(true);
    let out = tokio::time::timeout(NODE_TEST_BOUND, node.output())
        .await
        .map_err(|_| {
            browser_operator_e2e::Error::new(format!(
                "the node test did not finish in {NODE_TEST_BOUND:?}"
            ))
        })??;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        eprintln!("--- Chromium log (tail) ---\n{}", browser.log_tail());
        panic!(
            "the TypeScript driver's test failed ({}):\n{report}",
            out.status
        );
    }
    println!("{report}");
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
