//! The hosts a backend lets its group tabs show: `allowedHosts` (absent = every web host; an
//! empty list = none) and `blockedHosts` (each refused, whatever is allowed). Host rules are the
//! second half of `url_policy`: the scheme boundary decides which kinds of address a tab may
//! show, these decide which web hosts. Pure logic: the worker holds group tabs to it before and
//! after every command and turns it into the browser's own request rules (`dnr_rules`), which
//! refuse a navigation before its request leaves, however it was started.
//!
//! A pattern is `example.com` (that host and its subdomains), `*.example.com` (its subdomains
//! only) or an IP address (that address). Hosts are compared as the browser's URL parser writes
//! them: lowercase, internationalized names in punycode (`xn--…`), without a trailing dot, IPv4
//! addresses in dotted decimal, IPv6 in brackets, compressed. Ports never matter: a pattern
//! names a host on every port.
//!
//! The same patterns serve the person's own site rules (Options: allowed, blocked, "ask
//! first"), a [`HostPolicy`] of [`Owner::Person`]: checked before the backend's, and written
//! to request rules in two layers ([`layered_dnr_rules`]) so the person's always win.

use serde_json::{json, Value};
use std::net::{Ipv4Addr, Ipv6Addr};

/// At most this many patterns in the two lists together (each is one request rule, and the
/// browser holds at most 1000 regular-expression rules per extension).
pub const MAX_PATTERNS: usize = 500;
/// A host name is at most this long.
const MAX_HOST: usize = 253;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// The host and its subdomains.
    Domain,
    /// Only its subdomains (`*.example.com`).
    Subdomains,
    /// An IP address: exactly it.
    Address,
}

/// One host pattern, canonical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPattern {
    host: String,
    kind: Kind,
}

impl HostPattern {
    /// Reads a pattern as a backend wrote it.
    pub fn parse(written: &str) -> Result<HostPattern, String> {
        let refuse = |why: &str| {
            Err(format!(
                "\"{}\" is not a host pattern: {why}. Write a host name (example.com: that host and its subdomains), *.example.com (its subdomains only) or an IP address",
                shown(written)
            ))
        };
        let text = written.trim();
        if text.is_empty() {
            return refuse("it is empty");
        }
        if text.contains("://") {
            return refuse("it is a URL, not a host");
        }
        let (subdomains, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.contains(['/', '\\', '@', '?', '#', '*', ' ', '%']) {
            return refuse("a host has no '/', '\\', '@', '?', '#', '*', '%' or spaces (and a wildcard only as a leading \"*.\")");
        }
        // A bare IPv6 address is written with brackets in a URL.
        let bracketed;
        let rest = if !rest.starts_with('[') && rest.parse::<Ipv6Addr>().is_ok() {
            bracketed = format!("[{rest}]");
            bracketed.as_str()
        } else {
            rest
        };
        if rest.contains(':') && !rest.starts_with('[') {
            return refuse("ports are not part of a host pattern (a pattern matches every port)");
        }
        let Some(host) = canonical_host(rest) else {
            return refuse("it is not a valid host name or IP address");
        };
        if host.is_empty() || host.len() > MAX_HOST {
            return refuse("a host name has 1 to 253 characters");
        }
        let address = host.starts_with('[') || host.parse::<Ipv4Addr>().is_ok();
        if address && subdomains {
            return refuse("an IP address has no subdomains");
        }
        if !address && host.split('.').any(|l| l.is_empty() || l.len() > 63) {
            return refuse("each dot-separated label has 1 to 63 characters");
        }
        let kind = match (address, subdomains) {
            (true, _) => Kind::Address,
            (false, true) => Kind::Subdomains,
            (false, false) => Kind::Domain,
        };
        Ok(HostPattern { host, kind })
    }

    /// Whether a canonical host (see [`canonical_host`]) matches.
    pub fn matches(&self, host: &str) -> bool {
        let below = || {
            host.len() > self.host.len()
                && host.ends_with(&self.host)
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
        };
        match self.kind {
            Kind::Address => host == self.host,
            Kind::Subdomains => below(),
            Kind::Domain => host == self.host || below(),
        }
    }

    /// The pattern as the policy in force shows it (canonical: `*.xn--bcher-kva.example`).
    pub fn written(&self) -> String {
        match self.kind {
            Kind::Subdomains => format!("*.{}", self.host),
            _ => self.host.clone(),
        }
    }

    /// A regular expression (RE2, as the browser's request rules take it) matching the http(s)
    /// and ws(s) URLs whose host this pattern matches, on any port, with or without userinfo
    /// (`https://allowed.test@evil.test/` has the host `evil.test`) and a trailing dot.
    pub fn regex(&self) -> String {
        let host = self
            .host
            .chars()
            .map(|c| match c {
                '.' | '[' | ']' => format!("\\{c}"),
                c => c.to_string(),
            })
            .collect::<String>();
        let host = match self.kind {
            Kind::Address => host,
            Kind::Subdomains => format!("[^/?#@:]+\\.{host}"),
            Kind::Domain => format!("([^/?#@:]+\\.)?{host}"),
        };
        format!("^(https?|wss?)://([^/?#]*@)?{host}\\.?(:[0-9]*)?([/?#]|$)")
    }

    /// The hosts both patterns match, which is one of them or none: host patterns nest (a
    /// domain holds its subdomains), so two either overlap by one holding the other, or not at
    /// all.
    pub fn intersect(&self, other: &HostPattern) -> Option<HostPattern> {
        let holds = |outer: &HostPattern, inner: &HostPattern| {
            outer == inner
                || match (&outer.kind, &inner.kind) {
                    (Kind::Address, _) | (_, Kind::Address) => false,
                    // A domain holds itself and what is below it; "only subdomains" what is
                    // strictly below it.
                    _ => outer.matches(&inner.host),
                }
        };
        if holds(self, other) {
            Some(other.clone())
        } else if holds(other, self) {
            Some(self.clone())
        } else {
            None
        }
    }
}

/// The first pattern of `patterns` that matches a URL's host (a URL without a web host
/// matches none).
pub fn matching<'a>(patterns: &'a [HostPattern], url: &str) -> Option<&'a HostPattern> {
    let host = web_host(url)??;
    patterns.iter().find(|p| p.matches(&host))
}

/// Whose rules a [`HostPolicy`] holds: the backend's (`set_policy`) or the person's (Options).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Owner {
    #[default]
    Backend,
    Person,
}

/// What the backend (or the person) allows: `allowed` `None` = every web host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPolicy {
    pub allowed: Option<Vec<HostPattern>>,
    pub blocked: Vec<HostPattern>,
    pub owner: Owner,
}

/// Why a host was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRefusal {
    pub host: String,
    /// The blocked pattern it matches; `None`: it matches no allowed pattern.
    pub blocked_by: Option<String>,
    /// Whose rule refused it.
    pub by: Owner,
}

impl HostRefusal {
    /// The rule, as a clause.
    pub fn rule(&self) -> String {
        if self.by == Owner::Person {
            return match &self.blocked_by {
                Some(p) if *p == self.host => format!(
                    "the person's site rules (the extension's Options) block the site {}",
                    self.host
                ),
                Some(p) => format!(
                    "the person's site rules (the extension's Options) block the site {} (it matches the blocked pattern {p})",
                    self.host
                ),
                None => format!(
                    "the person's site rules (the extension's Options) allow only their listed sites, and {} is not among them",
                    self.host
                ),
            };
        }
        match &self.blocked_by {
            Some(p) if *p == self.host => format!(
                "the URL policy refuses the host {} (it is a blocked host)",
                self.host
            ),
            Some(p) => format!(
                "the URL policy refuses the host {} (it matches the blocked host pattern {p})",
                self.host
            ),
            None => format!(
                "the URL policy refuses the host {} (it is not among the allowed hosts)",
                self.host
            ),
        }
    }
}

