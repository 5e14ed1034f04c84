//! navigate: load a URL (or go back/forward, or reload) in a group tab and wait, bounded, for
//! the load. Every address, a history step's and a reload's included, is held to the URL policy
//! first (the scheme boundary and the backend's hosts, `policy::check_navigation`); a redirect
//! the policy's request rules refuse fails naming the policy.
//!
//! The answer's first line is where the tab landed (`Navigated to <url>`, `(still loading)` at
//! the bound); then, for a load of an http(s) document (a URL or a reload, not a history step),
//! `HTTP status: <n>`, the main document's response as the network recorder saw it; then
//! `Title: <title>` when the page has one.

use crate::chrome::tabs;
use crate::js::{now_ms, sleep_ms};
use crate::tools::{typed, Access, Tool};
use crate::{boundary, cdp};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

pub const TOOL: Tool = Tool {
    name: "navigate",
    tab: Some(Access::Navigates),
    during_dialog: false,
    run: |args| typed(args, run),
};

/// How long a navigation may take before we answer with `(still loading)`.
const LOAD_BOUND_MS: f64 = 15_000.0;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    url: String,
    tab_id: i32,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    let shown = tabs::get(tab).await?;
    let here = shown.url.clone().or(shown.pending_url.clone());
    let step = match args.url.trim() {
        "back" => Some(Step::History(-1)),
        "forward" => Some(Step::History(1)),
        "reload" => Some(Step::Reload),
        _ => None,
    };
    let url = match step {
        Some(_) => None,
        None => Some(
            crate::policy::check_navigation(tab, &args.url, here.as_deref())
                .map_err(|rule| rule.navigation_error(args.url.trim()))?,
        ),
    };
    if let (Some(url), Err(_)) = (url.as_deref(), boundary::check(&shown)) {
        // The tab shows a page outside the boundary: it is sent away without the debugger.
        return leave_refused_page(tab, url).await;
    }
    let before = page_href(tab).await.unwrap_or_default();
    let document_before = cdp::record::top_document(tab).map(|(loader, _)| loader);
    match (step, url.as_deref()) {
        (Some(Step::History(delta)), _) => history_step(tab, delta, here.as_deref()).await?,
        (Some(Step::Reload), _) => reload(tab, here.as_deref()).await?,
        (None, Some(url)) => {
            let sent = now_ms();
            let out = cdp::send(tab, "Page.navigate", json!({ "url": url })).await?;
            if let Some(err) = out.get("errorText").and_then(Value::as_str) {
                if err == BLOCKED {
                    return Err(refused_on_the_way(tab, url, sent).await);
                }
                if !err.is_empty() {
                    return Err(format!("Navigation to {url} failed: {err}"));
                }
            }
        }
        (None, None) => {}
    }
    let loaded = wait_for_load(tab, &before, step.is_none()).await?;
    let landed = tabs::get(tab).await.ok();
    let url = landed
        .as_ref()
        .and_then(|t| t.url.clone())
        .unwrap_or_default();
    // The status of the document this load brought: a new top document, fetched over http(s).
    let status = match (step, cdp::record::top_document(tab)) {
        (Some(Step::History(_)), _) | (_, None) => None,
        (_, Some((loader, status))) => status.filter(|_| {
            Some(&loader) != document_before.as_ref()
                && (url.starts_with("http://") || url.starts_with("https://"))
        }),
    };
    let title = landed.and_then(|t| t.title);
    Ok(ToolResult::text(answer(
        &url,
        loaded,
        status,
        title.as_deref(),
    )))
}

/// The answer's text (see the module's comment).
fn answer(url: &str, loaded: bool, status: Option<i64>, title: Option<&str>) -> String {
    let mut text = format!("Navigated to {url}");
    if !loaded {
        text.push_str(" (still loading)");
    }
    if let Some(status) = status {
        text.push_str(&format!("\nHTTP status: {status}"));
    }
    let title = one_line(title.unwrap_or(""));
    if !title.is_empty() {
        text.push_str(&format!("\nTitle: {title}"));
    }
    text
}

/// Page-supplied text made one line: control and line-separator characters become spaces, the
/// whole is trimmed and cut at `TITLE_CHARS` characters.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let flat = flat.trim();
    match flat.char_indices().nth(TITLE_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat.to_string(),
    }
}

/// The most of a page's title the answer shows.
const TITLE_CHARS: usize = 200;

/// What a navigate that names no URL does.
#[derive(Clone, Copy)]
enum Step {
    /// One entry back (-1) or forward (1) in the tab's history.
    History(i64),
    /// The page shown, loaded again.
    Reload,
}

/// Loads the tab's page again, after checking its address against the same policy as any
/// navigation (a page outside the boundary never gets here: dispatch refuses it, as reloading
/// acts through the page).
async fn reload(tab: i32, here: Option<&str>) -> Result<(), String> {
    let url = here.unwrap_or("");
    if let Err(rule) = crate::policy::check_navigation(tab, url, here) {
        return Err(format!(
            "Cannot reload {url}. Refused: {}. Navigate to an http(s) URL instead.",
            rule.rule()
        ));
    }
    cdp::send(tab, "Page.reload", json!({})).await?;
    Ok(())
}

