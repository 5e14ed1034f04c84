//! Approvals: an acting command on one of the person's "ask first" sites, and javascript_tool
//! and the uploads on every site (unless the person turned that off), wait inside the command's
//! path for the person's Allow once / Always on this site / Deny in the popup (a card there, the
//! toolbar badge, a system notification when the popup is closed), bounded by the person's
//! timeout. "Always" grants are kept in chrome.storage.local and listed (and revoked) in
//! Options. Only the extension's own pages can answer (`pages` checks the sender). A waiting
//! approval whose command ends for any reason (Stop, the connection closing) goes with it.

use crate::chrome::storage::{self, Area};
use crate::chrome::{action, notifications, runtime, web_navigation};
use crate::policy::site_rules;
use futures_channel::oneshot;
use protocol::host_rules;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};

/// The tools that ask on every site unless the person turned that off in Options.
pub const ALWAYS_ASK: &[&str] = &["javascript_tool", "upload_image", "file_upload"];
/// A grant's `tool` for every acting tool on an "ask first" site.
const ANY_ACTING: &str = "*";
const GRANTS_KEY: &str = "approvalGrants";
/// The waiting approvals as the popup shows them (session storage: extension pages only).
const PENDING_KEY: &str = "approvals";
/// At most this many characters of the arguments are shown (the rest is counted).
const MAX_SHOWN: usize = 20_000;
/// At most this many approvals wait at once; a command beyond them is refused at once.
const MAX_WAITING: usize = 20;

/// One "Always on this site": the tool (or [`ANY_ACTING`]) on the site (a canonical host).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub site: String,
    pub tool: String,
}

/// The person's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    Once,
    Always,
    Deny,
}

/// A waiting approval as the popup shows it.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct View {
    id: u32,
    tool: String,
    /// The canonical host, escaped; `None`: the tab's site is unknown (about:blank, an error
    /// page), and "Always" is not offered.
    site: Option<String>,
    arguments: String,
    tab: i32,
    /// Why it asks: "ask first" site, or the tool asks everywhere.
    reason: String,
    /// When it counts as denied (ms since the epoch).
    deadline: f64,
}

struct Waiting {
    view: View,
    /// The grants an "Always" adds.
    needs: Vec<String>,
    answer: Option<oneshot::Sender<Decision>>,
}

thread_local! {
    static WAITING: RefCell<Vec<Waiting>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
    static GRANTS: RefCell<Option<Vec<Grant>>> = const { RefCell::new(None) };
}

/// What a command needs approved before it runs: `None` when nothing.
pub struct Ask {
    tool: &'static str,
    site: Option<String>,
    needs: Vec<String>,
    reason: String,
}

impl Ask {
    /// Whether the site is known (a web host).
    pub fn knows_site(&self) -> bool {
        self.site.is_some()
    }

    /// The tab shows an error page: its site is unknown ("Always" neither offered nor used).
    pub fn site_unknown(&mut self) {
        self.site = None;
    }
}

/// Whether the command asks: `acting` says whether it acts on the page (as the tool declares
/// it: input, scripts, navigations; not reading), `url` is the site it acts on (the tab's page;
/// for a navigation, where it goes).
pub fn asks(tool: &'static str, acting: bool, url: &str) -> Option<Ask> {
    if !acting {
        return None;
    }
    let site = host_rules::web_host(url).flatten();
    let mut needs = Vec::new();
    let mut reasons = Vec::new();
    site_rules::with(|rules| {
        if let Some(p) = host_rules::matching(&rules.ask, url) {
            needs.push(ANY_ACTING.to_string());
            reasons.push(format!(
                "the site matches your \"ask first\" pattern {}",
                p.written()
            ));
        }
        if rules.ask_tools && ALWAYS_ASK.contains(&tool) {
            needs.push(tool.to_string());
            reasons.push(format!("{tool} asks on every site"));
        }
    });
    if needs.is_empty() {
        return None;
    }
    Some(Ask {
        tool,
        site,
        needs,
        reason: reasons.join("; "),
    })
}

async fn grants() -> Vec<Grant> {
    if let Some(g) = GRANTS.with(|g| g.borrow().clone()) {
        return g;
    }
    let stored = storage::get::<Vec<Grant>>(Area::Local, GRANTS_KEY)
        .await
        .unwrap_or_else(|e| {
            crate::js::log(&format!("reading the approvals: {e}"));
            None
        })
        .unwrap_or_default();
    GRANTS.with(|g| *g.borrow_mut() = Some(stored.clone()));
    stored
}

/// The "Always on this site" grants, for Options.
pub async fn list_grants() -> Vec<Grant> {
    grants().await
}

