//! Each agent's policy for its own group's tabs, set by `set_policy` (the agent of the command,
//! `agent::current()`): which web hosts they may show (`allowedHosts`, `blockedHosts`), how
//! their JavaScript dialogs are answered (`dialogs`), whether a finished download's path is
//! reported (`downloadPaths`). Kept in chrome.storage.session per agent (the primary's under
//! "policy", as it always was; the others' under "policies", as `[Agent::key, policy]` pairs), so it outlives
//! the worker (not the browser), and loaded once per worker before the first command
//! ([`ready`]). An agent's policy goes with its connection when the person removes that
//! ([`connection_removed`]).
//!
//! Whatever reads a policy reads the one of the agent whose tab it is about: the tab's owner is
//! the one the request rules name it for (`rules::owner`, set by whoever covers the tab, which
//! knows the owner). A tab whose owner is not known is held to every agent's policy.
//!
//! One policy mechanism: [`check_page`] and [`check_navigation`] are `protocol::url_policy`'s
//! scheme boundary followed by these hosts, and the boundary holds every group tab's page to
//! them. The hosts are enforced in the browser by request rules (`rules`), so a navigation
//! outside them is refused before its request leaves, whoever started it; dialogs and
//! downloads are handled where CDP reports them (`cdp::record`, which asks here what to do).
//!
//! The person's site rules (`site_rules`, from Options) are part of the same mechanism: checked
//! before the backend's hosts (a refusal then names the person's rule), and written to the
//! request rules above every agent's, so the person's always win.

pub mod rules;
pub mod site_rules;

use crate::agent::Agent;
use crate::changes::{self, Change};
use crate::chrome::storage::{self, Area};
use protocol::host_rules::{self, HostPolicy};
use protocol::url_policy::{self, Refusal};
use protocol::ToolResult;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};

/// Where the primary agent's policy is kept (as it always was).
const KEY: &str = "policy";
/// Where every other agent's is kept: a list of `[Agent::key, policy]` pairs.
const OTHERS_KEY: &str = "policies";

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

/// One agent's policy in force.
struct InForce {
    /// By `Agent::key`.
    agent: String,
    policy: Policy,
    /// The policy's marker ([`marker`]).
    marker: String,
    hosts: HostPolicy,
    /// `Some(accept)`: every dialog answered at once; `None`: dialogs wait for handle_dialog.
    dialog_answer: Option<bool>,
}

impl InForce {
    fn of(agent: String, policy: Policy, hosts: HostPolicy) -> InForce {
        InForce {
            agent,
            marker: marker_of(&policy),
            hosts,
            dialog_answer: match policy.dialogs {
                Dialogs::Ask => None,
                Dialogs::Dismiss => Some(false),
                Dialogs::Accept => Some(true),
            },
            policy,
        }
    }
}

thread_local! {
    /// The agents' policies (only of agents that set one), once loaded. A plain list: a few
    /// agents.
    static IN_FORCE: RefCell<Option<Vec<InForce>>> = const { RefCell::new(None) };
    static LOADING: Cell<bool> = const { Cell::new(false) };
    /// Calls of [`ready`] waiting for the load under way.
    static WAITING: RefCell<Vec<futures_channel::oneshot::Sender<()>>> = const { RefCell::new(Vec::new()) };
    /// Each tab's last navigation the rules refused: its address, and when.
    static LAST_REFUSED: RefCell<crate::vec_map::VecMap<i32, (String, f64)>> =
        const { RefCell::new(crate::vec_map::VecMap::new()) };
}

/// The policies are in memory (loaded from storage at the first call of this worker; the
/// worker's start makes that call, so the first command rarely waits). A call while the load
/// is under way returns when it is done. The load is a task of its own: a command dropped while
/// it waits (Stop, its time bound) does not cut it short.
pub async fn ready() {
    if IN_FORCE.with(|p| p.borrow().is_some()) {
        return;
    }
    let (tx, rx) = futures_channel::oneshot::channel();
    WAITING.with(|w| w.borrow_mut().push(tx));
    if !LOADING.with(|l| l.replace(true)) {
        wasm_bindgen_futures::spawn_local(load_in_force());
    }
    let _ = rx.await;
}

async fn load_in_force() {
    // The person's site rules and the agents' policies, read side by side.
    let site = async {
        if !site_rules::loaded() {
            site_rules::load().await;
        }
    };
    let (_, loaded) = futures_util::future::join(site, load()).await;
    if IN_FORCE.with(|p| p.borrow().is_none()) {
        IN_FORCE.with(|p| *p.borrow_mut() = Some(loaded));
    }
    LOADING.with(|l| l.set(false));
    for w in WAITING.with(|w| std::mem::take(&mut *w.borrow_mut())) {
        let _ = w.send(());
    }
    // The rules Chrome kept name the tabs of before the restart: named again now.
    if let Err(e) = rules::refresh().await {
        crate::js::log(&format!("the URL policy's request rules: {e}"));
    }
}

