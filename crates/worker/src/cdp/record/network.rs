//! The network recorder: the tab's requests, bounded, cleared when the top frame moves to another
//! site; and the gaps, times the debugger was detached for idleness, when requests were not
//! recorded (filled as far as the page's own resource timing tells).

use crate::cdp::events::Event;
use std::collections::VecDeque;

const MAX_REQUESTS: usize = 1_000;
const MAX_GAPS: usize = 50;
/// Documents whose response status is kept (a page with many iframes pushes the oldest out).
const MAX_DOCUMENTS: usize = 32;

#[derive(Clone)]
pub struct Request {
    pub id: String,
    pub method: String,
    pub url: String,
    pub kind: String,
    pub status: Option<i64>,
    pub failure: Option<String>,
    /// When it was sent, in ms since the epoch.
    pub at: f64,
}

/// A time the debugger was detached while the tab was idle: requests then were not recorded.
#[derive(Clone)]
pub struct Gap {
    pub from: f64,
    /// `None` while still detached.
    pub to: Option<f64>,
    /// What the page's resource timing lists from that time (loaded by the page itself).
    pub timing: Vec<TimedResource>,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimedResource {
    pub url: String,
    pub initiator: String,
    /// 0 when the page may not know it (cross-origin without Timing-Allow-Origin).
    #[serde(default)]
    pub status: i64,
    pub at: f64,
}

#[derive(Default)]
pub struct Network {
    pub requests: VecDeque<Request>,
    site: String,
    pub gaps: VecDeque<Gap>,
    /// The last documents' requests: (request id, response status once it came).
    documents: VecDeque<(String, Option<i64>)>,
    /// The loader of the top frame's document, from its last `Page.frameNavigated`.
    top_loader: String,
}

/// The scheme and host of a URL: what "another site" means for clearing the network list.
pub fn site_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    format!("{scheme}://{host}")
}

impl Network {
    /// `now`: the worker's clock, ms since the epoch.
    pub fn on(&mut self, event: &Event, now: f64) {
        match event {
            Event::RequestWillBeSent {
                id,
                method,
                url,
                kind,
                wall_time,
            } => {
                if kind == "Document"
                    && url.starts_with("http")
                    && !self.documents.iter().any(|(d, _)| d == id)
                {
                    self.documents.push_back((id.clone(), None));
                    while self.documents.len() > MAX_DOCUMENTS {
                        self.documents.pop_front();
                    }
                }
                if url.starts_with("data:") {
                    return;
                }
                let entry = Request {
                    id: id.clone(),
                    method: method.clone(),
                    url: url.clone(),
                    kind: kind.clone(),
                    status: None,
                    failure: None,
                    at: wall_time.map_or(now, |s| s * 1000.0),
                };
                // A redirect reuses the id: the request now goes to the new URL.
                if let Some(old) = self.requests.iter_mut().rev().find(|q| q.id == *id) {
                    *old = entry;
                } else {
                    self.requests.push_back(entry);
                    while self.requests.len() > MAX_REQUESTS {
                        self.requests.pop_front();
                    }
                }
            }
            Event::ResponseReceived { id, status, kind } => {
                // A redirect's response comes with the next request: this one is the last.
                if let Some(d) = self.documents.iter_mut().rev().find(|(d, _)| d == id) {
                    d.1 = *status;
                }
                if let Some(q) = self.requests.iter_mut().rev().find(|q| q.id == *id) {
                    q.status = *status;
                    if q.kind.is_empty() {
                        q.kind = kind.clone();
                    }
                }
            }
            Event::LoadingFailed {
                id,
                error,
                canceled,
                blocked,
            } => {
                if let Some(q) = self.requests.iter_mut().rev().find(|q| q.id == *id) {
                    let mut why = error.clone();
                    if *canceled {
                        why = format!("canceled {why}").trim().to_string();
                    }
                    if let Some(b) = blocked {
                        why = format!("{why} (blocked: {b})");
                    }
                    q.failure = Some(why);
                }
            }
            Event::FrameNavigated {
                top: true,
                url,
                loader,
            } => {
                self.top_loader = loader.clone();
                let site = site_of(url);
                if !self.site.is_empty() && self.site != site {
                    // Keep only the request that brought the new page.
                    self.requests.retain(|q| q.id == *loader);
                    self.gaps.clear();
                }
                self.site = site;
            }
            _ => {}
        }
    }

    /// The debugger is being detached for idleness: a gap starts.
    pub fn gap_starts(&mut self, now: f64) {
        self.gaps.push_back(Gap {
            from: now,
            to: None,
            timing: Vec::new(),
        });
        while self.gaps.len() > MAX_GAPS {
            self.gaps.pop_front();
        }
    }

    /// The top frame's document: its loader, and the HTTP status of its response when it was
    /// recorded (an http(s) document whose response came while recording).
    pub fn top_document(&self) -> (String, Option<i64>) {
        let status = self
            .documents
            .iter()
            .rev()
            .find(|(d, _)| *d == self.top_loader)
            .and_then(|(_, s)| *s);
        (self.top_loader.clone(), status)
    }