async fn store_grants(list: Vec<Grant>) -> Result<(), String> {
    storage::set(Area::Local, GRANTS_KEY, &list).await?;
    GRANTS.with(|g| *g.borrow_mut() = Some(list));
    Ok(())
}

/// Revokes one grant (Options).
pub async fn revoke(site: &str, tool: &str) -> Result<(), String> {
    let mut list = grants().await;
    list.retain(|g| !(g.site == site && g.tool == tool));
    store_grants(list).await
}

/// The grants changed in storage (another page): read again.
pub fn grants_changed() {
    GRANTS.with(|g| *g.borrow_mut() = None);
}

/// Whether the tab's page is the browser's error page (its site then unknown).
pub async fn error_page(tab: i32) -> bool {
    web_navigation::shows_error_page(tab).await.unwrap_or(false)
}

impl Ask {
    /// Waits for the person: `Ok` when allowed (once, or always on this site, or already
    /// granted), the error the model reads when denied or not answered in time.
    pub async fn wait(self, tab: i32, args: &Map<String, Value>) -> Result<(), String> {
        if let Some(site) = &self.site {
            let granted = grants().await;
            let has = |need: &String| granted.iter().any(|g| g.site == *site && g.tool == *need);
            if self.needs.iter().all(has) {
                return Ok(());
            }
        }
        if WAITING.with(|w| w.borrow().len()) >= MAX_WAITING {
            return Err(format!(
                "{} was not run: {MAX_WAITING} commands already wait for the person's approval in the extension's popup.",
                self.tool
            ));
        }
        let seconds = site_rules::with(|r| r.approval_seconds);
        let id = NEXT_ID.with(|n| n.replace(n.get().wrapping_add(1).max(1)));
        let (tx, rx) = oneshot::channel();
        let view = View {
            id,
            tool: self.tool.to_string(),
            site: self.site.as_deref().map(escaped),
            arguments: shown_arguments(args),
            tab,
            reason: self.reason.clone(),
            deadline: crate::js::now_ms() + f64::from(seconds) * 1000.0,
        };
        WAITING.with(|w| {
            w.borrow_mut().push(Waiting {
                view,
                needs: self.needs.clone(),
                answer: Some(tx),
            })
        });
        // From here the approval goes when this future ends, however it ends.
        let _gone = Gone(id);
        publish().await;
        notify(id, self.tool, self.site.as_deref()).await;
        let timeout = std::pin::pin!(gloo_timers::future::TimeoutFuture::new(
            seconds.saturating_mul(1000)
        ));
        let site = self
            .site
            .clone()
            .unwrap_or_else(|| "a page of unknown site".into());
        match futures_util::future::select(rx, timeout).await {
            futures_util::future::Either::Left((Ok(Decision::Once | Decision::Always), _)) => {
                Ok(())
            }
            futures_util::future::Either::Left((Ok(Decision::Deny), _)) => Err(format!(
                "The person denied {} on {site} (in the extension's approval prompt). Nothing was done; do not retry it, ask the person or do something else.",
                self.tool
            )),
            futures_util::future::Either::Left((Err(_), _)) => Err(format!(
                "The approval of {} on {site} was withdrawn; nothing was done.",
                self.tool
            )),
            futures_util::future::Either::Right(_) => Err(format!(
                "{} on {site} was not approved within {seconds} s (the approval timeout set in the extension's Options), so it was denied. Nothing was done.",
                self.tool
            )),
        }
    }
}

/// Removes its approval when the waiting command ends (answered, timed out, stopped, dropped).
struct Gone(u32);

impl Drop for Gone {
    fn drop(&mut self) {
        let id = self.0;
        WAITING.with(|w| w.borrow_mut().retain(|a| a.view.id != id));
        wasm_bindgen_futures::spawn_local(async move {
            let _ = notifications::clear(&notification_id(id)).await;
            publish().await;
        });
    }
}

fn notification_id(id: u32) -> String {
    format!("approval-{id}")
}

/// The waiting approvals to session storage (the popup's card), and the badge.
async fn publish() {
    let views: Vec<View> = WAITING.with(|w| w.borrow().iter().map(|a| a.view.clone()).collect());
    if let Err(e) = storage::set(Area::Session, PENDING_KEY, &views).await {
        crate::js::log(&format!("showing the approvals: {e}"));
    }
    // The badge says how many wait ("2?"); with none, a badge of another's (a pairing offer's
    // "1") stays.
    if views.is_empty() {
        if action::badge_text().await.is_ok_and(|t| t.ends_with('?')) {
            let _ = action::set_badge_text("").await;
        }
        return;
    }
    let _ = action::set_badge_color("#b3261e").await;
    let _ = action::set_badge_text(&format!("{}?", views.len())).await;
}

