//! End-to-end test harness for Browser Operator: headless Chromium with the unpacked
//! extension (the repository root) driven over a raw CDP client, plus a fixture HTTP
//! server for test pages.
//!
//! ```no_run
//! # async fn demo() -> browser_operator_e2e::Result<()> {
//! use browser_operator_e2e::{Browser, BrowserOptions, FixtureServer};
//! browser_operator_e2e::init();
//! let fixtures = FixtureServer::start();
//! let browser = Browser::launch(BrowserOptions::default()).await?;
//! let page = browser.open_page(&fixtures.url("hello.html")).await?;
//! assert_eq!(page.eval("document.title").await?, "Fixture: hello");
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

pub mod backend;
pub mod browser;
pub mod cdp;
pub mod display;
pub mod error;
pub mod fixtures;
pub mod mcp;

pub use backend::{images, Backend, Caller};
pub use browser::{js_string, Browser, BrowserOptions, Page, Session, TargetInfo};
pub use cdp::{wait_event_on, Cdp, Event};
pub use display::VirtualDisplay;
pub use error::{Error, Result, ResultExt};
pub use fixtures::FixtureServer;

/// The repository root, which is also the unpacked extension folder.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The built worker, which `./build.sh build` produces.
pub fn built_worker_wasm() -> PathBuf {
    repo_root().join("extension/pkg/browser_operator_worker_bg.wasm")
}

/// Call at the start of every test that loads the extension: panics with instructions
/// if the extension hasn't been built.
pub fn init() {
    let wasm = built_worker_wasm();
    if !wasm.is_file() {
        panic!("{} is missing: run ./build.sh build first", wasm.display());
    }
}

/// The usual start of a browser test: fixtures, a fresh server, and Chromium whose extension
/// was configured through its Options page and is connected.
pub async fn connected() -> Result<(FixtureServer, Backend, Browser)> {
    init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(BrowserOptions::default()).await?;
    browser
        .configure_extension(&backend.ws_url(), backend.token(), None)
        .await?;
    let wait = std::time::Duration::from_secs(20);
    backend.wait_browsers(1, wait).await?;
    browser.wait_status("connected", wait).await?;
    Ok((fixtures, backend, browser))
}
