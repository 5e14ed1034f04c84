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
pub mod bench;
pub mod browser;
pub mod cdp;
pub mod display;
pub mod error;
pub mod fixtures;
pub mod fleet;
pub mod mcp;
pub mod process;

pub use backend::{created_tab_id, image_size, images, tabs_context, Backend, Caller};
pub use browser::{js_string, Browser, BrowserOptions, Page, Session, TargetInfo};
pub use cdp::{wait_event_on, Cdp, Event};
pub use display::VirtualDisplay;
pub use error::{Error, Result, ResultExt};
pub use fixtures::{percent_encode, read_http_request, FixtureServer};

/// The repository root, which is also the unpacked extension folder.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The built worker, which `./build.sh build` produces (in the folder the tests load the
/// extension from: see [`browser::default_extension_dir`]).
pub fn built_worker_wasm() -> PathBuf {
    browser::default_extension_dir().join("extension/pkg/browser_operator_worker_bg.wasm")
}

/// Call at the start of every test that loads the extension: panics with instructions
/// if the extension hasn't been built.
pub fn init() {
    let wasm = built_worker_wasm();
    if !wasm.is_file() {
        panic!("{} is missing: run ./build.sh build first", wasm.display());
    }
}

/// Polls `check` every 50 ms until it is true, at most `within`; else an error naming `what`.
pub async fn until<F, Fut>(what: &str, within: std::time::Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let start = std::time::Instant::now();
    loop {
        if check().await? {
            return Ok(());
        }
        if start.elapsed() > within {
            return Err(Error::new(format!("{what}: not within {within:?}")));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The usual start of a browser test: fixtures, a fresh server, and Chromium whose extension
/// was configured through its Options page and is connected.
pub async fn connected() -> Result<(FixtureServer, Backend, Browser)> {
    connected_over("websocket").await
}

/// [`connected`] over `transport` ("websocket", "sse-http", "http-poll", "http-short-poll").
pub async fn connected_over(transport: &str) -> Result<(FixtureServer, Backend, Browser)> {
    launched(BrowserOptions::default(), transport).await
}

/// [`connected`] with browser options of the test's own (device scale, window size, display).
pub async fn connected_with(opts: BrowserOptions) -> Result<(FixtureServer, Backend, Browser)> {
    launched(opts, "websocket").await
}

async fn launched(
    opts: BrowserOptions,
    transport: &str,
) -> Result<(FixtureServer, Backend, Browser)> {
    init();
    let fixtures = FixtureServer::start();
    let backend = Backend::start().await?;
    let browser = Browser::launch(opts).await?;
    connect(&browser, &backend, transport).await?;
    Ok((fixtures, backend, browser))
}

/// Configures `browser` through its Options page to connect to `backend` over `transport` with
/// the main token, and waits until both sides say it is connected.
pub async fn connect(browser: &Browser, backend: &Backend, transport: &str) -> Result<()> {
    browser
        .configure_transport(
            transport,
            &backend.url_for(transport),
            backend.token(),
            None,
        )
        .await?;
    let wait = std::time::Duration::from_secs(30);
    backend.wait_browsers(1, wait).await?;
    browser.wait_status("connected", wait).await?;
    Ok(())
}

/// A benchmark's first command-line argument as a count (rounds, calls), else `default`.
pub fn count_arg(default: usize) -> usize {
    std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// A fresh, empty directory under the system's temporary directory, named after `name` and
/// this process.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bo-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// The `browser-operator-cli` built beside the running program (for the benchmarks, which are
/// binaries of this crate: `cargo build --release -p browser-operator-e2e --bins` builds both).
pub fn cli_beside_this_program() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::new(e.to_string()))?;
    let cli = exe.with_file_name("browser-operator-cli");
    if !cli.is_file() {
        return Err(Error::new(format!(
            "{} is missing: cargo build --release -p browser-operator-e2e --bins",
            cli.display()
        )));
    }
    Ok(cli)
}

/// The middle value (upper middle for an even count), for benchmark reports.
pub fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort();
    values[values.len() / 2]
}
