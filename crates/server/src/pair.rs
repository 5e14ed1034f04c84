//! Tokens issued to one browser each by the /pair page, accepted by every transport besides the
//! server's main token. Kept in memory: a restarted server forgets them (pair again).

use crate::guard::{constant_time_eq, parse_bearer};
use axum::http::{header, HeaderMap};
use std::sync::Mutex;

/// At most this many paired browsers are remembered; the oldest token is forgotten first.
pub const MAX_PAIRED: usize = 64;

#[derive(Default)]
pub struct PairTokens {
    /// (token, target), oldest first.
    issued: Mutex<Vec<(String, String)>>,
}

impl PairTokens {
    /// Issues a fresh token for a browser that will connect as `target`.
    pub fn issue(&self, target: &str) -> std::io::Result<String> {
        let token = crate::token::generate()?;
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        if issued.len() >= MAX_PAIRED {
            issued.remove(0);
        }
        issued.push((token.clone(), target.to_string()));
        Ok(token)
    }

    /// Whether `token` was issued here.
    pub fn accepts_token(&self, token: &str) -> bool {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        // Compare with every entry so the time does not depend on which one matched.
        issued.iter().fold(false, |ok, (t, _)| {
            constant_time_eq(t.as_bytes(), token.as_bytes()) | ok
        })
    }

    /// Whether the request's bearer token was issued here.
    pub fn accepts(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_bearer)
            .is_some_and(|t| self.accepts_token(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_are_accepted_and_bounded() {
        let p = PairTokens::default();
        let first = p.issue("a").unwrap();
        assert!(p.accepts_token(&first));
        assert!(!p.accepts_token("nope"));
        for i in 0..MAX_PAIRED {
            p.issue(&format!("t{i}")).unwrap();
        }
        assert!(!p.accepts_token(&first), "the oldest is forgotten");
    }
}