impl HostPolicy {
    /// The policy from a backend's lists (patterns as written).
    pub fn new(allowed: Option<&[String]>, blocked: &[String]) -> Result<HostPolicy, String> {
        let count = allowed.map_or(0, <[String]>::len) + blocked.len();
        if count > MAX_PATTERNS {
            return Err(format!(
                "{count} host patterns is more than the {MAX_PATTERNS} a policy may hold: use fewer, broader patterns (example.com covers its subdomains)"
            ));
        }
        let parse = |list: &[String]| -> Result<Vec<HostPattern>, String> {
            let mut out: Vec<HostPattern> = Vec::new();
            for p in list {
                let p = HostPattern::parse(p)?;
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            Ok(out)
        };
        Ok(HostPolicy {
            allowed: allowed.map(parse).transpose()?,
            blocked: parse(blocked)?,
            owner: Owner::Backend,
        })
    }

    /// The person's rules from their lists (an empty allowed list: every site allowed).
    pub fn person(allowed: &[String], blocked: &[String]) -> Result<HostPolicy, String> {
        let allowed = (!allowed.is_empty()).then_some(allowed);
        Ok(HostPolicy {
            owner: Owner::Person,
            ..HostPolicy::new(allowed, blocked)?
        })
    }

    /// This policy with its allowed hosts narrowed to those `outer` allows too (its blocked
    /// hosts as they are): what the backend's layer of request rules allows under the
    /// person's allowed list.
    pub fn within(&self, outer: &HostPolicy) -> HostPolicy {
        let allowed = match (&self.allowed, &outer.allowed) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (Some(a), Some(b)) => {
                let mut both: Vec<HostPattern> = Vec::new();
                for p in a {
                    for q in b {
                        if let Some(r) = p.intersect(q) {
                            if !both.contains(&r) {
                                both.push(r);
                            }
                        }
                    }
                }
                Some(both)
            }
        };
        HostPolicy {
            allowed,
            blocked: self.blocked.clone(),
            owner: self.owner,
        }
    }

    /// True when it refuses nothing.
    pub fn is_open(&self) -> bool {
        self.allowed.is_none() && self.blocked.is_empty()
    }

    /// Whether a canonical host may be shown.
    pub fn check_host(&self, host: &str) -> Result<(), HostRefusal> {
        if let Some(p) = self.blocked.iter().find(|p| p.matches(host)) {
            return Err(HostRefusal {
                host: host.to_string(),
                blocked_by: Some(p.written()),
                by: self.owner,
            });
        }
        match &self.allowed {
            Some(allowed) if !allowed.iter().any(|p| p.matches(host)) => Err(HostRefusal {
                host: host.to_string(),
                blocked_by: None,
                by: self.owner,
            }),
            _ => Ok(()),
        }
    }

    /// Whether a URL's host may be shown. Addresses without a host (`about:blank`, `data:`)
    /// and schemes outside the web are the scheme boundary's to judge, and pass here; a
    /// `blob:` URL is judged by the origin it names.
    pub fn check_url(&self, url: &str) -> Result<(), HostRefusal> {
        if self.is_open() {
            return Ok(());
        }
        match web_host(url) {
            None => Ok(()),
            Some(Some(host)) => self.check_host(&host),
            // A web URL whose host no parser would accept: nothing to allow.
            Some(None) if self.allowed.is_none() => Ok(()),
            Some(None) => Err(HostRefusal {
                host: "(no valid host)".into(),
                blocked_by: None,
                by: self.owner,
            }),
        }
    }

    /// The lists as the policy in force shows them.
    pub fn written(&self) -> (Option<Vec<String>>, Vec<String>) {
        (
            self.allowed
                .as_ref()
                .map(|a| a.iter().map(HostPattern::written).collect()),
            self.blocked.iter().map(HostPattern::written).collect(),
        )
    }

    /// The browser's request rules (chrome.declarativeNetRequest session rules) that enforce
    /// this policy on the tabs `tab_ids`, numbered from `first_id` at `base_priority` and the
    /// two priorities above it: a rule refusing every page and frame (when hosts are allowed
    /// by list), above it one allowing each allowed pattern, above those one refusing each
    /// blocked pattern (so a blocked host stays refused even when an allowed pattern covers it).
    /// They apply to top-level pages and frames: what a tab shows, not what a page fetches.
    pub fn dnr_rules(&self, first_id: u32, base_priority: u32, tab_ids: &[i32]) -> Vec<Value> {
        if tab_ids.is_empty() || self.is_open() {
            return Vec::new();
        }
        let mut rules = Vec::new();
        let mut id = first_id;
        let mut rule = |priority: u32, action: &str, regex: Option<String>| {
            let mut condition = json!({
                "tabIds": tab_ids,
                "resourceTypes": ["main_frame", "sub_frame"],
            });
            if let Some(r) = regex {
                condition["regexFilter"] = json!(r);
                condition["isUrlFilterCaseSensitive"] = json!(false);
            }
            rules.push(json!({
                "id": id,
                "priority": priority,
                "action": {"type": action},
                "condition": condition,
            }));
            id += 1;
        };
        if let Some(allowed) = &self.allowed {
            rule(base_priority, "block", None);
            for p in allowed {
                rule(base_priority + 1, "allow", Some(p.regex()));
            }
        }
        for p in &self.blocked {
            rule(base_priority + 2, "block", Some(p.regex()));
        }
        rules
    }

    /// The request rules that hold a tab a page opens (a link with `target=_blank`) to this
    /// policy from its first request, before the tab can be named in [`dnr_rules`]: top-level
    /// page requests that a page on one of `initiators` started (hosts as the browser's
    /// `initiatorDomains` takes them, each with its subdomains), in any tab but
    /// `excluded_tab_ids` (tabs known not to be held to the policy). Numbered from `first_id`,
    /// at the same priorities and with the same verdicts as [`dnr_rules`]; host names and IPv4
    /// addresses are matched by the browser's own domain matching (`requestDomains`), the
    /// subdomains-only patterns and IPv6 addresses by regular expression, so this set adds
    /// few regular-expression rules to the browser's limit. No rules without initiators.
    ///
    /// [`dnr_rules`]: HostPolicy::dnr_rules
    pub fn dnr_opener_rules(
        &self,
        first_id: u32,
        base_priority: u32,
        initiators: &[String],
        excluded_tab_ids: &[i32],
    ) -> Vec<Value> {
        if initiators.is_empty() || self.is_open() {
            return Vec::new();
        }
        let mut rules = Vec::new();
        let mut id = first_id;
        let mut rule = |priority: u32, action: &str, extra: Value| {
            let mut condition = json!({
                "initiatorDomains": initiators,
                "resourceTypes": ["main_frame"],
            });
            if !excluded_tab_ids.is_empty() {
                condition["excludedTabIds"] = json!(excluded_tab_ids);
            }
            if let (Some(c), Value::Object(extra)) = (condition.as_object_mut(), extra) {
                c.extend(extra);
            }
            rules.push(json!({
                "id": id,
                "priority": priority,
                "action": {"type": action},
                "condition": condition,
            }));
            id += 1;
        };
        let by_domain = |p: &&HostPattern| match p.kind {
            Kind::Domain => true,
            Kind::Address => !p.host.starts_with('['),
            Kind::Subdomains => false,
        };
        let regex =
            |p: &HostPattern| json!({"regexFilter": p.regex(), "isUrlFilterCaseSensitive": false});
        if let Some(allowed) = &self.allowed {
            let domains: Vec<&str> = allowed
                .iter()
                .filter(by_domain)
                .map(|p| p.host.as_str())
                .collect();
            let mut all = json!({});
            if !domains.is_empty() {
                all["excludedRequestDomains"] = json!(domains);
            }
            rule(base_priority, "block", all);
            for p in allowed.iter().filter(|p| !by_domain(p)) {
                rule(base_priority + 1, "allow", regex(p));
            }
        }
        let domains: Vec<&str> = self
            .blocked
            .iter()
            .filter(by_domain)
            .map(|p| p.host.as_str())
            .collect();
        if !domains.is_empty() {
            rule(
                base_priority + 2,
                "block",
                json!({"requestDomains": domains}),
            );
        }
        for p in self.blocked.iter().filter(|p| !by_domain(p)) {
            rule(base_priority + 2, "block", regex(p));
        }
        rules
    }
}

