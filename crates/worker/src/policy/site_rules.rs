//! The person's own site rules, set in Options: allowed, blocked and "ask first" sites (host
//! patterns as `set_policy` takes them), whether javascript_tool and uploads ask on every site,
//! and how long an approval waits. Kept in chrome.storage.local (they are the person's, and
//! last); enforced together with the backend's policy by the one mechanism of `policy` (checks
//! and request rules), the person's first, so they always win.

use crate::chrome::storage::{self, Area};
use protocol::host_rules::{HostPattern, HostPolicy};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;

pub(super) const KEY: &str = "siteRules";
/// At most this many patterns in the three lists together (the allowed and blocked ones become
/// request rules beside the backend's 500).
pub const MAX_PATTERNS: usize = 300;
/// An approval waits at most this long (seconds) unless the person sets another time.
pub const DEFAULT_APPROVAL_SECONDS: u32 = 60;
/// At most this long: the wait is part of the command, which the worker bounds at
/// `protocol::bounds::COMMAND_MS` (120 s), so the tool keeps at least 30 s to run.
const MAX_APPROVAL_SECONDS: u32 = 90;
const _: () = assert!(MAX_APPROVAL_SECONDS * 1000 + 30_000 <= protocol::bounds::COMMAND_MS);

/// The rules as stored and as Options shows them (patterns canonical once saved).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SiteRules {
    /// When not empty, group tabs may show only these sites.
    pub allowed: Vec<String>,
    pub blocked: Vec<String>,
    /// Acting commands on these sites wait for the person's approval.
    pub ask: Vec<String>,
    /// javascript_tool, upload_image and file_upload wait for approval on every site.
    pub ask_tools: bool,
    /// How long an approval waits before it counts as denied.
    pub approval_seconds: u32,
}

impl Default for SiteRules {
    fn default() -> Self {
        SiteRules {
            allowed: Vec::new(),
            blocked: Vec::new(),
            ask: Vec::new(),
            ask_tools: true,
            approval_seconds: DEFAULT_APPROVAL_SECONDS,
        }
    }
}

/// The rules in force, parsed.
pub struct InForce {
    pub hosts: HostPolicy,
    pub ask: Vec<HostPattern>,
    pub ask_tools: bool,
    pub approval_seconds: u32,
}

thread_local! {
    static IN_FORCE: RefCell<Option<InForce>> = const { RefCell::new(None) };
}

