//! What changed in the browser since the backend last asked: tabs the automation group gained,
//! downloads started, finished or failed, dialogs the policy answered, navigations the policy
//! refused. Whoever sees a change pushes it here; the `browser_state` report drains it, so each
//! change is reported once, and each is about a tab: only the report of the agent whose tab it
//! is says it (`drain_except`). Bounded: past [`MAX`] the oldest go, and the next report says how
//! many were dropped.

use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;

/// At most this many changes wait for a report.
pub const MAX: usize = 200;

/// One change, as a report lists it (`{"type": "tab_opened", "tabId": 7}` …).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Change {
    /// A tab joined the automation group (created by a command, or opened by a group tab's page).
    TabOpened { tab_id: i32 },
    /// A download began.
    DownloadStarted {
        /// The tab it came from: whose report it is (not in the report).
        #[serde(skip)]
        tab_id: i32,
        download_id: String,
        url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_name: Option<String>,
    },
    /// A download finished; `path` only where the policy allows paths to be reported.
    DownloadCompleted {
        /// The tab it came from: whose report it is (not in the report).
        #[serde(skip)]
        tab_id: i32,
        download_id: String,
        url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size_bytes: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// A download failed or was cancelled.
    DownloadFailed {
        /// The tab it came from: whose report it is (not in the report).
        #[serde(skip)]
        tab_id: i32,
        download_id: String,
        url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A JavaScript dialog the policy answered without the agent (`kind`: alert, confirm,
    /// prompt, beforeunload; `accepted`: how it was answered).
    DialogDismissed {
        tab_id: i32,
        kind: String,
        message: String,
        accepted: bool,
    },
    /// A navigation the URL policy refused before its request left.
    NavigationRefused { tab_id: i32, url: String },
}

thread_local! {
    static PENDING: RefCell<Pending> = RefCell::new(Pending::default());
}

#[derive(Default)]
struct Pending {
    changes: VecDeque<Change>,
    dropped: usize,
}

/// Records a change for the next report.
pub fn push(change: Change) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.changes.len() == MAX {
            p.changes.pop_front();
            p.dropped += 1;
        }
        p.changes.push_back(change);
    });
}

/// The changes since the last drain, oldest first, and how many older ones were dropped.
pub fn drain() -> (Vec<Change>, usize) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let dropped = std::mem::take(&mut p.dropped);
        (p.changes.drain(..).collect(), dropped)
    })
}

/// [`drain`], except the changes of the tabs `held` names (another agent's tabs: its own
/// report says them); those wait.
pub fn drain_except(held: impl Fn(i32) -> bool) -> (Vec<Change>, usize) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let dropped = std::mem::take(&mut p.dropped);
        let (kept, out): (VecDeque<Change>, VecDeque<Change>) =
            p.changes.drain(..).partition(|c| held(c.tab()));
        p.changes = kept;
        (out.into_iter().collect(), dropped)
    })
}

impl Change {
    /// The tab it is about: the report of the agent whose tab it is says it.
    fn tab(&self) -> i32 {
        match self {
            Change::TabOpened { tab_id }
            | Change::DialogDismissed { tab_id, .. }
            | Change::NavigationRefused { tab_id, .. }
            | Change::DownloadStarted { tab_id, .. }
            | Change::DownloadCompleted { tab_id, .. }
            | Change::DownloadFailed { tab_id, .. } => *tab_id,
        }
    }
}

/// The changes waiting, without draining them (the worker's own diagnostics: tests read them
/// through `self.browserOperator.pendingChanges()`).
pub fn peek() -> Vec<Change> {
    PENDING.with(|p| p.borrow().changes.iter().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_drain_reports_each_change_once_in_order() {
        drain();
        push(Change::TabOpened { tab_id: 3 });
        push(Change::NavigationRefused {
            tab_id: 3,
            url: "https://blocked.test/".into(),
        });
        let (changes, dropped) = drain();
        assert_eq!(dropped, 0);
        assert_eq!(
            serde_json::to_value(&changes).ok(),
            Some(json!([
                {"type": "tab_opened", "tabId": 3},
                {"type": "navigation_refused", "tabId": 3, "url": "https://blocked.test/"}
            ]))
        );
        assert_eq!(drain().0, vec![]);
    }

    #[test]
    fn another_agent_s_tabs_wait_for_its_own_report() {
        drain();
        push(Change::TabOpened { tab_id: 1 });
        push(Change::TabOpened { tab_id: 2 });
        let (mine, _) = drain_except(|t| t == 2);
        assert_eq!(mine, vec![Change::TabOpened { tab_id: 1 }]);
        assert_eq!(drain().0, vec![Change::TabOpened { tab_id: 2 }]);
    }

    #[test]
    fn past_the_bound_the_oldest_go_and_are_counted() {
        drain();
        for tab_id in 0..(MAX as i32 + 5) {
            push(Change::TabOpened { tab_id });
        }
        let (changes, dropped) = drain();
        assert_eq!(changes.len(), MAX);
        assert_eq!(dropped, 5);
        assert_eq!(changes[0], Change::TabOpened { tab_id: 5 });
    }
}