async fn load() -> Vec<InForce> {
    // Both in one read.
    let stored = storage::get_many(Area::Session, &[KEY, OTHERS_KEY]).await;
    let (primary, others) = match stored {
        Ok(v) => (
            storage::field::<Policy>(&v, KEY),
            storage::field::<Vec<(String, Policy)>>(&v, OTHERS_KEY).unwrap_or_default(),
        ),
        Err(e) => {
            crate::js::log(&format!("reading the policies: {e}"));
            (None, Vec::new())
        }
    };
    primary
        .map(|p| (String::new(), p))
        .into_iter()
        .chain(others)
        // Written by this code, so it parses; a policy that does not is none at all.
        .filter_map(|(agent, p)| Some(InForce::of(agent, p.clone(), hosts_of(&p).ok()?)))
        .collect()
}

/// Writes the agents' policies as they are in memory.
async fn store() -> Result<(), String> {
    let (primary, others) = IN_FORCE.with(|p| {
        let mut primary = None;
        let mut others = Vec::new();
        for f in p.borrow().iter().flatten() {
            if f.agent.is_empty() {
                primary = Some(f.policy.clone());
            } else {
                others.push((f.agent.clone(), f.policy.clone()));
            }
        }
        (primary, others)
    });
    match primary {
        Some(p) => storage::set(Area::Session, KEY, &p).await?,
        None => storage::remove_session(&[KEY.to_string()]).await?,
    }
    storage::set(Area::Session, OTHERS_KEY, &others).await
}

