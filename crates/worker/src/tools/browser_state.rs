//! browser_state: the agent's own group's tabs (which one is active) and what changed since the
//! last report (`changes`, drained: each change is reported once). Cheap, as it follows every
//! call a driver makes: one `chrome.tabs.query`, no debugger.

use crate::chrome::tabs::Tab;
use crate::tools::Tool;
use crate::{active, changes, group};
use protocol::ToolResult;
use serde::Serialize;

pub const TOOL: Tool = Tool {
    name: "browser_state",
    tab: None,
    during_dialog: false,
    run: |_| Box::pin(async { run().await.map(Into::into) }),
};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    tab_id: i32,
    title: &'a str,
    url: &'a str,
    active: bool,
}

#[derive(Serialize)]
struct State<'a> {
    tabs: Vec<Entry<'a>>,
    changes: Vec<changes::Change>,
    dropped: usize,
    /// The marker of the calling agent's policy (`policy::marker`): `null` when it set none, as
    /// after the browser restarted.
    policy: Option<String>,
}

pub async fn run() -> Result<ToolResult, String> {
    // A tab a group tab's page just opened is listed once it is known whether it is active.
    active::settled().await;
    let mine = group::find().await?;
    let tabs = match mine {
        Some(g) => group::tabs_of(g).await?,
        None => Vec::new(),
    };
    let active = active::among(&tabs).await;
    // Another agent's tabs' changes are its own report's (asked only when there are others).
    let mut others = crate::vec_map::VecSet::new();
    for g in group::known_groups() {
        if Some(g) != mine {
            others.extend(group::tabs_of(g).await?.into_iter().filter_map(|t| t.id));
        }
    }
    // Drained after the tabs are listed: a change pushed while they were awaited is not lost.
    let (changes, dropped) = if others.is_empty() {
        changes::drain()
    } else {
        changes::drain_except(|t| others.contains(&t))
    };
    let state = State {
        tabs: tabs.iter().filter_map(|t| entry(t, active)).collect(),
        changes,
        dropped,
        policy: crate::policy::marker(&crate::agent::current()),
    };
    let text = serde_json::to_string(&state).map_err(|e| format!("browser_state: {e}"))?;
    Ok(ToolResult::text(text))
}

/// A tab as the report lists it: title and URL as Chrome reports them (the URL a navigation is
/// committing when none is yet), except that a blank tab (`about:blank`) has both empty.
fn entry(t: &Tab, active: Option<i32>) -> Option<Entry<'_>> {
    let id = t.id?;
    let url = t.url.as_deref().filter(|u| !u.is_empty());
    let url = url.or(t.pending_url.as_deref()).unwrap_or("");
    let (title, url) = if url == "about:blank" {
        ("", "")
    } else {
        (t.title.as_deref().unwrap_or(""), url)
    };
    Some(Entry {
        tab_id: id,
        title,
        url,
        active: Some(id) == active,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tab as chrome.tabs lists it (read the way the worker reads Chrome's answer).
    fn tab(id: i32, url: &str, pending: Option<&str>, title: &str) -> Tab {
        let mut t =
            serde_json::json!({"id": id, "windowId": 1, "groupId": 2, "url": url, "title": title});
        if let Some(p) = pending {
            t["pendingUrl"] = p.into();
        }
        serde_json::from_value(t).expect("a tab")
    }

    #[test]
    fn a_tab_as_chrome_reports_it_and_a_blank_one_empty() {
        let t = tab(4, "https://a.test/x", None, "A page");
        let e = entry(&t, Some(4)).expect("an entry");
        assert_eq!(
            (e.tab_id, e.title, e.url, e.active),
            (4, "A page", "https://a.test/x", true)
        );
        let blank = tab(5, "about:blank", None, "about:blank");
        let e = entry(&blank, Some(4)).expect("an entry");
        assert_eq!((e.title, e.url, e.active), ("", "", false));
        // Before its first commit, a new tab's URL is the one it is loading.
        let loading = tab(6, "", Some("https://b.test/"), "");
        assert_eq!(
            entry(&loading, None).map(|e| e.url),
            Some("https://b.test/")
        );
    }

    #[test]
    fn the_report_s_shape() {
        let t = tab(7, "https://a.test/", None, "A");
        let state = State {
            tabs: vec![entry(&t, Some(7)).expect("an entry")],
            changes: vec![changes::Change::TabOpened { tab_id: 7 }],
            dropped: 0,
            policy: Some("0123456789abcdef".into()),
        };
        assert_eq!(
            serde_json::to_value(&state).ok(),
            Some(serde_json::json!({
                "tabs": [{"tabId": 7, "title": "A", "url": "https://a.test/", "active": true}],
                "changes": [{"type": "tab_opened", "tabId": 7}],
                "dropped": 0,
                "policy": "0123456789abcdef"
            }))
        );
    }
}
