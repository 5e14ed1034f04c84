//! The backend's policy for the automation group's tabs, set by `set_policy`: which web hosts
//! they may show (`allowedHosts`, `blockedHosts`), how JavaScript dialogs are answered
//! (`dialogs`), whether a finished download's path is reported (`downloadPaths`). Kept in
//! chrome.storage.session, so it outlives the worker (not the browser), and loaded once per
//! worker before the first command ([`ready`]).
//!
//! One policy mechanism: [`check_page`] and [`check_navigation`] are `protocol::url_policy`'s
//! scheme boundary followed by these hosts, and the boundary holds every group tab's page to
//! them. The hosts are enforced in the browser by request rules (`rules`), so a navigation
//! outside them is refused before its request leaves, whoever started it; dialogs and
//! downloads are handled where CDP reports them (`cdp::record`, which asks here what to do).
//!
//! The person's site rules (`site_rules`, from Options) are part of the same mechanism: checked
//! before the backend's hosts (a refusal then names the person's rule), and written to the
//! request rules above the backend's, so the person's always win.

pub mod rules;
pub mod site_rules;

use crate::changes::{self, Change};
use crate::chrome::storage::{self, Area};
use protocol::host_rules::HostPolicy;
use protocol::url_policy::{self, Refusal};
use protocol::ToolResult;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};

const KEY: &str = "policy";

/// How a JavaScript dialog on a group tab is answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialogs {
    /// It waits for handle_dialog (commands say it is open).
    #[default]
    Ask,
    Dismiss,
    Accept,
}

/// The policy as set (and stored, and answered): the host lists as canonical patterns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub allowed_hosts: Option<Vec<String>>,
    #[serde(default)]
    pub blocked_hosts: Vec<String>,
    #[serde(default)]
    pub dialogs: Dialogs,
    #[serde(default)]
    pub download_paths: bool,
}

struct InForce {
    /// The policy's marker ([`marker`]); `None`: no backend set one in this browser session.
    marker: Option<String>,
    hosts: HostPolicy,
    /// `Some(accept)`: every dialog answered at once; `None`: dialogs wait for handle_dialog.
    dialog_answer: Option<bool>,
    download_paths: bool,
}

impl InForce {
    fn of(p: &Policy, hosts: HostPolicy, set: bool) -> InForce {
        InForce {
            marker: set.then(|| marker_of(p)),
            hosts,
            dialog_answer: match p.dialogs {
                Dialogs::Ask => None,
                Dialogs::Dismiss => Some(false),
                Dialogs::Accept => Some(true),
            },
            download_paths: p.download_paths,
        }
    }
}

thread_local! {
    static IN_FORCE: RefCell<Option<InForce>> = const { RefCell::new(None) };
    static LOADING: Cell<bool> = const { Cell::new(false) };
    /// Each tab's last navigation the rules refused: its address, and when.
    static LAST_REFUSED: RefCell<std::collections::HashMap<i32, (String, f64)>> =
        RefCell::new(std::collections::HashMap::new());
}

/// The policy is in memory (loaded from storage at the first call of this worker).
pub async fn ready() {
    for _ in 0..250 {
        if IN_FORCE.with(|p| p.borrow().is_some()) {
            return;
        }
        if !LOADING.with(|l| l.replace(true)) {
            if !site_rules::loaded() {
                site_rules::load().await;
            }
            let stored = storage::get::<Policy>(Area::Session, KEY)
                .await
                .unwrap_or_else(|e| {
                    crate::js::log(&format!("reading the policy: {e}"));
                    None
                });
            if IN_FORCE.with(|p| p.borrow().is_none()) {
                let set = stored.is_some();
                let stored = stored.unwrap_or_default();
                // Written by this code, so it parses; a policy that does not is none at all.
                let hosts = hosts_of(&stored).unwrap_or_default();
                IN_FORCE.with(|p| *p.borrow_mut() = Some(InForce::of(&stored, hosts, set)));
            }
            LOADING.with(|l| l.set(false));
            // The rules Chrome kept name the tabs of before the restart: named again now.
            wasm_bindgen_futures::spawn_local(async {
                if let Err(e) = rules::refresh().await {
                    crate::js::log(&format!("the URL policy's request rules: {e}"));
                }
            });
            return;
        }
        crate::js::sleep_ms(20).await;
    }
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = URL)]
    type JsUrl;
    #[wasm_bindgen(constructor, catch, js_class = "URL")]
    fn new(url: &str) -> Result<JsUrl, wasm_bindgen::JsValue>;
    #[wasm_bindgen(method, getter)]
    fn hostname(this: &JsUrl) -> String;
}