/// Loads `url` in a tab that shows a refused page, through chrome.tabs (the debugger never
/// attaches there), and waits, bounded, until the tab has left that page and loaded.
async fn leave_refused_page(tab: i32, url: &str) -> Result<ToolResult, String> {
    tabs::update(
        tab,
        &tabs::UpdateProperties {
            url: Some(url),
            active: None,
        },
    )
    .await?;
    let start = now_ms();
    loop {
        let t = tabs::get(tab).await?;
        let left = t.pending_url.is_none() && boundary::check(&t).is_ok();
        let complete = t.status.as_deref() == Some("complete");
        if (left && complete) || now_ms() - start >= LOAD_BOUND_MS {
            boundary::check(&t)?;
            // No status: the debugger was not attached to see the response.
            let url = t.url.unwrap_or_default();
            return Ok(ToolResult::text(answer(
                &url,
                complete,
                None,
                t.title.as_deref(),
            )));
        }
        sleep_ms(50).await;
    }
}

/// Goes one step through the tab's history, after checking the page the step returns to
/// against the same policy as any navigation.
async fn history_step(tab: i32, delta: i64, here: Option<&str>) -> Result<(), String> {
    let history = cdp::send(tab, "Page.getNavigationHistory", json!({})).await?;
    let current = history
        .get("currentIndex")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let entries = history
        .get("entries")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let entry = usize::try_from(current + delta)
        .ok()
        .and_then(|i| entries.get(i))
        .ok_or_else(|| {
            if delta < 0 {
                "There is no previous page in this tab's history.".to_string()
            } else {
                "There is no next page in this tab's history.".to_string()
            }
        })?;
    let target = entry
        .get("id")
        .and_then(Value::as_i64)
        .ok_or("the history entry has no id")?;
    let entry_url = entry.get("url").and_then(Value::as_str).unwrap_or("");
    if let Err(rule) = crate::policy::check_navigation(tab, entry_url, here) {
        let which = if delta < 0 { "back" } else { "forward" };
        return Err(format!(
            "Cannot go {which} to {entry_url}. Refused: {}. Navigate to an http(s) URL instead.",
            rule.rule()
        ));
    }
    cdp::send(
        tab,
        "Page.navigateToHistoryEntry",
        json!({ "entryId": target }),
    )
    .await?;
    Ok(())
}

/// What Chrome says of a request an extension's rules refused.
const BLOCKED: &str = "net::ERR_BLOCKED_BY_CLIENT";

/// A navigation to an allowed URL that Chrome refused on the way (a redirect to a host the URL
/// policy refuses): where it was refused, and by which rule.
async fn refused_on_the_way(tab: i32, url: &str, sent: f64) -> String {
    // Chrome reports the refused address (webNavigation) about when it answers Page.navigate.
    let mut landed = None;
    for _ in 0..40 {
        landed = crate::policy::refused_since(tab, sent);
        if landed.is_some() {
            break;
        }
        sleep_ms(25).await;
    }
    match landed.as_deref().map(|u| (u, crate::policy::check_page(tab, u))) {
        Some((at, Err(rule))) if at != url => format!(
            "Navigation to {url} was refused before its request left: it was redirected to {at}. Refused: {}.",
            rule.rule()
        ),
        Some((_, Err(rule))) => rule.navigation_error(url),
        _ => format!(
            "Navigation to {url} was refused by the browser ({BLOCKED}): a rule of an extension refused the request."
        ),
    }
}

async fn page_href(tab: i32) -> Option<String> {
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        // The document's time origin tells a reloaded page from the one before it.
        json!({"expression": "location.href + ' ' + performance.timeOrigin + ' ' + document.readyState", "returnByValue": true}),
        2_000,
    )
    .await
    .ok()?;
    out.pointer("/result/value")?.as_str().map(str::to_string)
}

/// True once the document is complete (and, for history steps, has changed); false at the
/// bound; an error as soon as the tab is found on a page outside the boundary (a redirect).
async fn wait_for_load(tab: i32, before: &str, committed: bool) -> Result<bool, String> {
    let start = now_ms();
    while now_ms() - start < LOAD_BOUND_MS {
        boundary::check_known(tab)?;
        if let Some(state) = page_href(tab).await {
            let changed = committed || state != before || now_ms() - start > 1_000.0;
            if changed && state.ends_with(" complete") {
                return Ok(true);
            }
        } else if !cdp::is_attached(tab) {
            // Chrome detached the debugger (a browser page): say where the tab is.
            boundary::check_now(tab).await?;
        }
        sleep_ms(50).await;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::answer;

    #[test]
    fn the_answer_adds_status_and_title_after_the_first_line() {
        assert_eq!(
            answer("http://a.test/", true, Some(404), Some("Not found")),
            "Navigated to http://a.test/\nHTTP status: 404\nTitle: Not found"
        );
        assert_eq!(
            answer("about:blank", false, None, Some("")),
            "Navigated to about:blank (still loading)"
        );
        // A title cannot add lines of its own.
        assert_eq!(
            answer(
                "http://a.test/",
                true,
                None,
                Some(" A\nHTTP status: 200\u{2028}B ")
            ),
            "Navigated to http://a.test/\nTitle: A HTTP status: 200 B"
        );
        let long = "x".repeat(300);
        let cut = answer("http://a.test/", true, None, Some(&long));
        assert!(cut.ends_with(&format!("{}…", "x".repeat(200))), "{cut}");
    }
}
