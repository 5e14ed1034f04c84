//! One-click pairing in the worker: offers relayed by the content script are validated again,
//! rate-limited per origin, and one is parked (a page may replace its own; another page's waits
//! until the person decides or the offer is 5 minutes old, and is named with it) (chrome.storage.session) with a badge
//! on the toolbar icon. Nothing is applied until the user clicks Accept in the popup.

use crate::chrome::action;
use crate::chrome::storage::{self, Area};
use crate::js::{log, now_ms};
use crate::session;
use crate::vec_map::VecMap;
use futures_util::lock::Mutex;
use protocol::pairing::is_web_origin;
use protocol::{ConfigError, PairOffer, ParkedOffer};
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

const OFFER_KEY: &str = "pairOffer";
/// At most this many offers per origin per minute are parked; more are dropped.
const OFFERS_PER_MINUTE: usize = 10;

thread_local! {
    static RECENT: RefCell<VecMap<String, Vec<f64>>> = const { RefCell::new(VecMap::new()) };
    /// Offers are handled one at a time: each reads, changes and writes the parked offer, and
    /// a page posts many at once.
    static ONE_AT_A_TIME: Rc<Mutex<()>> = Rc::new(Mutex::new(()));
}

/// Whether `origin` may park another offer now (and counts it).
fn allowed(origin: &str) -> bool {
    let now = now_ms();
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() > 256 {
            r.clear();
        }
        let times = r.entry(origin.to_string()).or_default();
        times.retain(|t| now - t < 60_000.0);
        if times.len() >= OFFERS_PER_MINUTE {
            return false;
        }
        times.push(now);
        true
    })
}

/// A `pair-offer` from the content script of a page whose origin Chrome reported as
/// `sender_origin`. The relayed origin must agree with it.
pub async fn offer(message: &Value, sender_origin: &str) -> Result<(), String> {
    let relayed = message.get("origin").and_then(Value::as_str).unwrap_or("");
    if !is_web_origin(sender_origin) || relayed != sender_origin {
        return Err("the offer's origin does not match its page".into());
    }
    let offer = PairOffer::parse(message.get("offer").unwrap_or(&Value::Null))
        .map_err(|e| e.to_string())?;
    if !allowed(sender_origin) {
        return Err(format!(
            "too many offers from {sender_origin} (at most {OFFERS_PER_MINUTE} a minute); try again in a minute"
        ));
    }
    let lock = ONE_AT_A_TIME.with(Rc::clone);
    let _turn = lock.lock().await;
    let now = now_ms();
    // A fresh offer from another page keeps its place until the person decides: a flood from
    // one tab can't swap the server shown under the person's click. The refused page is named
    // with the waiting offer, so nothing is dropped silently.
    if let Some(mut current) = parked().await {
        if !current.yields_to(sender_origin, now) {
            current.note_refused(sender_origin);
            storage::set(Area::Session, OFFER_KEY, &current).await?;
            return Err(format!(
                "another page's offer is waiting for the person's decision; {sender_origin}'s was not kept"
            ));
        }
    }
    let parked = ParkedOffer {
        offer,
        origin: sender_origin.to_string(),
        received_at: now,
        also_offered: Vec::new(),
        refused_count: 0,
    };
    storage::set(Area::Session, OFFER_KEY, &parked).await?;
    let brand = crate::brand::brand();
    let _ = action::set_badge_color(&brand.badge_color).await;
    let _ = action::set_badge_text("1").await;
    Ok(())
}

/// The parked offer, if any.
pub async fn parked() -> Option<ParkedOffer> {
    storage::get(Area::Session, OFFER_KEY).await.ok().flatten()
}

async fn clear() {
    if let Err(e) = storage::set(Area::Session, OFFER_KEY, &Value::Null).await {
        log(&format!("cannot clear the offer: {e}"));
    }
    let _ = action::set_badge_text("").await;
}

/// The user's Accept: save the offer's config and connect with it (the first connection, the
/// same backend's, or one more: see `session::accept_offer`).
pub async fn accept() -> Result<(), ConfigError> {
    let Some(parked) = parked().await else {
        return Err(ConfigError {
            field: "offer",
            message: "There is no offer to accept any more.".into(),
        });
    };
    clear().await;
    session::accept_offer(parked.offer.config, parked.offer.brand.name)
        .await
        .map(drop)
}

/// The user's Dismiss.
pub async fn dismiss() {
    clear().await;
}