/// The agents that set a policy (after [`ready`]).
pub fn agents() -> Vec<Agent> {
    IN_FORCE.with(|p| {
        p.borrow()
            .iter()
            .flatten()
            .map(|f| Agent::from_key(&f.agent))
            .collect()
    })
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

/// The agent's hosts (every host when it set no policy).
fn hosts_for(agent: &str) -> HostPolicy {
    with_agent(agent, |f| f.map(|f| f.hosts.clone()).unwrap_or_default())
}

/// `f` of the agent's policy in force, if it set one.
fn with_agent<R>(agent: &str, f: impl FnOnce(Option<&InForce>) -> R) -> R {
    IN_FORCE.with(|p| f(p.borrow().iter().flatten().find(|f| f.agent == agent)))
}

/// `f` of the policy of the agent whose tab it is; `None` for a tab whose owner is not known,
/// or whose owner set no policy.
fn with_tab<R>(tab: i32, f: impl FnOnce(Option<&InForce>) -> R) -> R {
    match rules::owner(tab) {
        Some(owner) => with_agent(&owner, f),
        None => f(None),
    }
}

/// The marker of the agent's policy, which its every state report carries: 16 hex digits that
/// change with the policy (a hash of it as `set_policy` answers it), or `None` when the agent
/// set no policy in this browser session. Policies live in chrome.storage.session, which the
/// browser empties when it quits: a driver that sees `None` after setting one sends it again.
pub fn marker(agent: &Agent) -> Option<String> {
    with_agent(&agent.key(), |f| f.map(|f| f.marker.clone()))
}

/// FNV-1a (64 bits) of the policy's JSON: stable across workers and builds.
fn marker_of(p: &Policy) -> String {
    let text = serde_json::to_string(p).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// How the policy of the tab's agent answers a JavaScript dialog on it: `Some(accept)`, or
/// `None` (it waits for handle_dialog; also for a tab whose owner is not known). Read by
/// `cdp::record` when a dialog opens, and by idle detach.
pub fn dialog_answer(tab: i32) -> Option<bool> {
    with_tab(tab, |f| f.and_then(|f| f.dialog_answer))
}

/// Whether the agent's policy answers dialogs.
pub fn answers_dialogs(agent: &Agent) -> bool {
    with_agent(&agent.key(), |f| {
        f.is_some_and(|f| f.dialog_answer.is_some())
    })
}

/// Whether a finished download's path is reported for a download of this tab (its agent's
/// `downloadPaths`).
pub fn download_paths(tab: i32) -> bool {
    with_tab(tab, |f| f.is_some_and(|f| f.policy.download_paths))
}

/// Whether no policy and none of the person's rules refuse anything.
pub fn all_open() -> bool {
    site_rules::with(|person| person.hosts.is_open())
        && IN_FORCE.with(|p| p.borrow().iter().flatten().all(|f| f.hosts.is_open()))
}

/// Whether a group tab showing `url` may be read and acted on: the scheme boundary, then the
/// person's site rules, then the hosts of the tab's agent (of every agent, for a tab whose
/// owner is not known).
pub fn check_page(tab: i32, url: &str) -> Result<(), Refusal> {
    checked(tab, |hosts| {
        url_policy::check_page_with(url, hosts).map(|()| url.to_string())
    })
    .map(drop)
}

/// The person's hosts, then each policy `tab` is held to, in turn: `step` answers the URL to
/// check next (a navigation's is normalized by the first).
fn checked(
    tab: i32,
    mut step: impl FnMut(&HostPolicy) -> Result<String, Refusal>,
) -> Result<String, Refusal> {
    let url = site_rules::with(|person| step(&person.hosts))?;
    let owner = rules::owner(tab);
    IN_FORCE.with(|p| {
        let list = p.borrow();
        let held = list
            .iter()
            .flatten()
            .filter(|f| owner.as_ref().is_none_or(|o| *o == f.agent));
        let mut url = url;
        for f in held {
            url = step(&f.hosts)?;
        }
        Ok(url)
    })
}

/// Whether a command may send a group tab to `url`: the URL to load. A host the person's
/// rules or the policy of the tab's agent refuses is reported as a refused navigation.
pub fn check_navigation(tab: i32, url: &str, current: Option<&str>) -> Result<String, Refusal> {
    let mut next = url.to_string();
    let checked = checked(tab, |hosts| {
        next = url_policy::check_navigation_with(&next, current, hosts)?;
        Ok(next.clone())
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
    if !matches!(check_page(tab, url), Err(Refusal::Host(_))) {
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

/// set_policy: the calling agent's policy, checked, stored, enforced, answered as in force.
/// Refused when the browser could not hold the request rules of every agent's policy together.
pub async fn set(agent: &Agent, args: Args) -> Result<ToolResult, String> {
    ready().await;
    let hosts = HostPolicy::new(
        args.allowed_hosts.as_deref(),
        args.blocked_hosts.as_deref().unwrap_or_default(),
    )
    .map_err(|e| format!("The policy was not changed: {e}."))?;
    let key = agent.key();
    let (all, regex) = site_rules::with(|person| {
        IN_FORCE.with(|p| {
            let list = p.borrow();
            let mut policies: Vec<&HostPolicy> = list
                .iter()
                .flatten()
                .filter(|f| f.agent != key)
                .map(|f| &f.hosts)
                .collect();
            policies.push(&hosts);
            host_rules::worst_case(&person.hosts, &policies)
        })
    });
    if all > host_rules::MAX_SESSION_RULES || regex > host_rules::MAX_REGEX_RULES {
        return Err(format!(
            "The policy was not changed: with the other agents' policies in this browser and the person's site rules it could need {all} request rules, {regex} of them by regular expression, and the browser holds at most {} and {}. Use fewer, broader host patterns (example.com covers its subdomains).",
            host_rules::MAX_SESSION_RULES,
            host_rules::MAX_REGEX_RULES
        ));
    }
    let (allowed_hosts, blocked_hosts) = hosts.written();
    let policy = Policy {
        allowed_hosts,
        blocked_hosts,
        dialogs: args.dialogs.unwrap_or_default(),
        download_paths: args.download_paths.unwrap_or(false),
    };
    let text = serde_json::to_string(&policy).map_err(|e| e.to_string())?;
    let before = replace(&key, Some(InForce::of(key.clone(), policy, hosts)));
    if let Err(e) = store().await {
        replace(&key, before);
        return Err(format!(
            "The policy was not changed: it could not be stored ({e})."
        ));
    }
    rules::refresh().await.map_err(|e| {
        format!("The policy is stored but the browser did not take its request rules: {e}")
    })?;
    Ok(ToolResult::text(text))
}

/// Puts `with` in the agent's place (none: the agent has no policy); answers what was there.
fn replace(agent: &str, with: Option<InForce>) -> Option<InForce> {
    IN_FORCE.with(|p| {
        let mut p = p.borrow_mut();
        let list = p.get_or_insert_with(Vec::new);
        let before = list
            .iter()
            .position(|f| f.agent == agent)
            .map(|i| list.remove(i));
        list.extend(with);
        before
    })
}

/// The person removed connection `conn`: the policies of its agents go with it (from memory,
/// storage and the request rules).
pub async fn connection_removed(conn: u32) {
    ready().await;
    let gone: Vec<String> = agents()
        .into_iter()
        .filter(|a| a.conn == conn)
        .map(|a| a.key())
        .collect();
    if gone.is_empty() {
        return;
    }
    for key in &gone {
        replace(key, None);
    }
    if let Err(e) = store().await {
        crate::js::log(&format!(
            "storing the policies without connection {conn}'s: {e}"
        ));
    }
    if let Err(e) = rules::refresh().await {
        crate::js::log(&format!("the URL policy's request rules: {e}"));
    }
}

#[cfg(test)]
#[test]
fn its_keys_are_read_early_as_the_worker_starts() {
    use crate::chrome::storage::early_reads::asks;
    assert!(asks("session", KEY) && asks("session", OTHERS_KEY));
    assert!(asks("local", site_rules::KEY));
}
