//! The names of everything a fleet keeps in Redis, under its key prefix (see docs/DEPLOY.md).

/// The default key prefix (`--redis-prefix`).
pub const DEFAULT_PREFIX: &str = "browser-operator:";
/// The longest key prefix.
pub const MAX_PREFIX: usize = 64;

/// Key and channel names under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// `prefix` must pass [`check_prefix`].
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where a target's browser is connected (a string with a TTL, refreshed by the instance
    /// holding it).
    pub fn browser(&self, target: &str) -> String {
        format!("{}browser:{target}", self.prefix)
    }

    /// The pattern of every [`Keys::browser`] key (the prefix holds no glob characters).
    pub fn browsers_pattern(&self) -> String {
        format!("{}browser:*", self.prefix)
    }

    /// An instance's heartbeat (a string with a TTL).
    pub fn instance(&self, id: &str) -> String {
        format!("{}instance:{id}", self.prefix)
    }

    /// The channel an instance reads commands and results on.
    pub fn inbox(&self, id: &str) -> String {
        format!("{}to:{id}", self.prefix)
    }

    /// The channel every instance reads (token changes, disconnects).
    pub fn fleet(&self) -> String {
        format!("{}fleet", self.prefix)
    }

    /// The per-target tokens (a hash: token id → the token as JSON).
    pub fn tokens(&self) -> String {
        format!("{}tokens", self.prefix)
    }

    /// Set once tokens were written: its absence beside an empty token hash means Redis lost
    /// its data (restarted without persistence).
    pub fn meta(&self) -> String {
        format!("{}meta", self.prefix)
    }
}

/// A key prefix is 0 to [`MAX_PREFIX`] characters of `A-Z a-z 0-9 : _ . -` (no glob
/// characters, so a pattern of it matches only its own keys).
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.len() > MAX_PREFIX {
        return Err(format!(
            "the Redis key prefix is longer than {MAX_PREFIX} characters"
        ));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '.' | '-')))
    {
        return Err(format!(
            "the Redis key prefix may hold only letters, digits and : _ . - (found {c:?})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_prefixes() {
        let k = Keys::new("crm:");
        assert_eq!(k.browser("work"), "crm:browser:work");
        assert_eq!(k.browsers_pattern(), "crm:browser:*");
        assert_eq!(k.inbox("i1"), "crm:to:i1");
        assert!(check_prefix(DEFAULT_PREFIX).is_ok());
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("a*b").is_err());
        assert!(check_prefix(&"x".repeat(65)).is_err());
    }
}
