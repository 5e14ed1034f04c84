//! The fleet's per-target tokens in Redis: a hash under the prefix (`<prefix>tokens`, token id
//! → the token as JSON), read and changed with short blocking connections (issuing and revoking
//! are rare: `token issue|revoke`, the /pair page), and a copy in memory that the instance's
//! background task refreshes, so checking a browser's token does no I/O.

use super::keys::Keys;
use super::wire::Message;
use crate::target_tokens::{IssuedToken, SharedTokens, StoreError};
use std::collections::HashMap;
use std::fmt;
use std::sync::RwLock;
use std::time::Duration;

/// How long a blocking token operation waits for Redis.
const IO_TIMEOUT: Duration = Duration::from_secs(3);

/// The tokens of one fleet.
pub struct FleetTokens {
    client: redis::Client,
    keys: Keys,
    where_: String,
    cache: RwLock<Option<Vec<IssuedToken>>>,
}

impl fmt::Debug for FleetTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetTokens")
            .field("where", &self.where_)
            .finish()
    }
}

impl FleetTokens {
    pub fn new(client: redis::Client, keys: Keys, where_: String) -> Self {
        FleetTokens {
            client,
            keys,
            where_,
            cache: RwLock::new(None),
        }
    }

    fn unreachable(&self, e: impl fmt::Display) -> StoreError {
        StoreError::Shared(format!(
            "Cannot use the fleet's tokens in {}: {e}",
            self.where_
        ))
    }

    fn connection(&self) -> Result<redis::Connection, StoreError> {
        let conn = self
            .client
            .get_connection_with_timeout(IO_TIMEOUT)
            .map_err(|e| self.unreachable(e))?;
        conn.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| conn.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| self.unreachable(e))?;
        Ok(conn)
    }

    /// Replaces the copy in memory (the instance's refresh).
    pub fn set_cached(&self, tokens: Vec<IssuedToken>) {
        *self.cache.write().unwrap_or_else(|e| e.into_inner()) = Some(tokens);
    }
}

/// The tokens of a `HGETALL` answer, oldest first; entries that do not parse are skipped
/// (and named in `bad`).
pub fn parse_all(raw: HashMap<String, String>, bad: &mut Vec<String>) -> Vec<IssuedToken> {
    let mut tokens: Vec<IssuedToken> = raw
        .into_iter()
        .filter_map(
            |(id, json)| match serde_json::from_str::<IssuedToken>(&json) {
                Ok(t) if t.id == id => Some(t),
                _ => {
                    bad.push(id);
                    None
                }
            },
        )
        .collect();
    tokens.sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
    tokens
}

impl SharedTokens for FleetTokens {
    fn list(&self) -> Result<Vec<IssuedToken>, StoreError> {
        let mut conn = self.connection()?;
        let raw: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(self.keys.tokens())
            .query(&mut conn)
            .map_err(|e| self.unreachable(e))?;
        let mut bad = Vec::new();
        let tokens = parse_all(raw, &mut bad);
        if !bad.is_empty() {
            return Err(StoreError::Shared(format!(
                "{} holds entries that are not tokens ({}); delete them with HDEL",
                self.keys.tokens(),
                bad.join(", ")
            )));
        }
        Ok(tokens)
    }

    fn cached(&self) -> Option<Vec<IssuedToken>> {
        self.cache.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn change(&self, remove: &[String], add: Option<&IssuedToken>) -> Result<(), StoreError> {
        let mut conn = self.connection()?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        if !remove.is_empty() {
            pipe.cmd("HDEL")
                .arg(self.keys.tokens())
                .arg(remove)
                .ignore();
        }
        if let Some(t) = add {
            let json = serde_json::to_string(t).map_err(|e| self.unreachable(e))?;
            pipe.cmd("HSET")
                .arg(self.keys.tokens())
                .arg(&t.id)
                .arg(json)
                .ignore();
        }
        pipe.cmd("SET").arg(self.keys.meta()).arg("1").ignore();
        pipe.query::<()>(&mut conn)
            .map_err(|e| self.unreachable(e))?;
        // Every instance reloads the tokens now (and disconnects the browsers of removed
        // ones); one that misses this note reloads within its refresh period anyway.
        let mut notes = vec![Message::Tokens];
        for id in remove {
            notes.push(Message::Disconnect {
                target: None,
                token_id: Some(id.clone()),
                reason: "token revoked".to_string(),
            });
        }
        for note in notes {
            if let Ok(bytes) = serde_json::to_vec(&note) {
                let _: Result<i64, _> = redis::cmd("PUBLISH")
                    .arg(self.keys.fleet())
                    .arg(bytes)
                    .query(&mut conn);
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.where_.clone()
    }
}
