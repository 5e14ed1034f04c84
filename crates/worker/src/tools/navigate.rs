//! navigate: load a URL (or go back/forward) in a group tab and wait, bounded, for the load.

use crate::cdp;
use crate::chrome::tabs;
use crate::js::{now_ms, sleep_ms};
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

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
    let before = page_href(tab).await.unwrap_or_default();
    match args.url.trim() {
        "back" => history_step(tab, -1).await?,
        "forward" => history_step(tab, 1).await?,
        url => {
            let url = normalize_url(url)?;
            let out = cdp::send(tab, "Page.navigate", json!({ "url": url })).await?;
            if let Some(err) = out.get("errorText").and_then(Value::as_str) {
                if !err.is_empty() {
                    return Err(format!("Navigation to {url} failed: {err}"));
                }
            }
        }
    }
    let loaded = wait_for_load(
        tab,
        &before,
        args.url.trim() != "back" && args.url.trim() != "forward",
    )
    .await;
    let url = tabs::get(tab)
        .await
        .ok()
        .and_then(|t| t.url)
        .unwrap_or_default();
    Ok(ToolResult::text(if loaded {
        format!("Navigated to {url}")
    } else {
        format!("Navigated to {url} (still loading)")
    }))
}

/// Adds `https://` to a bare host and refuses pages the debugger can't drive.
pub fn normalize_url(url: &str) -> Result<String, String> {
    let lower = url.to_ascii_lowercase();
    let has_scheme = lower.contains("://")
        || ["about:", "data:", "javascript:", "view-source:", "blob:"]
            .iter()
            .any(|s| lower.starts_with(s));
    let url = if has_scheme {
        url.to_string()
    } else {
        format!("https://{url}")
    };
    let lower = url.to_ascii_lowercase();
    let forbidden = [
        "chrome://",
        "chrome-extension://",
        "edge://",
        "devtools://",
        "chrome-untrusted://",
        "view-source:",
        "javascript:",
    ];
    let store = [
        "https://chrome.google.com/webstore",
        "https://chromewebstore.google.com",
    ];
    if forbidden.iter().any(|p| lower.starts_with(p)) || store.iter().any(|p| lower.starts_with(p))
    {
        return Err(format!(
            "Cannot navigate to {url}: Chrome does not let extensions automate browser pages, other extensions or the Web Store. Use an http(s) URL."
        ));
    }
    Ok(url)
}

async fn history_step(tab: i32, delta: i64) -> Result<(), String> {
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
    let target = usize::try_from(current + delta)
        .ok()
        .and_then(|i| entries.get(i))
        .and_then(|e| e.get("id"))
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            if delta < 0 {
                "There is no previous page in this tab's history.".to_string()
            } else {
                "There is no next page in this tab's history.".to_string()
            }
        })?;
    cdp::send(
        tab,
        "Page.navigateToHistoryEntry",
        json!({ "entryId": target }),
    )
    .await?;
    Ok(())
}

async fn page_href(tab: i32) -> Option<String> {
    let out = cdp::send_with_timeout(
        tab,
        "Runtime.evaluate",
        json!({"expression": "location.href + ' ' + document.readyState", "returnByValue": true}),
        2_000,
    )
    .await
    .ok()?;
    out.pointer("/result/value")?.as_str().map(str::to_string)
}

/// True once the document is complete (and, for history steps, has changed); false at the bound.
async fn wait_for_load(tab: i32, before: &str, committed: bool) -> bool {
    let start = now_ms();
    while now_ms() - start < LOAD_BOUND_MS {
        if let Some(state) = page_href(tab).await {
            let changed = committed || state != before || now_ms() - start > 1_000.0;
            if changed && state.ends_with(" complete") {
                return true;
            }
        }
        sleep_ms(50).await;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::normalize_url;

    #[test]
    fn bare_hosts_get_https() {
        assert_eq!(
            normalize_url("example.com/a").expect("a bare host"),
            "https://example.com/a"
        );
        assert_eq!(
            normalize_url("http://127.0.0.1:9/x").expect("a full URL"),
            "http://127.0.0.1:9/x"
        );
        assert_eq!(
            normalize_url("about:blank").expect("about:blank"),
            "about:blank"
        );
    }

    #[test]
    fn browser_pages_are_refused() {
        for url in [
            "chrome://settings",
            "chrome-extension://abc/x.html",
            "https://chromewebstore.google.com/detail/x",
        ] {
            assert!(
                normalize_url(url)
                    .expect_err(url)
                    .contains("Cannot navigate"),
                "{url}"
            );
        }
    }
}