/// Where [`layered_dnr_rules`] numbers its two layers: the backend's from `backend_first_id`
/// at `backend_priority` (and the two above), the person's from `person_first_id` at
/// `person_priority` (above all of the backend's).
#[derive(Clone, Copy, Debug)]
pub struct Layers {
    pub backend_first_id: u32,
    pub backend_priority: u32,
    pub person_first_id: u32,
    pub person_priority: u32,
}

/// The request rules for the person's and the backend's policies together, on the tabs
/// `tab_ids`: the backend's layer is its policy with the allowed hosts narrowed to the person's
/// ([`HostPolicy::within`]), the person's layer their blocked hosts, at higher priorities. So a
/// person's block beats a backend's allow, and the person's allowed list is narrowed by the
/// backend's, never widened. (Each layer is [`HostPolicy::dnr_rules`].)
pub fn layered_dnr_rules(
    person: &HostPolicy,
    backend: &HostPolicy,
    at: Layers,
    tab_ids: &[i32],
) -> Vec<Value> {
    let (lower, upper) = layers(person, backend);
    let mut rules = lower.dnr_rules(at.backend_first_id, at.backend_priority, tab_ids);
    rules.extend(upper.dnr_rules(at.person_first_id, at.person_priority, tab_ids));
    rules
}

/// The two layers the person's and the backend's policies make together: the backend's policy
/// with its allowed hosts narrowed to the person's ([`HostPolicy::within`]), and above it the
/// person's blocked hosts. Each layer's rules are made by [`HostPolicy::dnr_rules`] and
/// [`HostPolicy::dnr_opener_rules`], the upper at higher priorities.
pub fn layers(person: &HostPolicy, backend: &HostPolicy) -> (HostPolicy, HostPolicy) {
    let lower = backend.within(person);
    let upper = HostPolicy {
        allowed: None,
        blocked: person.blocked.clone(),
        owner: Owner::Person,
    };
    (lower, upper)
}

/// Chrome's bounds on an extension's session rules: at most this many
/// (`MAX_NUMBER_OF_SESSION_RULES`) ...
pub const MAX_SESSION_RULES: usize = 5_000;
/// ... of which at most this many use a regular expression (`MAX_NUMBER_OF_REGEX_RULES`,
/// counted over the dynamic and session rules together; this extension has no dynamic rules).
pub const MAX_REGEX_RULES: usize = 1_000;

/// The priorities of the two layers: an agent's policy at [`BACKEND_PRIORITY`] and the two
/// above it, the person's blocked sites at [`PERSON_PRIORITY`] (and above), over every agent's.
pub const BACKEND_PRIORITY: u32 = 10;
pub const PERSON_PRIORITY: u32 = 20;

impl HostPolicy {
    /// What refuses whatever either refuses: the allowed hosts narrowed to both lists, the
    /// blocked hosts of both. The policy for a tab that two agents' pages may have opened.
    pub fn and(&self, other: &HostPolicy) -> HostPolicy {
        let mut both = self.within(other);
        for p in &other.blocked {
            if !both.blocked.contains(p) {
                both.blocked.push(p.clone());
            }
        }
        both
    }

    /// The patterns the rules for opened tabs match by regular expression (see
    /// [`HostPolicy::dnr_opener_rules`]).
    fn regex_patterns(&self) -> usize {
        self.allowed
            .iter()
            .flatten()
            .chain(&self.blocked)
            .filter(|p| p.kind == Kind::Subdomains || p.host.starts_with('['))
            .count()
    }
}

/// One agent's part of the browser's request rules: its policy, the tabs of its group, and the
/// web hosts they show (as `initiatorDomains` takes them).
pub struct AgentTabs<'a> {
    pub policy: &'a HostPolicy,
    pub tabs: &'a [i32],
    pub shown: &'a [String],
}

/// Whether two hosts can be matched by one request's initiator: the browser's
/// `initiatorDomains` matches a host and its subdomains, so a page on `www.example.com` is an
/// initiator for a rule naming `example.com` as well as one naming `www.example.com`.
fn related(a: &str, b: &str) -> bool {
    let below = |inner: &str, outer: &str| {
        inner.len() > outer.len()
            && inner.ends_with(outer)
            && inner.as_bytes()[inner.len() - outer.len() - 1] == b'.'
    };
    a == b || below(a, b) || below(b, a)
}

