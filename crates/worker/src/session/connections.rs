//! The further connections: every backend the person accepted beyond the first (which keeps
//! the keys a single connection always had, `config` and `wantConnected`), kept as one list in
//! chrome.storage.local, each with its own number, and the look of each one's tab group.

use crate::agent::{self, GroupLook};
use crate::chrome::storage::{self, Area};
use protocol::ConnectionConfig;
use serde::{Deserialize, Serialize};

/// At most this many connections in all, the first included.
pub const MAX_CONNECTIONS: usize = 8;
pub const LIST_KEY: &str = "connections";
/// A group title is cut to this many characters.
const TITLE_CHARS: usize = 40;

/// A further connection as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extra {
    /// Its number (1 and up; never reused while it is listed).
    pub id: u32,
    pub config: ConnectionConfig,
    /// Whether the person wants it connected.
    pub want: bool,
    /// The product name its pair offer gave, if any (its group's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
}

pub async fn list() -> Vec<Extra> {
    storage::get(Area::Local, LIST_KEY)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

pub async fn store(list: &[Extra]) -> Result<(), String> {
    storage::set(Area::Local, LIST_KEY, list).await
}

/// Whether two configs name the same backend (the same server and target): the later replaces
/// the earlier.
pub fn same_backend(a: &ConnectionConfig, b: &ConnectionConfig) -> bool {
    a.server_url == b.server_url && a.target == b.target
}

/// Tells `agent` each connection's group look: titled by its offer's brand, else its target,
/// else its server's host, distinct from the first connection's and from each other; coloured
/// each its own.
pub fn register_looks(list: &[Extra]) {
    let mut taken = vec![crate::brand::brand().group_title];
    for extra in list {
        let base = name_of(extra);
        let mut title = base.clone();
        let mut k = 2;
        while taken.contains(&title) {
            title = format!("{base} ({k})");
            k += 1;
        }
        taken.push(title.clone());
        agent::set_look(
            extra.id,
            GroupLook {
                title,
                color: agent::color_for(extra.id.saturating_sub(1) as usize),
            },
        );
    }
}

fn name_of(extra: &Extra) -> String {
    let named = extra
        .brand
        .as_deref()
        .or(extra.config.target.as_deref())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| host_of(&extra.config.server_url));
    let clean: String = named.chars().filter(|c| !c.is_control()).collect();
    match clean.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &clean[..cut]),
        None => clean,
    }
}

/// "example.com:8787" of "ws://example.com:8787/ws".
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty() {
        url.to_string()
    } else {
        host.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{host_of, register_looks, Extra};
    use crate::agent::{look, Agent};
    use protocol::{ConnectionConfig, Transport};

    fn extra(id: u32, brand: Option<&str>, target: Option<&str>) -> Extra {
        Extra {
            id,
            config: ConnectionConfig {
                transport: Transport::WebSocket,
                server_url: format!("ws://127.0.0.1:{}/ws", 9000 + id),
                token: "t".into(),
                command_path: None,
                result_path: None,
                target: target.map(str::to_string),
            },
            want: true,
            brand: brand.map(str::to_string),
        }
    }

    /// Each connection's group: its brand, else its target, else its host; never the first
    /// connection's title nor another's; each its own colour, none the product's.
    #[test]
    fn each_group_has_its_own_title_and_colour() {
        register_looks(&[
            extra(1, Some("Acme"), Some("x")),
            extra(2, Some("Acme"), None),
            extra(3, None, Some("laptop")),
            extra(4, None, None),
            extra(5, Some("Browser Operator"), None),
        ]);
        let titles: Vec<String> = (1..=5).map(|c| look(&Agent::of(c, None)).title).collect();
        assert_eq!(
            titles,
            [
                "Acme",
                "Acme (2)",
                "laptop",
                "127.0.0.1:9004",
                "Browser Operator (2)"
            ]
        );
        let mut colours: Vec<String> = (0..=5).map(|c| look(&Agent::of(c, None)).color).collect();
        assert_eq!(colours[0], "blue");
        protocol::sort::sort_dedup(&mut colours);
        assert_eq!(colours.len(), 6, "{colours:?}");
        // A named agent of a connection: the connection's title and the agent's name.
        let named = look(&Agent::of(1, Some("claude-code 2".into())));
        assert_eq!(named.title, "Acme · claude-code 2");
    }

    #[test]
    fn a_server_is_named_by_its_host() {
        assert_eq!(host_of("ws://127.0.0.1:8787/ws"), "127.0.0.1:8787");
        assert_eq!(host_of("https://user:pw@example.com/x?y"), "example.com");
        assert_eq!(host_of("odd"), "odd");
    }
}
