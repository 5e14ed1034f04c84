//! One-click pairing: the `pair-offer` a web page posts (a connection config and an optional
//! brand label), its validation, and the offer as the extension parks it, with the origin
//! Chrome reported for the page (never one the page wrote).

use crate::config::{ConfigError, ConnectionConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest brand name shown in the prompt.
pub const MAX_BRAND_NAME: usize = 64;
/// Longest origin accepted.
pub const MAX_ORIGIN: usize = 256;

/// What the page claims about itself: shown to the user as the page's claim only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferBrand {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A validated offer: the config to connect with once the user accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairOffer {
    pub config: ConnectionConfig,
    #[serde(default)]
    pub brand: OfferBrand,
}

/// An offer waiting for the user's click, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParkedOffer {
    pub offer: PairOffer,
    /// The page's origin as Chrome reported it (`https://app.example`).
    pub origin: String,
    /// Milliseconds since the epoch.
    pub received_at: f64,
    /// Other origins whose offers came while this one waited for the person's decision, and
    /// were not kept (at most [`MAX_ALSO_OFFERED`] are named); shown with this offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_offered: Vec<String>,
    /// How many offers from other origins were not kept while this one waited.
    #[serde(default)]
    pub refused_count: u32,
}

/// Origins named as "also offered" with a parked offer.
pub const MAX_ALSO_OFFERED: usize = 4;
/// A parked offer older than this no longer holds its place against another page's offer.
pub const OFFER_HOLD_MS: f64 = 5.0 * 60_000.0;

impl ParkedOffer {
    /// Whether an offer from `origin` arriving at `now` takes this one's place. The same page
    /// may replace its own offer (a reload, a new token); another page may not while this one
    /// is fresh, so a flood from one tab can't swap the server under the person's click.
    pub fn yields_to(&self, origin: &str, now: f64) -> bool {
        self.origin == origin || now - self.received_at >= OFFER_HOLD_MS || now < self.received_at
    }

    /// Notes an offer from `origin` that was not kept.
    pub fn note_refused(&mut self, origin: &str) {
        self.refused_count = self.refused_count.saturating_add(1);
        if !self.also_offered.iter().any(|o| o == origin)
            && self.also_offered.len() < MAX_ALSO_OFFERED
        {
            self.also_offered.push(origin.to_string());
        }
    }
}

fn err(field: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field,
        message: message.into(),
    }
}

impl PairOffer {
    /// Checks a `pair-offer` message's `config` and `brand` (the whole message may be passed:
    /// other keys are ignored). Every string is bounded; the config is normalized and
    /// validated like one typed into Options.
    pub fn parse(message: &Value) -> Result<PairOffer, ConfigError> {
        let config = message
            .get("config")
            .filter(|c| c.is_object())
            .ok_or_else(|| err("config", "The offer has no config object."))?;
        let config: ConnectionConfig = crate::json::from_value(config.clone())
            .map_err(|e| err("config", format!("The offer's config is malformed: {e}")))?;
        let config = config.normalized()?;
        let brand = match message.get("brand") {
            None | Some(Value::Null) => OfferBrand::default(),
            Some(Value::Object(b)) => match b.get("name") {
                None | Some(Value::Null) => OfferBrand::default(),
                Some(Value::String(name)) => {
                    let name = name.trim();
                    if name.chars().count() > MAX_BRAND_NAME || name.chars().any(char::is_control) {
                        return Err(err(
                            "brand",
                            format!("The brand name has line breaks or is longer than {MAX_BRAND_NAME} characters."),
                        ));
                    }
                    OfferBrand {
                        name: (!name.is_empty()).then(|| name.to_string()),
                    }
                }
                Some(_) => return Err(err("brand", "brand.name must be a string.")),
            },
            Some(_) => return Err(err("brand", "brand must be an object.")),
        };
        Ok(PairOffer { config, brand })
    }
}