    /// When the gap still open (detached for idleness) started.
    pub fn open_gap(&self) -> Option<f64> {
        self.gaps.back().filter(|g| g.to.is_none()).map(|g| g.from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn feed(r: &mut Network, method: &str, p: Value, now: f64) {
        r.on(&Event::parse(method, &p).expect("an event"), now);
    }

    #[test]
    fn sites() {
        assert_eq!(site_of("http://127.0.0.1:8080/a?b"), "http://127.0.0.1");
        assert_eq!(site_of("https://user@example.com/x"), "https://example.com");
        assert_ne!(site_of("about:blank"), site_of("http://127.0.0.1/"));
    }

    #[test]
    fn requests_follow_their_lifecycle_and_clear_on_site_change() {
        let mut r = Network::default();
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://a.test/", "loaderId": "L1"}}),
            0.0,
        );
        feed(
            &mut r,
            "Network.requestWillBeSent",
            json!({"requestId": "1", "type": "Fetch", "request": {"method": "GET", "url": "http://a.test/ok"}}),
            0.0,
        );
        feed(
            &mut r,
            "Network.responseReceived",
            json!({"requestId": "1", "response": {"status": 200}}),
            0.0,
        );
        feed(
            &mut r,
            "Network.requestWillBeSent",
            json!({"requestId": "2", "type": "Fetch", "request": {"method": "POST", "url": "http://a.test/no"}}),
            0.0,
        );
        feed(
            &mut r,
            "Network.loadingFailed",
            json!({"requestId": "2", "errorText": "net::ERR_FAILED"}),
            0.0,
        );
        assert_eq!(r.requests[0].status, Some(200));
        assert_eq!(r.requests[1].failure.as_deref(), Some("net::ERR_FAILED"));
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://a.test/other", "loaderId": "L2"}}),
            0.0,
        );
        assert_eq!(r.requests.len(), 2);
        feed(
            &mut r,
            "Network.requestWillBeSent",
            json!({"requestId": "L3", "type": "Document", "request": {"method": "GET", "url": "http://b.test/"}}),
            0.0,
        );
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://b.test/", "loaderId": "L3"}}),
            0.0,
        );
        assert_eq!(r.requests.len(), 1);
        assert_eq!(r.requests[0].url, "http://b.test/");
        // A subframe's navigation is not the tab's.
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://c.test/", "loaderId": "L4", "parentId": "F"}}),
            0.0,
        );
        assert_eq!(r.requests.len(), 1);
    }

    #[test]
    fn the_top_documents_status_is_kept_apart_from_the_list() {
        let mut r = Network::default();
        assert_eq!(r.top_document(), (String::new(), None));
        let document = |id: &str, url: &str| json!({"requestId": id, "type": "Document", "request": {"method": "GET", "url": url}});
        feed(
            &mut r,
            "Network.requestWillBeSent",
            document("L1", "http://a.test/"),
            0.0,
        );
        // A redirect: the same request, then the final response.
        feed(
            &mut r,
            "Network.requestWillBeSent",
            document("L1", "http://a.test/moved"),
            0.0,
        );
        feed(
            &mut r,
            "Network.responseReceived",
            json!({"requestId": "L1", "type": "Document", "response": {"status": 404}}),
            0.0,
        );
        // read_network_requests with clear empties the list; the document is still known.
        r.requests.clear();
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://a.test/moved", "loaderId": "L1"}}),
            0.0,
        );
        assert_eq!(r.top_document(), ("L1".to_string(), Some(404)));
        // An iframe's document is not the top frame's.
        feed(
            &mut r,
            "Network.requestWillBeSent",
            document("L2", "http://b.test/"),
            0.0,
        );
        feed(
            &mut r,
            "Network.responseReceived",
            json!({"requestId": "L2", "type": "Document", "response": {"status": 200}}),
            0.0,
        );
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "http://b.test/", "loaderId": "L2", "parentId": "F"}}),
            0.0,
        );
        assert_eq!(r.top_document(), ("L1".to_string(), Some(404)));
        // A document with no request (about:blank) has no status.
        feed(
            &mut r,
            "Page.frameNavigated",
            json!({"frame": {"url": "about:blank", "loaderId": "L3"}}),
            0.0,
        );
        assert_eq!(r.top_document(), ("L3".to_string(), None));
    }

    #[test]
    fn requests_carry_their_wall_time() {
        let mut r = Network::default();
        feed(
            &mut r,
            "Network.requestWillBeSent",
            json!({"requestId": "1", "wallTime": 1700000000.5, "request": {"method": "GET", "url": "http://a.test/"}}),
            9.0,
        );
        feed(
            &mut r,
            "Network.requestWillBeSent",
            json!({"requestId": "2", "request": {"method": "GET", "url": "http://a.test/b"}}),
            9.0,
        );
        assert_eq!(r.requests[0].at, 1_700_000_000_500.0);
        assert_eq!(r.requests[1].at, 9.0);
    }
}
