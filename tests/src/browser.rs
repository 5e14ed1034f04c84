//! Headless Chromium with the unpacked extension loaded, driven over CDP.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::sync::OnceCell;

use crate::cdp::Cdp;
use crate::error::{abbreviate, Error, Result};
use crate::process::{tie_to_parent, Group};
use crate::repo_root;

/// The Chromium binary used unless `CHROMIUM` is set. (Not `/usr/bin/chromium`: that is
/// a wrapper script that adds its own flags.)
pub const DEFAULT_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// Path of the extension's service worker, relative to the extension root.
pub const WORKER_PATH: &str = "/extension/worker.js";
/// Path of the extension's Options page, relative to the extension root.
pub const OPTIONS_PATH: &str = "/extension/options.html";

/// How long to wait for Chromium to write `DevToolsActivePort`.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for the extension's service-worker target.
const EXTENSION_TIMEOUT: Duration = Duration::from_secs(10);
/// Part of [`EXTENSION_TIMEOUT`] after which `--load-extension` is considered ignored
/// and `Extensions.loadUnpacked` is tried. (The target normally appears within 0.5 s.)
const LOAD_EXTENSION_GRACE: Duration = Duration::from_secs(4);
/// How long to wait for a page to load or the worker to stop.
const PAGE_TIMEOUT: Duration = Duration::from_secs(15);
/// Poll interval of every wait-for-condition loop.
const POLL: Duration = Duration::from_millis(50);
/// Lines of Chromium's log shown in errors.
const LOG_TAIL_LINES: usize = 40;

/// How to launch the browser.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// Load the extension at the repository root (`--load-extension`). Default `true`.
    pub with_extension: bool,
    /// `--window-size=W,H`.
    pub window_size: Option<(u32, u32)>,
    /// `--force-device-scale-factor`.
    pub device_scale_factor: Option<f64>,
    /// More command-line arguments, appended last.
    pub extra_args: Vec<String>,
    /// Use this profile directory instead of a fresh one (it is kept on drop). To reuse a
    /// profile across launches, end the first browser with [`Browser::close`] so it
    /// flushes its storage.
    pub user_data_dir: Option<PathBuf>,
    /// The unpacked extension to load; default: `BROWSER_OPERATOR_EXTENSION_DIR` if set, else
    /// the repository root.
    pub extension_dir: Option<PathBuf>,
    /// Run without a window. Default `true`; `./build.sh run` opens a real window when it can.
    pub headless: bool,
    /// The X display of a headful browser (`DISPLAY`), e.g. a [`crate::VirtualDisplay`]'s;
    /// default: the environment's.
    pub display: Option<String>,
    /// Whether `javascript_tool` and the uploads wait for the person's approval, as in a fresh
    /// install. Default `false`: at launch the harness unticks "Ask before javascript_tool and
    /// uploads" in the person's site rules (as a person who allows them would), so tests of
    /// other things are not held up by approvals; tests of approvals set it.
    pub ask_before_scripts: bool,
}

impl Default for BrowserOptions {
    fn default() -> Self {
        BrowserOptions {
            with_extension: true,
            window_size: None,
            device_scale_factor: None,
            extra_args: Vec::new(),
            user_data_dir: None,
            extension_dir: None,
            headless: true,
            display: None,
            ask_before_scripts: false,
        }
    }
}

impl BrowserOptions {
    /// Options for a browser without the extension.
    pub fn without_extension() -> Self {
        BrowserOptions {
            with_extension: false,
            ..Default::default()
        }
    }
}

/// A target as listed by `Target.getTargets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetInfo {
    pub id: String,
    /// `page`, `service_worker`, `background_page`, `browser_ui`, ...
    pub kind: String,
    pub url: String,
    pub title: String,
}

impl TargetInfo {
    fn from_json(v: &Value) -> TargetInfo {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        TargetInfo {
            id: s("targetId"),
            kind: s("type"),
            url: s("url"),
            title: s("title"),
        }
    }
}

/// A running headless Chromium. Dropping it kills the browser (its whole process group)
/// and removes its temporary directory.
///
/// Chromium is also killed if the thread that launched it exits (`PR_SET_PDEATHSIG`), so
/// a test process killed by a timeout leaves no browser behind: keep the `Browser` on
/// the test's own thread or runtime (not a `spawn_blocking` thread).
pub struct Browser {
    cdp: Cdp,
    process: Process,
    user_data_dir: PathBuf,
    log_path: PathBuf,
    /// The loaded extension's directory (`None`: launched without the extension).
    extension_dir: Option<PathBuf>,
    extension_id: OnceCell<String>,
}

