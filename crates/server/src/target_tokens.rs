//! Per-target tokens: issuing, listing and revoking them in `tokens.json` beside the main token
//! file (owner-only permissions), and checking which one a browser presents. Tokens issued by
//! `browser-operator token issue` and by the /pair page both live here, so a paired browser
//! reconnects after a server restart and `token list|revoke` see it. The file is the source of
//! truth and is re-read at every check, so a token revoked by `browser-operator token revoke`
//! in another process is refused from then on; closing its live connection is
//! [`crate::relay::Relay::disconnect`]'s job. A server in a fleet (`serve --redis`) keeps them
//! in Redis instead, through a [`SharedTokens`] (`crate::fleet`).

use crate::secret::constant_time_eq;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// File name of the per-target token store inside the config directory.
pub const TOKENS_FILE: &str = "tokens.json";
/// At most this many per-target tokens are stored.
pub const MAX_TOKENS: usize = 256;
/// At most this many of them come from the /pair page: past that, pairing again revokes the
/// oldest paired token whose browser is not connected (a dismissed offer leaves one unused).
pub const MAX_PAIRED: usize = 64;

/// One issued token. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedToken {
    /// Public name of the token (`tok_` and 8 hex digits), used to revoke it.
    pub id: String,
    /// The only target a browser may connect as with this token.
    pub target: String,
    pub token: String,
    /// Unix time in milliseconds.
    pub created: u64,
    /// Issued by the /pair page (not by `token issue`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub paired: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedToken")
            .field("id", &self.id)
            .field("target", &self.target)
            .field("token", &"<hidden>")
            .field("created", &self.created)
            .field("paired", &self.paired)
            .finish()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    tokens: Vec<IssuedToken>,
}