/// A system notification when no popup is open to show the card.
async fn notify(id: u32, tool: &str, site: Option<&str>) {
    if runtime::count_contexts("POPUP").await.unwrap_or(0) > 0 {
        return;
    }
    let message = format!(
        "{tool} on {} waits for your approval. Click to answer.",
        site.map(escaped)
            .unwrap_or_else(|| "a page of unknown site".into())
    );
    if let Err(e) = notifications::create(&notification_id(id), "Approval needed", &message).await {
        crate::js::log(&format!("the approval notification: {e}"));
    }
}

/// The waiting approvals, for the popup.
pub fn waiting() -> Value {
    let views: Vec<View> = WAITING.with(|w| w.borrow().iter().map(|a| a.view.clone()).collect());
    serde_json::to_value(views).unwrap_or(Value::Null)
}

/// The person's answer from an extension page.
pub async fn decide(id: u32, decision: Decision) -> Result<(), String> {
    let found = WAITING.with(|w| {
        let mut w = w.borrow_mut();
        let a = w.iter_mut().find(|a| a.view.id == id)?;
        Some((a.answer.take(), a.view.site.clone(), a.needs.clone()))
    });
    let Some((Some(answer), site, needs)) = found else {
        return Err(
            "That approval is no longer waiting (its command ended or was answered).".into(),
        );
    };
    if decision == Decision::Always {
        // The site as granted is the canonical host the check compares (the view escapes it,
        // and a canonical host has nothing to escape).
        let Some(site) = site else {
            let _ = answer.send(Decision::Once);
            return Err("The tab's site is unknown, so it was allowed once only.".into());
        };
        let mut list = grants().await;
        for tool in needs {
            let g = Grant {
                site: site.clone(),
                tool,
            };
            if !list.contains(&g) {
                list.push(g);
            }
        }
        if let Err(e) = store_grants(list).await {
            let _ = answer.send(Decision::Once);
            return Err(format!(
                "Allowed once: \"always\" could not be stored ({e})."
            ));
        }
    }
    let _ = answer.send(decision);
    Ok(())
}

/// The arguments exactly, as JSON, with every invisible, control or look-alike-space character
/// written as `\u{…}` (JSON already writes newlines and other C0 controls as escapes).
pub fn shown_arguments(args: &Map<String, Value>) -> String {
    let json = serde_json::to_string_pretty(args).unwrap_or_default();
    let text = escaped(&json);
    match text.char_indices().nth(MAX_SHOWN) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}… ({rest} more characters not shown)", &text[..cut])
        }
    }
}

/// `text` with invisible, control, bidirectional and space-like characters escaped.
pub fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if invisible(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn invisible(c: char) -> bool {
    let n = u32::from(c);
    (c.is_control() && c != '\n')
        || matches!(
            n,
            0x00A0
                | 0x00AD
                | 0x034F
                | 0x061C
                | 0x115F
                | 0x1160
                | 0x1680
                | 0x17B4
                | 0x17B5
                | 0x180B..=0x180F
                | 0x2000..=0x200F
                | 0x2028..=0x202F
                | 0x205F..=0x206F
                | 0x3000
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF9..=0xFFFB
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grants_are_read_early_as_the_worker_starts() {
        assert!(crate::chrome::storage::early_reads::asks(
            "local", GRANTS_KEY
        ));
    }

    #[test]
    fn invisible_and_control_characters_are_shown_escaped() {
        let args: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "text": "pay\u{200B}pal\u{202E}gpj.exe\nnext\u{7}\u{85}\u{A0}end\u{FEFF}\u{E0041}",
            "tabId": 3
        }))
        .unwrap();
        let shown = shown_arguments(&args);
        for (raw, written) in [
            ("\u{200B}", "\\u{200B}"),
            ("\u{202E}", "\\u{202E}"),
            ("\u{85}", "\\u{0085}"),
            ("\u{A0}", "\\u{00A0}"),
            ("\u{FEFF}", "\\u{FEFF}"),
            ("\u{E0041}", "\\u{E0041}"),
        ] {
            assert!(!shown.contains(raw), "{raw:?} left in {shown}");
            assert!(shown.contains(written), "{written} missing in {shown}");
        }
        // JSON's own escapes for the newline and BEL in the value.
        assert!(shown.contains("gpj.exe\\nnext\\u0007"), "{shown}");
        assert_eq!(escaped("b\u{fc}cher.example"), "b\u{fc}cher.example");
    }
}