/// Host names beyond ASCII are written as the browser's URL parser writes them (lowercase,
/// punycode), so the host rules link no Unicode tables into the wasm. Set at boot.
pub fn use_browser_hosts() {
    protocol::host_rules::set_unicode_hosts(|name| {
        JsUrl::new(&format!("http://{name}/"))
            .ok()
            .map(|u| u.hostname())
    });
}

fn hosts_of(p: &Policy) -> Result<HostPolicy, String> {
    HostPolicy::new(p.allowed_hosts.as_deref(), &p.blocked_hosts)
}

/// The marker of the policy in force, which every state report carries: 16 hex digits that
/// change with the policy (a hash of it as `set_policy` answers it), or `None` when no backend
/// set a policy in this browser session. The policy lives in chrome.storage.session, which the
/// browser empties when it quits: a driver that sees `None` after setting one sends it again.
pub fn marker() -> Option<String> {
    IN_FORCE.with(|p| p.borrow().as_ref().and_then(|p| p.marker.clone()))
}

/// FNV-1a (64 bits) of the policy's JSON: stable across workers and builds.
fn marker_of(p: &Policy) -> String {
    let text = serde_json::to_string(p).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// How the policy answers a JavaScript dialog: `Some(accept)`, or `None` (it waits for
/// handle_dialog). Read by `cdp::record` when a dialog opens.
pub fn dialog_answer() -> Option<bool> {
    IN_FORCE.with(|p| p.borrow().as_ref().and_then(|p| p.dialog_answer))
}

/// Whether a finished download's path is reported (`downloadPaths`).
pub fn download_paths() -> bool {
    IN_FORCE.with(|p| p.borrow().as_ref().is_some_and(|p| p.download_paths))
}

/// The backend's hosts in force (every host until the policy is loaded, which [`ready`] does
/// before any command).
pub fn with_hosts<R>(f: impl FnOnce(&HostPolicy) -> R) -> R {
    IN_FORCE.with(|p| match p.borrow().as_ref() {
        Some(in_force) => f(&in_force.hosts),
        None => f(&HostPolicy::default()),
    })
}

/// The person's hosts and the backend's, in force.
pub fn with_both<R>(f: impl FnOnce(&HostPolicy, &HostPolicy) -> R) -> R {
    site_rules::with(|person| with_hosts(|backend| f(&person.hosts, backend)))
}

/// Whether a group tab showing `url` may be read and acted on: the scheme boundary, then the
/// person's site rules, then the backend's hosts.
pub fn check_page(url: &str) -> Result<(), Refusal> {
    with_both(|person, backend| {
        url_policy::check_page_with(url, person)?;
        url_policy::check_page_with(url, backend)
    })
}

/// Whether a command may send a group tab to `url`: the URL to load. A host the person's
/// rules or the backend's policy refuses is reported as a refused navigation.
pub fn check_navigation(tab: i32, url: &str, current: Option<&str>) -> Result<String, Refusal> {
    let checked = with_both(|person, backend| {
        let url = url_policy::check_navigation_with(url, current, person)?;
        url_policy::check_navigation_with(&url, current, backend)
    });
    if let Err(Refusal::Host(_)) = &checked {
        changes::push(Change::NavigationRefused {
            tab_id: tab,
            url: url_policy::normalize(url),
        });
    }
    checked
}

/// Chrome refused a tab's top-level or frame navigation (`webNavigation.onErrorOccurred` with
/// `net::ERR_BLOCKED_BY_CLIENT`): reported when it was this policy's doing (another
/// extension's blocker says the same). A tab the rules do not name yet was caught by the rules
/// for tabs a group tab's page opens: reported if a group tab opened it, and loaded again if it
/// is someone else's ([`rules::repair`]).
pub fn navigation_blocked(tab: i32, url: &str) {
    if !matches!(check_page(url), Err(Refusal::Host(_))) {
        return;
    }
    if rules::covers(tab) {
        refused(tab, url);
        return;
    }
    let url = url.to_string();
    wasm_bindgen_futures::spawn_local(async move {
        match rules::repair(tab, &url).await {
            Ok(rules::Caught::Opened) => refused(tab, &url),
            Ok(rules::Caught::Repaired | rules::Caught::NotOurs) => {}
            Err(e) => crate::js::log(&format!("tab {tab}, refused a navigation: {e}")),
        }
    });
}

fn refused(tab: i32, url: &str) {
    LAST_REFUSED.with(|l| {
        l.borrow_mut()
            .insert(tab, (url.to_string(), crate::js::now_ms()))
    });
    changes::push(Change::NavigationRefused {
        tab_id: tab,
        url: url.to_string(),
    });
}

/// The address of the tab's last navigation the rules refused since `since` (the worker's
/// clock), if any.
pub fn refused_since(tab: i32, since: f64) -> Option<String> {
    LAST_REFUSED.with(|l| {
        l.borrow()
            .get(&tab)
            .filter(|(_, at)| *at >= since)
            .map(|(url, _)| url.clone())
    })
}

/// Whether anything is kept of the tab.
pub fn holds(tab: i32) -> bool {
    rules::holds(tab) || LAST_REFUSED.with(|l| l.borrow().contains_key(&tab))
}

/// The tab closed or left the group.
pub fn forget(tab: i32) {
    LAST_REFUSED.with(|l| l.borrow_mut().remove(&tab));
    rules::uncover(tab);
}

/// Saves the person's site rules from Options (`site_rules::save`) and writes the request
/// rules for them.
pub async fn save_site_rules(
    rules: site_rules::SiteRules,
) -> Result<site_rules::SiteRules, String> {
    ready().await;
    let stored = site_rules::save(rules).await?;
    rules::refresh().await.map_err(|e| {
        format!("The site rules are saved but the browser did not take their request rules: {e}")
    })?;
    Ok(stored)
}

/// The site rules changed in storage (another Options page, or a test): read again, and the
/// request rules written for them.
pub async fn site_rules_changed() {
    ready().await;
    site_rules::load().await;
    if let Err(e) = rules::refresh().await {
        crate::js::log(&format!("the site rules' request rules: {e}"));
    }
}

/// The tab closed (after [`forget`]): the rules forget it too.
pub fn closed(tab: i32) {
    rules::closed(tab);
}

/// The arguments of `set_policy`: the whole policy (an omitted field takes its default).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    #[serde(default)]
    allowed_hosts: Option<Vec<String>>,
    #[serde(default)]
    blocked_hosts: Option<Vec<String>>,
    #[serde(default)]
    dialogs: Option<Dialogs>,
    #[serde(default)]
    download_paths: Option<bool>,
}

/// set_policy: checked, stored, enforced, answered with the policy in force.
pub async fn set(args: Args) -> Result<ToolResult, String> {
    ready().await;
    let hosts = HostPolicy::new(
        args.allowed_hosts.as_deref(),
        args.blocked_hosts.as_deref().unwrap_or_default(),
    )
    .map_err(|e| format!("The policy was not changed: {e}."))?;
    let (allowed_hosts, blocked_hosts) = hosts.written();
    let policy = Policy {
        allowed_hosts,
        blocked_hosts,
        dialogs: args.dialogs.unwrap_or_default(),
        download_paths: args.download_paths.unwrap_or(false),
    };
    storage::set(Area::Session, KEY, &policy)
        .await
        .map_err(|e| format!("The policy was not changed: it could not be stored ({e})."))?;
    IN_FORCE.with(|p| *p.borrow_mut() = Some(InForce::of(&policy, hosts, true)));
    rules::refresh().await.map_err(|e| {
        format!("The policy is stored but the browser did not take its request rules: {e}")
    })?;
    let text = serde_json::to_string(&policy).map_err(|e| e.to_string())?;
    Ok(ToolResult::text(text))
}