/// Whether `origin` is a web page's origin (`http(s)://host[:port]`, nothing more).
pub fn is_web_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
    else {
        return false;
    };
    origin.len() <= MAX_ORIGIN
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@'])
        && !rest.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_protocol_example_parses() {
        let m = json!({
            "__browserOperator": "pair-offer",
            "config": {
                "transport": "sse-http",
                "serverUrl": "https://app.example",
                "token": "t0k",
                "commandPath": "/browser/events",
                "resultPath": "/browser/result",
                "target": "channel-id"
            },
            "brand": { "name": "Example CRM" }
        });
        let o = PairOffer::parse(&m).unwrap();
        assert_eq!(o.brand.name.as_deref(), Some("Example CRM"));
        assert_eq!(o.config.server_url, "https://app.example");
        let o = PairOffer::parse(&json!({"config": {"transport": "websocket", "serverUrl": "ws://127.0.0.1:1/ws", "token": "t"}})).unwrap();
        assert_eq!(o.brand, OfferBrand::default());
    }

    #[test]
    fn bad_offers_name_the_problem() {
        let field = |m: Value| PairOffer::parse(&m).unwrap_err().field;
        assert_eq!(field(json!({})), "config");
        assert_eq!(field(json!({"config": "x"})), "config");
        assert_eq!(
            field(json!({"config": {"transport": "fax", "serverUrl": "x", "token": "t"}})),
            "config"
        );
        assert_eq!(
            field(
                json!({"config": {"transport": "websocket", "serverUrl": "http://h", "token": "t"}})
            ),
            "serverUrl"
        );
        assert_eq!(
            field(
                json!({"config": {"transport": "sse-http", "serverUrl": "http://h", "token": ""}})
            ),
            "token"
        );
        let long = "x".repeat(5000);
        assert_eq!(
            field(
                json!({"config": {"transport": "sse-http", "serverUrl": "http://h", "token": long}})
            ),
            "token"
        );
        let ok = json!({"transport": "sse-http", "serverUrl": "http://h", "token": "t"});
        assert_eq!(
            field(json!({"config": ok, "brand": {"name": "x".repeat(65)}})),
            "brand"
        );
        assert_eq!(
            field(json!({"config": ok, "brand": {"name": "a\nb"}})),
            "brand"
        );
        assert_eq!(field(json!({"config": ok, "brand": "Evil"})), "brand");
    }

    #[test]
    fn a_fresh_offer_holds_its_place_against_other_pages() {
        let offer = PairOffer::parse(&json!({"config": {"transport": "websocket", "serverUrl": "ws://127.0.0.1:1/ws", "token": "t"}})).unwrap();
        let mut parked = ParkedOffer {
            offer,
            origin: "https://good.example".into(),
            received_at: 1_000.0,
            also_offered: Vec::new(),
            refused_count: 0,
        };
        assert!(parked.yields_to("https://good.example", 2_000.0));
        assert!(!parked.yields_to("https://evil.example", 2_000.0));
        assert!(parked.yields_to("https://evil.example", 1_000.0 + OFFER_HOLD_MS));
        assert!(
            parked.yields_to("https://evil.example", 0.0),
            "a clock that went back"
        );
        for i in 0..10 {
            parked.note_refused(&format!("https://evil{}.example", i % 6));
        }
        assert_eq!(parked.refused_count, 10);
        assert_eq!(parked.also_offered.len(), MAX_ALSO_OFFERED);
        assert_eq!(parked.also_offered[0], "https://evil0.example");
    }

    #[test]
    fn web_origins() {
        assert!(is_web_origin("https://app.example"));
        assert!(is_web_origin("http://127.0.0.1:8787"));
        for bad in [
            "",
            "null",
            "file://",
            "chrome-extension://abc",
            "https://a/b",
            "https://",
            "https://a b",
        ] {
            assert!(!is_web_origin(bad), "{bad}");
        }
    }
}