fn list(name: &str, written: &[String]) -> Result<Vec<HostPattern>, String> {
    let mut out: Vec<HostPattern> = Vec::new();
    for w in written.iter().filter(|w| !w.trim().is_empty()) {
        let p = HostPattern::parse(w).map_err(|e| format!("{name}: {e}."))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Checks the rules as the person wrote them: the rules in force, and as they are stored.
fn parse(rules: &SiteRules) -> Result<(InForce, SiteRules), String> {
    let allowed = list("Allowed sites", &rules.allowed)?;
    let blocked = list("Blocked sites", &rules.blocked)?;
    let ask = list("Ask-first sites", &rules.ask)?;
    let count = allowed.len() + blocked.len() + ask.len();
    if count > MAX_PATTERNS {
        return Err(format!(
            "{count} site patterns is more than the {MAX_PATTERNS} the site rules may hold: use fewer, broader patterns (example.com covers its subdomains)."
        ));
    }
    if !(1..=MAX_APPROVAL_SECONDS).contains(&rules.approval_seconds) {
        return Err(format!(
            "The approval timeout is 1 to {MAX_APPROVAL_SECONDS} seconds, not {}.",
            rules.approval_seconds
        ));
    }
    let written = |l: &[HostPattern]| l.iter().map(HostPattern::written).collect::<Vec<_>>();
    let hosts = HostPolicy::person(&written(&allowed), &written(&blocked))?;
    let stored = SiteRules {
        allowed: written(&allowed),
        blocked: written(&blocked),
        ask: written(&ask),
        ask_tools: rules.ask_tools,
        approval_seconds: rules.approval_seconds,
    };
    Ok((
        InForce {
            hosts,
            ask,
            ask_tools: rules.ask_tools,
            approval_seconds: rules.approval_seconds,
        },
        stored,
    ))
}

/// The rules as stored (the defaults when none are).
pub async fn stored() -> SiteRules {
    storage::get::<SiteRules>(Area::Local, KEY)
        .await
        .unwrap_or_else(|e| {
            crate::js::log(&format!("reading the site rules: {e}"));
            None
        })
        .unwrap_or_default()
}

/// Reads the stored rules into force (at the worker's first command, and when they changed in
/// storage). Rules that no longer parse keep their valid patterns: a stored block is never
/// dropped for a neighbour's mistake.
pub async fn load() {
    let rules = stored().await;
    let in_force = match parse(&rules) {
        Ok((in_force, _)) => in_force,
        Err(e) => {
            crate::js::log(&format!("the stored site rules: {e}"));
            let valid = |l: &[String]| {
                l.iter()
                    .filter(|w| HostPattern::parse(w).is_ok())
                    .cloned()
                    .collect::<Vec<_>>()
            };
            let (allowed, blocked, ask) = (
                valid(&rules.allowed),
                valid(&rules.blocked),
                valid(&rules.ask),
            );
            let hosts = HostPolicy::person(&allowed, &blocked).unwrap_or_default();
            InForce {
                hosts,
                ask: ask
                    .iter()
                    .filter_map(|w| HostPattern::parse(w).ok())
                    .collect(),
                ask_tools: rules.ask_tools,
                approval_seconds: rules.approval_seconds.clamp(1, MAX_APPROVAL_SECONDS),
            }
        }
    };
    IN_FORCE.with(|r| *r.borrow_mut() = Some(in_force));
}

/// Saves what the person wrote in Options: checked (an error names the list and the pattern),
/// stored and put in force (`policy::save_site_rules` then writes the request rules). Answers
/// the rules as stored.
pub async fn save(rules: SiteRules) -> Result<SiteRules, String> {
    let (in_force, stored) = parse(&rules)?;
    storage::set(Area::Local, KEY, &stored)
        .await
        .map_err(|e| format!("The site rules were not saved: {e}"))?;
    IN_FORCE.with(|r| *r.borrow_mut() = Some(in_force));
    Ok(stored)
}

/// Whether the rules are loaded.
pub fn loaded() -> bool {
    IN_FORCE.with(|r| r.borrow().is_some())
}

/// Reads the rules in force (the defaults until loaded, which `policy::ready` does before any
/// command).
pub fn with<R>(f: impl FnOnce(&InForce) -> R) -> R {
    IN_FORCE.with(|r| match r.borrow().as_ref() {
        Some(in_force) => f(in_force),
        None => f(&InForce {
            hosts: HostPolicy::default(),
            ask: Vec::new(),
            ask_tools: true,
            approval_seconds: DEFAULT_APPROVAL_SECONDS,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_checked_and_stored_canonical() {
        let rules = SiteRules {
            allowed: vec![],
            blocked: vec!["EVIL.test.".into(), " ".into(), "evil.test".into()],
            ask: vec!["*.Bank.example".into()],
            ..SiteRules::default()
        };
        let (in_force, stored) = parse(&rules).expect("valid");
        assert_eq!(stored.blocked, ["evil.test"]);
        assert_eq!(stored.ask, ["*.bank.example"]);
        assert!(in_force.hosts.allowed.is_none());
        assert!(in_force.hosts.check_url("https://a.evil.test/").is_err());
        let bad = SiteRules {
            ask: vec!["https://x.test/".into()],
            ..SiteRules::default()
        };
        let e = parse(&bad).err().unwrap_or_default();
        assert!(
            e.starts_with("Ask-first sites: \"https://x.test/\" is not a host pattern"),
            "{e}"
        );
        let slow = SiteRules {
            approval_seconds: 0,
            ..SiteRules::default()
        };
        assert!(parse(&slow).is_err());
        let defaults: SiteRules = serde_json::from_str(r#"{"askTools": false}"#).unwrap();
        assert_eq!(defaults.approval_seconds, DEFAULT_APPROVAL_SECONDS);
        assert!(!defaults.ask_tools);
    }
}