/// Why the store could not be read or changed.
#[derive(Debug)]
pub enum StoreError {
    Io {
        path: PathBuf,
        source: io::Error,
    },
    Corrupt {
        path: PathBuf,
        reason: String,
    },
    BadTarget(String),
    Full,
    NotFound(String),
    /// The shared store (the fleet's Redis) could not be read or changed.
    Shared(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, source } => write!(f, "Cannot use {}: {source}", path.display()),
            StoreError::Corrupt { path, reason } => write!(
                f,
                "{} is not a valid token store ({reason}); fix or delete it",
                path.display()
            ),
            StoreError::BadTarget(why) => write!(f, "Invalid target: {why}"),
            StoreError::Full => write!(
                f,
                "There are already {MAX_TOKENS} per-target tokens; revoke some first"
            ),
            StoreError::NotFound(what) => write!(
                f,
                "No token has the id or target '{what}' (see `browser-operator token list`)"
            ),
            StoreError::Shared(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for StoreError {}

/// Tokens kept where several servers share them (a fleet's Redis), implemented above this
/// module (`crate::fleet`).
pub trait SharedTokens: Send + Sync + fmt::Debug {
    /// Every token, read now from the shared store.
    fn list(&self) -> Result<Vec<IssuedToken>, StoreError>;
    /// The tokens as last read (what checking a browser's token uses: no I/O); `None` before
    /// the first read.
    fn cached(&self) -> Option<Vec<IssuedToken>>;
    /// Removes the tokens with the ids `remove` and adds `add`, at once, and tells every server.
    fn change(&self, remove: &[String], add: Option<&IssuedToken>) -> Result<(), StoreError>;
    /// Where the tokens are, for messages (never with a password).
    fn describe(&self) -> String;
}

/// The per-target tokens in one file, or in a [`SharedTokens`]. A store without either holds
/// no tokens.
#[derive(Debug, Clone, Default)]
pub struct TokenStore {
    path: Option<PathBuf>,
    shared: Option<Arc<dyn SharedTokens>>,
}

impl TokenStore {
    pub fn at(path: impl Into<PathBuf>) -> Self {
        TokenStore {
            path: Some(path.into()),
            shared: None,
        }
    }

    /// Tokens kept in `shared` (a fleet's Redis).
    pub fn shared(shared: Arc<dyn SharedTokens>) -> Self {
        TokenStore {
            path: None,
            shared: Some(shared),
        }
    }

    /// Whether tokens can be kept (a file or a shared store).
    pub fn can_store(&self) -> bool {
        self.path.is_some() || self.shared.is_some()
    }

    /// How many tokens a browser's token is checked against now (a shared store's copy).
    pub fn known(&self) -> usize {
        match &self.shared {
            Some(shared) => shared.cached().map_or(0, |t| t.len()),
            None => self.list().map_or(0, |t| t.len()),
        }
    }

    /// Where the tokens are kept, for messages.
    pub fn location(&self) -> Option<String> {
        match (&self.shared, &self.path) {
            (Some(shared), _) => Some(shared.describe()),
            (None, Some(path)) => Some(path.display().to_string()),
            (None, None) => None,
        }
    }

    /// `tokens.json` in the config directory (see [`crate::main_token::config_dir_with`]); a store
    /// that holds nothing when there is no config directory.
    pub fn from_env() -> Self {
        match crate::main_token::config_dir_with(|name| std::env::var_os(name)) {
            Ok(dir) => TokenStore::at(dir.join(TOKENS_FILE)),
            Err(_) => TokenStore::none(),
        }
    }

    /// A store that holds nothing (servers started without a config directory).
    pub fn none() -> Self {
        TokenStore::default()
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Every stored token; an absent file is an empty store.
    pub fn list(&self) -> Result<Vec<IssuedToken>, StoreError> {
        if let Some(shared) = &self.shared {
            return shared.list();
        }
        let Some(path) = &self.path else {
            return Ok(Vec::new());
        };
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.clone(),
                    source,
                })
            }
        };
        let file: StoreFile = serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Ok(file.tokens)
    }

    /// The stored token equal to `presented`, compared in constant time against every entry.
    /// An unreadable store matches nothing.
    pub fn find(&self, presented: &str) -> Option<IssuedToken> {
        let tokens = match &self.shared {
            Some(shared) => shared.cached()?,
            None => self.list().ok()?,
        };
        let mut found = None;
        for t in tokens {
            if constant_time_eq(t.token.as_bytes(), presented.as_bytes()) && found.is_none() {
                found = Some(t);
            }
        }
        found
    }

    /// Issues a new random token for `target` and stores it.
    pub fn issue(&self, target: &str) -> Result<IssuedToken, StoreError> {
        self.add(target, false, |_| true)
    }

    /// Issues a token for a browser paired through the /pair page. Beyond [`MAX_PAIRED`] paired
    /// tokens, the oldest one whose target is not `connected` now is revoked first.
    pub fn issue_paired(
        &self,
        target: &str,
        connected: impl Fn(&str) -> bool,
    ) -> Result<IssuedToken, StoreError> {
        self.add(target, true, connected)
    }

    fn add(
        &self,
        target: &str,
        paired: bool,
        connected: impl Fn(&str) -> bool,
    ) -> Result<IssuedToken, StoreError> {
        protocol::config::check_target(target).map_err(|e| StoreError::BadTarget(e.to_string()))?;
        let mut tokens = self.list()?;
        let mut pruned = Vec::new();
        if paired && tokens.iter().filter(|t| t.paired).count() >= MAX_PAIRED {
            if let Some(oldest) = tokens
                .iter()
                .position(|t| t.paired && !connected(&t.target))
            {
                pruned.push(tokens.remove(oldest).id);
            }
        }
        if tokens.len() >= MAX_TOKENS {
            return Err(StoreError::Full);
        }
        let io_err = |source| StoreError::Io {
            path: self.path.clone().unwrap_or_default(),
            source,
        };
        let token = crate::main_token::generate().map_err(io_err)?;
        let mut id = [0u8; 4];
        getrandom::fill(&mut id).map_err(|e| io_err(io::Error::other(e)))?;
        let issued = IssuedToken {
            id: format!("tok_{}", crate::main_token::hex(&id)),
            target: target.to_string(),
            token,
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            paired,
        };
        if let Some(shared) = &self.shared {
            shared.change(&pruned, Some(&issued))?;
            return Ok(issued);
        }
        tokens.push(issued.clone());
        self.save(tokens)?;
        Ok(issued)
    }

    /// Removes the token with id `which`, or every token of target `which`; returns them.
    pub fn revoke(&self, which: &str) -> Result<Vec<IssuedToken>, StoreError> {
        let tokens = self.list()?;
        let (gone, kept): (Vec<_>, Vec<_>) = tokens
            .into_iter()
            .partition(|t| t.id == which || t.target == which);
        if gone.is_empty() {
            return Err(StoreError::NotFound(which.to_string()));
        }
        if let Some(shared) = &self.shared {
            let ids: Vec<String> = gone.iter().map(|t| t.id.clone()).collect();
            shared.change(&ids, None)?;
            return Ok(gone);
        }
        self.save(kept)?;
        Ok(gone)
    }

    /// Writes the whole store through a private temporary file renamed into place, so a reader
    /// never sees half a file.
    fn save(&self, tokens: Vec<IssuedToken>) -> Result<(), StoreError> {
        let Some(path) = &self.path else {
            return Err(StoreError::Io {
                path: PathBuf::new(),
                source: io::Error::other("no config directory for the token store"),
            });
        };
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::main_token::create_private_dir(dir).map_err(io_err)?;
        }
        let text = serde_json::to_string_pretty(&StoreFile { tokens })
            .map_err(|e| io_err(io::Error::other(e)))?;
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let mut file = crate::main_token::create_private_file(&tmp).map_err(io_err)?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io_err)?;
        fs::rename(&tmp, path).map_err(io_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store() -> (PathBuf, TokenStore) {
        let dir = std::env::temp_dir().join(format!(
            "bo-tokens-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        let store = TokenStore::at(dir.join(TOKENS_FILE));
        (dir, store)
    }

    #[test]
    fn issue_find_list_revoke() {
        let (dir, store) = temp_store();
        assert!(store.list().unwrap().is_empty());
        let a = store.issue("work").unwrap();
        let b = store.issue("home").unwrap();
        assert_eq!(a.token.len(), 64);
        assert!(a.id.starts_with("tok_"));
        assert_ne!(a.token, b.token);
        assert_eq!(store.find(&a.token).unwrap().target, "work");
        assert!(store.find("nope").is_none());
        assert_eq!(store.list().unwrap().len(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(store.path().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(store.revoke(&a.id).unwrap(), vec![a.clone()]);
        assert!(store.find(&a.token).is_none());
        assert_eq!(store.revoke("home").unwrap(), vec![b]);
        assert!(matches!(store.revoke("home"), Err(StoreError::NotFound(_))));
        assert!(matches!(
            store.issue("bad target"),
            Err(StoreError::BadTarget(_))
        ));
        assert!(!format!("{a:?}").contains(&a.token));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn paired_tokens_persist_and_the_oldest_unconnected_goes_past_the_bound() {
        let (dir, store) = temp_store();
        let manual = store.issue("laptop").expect("issue");
        let first = store.issue_paired("browser-1", |_| false).expect("pair");
        let second = store.issue_paired("browser-2", |_| false).expect("pair");
        assert!(first.paired && !manual.paired);
        // Another handle on the same file (a restarted server) knows it.
        let again = TokenStore::at(store.path().expect("path"));
        assert_eq!(again.find(&first.token), Some(first.clone()));
        assert_eq!(again.revoke("browser-2").expect("revoke"), vec![second]);

        // Full of paired tokens: the oldest whose browser is not connected makes room.
        for i in 1..MAX_PAIRED {
            store
                .issue_paired(&format!("browser-x{i}"), |_| false)
                .expect("pair");
        }
        let connected = |t: &str| t == "browser-1";
        let newest = store
            .issue_paired("browser-new", connected)
            .expect("pair past the bound");
        let kept = store.list().expect("list");
        assert_eq!(kept.iter().filter(|t| t.paired).count(), MAX_PAIRED);
        assert!(store.find(&first.token).is_some(), "a connected one stays");
        assert!(
            !kept.iter().any(|t| t.target == "browser-x1"),
            "the oldest unconnected one went"
        );
        assert!(store.find(&newest.token).is_some());
        assert!(
            store.find(&manual.token).is_some(),
            "issued tokens are never pruned"
        );
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn corrupt_store_says_so_and_matches_nothing() {
        let (dir, store) = temp_store();
        fs::create_dir_all(&dir).unwrap();
        fs::write(store.path().unwrap(), "{not json").unwrap();
        let e = store.list().unwrap_err().to_string();
        assert!(e.contains("not a valid token store"), "{e}");
        assert!(store.find("x").is_none());
        assert!(TokenStore::none().list().unwrap().is_empty());
        fs::remove_dir_all(dir).unwrap();
    }
}