/// The shared-host decision for tabs a group tab's page opens before the worker knows them:
/// such a tab is attributed by the host of the page that opened it, and a host two agents'
/// tabs show (or a host and its subdomain) cannot say whose page it was. So the shown hosts are
/// split into sets that no request's initiator can match across (related hosts, see
/// [`related`], joined transitively), and each set is held to every policy of the agents that
/// show one of its hosts: refused what any of them refuses. Sets held by the same agents are
/// one. Answers, per set, the agents (indices into `shown`, ascending) and its hosts (sorted).
pub fn opener_sets(shown: &[&[String]]) -> Vec<(Vec<usize>, Vec<String>)> {
    // Each distinct host with the agents that show it.
    let mut hosts: Vec<(String, Vec<usize>)> = Vec::new();
    for (agent, list) in shown.iter().enumerate() {
        for h in list.iter() {
            match hosts.iter_mut().find(|(x, _)| x == h) {
                Some((_, agents)) if agents.contains(&agent) => {}
                Some((_, agents)) => agents.push(agent),
                None => hosts.push((h.clone(), vec![agent])),
            }
        }
    }
    // Components of the relation: each host's component, joined until none changes.
    let mut component: Vec<usize> = (0..hosts.len()).collect();
    loop {
        let mut changed = false;
        for i in 0..hosts.len() {
            for j in 0..hosts.len() {
                if component[j] < component[i] && related(&hosts[i].0, &hosts[j].0) {
                    let (from, to) = (component[i], component[j]);
                    for c in component.iter_mut().filter(|c| **c == from) {
                        *c = to;
                    }
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut sets: Vec<(Vec<usize>, Vec<String>)> = Vec::new();
    let mut roots: Vec<usize> = component.clone();
    crate::sort::sort_dedup(&mut roots);
    for root in roots {
        let members: Vec<usize> = (0..hosts.len()).filter(|i| component[*i] == root).collect();
        let mut agents: Vec<usize> = members
            .iter()
            .flat_map(|i| hosts[*i].1.iter().copied())
            .collect();
        crate::sort::sort_dedup(&mut agents);
        let names = members.iter().map(|i| hosts[*i].0.clone());
        match sets.iter_mut().find(|(a, _)| *a == agents) {
            Some((_, list)) => list.extend(names),
            None => sets.push((agents, names.collect())),
        }
    }
    for (_, list) in &mut sets {
        crate::sort::sort(list);
    }
    sets
}

/// How many rules, and how many of them regular expressions.
fn counts(rules: &[Value]) -> (usize, usize) {
    let regex = rules
        .iter()
        .filter(|r| r["condition"].get("regexFilter").is_some())
        .count();
    (rules.len(), regex)
}

/// Whether the browser takes `rules` (see [`MAX_SESSION_RULES`], [`MAX_REGEX_RULES`]).
pub fn fits(rules: &[Value]) -> bool {
    let (all, regex) = counts(rules);
    all <= MAX_SESSION_RULES && regex <= MAX_REGEX_RULES
}

/// Every request rule of the browser, numbered from `first_id` without a gap, for the
/// person's site rules and each agent's policy:
/// - each agent's tabs (`tabIds`) are held to its own policy with the allowed hosts narrowed
///   to the person's (the lower layer, [`BACKEND_PRIORITY`]), and every agent's tabs to the
///   person's blocked sites (the upper layer, [`PERSON_PRIORITY`]);
/// - tabs not known yet (every tab but `others`, the tabs known to be outside the groups, and
///   the agents' own tabs, which their rules above hold), for top-level requests a page on a
///   shown host started: per [`opener_sets`], each set of hosts held to every policy of the
///   agents showing them, and to the person's blocked sites. When those sets would not fit the
///   browser's bounds, one set of all the hosts held to every agent's policy stands for them
///   (it refuses more, never less; [`worst_case`] bounds it).
///
/// No two rules share an id, and an agent's rules name only its own tabs.
pub fn browser_rules(
    person: &HostPolicy,
    agents: &[AgentTabs],
    others: &[i32],
    first_id: u32,
) -> Vec<Value> {
    let agents: Vec<&AgentTabs> = agents.iter().filter(|a| !a.tabs.is_empty()).collect();
    let mut all_tabs: Vec<i32> = agents.iter().flat_map(|a| a.tabs.iter().copied()).collect();
    crate::sort::sort(&mut all_tabs);
    let (_, upper) = layers(person, &HostPolicy::default());
    let next = |rules: &[Value]| first_id + rules.len() as u32;
    let mut rules = upper.dnr_rules(first_id, PERSON_PRIORITY, &all_tabs);
    for a in &agents {
        let lower = a.policy.within(person);
        let made = lower.dnr_rules(next(&rules), BACKEND_PRIORITY, a.tabs);
        rules.extend(made);
    }
    if all_tabs.is_empty() {
        return rules;
    }
    let mut excluded: Vec<i32> = others.iter().copied().chain(all_tabs).collect();
    crate::sort::sort_dedup(&mut excluded);
    let shown: Vec<&[String]> = agents.iter().map(|a| a.shown).collect();
    let mut initiators: Vec<String> = shown.iter().flat_map(|s| s.iter().cloned()).collect();
    crate::sort::sort_dedup(&mut initiators);
    let person_opened =
        upper.dnr_opener_rules(next(&rules), PERSON_PRIORITY, &initiators, &excluded);
    rules.extend(person_opened);
    let held = |members: &[usize]| {
        members
            .iter()
            .map(|i| agents[*i].policy)
            .fold(person.clone(), |p, q| q.and(&p))
    };
    let before = rules.len();
    for (members, hosts) in opener_sets(&shown) {
        let made =
            held(&members).dnr_opener_rules(next(&rules), BACKEND_PRIORITY, &hosts, &excluded);
        rules.extend(made);
    }
    if !fits(&rules) {
        rules.truncate(before);
        let every: Vec<usize> = (0..agents.len()).collect();
        let made =
            held(&every).dnr_opener_rules(next(&rules), BACKEND_PRIORITY, &initiators, &excluded);
        rules.extend(made);
    }
    rules
}

/// The most rules (all, and regular expressions) [`browser_rules`] can need for these
/// policies, whatever tabs the agents have and whatever hosts they show: each agent's tab
/// rules, the person's two sets, and the one set for opened tabs that stands for the others
/// when they would not fit (each of its allowed and blocked patterns is one of the policies').
pub fn worst_case(person: &HostPolicy, policies: &[&HostPolicy]) -> (usize, usize) {
    let tab = [0];
    let host = ["a.test".to_string()];
    let (_, upper) = layers(person, &HostPolicy::default());
    let mut rules = upper.dnr_rules(1, PERSON_PRIORITY, &tab);
    rules.extend(upper.dnr_opener_rules(1, PERSON_PRIORITY, &host, &tab));
    for p in policies {
        rules.extend(p.within(person).dnr_rules(1, BACKEND_PRIORITY, &tab));
    }
    let (all, regex) = counts(&rules);
    let opened_regex =
        person.regex_patterns() + policies.iter().map(|p| p.regex_patterns()).sum::<usize>();
    // The opened set's rules: one refusing all, one by domain list, the rest by expression.
    (all + 2 + opened_regex, regex + opened_regex)
}

/// `Some(host)` for a web URL (http, https, ws, wss; a `blob:` of one), `Some(None)` when its
/// host does not parse, `None` for every other URL.
pub fn web_host(url: &str) -> Option<Option<String>> {
    let url = url.trim_matches(|c: char| c <= ' ');
    let url: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let (scheme, rest) = url.split_once(':')?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme == "blob" {
        return web_host(rest);
    }
    if !matches!(scheme.as_str(), "http" | "https" | "ws" | "wss") {
        return None;
    }
    let rest = rest.trim_start_matches(['/', '\\']);
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or("");
    let host = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => &authority[..=end],
            None => return Some(None),
        }
    } else {
        authority.split(':').next().unwrap_or("")
    };
    Some(canonical_host(host).filter(|h| !h.is_empty()))
}

/// A host as the browser's URL parser writes it: percent-escapes decoded, lowercase, the
/// ideographic full stops read as dots, a trailing dot dropped, internationalized labels in
/// punycode, IPv4 in dotted decimal (`0x7f.1` is `127.0.0.1`), IPv6 compressed in brackets.
/// `None` for what no parser accepts.
pub fn canonical_host(raw: &str) -> Option<String> {
    let decoded = percent_decode(raw)?;
    if let Some(inner) = decoded.strip_prefix('[') {
        let addr: Ipv6Addr = inner.strip_suffix(']')?.parse().ok()?;
        return Some(format!("[{addr}]"));
    }
    let mapped: String = decoded
        .chars()
        .map(|c| match c {
            '\u{3002}' | '\u{FF0E}' | '\u{FF61}' => '.',
            c => c,
        })
        .collect();
    let mapped = mapped.strip_suffix('.').unwrap_or(&mapped);
    // No character's lowercase is one of these (or a control), so they are checked before.
    if mapped
        .chars()
        .any(|c| c.is_control() || " #%/:<>?@[\\]^|".contains(c))
    {
        return None;
    }
    let lower = if mapped.is_ascii() {
        mapped.to_ascii_lowercase()
    } else {
        unicode_host(mapped)?
    };
    if let Some(v4) = ipv4(&lower) {
        return v4;
    }
    Some(lower)
}

/// How a name with characters beyond ASCII becomes the browser's ASCII form (lowercase, labels
/// in punycode), for [`canonical_host`]. The worker sets the browser's own URL parser here
/// ([`set_unicode_hosts`]), so the wasm links no Unicode case tables; natively (the server, the
/// tests) the Rust one in this module answers.
static UNICODE_HOSTS: std::sync::OnceLock<fn(&str) -> Option<String>> = std::sync::OnceLock::new();

/// Sets how [`canonical_host`] writes a name beyond ASCII (once; later calls change nothing).
/// It gets the name without percent-escapes or a trailing dot, and answers its ASCII form, or
/// `None` when no parser accepts it.
pub fn set_unicode_hosts(canonicalize: fn(&str) -> Option<String>) {
    let _ = UNICODE_HOSTS.set(canonicalize);
}

fn unicode_host(name: &str) -> Option<String> {
    if let Some(canonicalize) = UNICODE_HOSTS.get() {
        return canonicalize(name).filter(|h| h.is_ascii());
    }
    #[cfg(not(target_arch = "wasm32"))]
    return native_unicode_host(name);
    #[cfg(target_arch = "wasm32")]
    None
}

/// Lowercase, then each label beyond ASCII in punycode.
#[cfg(not(target_arch = "wasm32"))]
fn native_unicode_host(name: &str) -> Option<String> {
    let lower: String = name.chars().flat_map(char::to_lowercase).collect();
    let labels: Option<Vec<String>> = lower
        .split('.')
        .map(|label| {
            if label.is_ascii() {
                Some(label.to_string())
            } else {
                punycode(label).map(|p| format!("xn--{p}"))
            }
        })
        .collect();
    Some(labels?.join("."))
}

/// `Some(Some(dotted))` when the host is an IPv4 address (its last label a number), `Some(None)`
/// when it ends in a number but is no valid address, `None` for a name.
fn ipv4(host: &str) -> Option<Option<String>> {
    let parts: Vec<&str> = host.split('.').collect();
    let last = parts.last()?;
    let numeric = |p: &str| -> Option<u64> {
        let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or(p.strip_prefix("0X")) {
            (h, 16)
        } else if p.len() > 1 && p.starts_with('0') {
            (&p[1..], 8)
        } else {
            (p, 10)
        };
        if digits.is_empty() {
            return (radix == 16).then_some(0);
        }
        u64::from_str_radix(digits, radix).ok()
    };
    if last.is_empty() || numeric(last).is_none() {
        return None;
    }
    if parts.len() > 4 {
        return Some(None);
    }
    let Some(numbers) = parts
        .iter()
        .map(|p| numeric(p))
        .collect::<Option<Vec<u64>>>()
    else {
        return Some(None);
    };
    let (head, tail) = numbers.split_at(numbers.len() - 1);
    if head.iter().any(|n| *n > 255) {
        return Some(None);
    }
    let room = 8 * (5 - numbers.len() as u32);
    if tail[0] >= 1u64 << room.min(32) && room < 64 {
        return Some(None);
    }
    let mut value: u64 = tail[0];
    for (i, n) in head.iter().enumerate() {
        value += n << (8 * (3 - i as u32));
    }
    Some(
        u32::try_from(value)
            .ok()
            .map(|v| Ipv4Addr::from(v).to_string()),
    )
}

fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// RFC 3492 punycode of one label (without the `xn--` prefix).
#[cfg(not(target_arch = "wasm32"))]
fn punycode(label: &str) -> Option<String> {
    const BASE: u32 = 36;
    const TMIN: u32 = 1;
    const TMAX: u32 = 26;
    let digit = |d: u32| -> char {
        if d < 26 {
            char::from(b'a' + d as u8)
        } else {
            char::from(b'0' + (d - 26) as u8)
        }
    };
    let adapt = |delta: u32, points: u32, first: bool| -> u32 {
        let mut delta = if first { delta / 700 } else { delta / 2 };
        delta += delta / points;
        let mut k = 0;
        while delta > ((BASE - TMIN) * TMAX) / 2 {
            delta /= BASE - TMIN;
            k += BASE;
        }
        k + (BASE - TMIN + 1) * delta / (delta + 38)
    };
    let points: Vec<u32> = label.chars().map(u32::from).collect();
    let mut out: String = label.chars().filter(char::is_ascii).collect();
    let basic = out.len() as u32;
    let mut handled = basic;
    if basic > 0 {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (128u32, 0u32, 72u32);
    while (handled as usize) < points.len() {
        let m = *points.iter().filter(|&&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in &points {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        TMIN
                    } else if k >= bias + TMAX {
                        TMAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

fn shown(s: &str) -> String {
    if s.chars().count() > 100 {
        format!("{}…", s.chars().take(100).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: Option<&[&str]>, blocked: &[&str]) -> HostPolicy {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let allowed = allowed.map(owned);
        HostPolicy::new(allowed.as_deref(), &owned(blocked)).expect("a valid policy")
    }

    #[test]
    fn hosts_are_read_as_the_browser_writes_them() {
        for (raw, canonical) in [
            ("EXAMPLE.com", Some("example.com")),
            ("example.com.", Some("example.com")),
            ("b\u{fc}cher.example", Some("xn--bcher-kva.example")),
            ("M\u{dc}NCHEN.de", Some("xn--mnchen-3ya.de")),
            ("xn--bcher-kva.example", Some("xn--bcher-kva.example")),
            ("example\u{3002}com", Some("example.com")),
            ("%65xample.com", Some("example.com")),
            ("0x7f.1", Some("127.0.0.1")),
            ("2130706433", Some("127.0.0.1")),
            ("0177.0.0.1", Some("127.0.0.1")),
            ("[0:0::1]", Some("[::1]")),
            ("[::FFFF:7f00:1]", Some("[::ffff:127.0.0.1]")),
            ("1.2.3.4.5", None),
            ("a.256", None),
            ("a b.com", None),
        ] {
            let got = canonical_host(raw);
            assert_eq!(got.as_deref(), canonical, "{raw}");
        }
    }

    #[test]
    fn urls_name_their_host_past_userinfo_ports_and_backslashes() {
        for (url, host) in [
            ("https://allowed.test@evil.test/", "evil.test"),
            ("https://allowed.test:pw@evil.test:8443/x", "evil.test"),
            ("https://a@b@evil.test/", "evil.test"),
            ("http://evil.test\\@allowed.test/", "evil.test"),
            ("https:\\\\evil.test\\x", "evil.test"),
            ("HTTPS://EVIL.test:443", "evil.test"),
            ("https://evil.test./", "evil.test"),
            ("https://evil.test?@allowed.test", "evil.test"),
            ("https://evil.test#@allowed.test", "evil.test"),
            ("ws://evil.test/socket", "evil.test"),
            ("blob:https://evil.test/5e1a", "evil.test"),
            ("https://[::1]:8080/", "[::1]"),
            ("  https://evil.test/ ", "evil.test"),
            ("ht\ntps://ev\til.test/", "evil.test"),
        ] {
            assert_eq!(web_host(url), Some(Some(host.to_string())), "{url}");
        }
        for url in [
            "about:blank",
            "data:text/html,x",
            "chrome://settings",
            "mailto:a@b",
        ] {
            assert_eq!(web_host(url), None, "{url}");
        }
    }

    #[test]
    fn patterns_match_hosts_their_subdomains_or_only_subdomains() {
        let p = policy(
            Some(&[
                "example.com",
                "*.wild.test",
                "127.0.0.1",
                "B\u{fc}cher.example.",
            ]),
            &[],
        );
        for url in [
            "https://example.com/",
            "https://www.example.com/a",
            "https://a.b.example.com:8443/",
            "https://sub.wild.test/",
            "http://127.0.0.1:9/x",
            "https://xn--bcher-kva.example/",
            "https://www.b\u{fc}cher.example/",
            "https://EXAMPLE.COM./",
            "about:blank",
        ] {
            assert_eq!(p.check_url(url), Ok(()), "{url}");
        }
        for (url, host) in [
            ("https://wild.test/", "wild.test"),
            ("https://notexample.com/", "notexample.com"),
            ("https://example.com.evil.test/", "example.com.evil.test"),
            ("https://example.com@evil.test/", "evil.test"),
            ("https://evil.test/?example.com", "evil.test"),
            ("http://127.0.0.2/", "127.0.0.2"),
            ("http://x.127.0.0.1/", "(no valid host)"),
        ] {
            let refused = p.check_url(url).expect_err(url);
            assert_eq!(refused.host, host, "{url}");
            assert_eq!(refused.blocked_by, None, "{url}");
        }
    }

    #[test]
    fn a_blocked_host_stays_refused_even_where_an_allowed_pattern_covers_it() {
        let p = policy(
            Some(&["example.com"]),
            &["admin.example.com", "*.evil.test"],
        );
        let e = p.check_url("https://x.admin.example.com/").unwrap_err();
        assert_eq!(e.blocked_by.as_deref(), Some("admin.example.com"));
        assert!(e
            .rule()
            .contains("matches the blocked host pattern admin.example.com"));
        assert!(p.check_url("https://www.example.com/").is_ok());
        let only_blocked = policy(None, &["*.evil.test"]);
        assert!(only_blocked.check_url("https://evil.test/").is_ok());
        assert!(only_blocked.check_url("https://a.evil.test/").is_err());
        assert!(only_blocked.check_url("https://anything.else/").is_ok());
        let none = policy(Some(&[]), &[]);
        assert!(none.check_url("https://example.com/").is_err());
        assert!(none.check_url("about:blank").is_ok());
        assert!(policy(None, &[]).is_open());
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        for (pattern, why) in [
            ("", "empty"),
            ("https://example.com", "a URL"),
            ("example.com/path", "no '/'"),
            ("example.com:8080", "ports"),
            ("*.127.0.0.1", "no subdomains"),
            ("a.*.example.com", "wildcard only"),
            ("user@example.com", "'@'"),
            ("a..b", "1 to 63"),
        ] {
            let e = HostPattern::parse(pattern).expect_err(pattern);
            assert!(e.contains(why), "{pattern}: {e}");
        }
        assert_eq!(
            HostPattern::parse("::1").map(|p| p.written()),
            Ok("[::1]".into())
        );
        let many: Vec<String> = (0..=MAX_PATTERNS).map(|i| format!("h{i}.test")).collect();
        assert!(HostPolicy::new(Some(&many), &[])
            .unwrap_err()
            .contains("more than the 500"));
    }

    /// Evaluates request rules as the browser does: the highest priority matching wins; at
    /// one priority, allow beats block.
    fn refused_by_rules(rules: &[Value], url: &str) -> bool {
        let matching: Vec<(u64, bool)> = rules
            .iter()
            .filter(|r| {
                r["condition"]["regexFilter"].as_str().is_none_or(|s| {
                    regex::RegexBuilder::new(s)
                        .case_insensitive(true)
                        .build()
                        .unwrap()
                        .is_match(url)
                })
            })
            .map(|r| {
                (
                    r["priority"].as_u64().unwrap(),
                    r["action"]["type"] == "block",
                )
            })
            .collect();
        let Some(top) = matching.iter().map(|m| m.0).max() else {
            return false;
        };
        matching.iter().filter(|m| m.0 == top).all(|m| m.1)
    }

    fn person(allowed: &[&str], blocked: &[&str]) -> HostPolicy {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        HostPolicy::person(&owned(allowed), &owned(blocked)).expect("valid site rules")
    }

    #[test]
    fn patterns_intersect_as_one_of_them_or_none() {
        let p = |s: &str| HostPattern::parse(s).unwrap();
        let cases = [
            ("example.com", "www.example.com", Some("www.example.com")),
            ("example.com", "*.example.com", Some("*.example.com")),
            ("*.example.com", "*.example.com", Some("*.example.com")),
            ("*.example.com", "a.example.com", Some("a.example.com")),
            ("*.a.example.com", "example.com", Some("*.a.example.com")),
            ("example.com", "example.org", None),
            ("*.example.com", "example.com", Some("*.example.com")),
            ("127.0.0.1", "127.0.0.1", Some("127.0.0.1")),
            ("127.0.0.1", "example.com", None),
        ];
        for (a, b, both) in cases {
            let got = p(a).intersect(&p(b)).map(|r| r.written());
            assert_eq!(got.as_deref(), both, "{a} and {b}");
            let back = p(b).intersect(&p(a)).map(|r| r.written());
            assert_eq!(back.as_deref(), both, "{b} and {a}");
        }
    }

    /// The person's rules and the backend's together: a URL is refused when either refuses
    /// it, the person's reason said first; the two layers of request rules refuse exactly
    /// that, so a person's block beats a backend's allow and the backend narrows the person's
    /// allowed list, never widens it.
    #[test]
    fn the_persons_rules_and_the_backends_combine_and_the_person_wins() {
        let at = Layers {
            backend_first_id: 1000,
            backend_priority: 10,
            person_first_id: 3000,
            person_priority: 20,
        };
        let urls = [
            "https://example.com/",
            "https://www.example.com/",
            "https://admin.example.com/",
            "https://shop.example.com/",
            "https://example.org/",
            "https://news.test/",
            "https://a.news.test/",
            "http://127.0.0.1:9/",
            "http://127.0.0.2/",
        ];
        let pairs = [
            (
                person(&[], &["admin.example.com"]),
                policy(Some(&["example.com"]), &[]),
            ),
            (person(&[], &["example.com"]), policy(None, &[])),
            (
                person(&["example.com", "127.0.0.1"], &[]),
                policy(None, &["shop.example.com"]),
            ),
            (
                person(&["example.com", "news.test"], &[]),
                policy(
                    Some(&["www.example.com", "*.news.test", "example.org"]),
                    &[],
                ),
            ),
            (
                person(&["*.example.com"], &["www.example.com"]),
                policy(Some(&["example.com"]), &["admin.example.com"]),
            ),
            (person(&[], &[]), policy(Some(&[]), &[])),
            (person(&["news.test"], &[]), policy(Some(&[]), &[])),
        ];
        for (who, (p, b)) in pairs.iter().enumerate() {
            let rules = layered_dnr_rules(p, b, at, &[5]);
            for url in urls {
                let by_person = p.check_url(url);
                let by_backend = b.check_url(url);
                let refused = by_person.is_err() || by_backend.is_err();
                assert_eq!(
                    refused_by_rules(&rules, url),
                    refused,
                    "pair {who}, {url}: the rules and the two policies disagree"
                );
                if let Err(e) = by_person {
                    assert_eq!(e.by, Owner::Person);
                    assert!(
                        e.rule().starts_with("the person's site rules"),
                        "{}",
                        e.rule()
                    );
                }
            }
        }
        // A person's block beats the backend's explicit allow.
        let (p, b) = (
            person(&[], &["example.com"]),
            policy(Some(&["example.com"]), &[]),
        );
        assert!(refused_by_rules(
            &layered_dnr_rules(&p, &b, at, &[5]),
            "https://example.com/"
        ));
        let e = p.check_url("https://www.example.com/").unwrap_err();
        assert!(
            e.rule().contains(
                "block the site www.example.com (it matches the blocked pattern example.com)"
            ),
            "{}",
            e.rule()
        );
        // Their ids stay in their ranges.
        let rules = layered_dnr_rules(&pairs[4].0, &pairs[4].1, at, &[5]);
        assert!(rules.iter().all(|r| {
            let id = r["id"].as_u64().unwrap();
            let prio = r["priority"].as_u64().unwrap();
            ((1000..2000).contains(&id) && prio < 20) || (id >= 3000 && prio >= 20)
        }));
        assert!(matching(
            &[HostPattern::parse("example.com").unwrap()],
            "https://a.example.com/x"
        )
        .is_some());
        assert!(matching(&[HostPattern::parse("example.com").unwrap()], "about:blank").is_none());
    }

    /// The browser's request rules decide as `check_url` does, for every URL the browser can
    /// send them (canonical ones): evaluated here as the browser does (highest priority first;
    /// at one priority, allow beats block), with the same regular expressions.
    #[test]
    fn the_request_rules_refuse_exactly_what_the_policy_refuses() {
        let p = policy(
            Some(&[
                "example.com",
                "*.wild.test",
                "127.0.0.1",
                "[::1]",
                "xn--bcher-kva.example",
            ]),
            &["admin.example.com", "*.evil.wild.test"],
        );
        let rules = p.dnr_rules(1000, 10, &[7, 9]);
        assert_eq!(rules.len(), 1 + 5 + 2);
        assert_eq!(rules[0]["condition"]["tabIds"], json!([7, 9]));
        assert_eq!(rules[0]["id"], json!(1000));
        let compiled: Vec<(u64, bool, Option<regex::Regex>)> = rules
            .iter()
            .map(|r| {
                let re = r["condition"]["regexFilter"].as_str().map(|s| {
                    regex::RegexBuilder::new(s)
                        .case_insensitive(true)
                        .build()
                        .unwrap()
                });
                (
                    r["priority"].as_u64().unwrap(),
                    r["action"]["type"] == "block",
                    re,
                )
            })
            .collect();
        let blocked_by_rules = |url: &str| -> bool {
            let matching: Vec<&(u64, bool, Option<regex::Regex>)> = compiled
                .iter()
                .filter(|(_, _, re)| re.as_ref().is_none_or(|re| re.is_match(url)))
                .collect();
            let Some(top) = matching.iter().map(|m| m.0).max() else {
                return false;
            };
            matching.iter().filter(|m| m.0 == top).all(|m| m.1)
        };
        for url in [
            "https://example.com/",
            "https://www.example.com/a?b#c",
            "https://example.com:8443/",
            "https://example.com./",
            "https://user:pw@example.com/",
            "https://admin.example.com/",
            "https://x.admin.example.com/",
            "https://wild.test/",
            "https://a.wild.test/",
            "https://evil.wild.test/",
            "https://a.evil.wild.test/",
            "https://example.com@evil.test/",
            "https://example.com.evil.test/",
            "https://evil.test/example.com",
            "https://evil.test/?x=.example.com/",
            "http://127.0.0.1:4000/",
            "http://127.0.0.10/",
            "http://[::1]:80/",
            "http://[::2]/",
            "https://xn--bcher-kva.example/",
            "https://notexample.com/",
            "wss://example.com/s",
            "https://example.com",
        ] {
            assert_eq!(
                blocked_by_rules(url),
                p.check_url(url).is_err(),
                "{url}: the rules and the policy disagree"
            );
        }
        assert!(policy(None, &[]).dnr_rules(1, 1, &[3]).is_empty());
        assert!(p.dnr_rules(1, 1, &[]).is_empty());
    }

    /// The rules for tabs a group page opens, evaluated as the browser does (domain lists match
    /// a host and its subdomains, on the URL's host as the browser parses it): for a top-level
    /// request a group site started in an unknown tab they decide as the policy does; a tab
    /// excluded, or a request another site started, is never touched.
    #[test]
    fn the_rules_for_opened_tabs_decide_as_the_policy_for_group_sites_only() {
        for p in [
            policy(
                Some(&["example.com", "*.wild.test", "127.0.0.1", "[::1]"]),
                &["admin.example.com", "*.evil.wild.test"],
            ),
            policy(None, &["evil.test", "*.bad.test", "[::2]", "10.0.0.1"]),
            policy(Some(&[]), &[]),
        ] {
            let initiators = vec!["group.test".to_string(), "127.0.0.1".to_string()];
            let rules = p.dnr_opener_rules(2000, 10, &initiators, &[4, 5]);
            assert!(rules
                .iter()
                .all(|r| r["condition"]["resourceTypes"] == json!(["main_frame"])
                    && r["condition"]["excludedTabIds"] == json!([4, 5])
                    && r["condition"]["initiatorDomains"] == json!(initiators)));
            let regexes = rules
                .iter()
                .filter(|r| r["condition"].get("regexFilter").is_some())
                .count();
            let narrow = p
                .allowed
                .iter()
                .flatten()
                .chain(&p.blocked)
                .filter(|x| x.kind == Kind::Subdomains || x.host.starts_with('['))
                .count();
            assert_eq!(
                regexes, narrow,
                "regular expressions only for *. patterns and IPv6"
            );
            let blocked =
                |url: &str, initiator: &str, tab: i32| browser_refuses(&rules, tab, initiator, url);
            for url in [
                "https://example.com/",
                "https://www.example.com/a",
                "https://admin.example.com/",
                "https://x.admin.example.com/",
                "https://wild.test/",
                "https://a.wild.test/",
                "https://a.evil.wild.test/",
                "https://example.com@evil.test/",
                "https://example.com.evil.test/",
                "https://evil.test/",
                "https://sub.evil.test/",
                "https://bad.test/",
                "https://a.bad.test/",
                "http://127.0.0.1:4000/",
                "http://127.0.0.10/",
                "http://10.0.0.1/",
                "http://[::1]:80/",
                "http://[::2]/",
                "https://notexample.com/",
            ] {
                for initiator in ["group.test", "www.group.test", "127.0.0.1"] {
                    assert_eq!(
                        blocked(url, initiator, 9),
                        p.check_url(url).is_err(),
                        "{url} opened from {initiator}: the rules and the policy disagree ({p:?})"
                    );
                }
                assert!(
                    !blocked(url, "group.test", 4),
                    "{url}: an excluded tab is touched"
                );
                assert!(
                    !blocked(url, "person.test", 9),
                    "{url}: another site's request is touched"
                );
            }
        }
        let p = policy(Some(&["example.com"]), &[]);
        assert!(p.dnr_opener_rules(1, 1, &[], &[]).is_empty());
        assert!(policy(None, &[])
            .dnr_opener_rules(1, 1, &["a.test".into()], &[])
            .is_empty());
        // No excluded tabs: the key is left out (the browser refuses an empty list).
        assert!(
            p.dnr_opener_rules(1, 1, &["a.test".into()], &[])[0]["condition"]
                .get("excludedTabIds")
                .is_none()
        );
    }
    /// Evaluates request rules for a top-level request of `tab` that a page on `initiator`
    /// started, as the browser does: every condition the rules use (tab lists, initiator and
    /// request domain lists matching a host and its subdomains, regular expressions), then the
    /// highest priority wins; at one priority, allow beats block.
    fn browser_refuses(rules: &[Value], tab: i32, initiator: &str, url: &str) -> bool {
        let Some(Some(host)) = web_host(url) else {
            return false;
        };
        let domain_in = |h: &str, list: &Value| {
            list.as_array().is_some_and(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .any(|d| h == d || (h.ends_with(d) && h[..h.len() - d.len()].ends_with('.')))
            })
        };
        let matching: Vec<(u64, bool)> = rules
            .iter()
            .filter(|r| {
                let c = &r["condition"];
                c.get("tabIds")
                    .is_none_or(|t| t.as_array().is_some_and(|t| t.contains(&json!(tab))))
                    && !c
                        .get("excludedTabIds")
                        .is_some_and(|t| t.as_array().is_some_and(|t| t.contains(&json!(tab))))
                    && c.get("initiatorDomains")
                        .is_none_or(|d| domain_in(initiator, d))
                    && c.get("requestDomains").is_none_or(|d| domain_in(&host, d))
                    && !c
                        .get("excludedRequestDomains")
                        .is_some_and(|d| domain_in(&host, d))
                    && c["regexFilter"].as_str().is_none_or(|re| {
                        regex::RegexBuilder::new(re)
                            .case_insensitive(true)
                            .build()
                            .unwrap()
                            .is_match(url)
                    })
            })
            .map(|r| {
                (
                    r["priority"].as_u64().unwrap(),
                    r["action"]["type"] == "block",
                )
            })
            .collect();
        let Some(top) = matching.iter().map(|m| m.0).max() else {
            return false;
        };
        matching.iter().filter(|m| m.0 == top).all(|m| m.1)
    }

    fn hosts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// Issue 17's one policy per agent: each agent's tabs are held to its own policy (under the
    /// person's rules, which hold every group tab), the rules are numbered without a shared id,
    /// and an agent's rules name only its own tabs; a tab a page opens before the worker knows
    /// it is held to the policy of the agent whose tabs show the opener's host, and to both
    /// agents' when two agents' tabs show it (refused what either refuses); a known tab, the
    /// agents' or a person's, is never touched by the rules for opened tabs.
    #[test]
    fn each_agent_s_tabs_are_held_to_its_own_policy_and_ids_never_collide() {
        let person_rules = person(&[], &["admin.example.com"]);
        let a = policy(Some(&["127.0.0.1"]), &[]);
        let b = policy(None, &["evil.test"]);
        let c = policy(Some(&["example.com"]), &[]);
        let (shared, only_c) = (hosts(&["127.0.0.1"]), hosts(&["example.com"]));
        let agents = [
            AgentTabs {
                policy: &a,
                tabs: &[1, 2],
                shown: &shared,
            },
            AgentTabs {
                policy: &b,
                tabs: &[3],
                shown: &shared,
            },
            AgentTabs {
                policy: &c,
                tabs: &[4],
                shown: &only_c,
            },
        ];
        let rules = browser_rules(&person_rules, &agents, &[9], 1000);
        // Ids: from the first, one each, none shared.
        let mut ids: Vec<u64> = rules.iter().map(|r| r["id"].as_u64().unwrap()).collect();
        crate::sort::sort(&mut ids);
        assert_eq!(ids, (1000..1000 + rules.len() as u64).collect::<Vec<_>>());
        // A rule naming tabs names one agent's (the backend layer) or every group tab (the
        // person's, above all of them).
        for r in &rules {
            let Some(tabs) = r["condition"].get("tabIds") else {
                continue;
            };
            let prio = r["priority"].as_u64().unwrap();
            if prio >= u64::from(PERSON_PRIORITY) {
                assert_eq!(tabs, &json!([1, 2, 3, 4]), "{r}");
            } else {
                assert!(
                    [json!([1, 2]), json!([3]), json!([4])].contains(tabs),
                    "a backend rule names more than one agent's tabs: {r}"
                );
            }
        }
        let urls = [
            "http://127.0.0.1:8080/",
            "http://localhost:8080/",
            "https://evil.test/",
            "https://example.com/",
            "https://www.example.com/",
            "https://admin.example.com/",
        ];
        // Each agent's tabs: the person's rules, then its own policy, whoever started it.
        for (p, tab) in [(&a, 1), (&a, 2), (&b, 3), (&c, 4)] {
            for url in urls {
                for initiator in ["127.0.0.1", "example.com", "person.test"] {
                    let refused = person_rules.check_url(url).is_err() || p.check_url(url).is_err();
                    assert_eq!(
                        browser_refuses(&rules, tab, initiator, url),
                        refused,
                        "tab {tab}, {url} from {initiator}"
                    );
                }
            }
        }
        // A tab not known yet, opened from the host A and B share: both policies hold it.
        for url in urls {
            let refused = [&person_rules, &a, &b]
                .iter()
                .any(|p| p.check_url(url).is_err());
            assert_eq!(
                browser_refuses(&rules, 7, "127.0.0.1", url),
                refused,
                "opened from the shared host: {url}"
            );
            // Opened from the host only C's tabs show: C's policy alone (A's would refuse
            // www.example.com).
            let refused = [&person_rules, &c]
                .iter()
                .any(|p| p.check_url(url).is_err());
            assert_eq!(
                browser_refuses(&rules, 7, "www.example.com", url),
                refused,
                "opened from C's host: {url}"
            );
            // A person's known tab, and a site no group tab shows: untouched.
            assert!(!browser_refuses(&rules, 9, "127.0.0.1", url), "{url}");
            assert!(!browser_refuses(&rules, 7, "person.test", url), "{url}");
        }
        // No tabs, no rules; an agent without tabs has none.
        assert!(browser_rules(&person_rules, &[], &[9], 1000).is_empty());
        let none = browser_rules(
            &person(&[], &[]),
            &[AgentTabs {
                policy: &a,
                tabs: &[],
                shown: &shared,
            }],
            &[],
            1000,
        );
        assert!(none.is_empty(), "{none:?}");
    }

    /// The shared-host decision: hosts a request's initiator could match together (the same
    /// host, or one below the other, joined transitively) are one set, held to every agent
    /// that shows one of them; unrelated hosts of the same agents are one set.
    #[test]
    fn hosts_two_agents_share_are_held_to_both_and_the_rest_to_their_own() {
        let (a, b, c) = (
            hosts(&["example.com", "a.test", "b.test"]),
            hosts(&["www.example.com"]),
            hosts(&["other.test", "b.test"]),
        );
        assert_eq!(
            opener_sets(&[&a, &b, &c]),
            vec![
                (vec![0, 1], hosts(&["example.com", "www.example.com"])),
                (vec![0], hosts(&["a.test"])),
                (vec![0, 2], hosts(&["b.test"])),
                (vec![2], hosts(&["other.test"])),
            ]
        );
        // Joined transitively: x.test relates a.x.test and b.x.test, which are unrelated.
        let (a, b, c) = (
            hosts(&["a.x.test"]),
            hosts(&["x.test"]),
            hosts(&["b.x.test"]),
        );
        assert_eq!(
            opener_sets(&[&a, &b, &c]),
            vec![(vec![0, 1, 2], hosts(&["a.x.test", "b.x.test", "x.test"]))]
        );
        assert!(opener_sets(&[]).is_empty());
        // Not a suffix of a label: example.com and notexample.com are apart.
        let (a, b) = (hosts(&["example.com"]), hosts(&["notexample.com"]));
        assert_eq!(opener_sets(&[&a, &b]).len(), 2);
        // Both policies together refuse what either refuses.
        let p = policy(Some(&["example.com", "127.0.0.1"]), &["admin.example.com"]);
        let q = policy(Some(&["www.example.com", "example.org"]), &["evil.test"]);
        for url in [
            "https://example.com/",
            "https://www.example.com/",
            "https://admin.example.com/",
            "https://example.org/",
            "http://127.0.0.1/",
            "https://evil.test/",
        ] {
            assert_eq!(
                p.and(&q).check_url(url).is_err(),
                p.check_url(url).is_err() || q.check_url(url).is_err(),
                "{url}"
            );
        }
    }

    /// The browser's bounds: when the sets for opened tabs would not fit, one set held to
    /// every agent's policy stands for them (refusing more, never less), and `worst_case`
    /// bounds what the rules need, whatever the tabs show.
    #[test]
    fn the_rules_stay_within_the_browser_s_bounds() {
        // Three agents with 100 subdomain patterns each (a regular expression each, in both
        // sets), their tabs showing hosts in every combination: seven sets for opened tabs.
        let blocked =
            |n: usize| -> Vec<String> { (0..100).map(|i| format!("*.s{n}x{i}.test")).collect() };
        let ps: Vec<HostPolicy> = (0..3)
            .map(|n| HostPolicy::new(None, &blocked(n)).unwrap())
            .collect();
        let shown = [
            hosts(&["a.test", "ab.test", "ac.test", "abc.test"]),
            hosts(&["b.test", "ab.test", "bc.test", "abc.test"]),
            hosts(&["c.test", "ac.test", "bc.test", "abc.test"]),
        ];
        let tabs = [[1], [2], [3]];
        let agents: Vec<AgentTabs> = (0..3)
            .map(|i| AgentTabs {
                policy: &ps[i],
                tabs: &tabs[i],
                shown: &shown[i],
            })
            .collect();
        assert_eq!(opener_sets(&[&shown[0], &shown[1], &shown[2]]).len(), 7);
        let person_rules = person(&[], &[]);
        let rules = browser_rules(&person_rules, &agents, &[], 1000);
        assert!(fits(&rules), "{:?}", counts(&rules));
        let refs: Vec<&HostPolicy> = ps.iter().collect();
        let (all, regex) = worst_case(&person_rules, &refs);
        let (got_all, got_regex) = counts(&rules);
        assert!(
            got_all <= all && got_regex <= regex,
            "{:?} > {:?}",
            (got_all, got_regex),
            (all, regex)
        );
        // The one set refuses what any agent refuses, from any shown host.
        for url in [
            "https://x.s0x5.test/",
            "https://x.s2x99.test/",
            "https://fine.test/",
        ] {
            let refused = ps.iter().any(|p| p.check_url(url).is_err());
            assert_eq!(browser_refuses(&rules, 8, "a.test", url), refused, "{url}");
        }
        // Each set alone where they fit: from a host only A shows, B's patterns do not apply.
        let small: Vec<HostPolicy> = (0..3)
            .map(|n| HostPolicy::new(None, &[format!("*.s{n}.test")]).unwrap())
            .collect();
        let agents: Vec<AgentTabs> = (0..3)
            .map(|i| AgentTabs {
                policy: &small[i],
                tabs: &tabs[i],
                shown: &shown[i],
            })
            .collect();
        let rules = browser_rules(&person_rules, &agents, &[], 1000);
        assert!(browser_refuses(&rules, 8, "a.test", "https://x.s0.test/"));
        assert!(!browser_refuses(&rules, 8, "a.test", "https://x.s1.test/"));
        assert!(browser_refuses(&rules, 8, "ab.test", "https://x.s1.test/"));
        let refs: Vec<&HostPolicy> = small.iter().collect();
        let (all, regex) = worst_case(&person_rules, &refs);
        let (got_all, got_regex) = counts(&rules);
        assert!(got_all <= all + 6 * 4 && got_regex <= regex + 6 * 2);
        // Two agents of 500 patterns each fit (an expression each); a third would not.
        let big = |n: usize| -> HostPolicy {
            let list: Vec<String> = (0..MAX_PATTERNS)
                .map(|i| format!("h{n}x{i}.test"))
                .collect();
            HostPolicy::new(Some(&list), &[]).unwrap()
        };
        let (one, two, three) = (big(0), big(1), big(2));
        assert_eq!(worst_case(&person_rules, &[&one, &two]).1, MAX_REGEX_RULES);
        assert!(worst_case(&person_rules, &[&one, &two, &three]).1 > MAX_REGEX_RULES);
    }
}
