//! The download recorder: downloads in progress (a tab with one is not detached for idleness),
//! and each download's start, end or failure as a change for the next state report. A group
//! tab's downloads are told apart by CDP (`Page.downloadWillBegin` names the tab's frame);
//! chrome.downloads, which knows no tab, is asked only for what CDP does not say: the path of a
//! finished one (where the policy lets paths be reported) and why one failed.

use crate::cdp::events::Event;
use crate::changes::Change;
use crate::chrome::downloads;
use crate::vec_map::VecMap;

/// A download not heard of for this long no longer holds the debugger.
const DOWNLOAD_QUIET_MS: f64 = 10.0 * 60_000.0;

/// A download in progress.
#[derive(Clone)]
pub struct Active {
    /// When last heard of (the worker's clock).
    at: f64,
    url: String,
    file_name: String,
}

/// Downloads in progress, by guid.
#[derive(Default)]
pub struct Downloads(pub VecMap<String, Active>);

/// What a download event means for the state report: a change now, or one to complete first
/// (asking chrome.downloads).
pub enum Report {
    Started {
        id: String,
        url: String,
        file_name: Option<String>,
    },
    Completed {
        id: String,
        url: String,
        file_name: Option<String>,
        size: u64,
    },
    Failed {
        id: String,
        url: String,
    },
}

fn named(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

impl Downloads {
    pub fn on(&mut self, event: &Event, now: f64) -> Option<Report> {
        match event {
            Event::DownloadWillBegin {
                guid,
                url,
                file_name,
            } => {
                self.0.insert(
                    guid.clone(),
                    Active {
                        at: now,
                        url: url.clone(),
                        file_name: file_name.clone(),
                    },
                );
                Some(Report::Started {
                    id: guid.clone(),
                    url: url.clone(),
                    file_name: named(file_name),
                })
            }
            Event::DownloadProgress {
                guid,
                state,
                received,
                total,
            } => {
                if state == "inProgress" {
                    if let Some(a) = self.0.get_mut(guid) {
                        a.at = now;
                    }
                    return None;
                }
                let known = self.0.remove(guid)?;
                match state.as_str() {
                    "completed" => Some(Report::Completed {
                        id: guid.clone(),
                        url: known.url,
                        file_name: named(&known.file_name),
                        size: received.max(*total).max(0.0) as u64,
                    }),
                    _ => Some(Report::Failed {
                        id: guid.clone(),
                        url: known.url,
                    }),
                }
            }
            _ => None,
        }
    }

    /// True while one was heard of lately.
    pub fn any(&self, now: f64) -> bool {
        self.0.values().any(|a| now - a.at < DOWNLOAD_QUIET_MS)
    }
}

impl Report {
    /// The change of a download of `tab`, completed from chrome.downloads where needed.
    pub async fn change(self, tab: i32) -> Change {
        match self {
            Report::Started { id, url, file_name } => Change::DownloadStarted {
                tab_id: tab,
                download_id: id,
                url,
                file_name,
            },
            Report::Completed {
                id,
                url,
                file_name,
                size,
            } => {
                let path = if crate::policy::download_paths(tab) {
                    downloads::of(&url, "complete")
                        .await
                        .ok()
                        .and_then(|items| {
                            items.into_iter().find(|i| i.bytes_received as u64 == size)
                        })
                        .map(|i| i.filename)
                        .filter(|p| !p.is_empty())
                } else {
                    None
                };
                Change::DownloadCompleted {
                    tab_id: tab,
                    download_id: id,
                    url,
                    file_name,
                    size_bytes: Some(size),
                    path,
                }
            }
            Report::Failed { id, url } => {
                let why = downloads::of(&url, "interrupted")
                    .await
                    .ok()
                    .and_then(|items| items.into_iter().next())
                    .map(|i| i.error)
                    .filter(|e| !e.is_empty());
                Change::DownloadFailed {
                    tab_id: tab,
                    download_id: id,
                    url,
                    error: Some(match why {
                        Some(e) if e == "USER_CANCELED" => "cancelled".to_string(),
                        Some(e) => format!("failed: {e}"),
                        None => "cancelled or failed".to_string(),
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn downloads_are_tracked_until_they_end_and_reported() {
        let mut r = Downloads::default();
        let ev = |m: &str, p: serde_json::Value| Event::parse(m, &p).expect("an event");
        let started = r.on(
            &ev(
                "Page.downloadWillBegin",
                json!({"guid": "g1", "url": "http://a.test/f.zip", "suggestedFilename": "f.zip"}),
            ),
            1.0,
        );
        assert!(matches!(
            started,
            Some(Report::Started { ref id, ref file_name, .. })
                if id == "g1" && file_name.as_deref() == Some("f.zip")
        ));
        assert!(r
            .on(
                &ev(
                    "Page.downloadProgress",
                    json!({"guid": "g1", "state": "inProgress", "receivedBytes": 5, "totalBytes": 10}),
                ),
                2.0,
            )
            .is_none());
        assert!(r.any(3.0));
        let done = r.on(
            &ev(
                "Page.downloadProgress",
                json!({"guid": "g1", "state": "completed", "receivedBytes": 10, "totalBytes": 10}),
            ),
            3.0,
        );
        assert!(matches!(done, Some(Report::Completed { size: 10, .. })));
        assert!(r.0.is_empty());
        // A second end of the same download is not reported again.
        assert!(r
            .on(
                &ev(
                    "Page.downloadProgress",
                    json!({"guid": "g1", "state": "canceled"}),
                ),
                4.0,
            )
            .is_none());
    }
}