/// The Chromium process and the temp dir (log, fresh profile). Dropping it kills the
/// process group and removes the dir.
struct Process {
    child: Child,
    temp_dir: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        kill_tree(&mut self.child);
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("pid", &self.process.child.id())
            .field("user_data_dir", &self.user_data_dir)
            .finish()
    }
}

impl Browser {
    /// Launch Chromium (from `CHROMIUM` or [`DEFAULT_CHROMIUM`]) headless with a fresh
    /// profile (unless `opts.user_data_dir`), wait for its DevTools endpoint and connect.
    pub async fn launch(opts: BrowserOptions) -> Result<Browser> {
        let binary = std::env::var_os("CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM));
        if !binary.exists() {
            return Err(Error::new(format!(
                "Chromium not found at {} (set CHROMIUM to its binary)",
                binary.display()
            )));
        }
        let extension_dir = match &opts.extension_dir {
            Some(dir) => dir
                .canonicalize()
                .map_err(|e| Error::new(format!("extension dir {}: {e}", dir.display())))?,
            None => default_extension_dir(),
        };
        if opts.with_extension && !extension_dir.join("manifest.json").is_file() {
            return Err(Error::new(format!(
                "no manifest.json in {}: the extension can't be loaded",
                extension_dir.display()
            )));
        }

        let temp_dir = make_temp_dir()?;
        // From here on, errors must remove temp_dir; the guard does until it is disarmed.
        let mut cleanup = TempDirGuard(Some(temp_dir.clone()));
        let user_data_dir = match &opts.user_data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Error::new(format!("creating user data dir {}: {e}", dir.display()))
                })?;
                dir.clone()
            }
            None => {
                let dir = temp_dir.join("profile");
                std::fs::create_dir(&dir)?;
                dir
            }
        };
        // A reused profile may hold the port file of a previous run.
        let port_file = user_data_dir.join("DevToolsActivePort");
        match std::fs::remove_file(&port_file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::new(format!(
                    "removing stale {}: {e}",
                    port_file.display()
                )))
            }
            _ => {}
        }

        let mut args: Vec<String> = [
            if opts.headless {
                "--headless=new"
            } else {
                "--new-window"
            },
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--remote-debugging-port=0",
            "--enable-unsafe-extension-debugging",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--user-data-dir={}", user_data_dir.display()));
        if opts.with_extension {
            args.push(format!("--load-extension={}", extension_dir.display()));
            args.push(format!(
                "--disable-extensions-except={}",
                extension_dir.display()
            ));
        }
        if let Some((w, h)) = opts.window_size {
            args.push(format!("--window-size={w},{h}"));
        }
        if let Some(factor) = opts.device_scale_factor {
            args.push(format!("--force-device-scale-factor={factor}"));
        }
        args.extend(opts.extra_args.iter().cloned());
        args.push("about:blank".to_string());

        let log_path = temp_dir.join("chromium.log");
        let log = File::create(&log_path)?;
        let mut command = Command::new(&binary);
        if let Some(display) = &opts.display {
            command.env("DISPLAY", display);
        }
        command
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        // Own process group, so Drop can kill the zygote and renderers too; if the test process
        // dies without running Drop (killed by a timeout), Chromium goes with it.
        tie_to_parent(&mut command, Group::Own);
        let child = command
            .spawn()
            .map_err(|e| Error::new(format!("starting {}: {e}", binary.display())))?;
        cleanup.0 = None;
        // From here on the process guard kills Chromium and removes temp_dir on error.
        let mut process = Process { child, temp_dir };

        let cdp = match connect_when_ready(&port_file, &mut process.child).await {
            Ok(cdp) => cdp,
            Err(e) => {
                let tail = log_tail_of(&log_path);
                return Err(e
                    .context(format!("launching {} {}", binary.display(), args.join(" ")))
                    .with_log(&tail));
            }
        };
        let browser = Browser {
            cdp,
            process,
            user_data_dir,
            log_path,
            extension_dir: opts.with_extension.then_some(extension_dir),
            extension_id: OnceCell::new(),
        };
        if opts.with_extension && !opts.ask_before_scripts {
            browser
                .scripts_without_approval()
                .await
                .map_err(|e| e.context("unticking \"Ask before javascript_tool and uploads\""))?;
        }
        Ok(browser)
    }

    /// Unticks "Ask before javascript_tool and uploads" in the person's site rules (kept when
    /// the profile already has site rules).
    async fn scripts_without_approval(&self) -> Result<()> {
        self.wait_worker(EXTENSION_TIMEOUT).await?;
        let worker = self.worker().await?;
        let set = worker
            .eval(
                "chrome.storage.local.get('siteRules').then((r) => r.siteRules ? 'kept' : \
                 chrome.storage.local.set({siteRules: {askTools: false}}).then(() => 'set'))",
            )
            .await;
        let _ = worker.detach().await;
        set.map(drop)
    }

    /// The browser-level CDP connection.
    pub fn cdp(&self) -> &Cdp {
        &self.cdp
    }

    /// The profile directory.
    pub fn user_data_dir(&self) -> &Path {
        &self.user_data_dir
    }

    /// Chromium's process id.
    pub fn pid(&self) -> u32 {
        self.process.child.id()
    }

    /// Path of the file Chromium's stdout and stderr go to.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last lines of Chromium's log (D-Bus noise left out), for failure messages.
    pub fn log_tail(&self) -> String {
        log_tail_of(&self.log_path)
    }

    /// Close the browser gracefully (`Browser.close`, so the profile is flushed to disk)
    /// and wait for the process to exit; kill it if it hasn't within 10 s. Either way the
    /// rest of the process group is killed and the temp dir removed afterwards.
    pub async fn close(mut self) -> Result<()> {
        let _ = self
            .cdp
            .send(None, "Browser.close", json!({}), Duration::from_secs(5))
            .await;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.process.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
                Ok(None) => {
                    return Err(Error::new(
                        "Chromium did not exit within 10 s of Browser.close; killed it",
                    ))
                }
                Err(e) => return Err(Error::new(format!("waiting for Chromium to exit: {e}"))),
            }
        }
    }

    /// All targets (`Target.getTargets`).
    pub async fn targets(&self) -> Result<Vec<TargetInfo>> {
        let result = self.cdp.call("Target.getTargets", json!({})).await?;
        Ok(result
            .get("targetInfos")
            .and_then(Value::as_array)
            .map(|infos| infos.iter().map(TargetInfo::from_json).collect())
            .unwrap_or_default())
    }

    /// The page targets (tabs), for assertions.
    pub async fn page_targets(&self) -> Result<Vec<TargetInfo>> {
        Ok(self
            .targets()
            .await?
            .into_iter()
            .filter(|t| t.kind == "page")
            .collect())
    }

    /// The extension's id, found from its service-worker target (whose URL ends with
    /// `/extension/worker.js`). Polls up to 10 s; if `--load-extension` seems ignored,
    /// tries `Extensions.loadUnpacked`. Cached after the first success.
    pub async fn extension_id(&self) -> Result<String> {
        let Some(dir) = &self.extension_dir else {
            return Err(Error::new(
                "this browser was launched with `with_extension: false`",
            ));
        };
        self.extension_id
            .get_or_try_init(|| self.find_extension_id(dir))
            .await
            .cloned()
    }

    async fn find_extension_id(&self, dir: &Path) -> Result<String> {
        let start = Instant::now();
        let mut fallback: Option<String> = None;
        loop {
            if let Some(target) = self.find_worker_target(None).await? {
                return extension_id_of(&target.url);
            }
            let elapsed = start.elapsed();
            if fallback.is_none() && elapsed >= LOAD_EXTENSION_GRACE {
                let path = dir.display().to_string();
                fallback = Some(
                    match self
                        .cdp
                        .call("Extensions.loadUnpacked", json!({ "path": path }))
                        .await
                    {
                        Ok(result) => format!(
                            "after {elapsed:?} without it, Extensions.loadUnpacked loaded id {}",
                            result.get("id").and_then(Value::as_str).unwrap_or("?")
                        ),
                        Err(e) => format!(
                            "after {elapsed:?} without it, the Extensions.loadUnpacked fallback failed: {e}"
                        ),
                    },
                );
            }
            if elapsed >= EXTENSION_TIMEOUT {
                let targets = self
                    .targets()
                    .await
                    .map(|ts| {
                        ts.iter()
                            .map(|t| format!("{} {}", t.kind, t.url))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_else(|e| format!("(listing targets failed: {e})"));
                return Err(Error::new(format!(
                    "the extension's service-worker target (*{WORKER_PATH}) never appeared \
                     within {EXTENSION_TIMEOUT:?} ({}); targets: [{targets}]",
                    fallback.as_deref().unwrap_or("no fallback tried")
                ))
                .with_log(&self.log_tail()));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The extension's service-worker target, if it is running right now.
    pub async fn worker_target(&self) -> Result<Option<TargetInfo>> {
        let id = self.extension_id().await?;
        self.find_worker_target(Some(&id)).await
    }

    async fn find_worker_target(&self, id: Option<&str>) -> Result<Option<TargetInfo>> {
        Ok(self.targets().await?.into_iter().find(|t| {
            t.kind == "service_worker"
                && t.url.starts_with("chrome-extension://")
                && t.url.ends_with(WORKER_PATH)
                && id.is_none_or(|id| extension_id_of(&t.url).is_ok_and(|x| x == id))
        }))
    }

    /// Wait until the extension's service worker is running (e.g. after waking it).
    pub async fn wait_worker(&self, timeout: Duration) -> Result<TargetInfo> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(target) = self.worker_target().await? {
                return Ok(target);
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "timed out after {timeout:?} waiting for the extension's service worker to run"
                ))
                .with_log(&self.log_tail()));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Wait until the extension's service worker is not running (stopped or killed).
    pub async fn wait_worker_gone(&self, timeout: Duration) -> Result<()> {
        self.wait_worker_instance_gone(None, timeout).await
    }

    /// Waits until the worker instance `id` (any instance when `None`) has stopped. An
    /// instance Chrome starts again right away (an alarm or a debugger event wakes it) has
    /// another target id, so it does not count as the old one still running.
    async fn wait_worker_instance_gone(&self, id: Option<&str>, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            match (self.worker_target().await?, id) {
                (None, _) => return Ok(()),
                (Some(t), Some(id)) if t.id != id => return Ok(()),
                _ => {}
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "timed out after {timeout:?} waiting for the extension's service worker to stop"
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Attach to the running service worker. The attached session keeps the worker
    /// alive: [`Session::detach`] before measuring its lifetime.
    pub async fn worker(&self) -> Result<Session> {
        let target = self.worker_target().await?.ok_or_else(|| {
            Error::new("the extension's service worker is not running (no target to attach to)")
        })?;
        let session = attach(&self.cdp, &target.id)
            .await
            .map_err(|e| e.context("attaching to the extension's service worker"))?;
        // Attached while the worker is starting, it waits for the debugger (evaluations
        // hang) or still shows its pre-script context (no `chrome`): release it and wait
        // for the real global scope.
        session
            .call("Runtime.runIfWaitingForDebugger", json!({}))
            .await?;
        let deadline = Instant::now() + PAGE_TIMEOUT;
        let mut last: Result<Value>;
        loop {
            last = session
                .eval("typeof chrome === 'object' && typeof chrome.runtime === 'object'")
                .await;
            if matches!(last, Ok(Value::Bool(true))) {
                return Ok(session);
            }
            if Instant::now() >= deadline {
                let _ = session.detach().await;
                return Err(Error::new(format!(
                    "timed out after {PAGE_TIMEOUT:?} waiting for `chrome.runtime` in the \
                     attached service worker (last: {last:?})"
                ))
                .with_log(&self.log_tail()));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stop the extension's service worker as Chrome does when it is idle
    /// (`ServiceWorker.stopAllWorkers` from a page session; `Target.closeTarget` on the
    /// worker target if that didn't work) and wait until its target is gone.
    pub async fn stop_worker(&self) -> Result<()> {
        let Some(target) = self.worker_target().await? else {
            return Ok(());
        };
        let page = match self.page_targets().await?.into_iter().next() {
            Some(page) => page.id,
            None => {
                let created = self
                    .cdp
                    .call("Target.createTarget", json!({ "url": "about:blank" }))
                    .await?;
                str_field(&created, "targetId")?
            }
        };
        let session = attach(&self.cdp, &page).await?;
        let stopped = async {
            session.call("ServiceWorker.enable", json!({})).await?;
            session
                .call("ServiceWorker.stopAllWorkers", json!({}))
                .await?;
            session.call("ServiceWorker.disable", json!({})).await?;
            Ok::<_, Error>(())
        }
        .await;
        let _ = session.detach().await;
        if stopped.is_ok()
            && self
                .wait_worker_instance_gone(Some(&target.id), Duration::from_secs(5))
                .await
                .is_ok()
        {
            return Ok(());
        }
        // Fallback: close the worker target itself.
        let _ = self
            .cdp
            .call("Target.closeTarget", json!({ "targetId": target.id }))
            .await;
        self.wait_worker_instance_gone(Some(&target.id), Duration::from_secs(10))
            .await
            .map_err(|e| {
                let why = match &stopped {
                    Ok(()) => "stopAllWorkers returned but the worker stayed".to_string(),
                    Err(s) => format!("stopAllWorkers failed: {s}"),
                };
                e.context(format!(
                    "stopping the service worker ({why}; then closeTarget)"
                ))
            })
    }

    /// Open a new tab at `url`, attach to it and wait until it has loaded.
    pub async fn open_page(&self, url: &str) -> Result<Page> {
        self.open_page_with(url, false).await
    }

    /// [`open_page`](Self::open_page) in a window of its own: a person's tab, which Chrome does
    /// not put in a tab group of the window it would otherwise open next to.
    pub async fn open_window(&self, url: &str) -> Result<Page> {
        self.open_page_with(url, true).await
    }

    async fn open_page_with(&self, url: &str, new_window: bool) -> Result<Page> {
        let created = self
            .cdp
            .call(
                "Target.createTarget",
                json!({ "url": url, "newWindow": new_window }),
            )
            .await
            .map_err(|e| e.context(format!("opening {url}")))?;
        let target_id = str_field(&created, "targetId")?;
        let session = attach(&self.cdp, &target_id).await?;
        let page = Page { session };
        page.call("Page.enable", json!({})).await?;
        page.call("Runtime.enable", json!({})).await?;
        // A new target starts on about:blank, which is already "complete": also wait for
        // the URL's scheme (e.g. "chrome-extension:").
        let protocol = match url.split_once(':') {
            Some((scheme, _)) => format!("{}:", scheme.to_ascii_lowercase()),
            None => "about:".to_string(),
        };
        let loaded = format!(
            "document.readyState === 'complete' && location.protocol === {}",
            js_string(&protocol)
        );
        page.wait_for(&loaded, PAGE_TIMEOUT)
            .await
            .map_err(|e| e.context(format!("loading {url}")))?;
        Ok(page)
    }

    /// `chrome-extension://<id>/extension/options.html`.
    pub async fn options_url(&self) -> Result<String> {
        Ok(format!(
            "chrome-extension://{}{OPTIONS_PATH}",
            self.extension_id().await?
        ))
    }

    /// Open the extension's Options page and wait until it has loaded its state from the
    /// worker (typing before that would be overwritten).
    pub async fn options_page(&self) -> Result<Page> {
        let page = self.open_page(&self.options_url().await?).await?;
        page.wait_for(OPTIONS_READY_JS, PAGE_TIMEOUT)
            .await
            .map_err(|e| {
                e.context("opening the Options page (waiting for it to show the worker's status)")
            })?;
        Ok(page)
    }

    /// Open the extension's popup (the toolbar button's page) and wait until it has shown the
    /// worker's state.
    pub async fn popup_page(&self) -> Result<Page> {
        let url = format!(
            "chrome-extension://{}/extension/popup.html",
            self.extension_id().await?
        );
        let page = self.open_page(&url).await?;
        page.wait_for("document.body.dataset.ready === 'true'", PAGE_TIMEOUT)
            .await
            .map_err(|e| {
                e.context("opening the popup (waiting for it to show the worker's state)")
            })?;
        Ok(page)
    }

    /// Configure the extension through its Options page, as a user would: choose the
    /// WebSocket transport, type the server URL, token and (optionally) target, click
    /// Save, wait until the page took it, and close the page.
    ///
    /// Fails if the page shows a field error after Save.
    pub async fn configure_extension(
        &self,
        server_url: &str,
        token: &str,
        target: Option<&str>,
    ) -> Result<()> {
        self.configure_transport("websocket", server_url, token, target)
            .await
    }

    /// [`Browser::configure_extension`] with another transport (`sse-http`, `http-poll`,
    /// `http-short-poll`, `websocket`).
    pub async fn configure_transport(
        &self,
        transport: &str,
        server_url: &str,
        token: &str,
        target: Option<&str>,
    ) -> Result<()> {
        let page = self.options_page().await?;
        let result = async {
            page.wait_for("document.querySelector('#save') !== null", PAGE_TIMEOUT)
                .await?;
            let before = page.eval(STATUS_JS).await?;
            page.select_value("#transport", transport).await?;
            page.type_into("#serverUrl", server_url).await?;
            page.type_into("#token", token).await?;
            if let Some(target) = target {
                page.type_into("#target", target).await?;
            }
            page.click("#save").await?;
            // Saved when the settings reached chrome.storage, or the status moved on;
            // rejected when a field shows an error.
            let settled = format!(
                "(async () => {{
                    const errors = [...document.querySelectorAll('[id$=\"-error\"]')]
                        .filter(e => e.textContent.trim() !== '');
                    if (errors.length) return true;
                    const st = document.querySelector('#status');
                    const now = JSON.stringify([st?.dataset.state, st?.textContent]);
                    if (now !== {before}) return true;
                    let stored = '';
                    for (const area of ['local', 'sync', 'session']) {{
                        try {{ stored += JSON.stringify(await chrome.storage[area].get(null)); }}
                        catch (e) {{}}
                    }}
                    return stored.includes(JSON.stringify({url}).slice(1, -1));
                }})()",
                before = js_string(&before.to_string()),
                url = js_string(server_url),
            );
            page.wait_for(&settled, Duration::from_secs(5))
                .await
                .map_err(|e| {
                    e.context(
                        "after clicking #save, no field error, no #status change and the \
                         server URL not in chrome.storage",
                    )
                })?;
            let errors = page
                .eval(
                    "[...document.querySelectorAll('[id$=\"-error\"]')]
                        .filter(e => e.textContent.trim() !== '')
                        .map(e => '#' + e.id + ': ' + e.textContent.trim())",
                )
                .await?;
            match errors.as_array() {
                Some(list) if !list.is_empty() => Err(Error::new(format!(
                    "the Options page rejected the settings: {}",
                    list.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("; ")
                ))),
                _ => Ok(()),
            }
        }
        .await;
        let closed = page.close().await;
        result.map_err(|e| e.context("configuring the extension through its Options page"))?;
        closed
    }

    /// Open the Options page, wait until `#status[data-state=<state>]` and return the
    /// status text. The page is closed afterwards.
    pub async fn wait_status(&self, state: &str, timeout: Duration) -> Result<String> {
        let page = self.options_page().await?;
        let result = page.wait_status(state, timeout).await;
        let _ = page.close().await;
        result
    }
}

/// The Options page has loaded: it marks its body once it has shown the worker's state.
const OPTIONS_READY_JS: &str = "document.body.dataset.ready === 'true'";

/// `[data-state, text]` of `#status`.
const STATUS_JS: &str = "(() => { const s = document.querySelector('#status'); \
    return [s ? s.dataset.state ?? null : null, s ? s.textContent : null]; })()";

/// A flat CDP session attached to one target (a page or the service worker).
#[derive(Debug, Clone)]
pub struct Session {
    cdp: Cdp,
    session_id: String,
    target_id: String,
}

impl Session {
    /// The CDP session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The target id.
    pub fn target_id(&self) -> &str {
        &self.target_id
    }

    /// The connection this session lives on.
    pub fn cdp(&self) -> &Cdp {
        &self.cdp
    }

    /// Send a command to this target.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.cdp
            .call_session(&self.session_id, method, params)
            .await
    }

    /// Evaluate a JavaScript expression in the target (promises awaited, result returned
    /// by value; `undefined` becomes `null`). A thrown exception is an error carrying its
    /// description.
    pub async fn eval(&self, expr: &str) -> Result<Value> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": expr,
                    "awaitPromise": true,
                    "returnByValue": true,
                    "userGesture": true,
                }),
            )
            .await
            .map_err(|e| e.context(format!("evaluating `{}`", abbreviate(expr, 200))))?;
        if let Some(details) = result.get("exceptionDetails") {
            let description = details
                .pointer("/exception/description")
                .and_then(Value::as_str)
                .or_else(|| details.pointer("/exception/value").and_then(Value::as_str))
                .or_else(|| details.get("text").and_then(Value::as_str))
                .unwrap_or("unknown exception");
            return Err(Error::new(format!(
                "evaluating `{}` threw: {description}",
                abbreviate(expr, 200)
            )));
        }
        Ok(result
            .pointer("/result/value")
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// On the extension's worker: the idle period after which group tabs are detached, in
    /// seconds (the Options page offers whole minutes; tests use seconds).
    pub async fn set_idle_seconds(&self, seconds: u32) -> Result<()> {
        self.eval(&format!(
            "chrome.storage.local.set({{debuggerIdleSeconds: {seconds}}}).then(() => 1)"
        ))
        .await
        .map(drop)
    }

    /// Detach from the target (a detached service worker may then be stopped when idle).
    pub async fn detach(self) -> Result<()> {
        self.cdp
            .call(
                "Target.detachFromTarget",
                json!({ "sessionId": self.session_id }),
            )
            .await
            .map(|_| ())
    }
}

/// A tab, attached with `Page` and `Runtime` enabled.
#[derive(Debug, Clone)]
pub struct Page {
    session: Session,
}

impl Page {
    /// The underlying CDP session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The target id.
    pub fn target_id(&self) -> &str {
        &self.session.target_id
    }

    /// Send a command to this page.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.session.call(method, params).await
    }

    /// See [`Session::eval`].
    pub async fn eval(&self, expr: &str) -> Result<Value> {
        self.session.eval(expr).await
    }

    /// axe-core's findings on the page (WCAG 2 A/AA and best practices), in light and dark
    /// mode: one line per violation, `scheme: rule: targets`. Empty when it finds nothing.
    pub async fn accessibility_violations(&self) -> Result<Vec<String>> {
        let axe = crate::repo_root().join(".tools/node_modules/axe-core/axe.min.js");
        let source = std::fs::read_to_string(&axe)
            .map_err(|e| Error::new(format!("{}: {e} (run ./build.sh setup)", axe.display())))?;
        // In front, as a person checking the page sees it: axe yields between its rules by
        // timers, and Chrome runs a hidden tab's timers about once a second.
        self.call("Page.bringToFront", json!({})).await?;
        self.eval(&format!("{source}; true")).await?;
        let mut found = Vec::new();
        for scheme in ["light", "dark"] {
            self.call(
                "Emulation.setEmulatedMedia",
                json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
            )
            .await?;
            let v = self
                .eval(
                    "axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'best-practice']})
                        .then(r => r.violations.map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')))",
                )
                .await?;
            let list = v
                .as_array()
                .ok_or_else(|| Error::new(format!("axe.run gave no list of violations: {v}")))?;
            for item in list {
                found.push(format!("{scheme}: {}", item.as_str().unwrap_or("")));
            }
        }
        Ok(found)
    }

    /// Poll `js_predicate` (an expression; may be a promise) every 50 ms until it is
    /// truthy. Evaluation errors (e.g. during navigation) count as "not yet".
    pub async fn wait_for(&self, js_predicate: &str, timeout: Duration) -> Result<()> {
        let expr = format!("(async () => Boolean(await ({js_predicate})))()");
        let deadline = Instant::now() + timeout;
        let mut last_error: Option<Error>;
        loop {
            match self.eval(&expr).await {
                Ok(Value::Bool(true)) => return Ok(()),
                Ok(_) => last_error = None,
                Err(e) => last_error = Some(e),
            }
            if Instant::now() >= deadline {
                let mut message = format!(
                    "timed out after {timeout:?} waiting for `{}`",
                    abbreviate(js_predicate, 300)
                );
                if let Some(e) = last_error {
                    message.push_str(&format!(" (last evaluation error: {e})"));
                }
                return Err(Error::new(message));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Focus the element, select its existing text and replace it with `text` through
    /// `Input.insertText` (which fires the `input` events a user's typing would).
    pub async fn type_into(&self, selector: &str, text: &str) -> Result<()> {
        let sel = js_string(selector);
        let focus = format!(
            "(() => {{
                const el = document.querySelector({sel});
                if (!el) throw new Error('no element matches ' + {sel});
                el.scrollIntoView({{block: 'center', inline: 'center'}});
                el.focus();
                if (document.activeElement !== el) throw new Error({sel} + ' cannot take focus');
                if (typeof el.select === 'function') {{
                    el.select();
                }} else {{
                    const range = document.createRange();
                    range.selectNodeContents(el);
                    const selection = window.getSelection();
                    selection.removeAllRanges();
                    selection.addRange(range);
                }}
                return 'value' in el;
            }})()"
        );
        let has_value = self
            .eval(&focus)
            .await
            .map_err(|e| e.context(format!("typing into {selector}")))?;
        if text.is_empty() {
            // insertText("") does not delete the selection; deleting it is what a user's
            // Backspace does, with the same input event.
            self.eval("document.execCommand('delete')").await?;
        } else {
            self.call("Input.insertText", json!({ "text": text }))
                .await
                .map_err(|e| e.context(format!("typing into {selector}")))?;
        }
        if has_value == Value::Bool(true) {
            let value = self
                .eval(&format!("document.querySelector({sel}).value"))
                .await?;
            if value.as_str() != Some(text) {
                return Err(Error::new(format!(
                    "after typing {:?} into {selector}, its value is {value}",
                    abbreviate(text, 100)
                )));
            }
        }
        Ok(())
    }

    /// Click the element's centre with the mouse (after scrolling it into view), failing
    /// if it has no size or another element covers that point.
    pub async fn click(&self, selector: &str) -> Result<()> {
        let sel = js_string(selector);
        let locate = format!(
            "(() => {{
                const el = document.querySelector({sel});
                if (!el) throw new Error('no element matches ' + {sel});
                el.scrollIntoView({{block: 'center', inline: 'center'}});
                const r = el.getBoundingClientRect();
                if (r.width === 0 || r.height === 0) throw new Error({sel} + ' has no size (hidden?)');
                const x = r.left + r.width / 2, y = r.top + r.height / 2;
                const hit = document.elementFromPoint(x, y);
                if (hit && hit !== el && !el.contains(hit)) {{
                    const name = hit.tagName.toLowerCase() + (hit.id ? '#' + hit.id : '');
                    throw new Error({sel} + ' is covered by ' + name + ' at its centre');
                }}
                return [x, y];
            }})()"
        );
        let point = self
            .eval(&locate)
            .await
            .map_err(|e| e.context(format!("clicking {selector}")))?;
        let (x, y) = match (
            point.get(0).and_then(Value::as_f64),
            point.get(1).and_then(Value::as_f64),
        ) {
            (Some(x), Some(y)) => (x, y),
            _ => {
                return Err(Error::new(format!(
                    "clicking {selector}: unexpected position {point}"
                )))
            }
        };
        for (kind, buttons) in [("mouseMoved", 0), ("mousePressed", 1), ("mouseReleased", 0)] {
            let mut params = json!({ "type": kind, "x": x, "y": y, "buttons": buttons });
            if kind != "mouseMoved" {
                params["button"] = json!("left");
                params["clickCount"] = json!(1);
            }
            self.call("Input.dispatchMouseEvent", params)
                .await
                .map_err(|e| e.context(format!("clicking {selector}")))?;
        }
        Ok(())
    }

    /// Set a `<select>`'s value and dispatch `input` and `change`, as choosing an option
    /// does. Fails if no option has that value.
    pub async fn select_value(&self, selector: &str, value: &str) -> Result<()> {
        let sel = js_string(selector);
        let val = js_string(value);
        let script = format!(
            "(() => {{
                const el = document.querySelector({sel});
                if (!el) throw new Error('no element matches ' + {sel});
                if (el.tagName !== 'SELECT') throw new Error({sel} + ' is a ' + el.tagName + ', not a SELECT');
                const values = [...el.options].map(o => o.value);
                if (!values.includes({val})) {{
                    throw new Error({sel} + ' has no option ' + JSON.stringify({val}) + '; options: ' + JSON.stringify(values));
                }}
                el.focus();
                el.value = {val};
                el.dispatchEvent(new Event('input', {{bubbles: true}}));
                el.dispatchEvent(new Event('change', {{bubbles: true}}));
                return true;
            }})()"
        );
        self.eval(&script)
            .await
            .map(|_| ())
            .map_err(|e| e.context(format!("selecting {value:?} in {selector}")))
    }

    /// Wait until `#status[data-state=<state>]` (on the Options page) and return the
    /// status text. The error shows the state and text seen last.
    pub async fn wait_status(&self, state: &str, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut last: Value;
        loop {
            match self.eval(STATUS_JS).await {
                Ok(seen) => {
                    if seen.get(0).and_then(Value::as_str) == Some(state) {
                        return Ok(seen
                            .get(1)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .trim()
                            .to_string());
                    }
                    last = seen;
                }
                Err(e) => last = Value::String(e.to_string()),
            }
            if Instant::now() >= deadline {
                return Err(Error::new(format!(
                    "timed out after {timeout:?} waiting for #status[data-state={state}]; \
                     last [state, text]: {last}"
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Close the tab.
    pub async fn close(&self) -> Result<()> {
        self.session
            .cdp
            .call(
                "Target.closeTarget",
                json!({ "targetId": self.session.target_id }),
            )
            .await
            .map(|_| ())
    }
}

/// A JavaScript string literal for `s`.
pub fn js_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The id in `chrome-extension://<id>/...`.
fn extension_id_of(url: &str) -> Result<String> {
    url.strip_prefix("chrome-extension://")
        .and_then(|rest| rest.split('/').next())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| Error::new(format!("no extension id in URL {url}")))
}

fn str_field(v: &Value, key: &str) -> Result<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::new(format!("CDP result has no string `{key}`: {v}")))
}

async fn attach(cdp: &Cdp, target_id: &str) -> Result<Session> {
    let result = cdp
        .call(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        )
        .await?;
    Ok(Session {
        cdp: cdp.clone(),
        session_id: str_field(&result, "sessionId")?,
        target_id: target_id.to_string(),
    })
}

/// Wait for `DevToolsActivePort` (port on line 1, browser path on line 2) and connect.
async fn connect_when_ready(port_file: &Path, child: &mut Child) -> Result<Cdp> {
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::new(format!(
                "Chromium exited ({status}) before writing {}",
                port_file.display()
            )));
        }
        if let Ok(contents) = std::fs::read_to_string(port_file) {
            let mut lines = contents.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                if let (Ok(port), true) = (port.trim().parse::<u16>(), path.starts_with('/')) {
                    let url = format!("ws://127.0.0.1:{port}{}", path.trim());
                    return Cdp::connect(&url).await;
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(Error::new(format!(
                "timed out after {LAUNCH_TIMEOUT:?} waiting for {}",
                port_file.display()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn log_tail_of(log_path: &Path) -> String {
    let Ok(bytes) = std::fs::read(log_path) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("dbus/") && !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Kill Chromium's process group (browser, zygote, renderers) and reap the browser.
fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    {
        // The child leads its own process group (process_group(0) at spawn).
        let pgid = child.id() as libc::pid_t;
        // SAFETY: plain syscall on a process group we created.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn make_temp_dir() -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "browser-operator-e2e-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir(&dir)
        .map_err(|e| Error::new(format!("creating temp dir {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Removes a temp dir unless disarmed (`.0 = None`).
struct TempDirGuard(Option<PathBuf>);

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The extension folder tests load unless told otherwise: `BROWSER_OPERATOR_EXTENSION_DIR` (e.g.
/// an unpacked store zip), else the repository root.
pub fn default_extension_dir() -> PathBuf {
    match std::env::var_os("BROWSER_OPERATOR_EXTENSION_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            dir.canonicalize().unwrap_or(dir)
        }
        _ => repo_root(),
    }
}
