//! The main token, the shared secret of a server and its clients (the extension, `call`, MCP
//! over HTTP): which one is used (flag, environment or the token file), and creating that file
//! with a fresh random token when it doesn't exist. Also where the config directory is, and the
//! owner-only files and directories that it and the per-target token store
//! ([`crate::target_tokens`]) are written with.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Environment variable holding the token (second in the resolution order).
pub const TOKEN_ENV: &str = "BROWSER_OPERATOR_TOKEN";
/// Environment variable naming the config directory that holds the token file.
pub const CONFIG_DIR_ENV: &str = "BROWSER_OPERATOR_CONFIG_DIR";
/// File name of the token inside the config directory.
pub const TOKEN_FILE: &str = "token";

/// Random bytes in a generated token (hex-encoded to twice as many characters).
const TOKEN_BYTES: usize = 32;

/// Where a resolved token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Flag,
    Env,
    /// Read from this file.
    File(PathBuf),
    /// Generated and written to this file just now.
    Created(PathBuf),
}

/// A token and where it came from. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    pub source: TokenSource,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &"<hidden>")
            .field("source", &self.source)
            .finish()
    }
}

#[derive(Debug)]
pub enum TokenError {
    /// Neither `$BROWSER_OPERATOR_CONFIG_DIR`, `$XDG_CONFIG_HOME` nor `$HOME` is set.
    NoConfigDir,
    /// A token given or stored is unusable (empty, or contains spaces or control characters).
    Invalid {
        origin: String,
        reason: &'static str,
    },
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::NoConfigDir => write!(
                f,
                "Cannot find a config directory for the token file: set {CONFIG_DIR_ENV} or HOME, or pass --token"
            ),
            TokenError::Invalid { origin, reason } => write!(f, "The token from {origin} {reason}"),
            TokenError::Io {
                action,
                path,
                source,
            } => write!(f, "Cannot {action} {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for TokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Resolves the token from the process environment: `flag`, then `$BROWSER_OPERATOR_TOKEN`,
/// then the token file (created when missing).
pub fn resolve(flag: Option<&str>) -> Result<Token, TokenError> {
    resolve_with(flag, |name| std::env::var_os(name))
}

/// [`resolve`] with the environment passed in, so it can be tested without touching the
/// process environment.
pub fn resolve_with(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Token, TokenError> {
    if let Some(value) = flag {
        return Ok(Token {
            value: checked(value, "--token")?,
            source: TokenSource::Flag,
        });
    }
    // An empty variable counts as unset, as shells make it easy to export one by accident.
    if let Some(value) = env(TOKEN_ENV).filter(|v| !v.is_empty()) {
        let value = value.into_string().map_err(|_| TokenError::Invalid {
            origin: TOKEN_ENV.into(),
            reason: "is not valid UTF-8",
        })?;
        return Ok(Token {
            value: checked(&value, TOKEN_ENV)?,
            source: TokenSource::Env,
        });
    }
    let path = token_file_with(&env)?;
    load_or_create(&path)
}

/// The token file's path: `<config dir>/token`.
pub fn token_file() -> Result<PathBuf, TokenError> {
    token_file_with(|name| std::env::var_os(name))
}

/// [`token_file`] with the environment passed in.
pub fn token_file_with(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, TokenError> {
    config_dir_with(env).map(|dir| dir.join(TOKEN_FILE))
}

/// `$BROWSER_OPERATOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/browser-operator`, else
/// `$HOME/.config/browser-operator`. Empty or relative XDG/HOME values are ignored, as the
/// XDG spec says.
pub fn config_dir_with(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, TokenError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var(CONFIG_DIR_ENV) {
        return Ok(dir);
    }
    if let Some(xdg) = var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
        return Ok(xdg.join("browser-operator"));
    }
    if let Some(home) = var("HOME").filter(|p| p.is_absolute()) {
        return Ok(home.join(".config").join("browser-operator"));
    }
    Err(TokenError::NoConfigDir)
}

/// Reads the token stored at `path`, or creates the file (and its directory) with a new random
/// token: directory mode 0700, file mode 0600, both set at creation.
pub fn load_or_create(path: &Path) -> Result<Token, TokenError> {
    match read_token_file(path) {
        Ok(value) => {
            return Ok(Token {
                value,
                source: TokenSource::File(path.to_path_buf()),
            })
        }
        Err(TokenError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let io_err = |action, source| TokenError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(|source| TokenError::Io {
            action: "create the directory",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let value = generate().map_err(|source| io_err("generate a token for", source))?;
    match create_private_file(path) {
        Ok(mut file) => {
            file.write_all(format!("{value}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|source| io_err("write", source))?;
            Ok(Token {
                value,
                source: TokenSource::Created(path.to_path_buf()),
            })
        }
        // Another process created it between our read and create: use theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Token {
            value: read_token_file(path)?,
            source: TokenSource::File(path.to_path_buf()),
        }),
        Err(source) => Err(io_err("create", source)),
    }
}

/// A new token: 32 random bytes as 64 lowercase hex characters.
pub fn generate() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(io::Error::other)?;
    Ok(hex(&bytes))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

fn read_token_file(path: &Path) -> Result<String, TokenError> {
    let text = fs::read_to_string(path).map_err(|source| TokenError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })?;
    checked(text.trim(), &path.display().to_string())
}

/// Rejects what the extension's Options page would reject, so both sides agree.
fn checked(value: &str, origin: &str) -> Result<String, TokenError> {
    let invalid = |reason| TokenError::Invalid {
        origin: origin.to_string(),
        reason,
    };
    if value.is_empty() {
        return Err(invalid("is empty"));
    }
    if value.len() > protocol::config::MAX_TOKEN_LEN {
        return Err(invalid("is longer than 4096 characters"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("contains spaces or control characters"));
    }
    Ok(value.to_string())
}

#[cfg(unix)]
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).create(dir)
}

#[cfg(unix)]
pub(crate) fn create_private_file(path: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
pub(crate) fn create_private_file(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn temp_dir() -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "bo-token-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn flag_wins_then_env_then_file() {
        let dir = temp_dir();
        let dir_s = dir.to_str().unwrap();
        let e = env(&[(TOKEN_ENV, "from-env"), (CONFIG_DIR_ENV, dir_s)]);
        let t = resolve_with(Some("from-flag"), &e).unwrap();
        assert_eq!(
            (t.value.as_str(), t.source),
            ("from-flag", TokenSource::Flag)
        );
        let t = resolve_with(None, &e).unwrap();
        assert_eq!((t.value.as_str(), t.source), ("from-env", TokenSource::Env));
        // Neither consulted the file.
        assert!(!dir.exists());

        let e = env(&[(TOKEN_ENV, ""), (CONFIG_DIR_ENV, dir_s)]);
        let created = resolve_with(None, &e).unwrap();
        assert_eq!(created.source, TokenSource::Created(dir.join(TOKEN_FILE)));
        let again = resolve_with(None, &e).unwrap();
        assert_eq!(again.source, TokenSource::File(dir.join(TOKEN_FILE)));
        assert_eq!(again.value, created.value);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn config_dir_order() {
        let d = |pairs: &[(&str, &str)]| config_dir_with(env(pairs)).ok();
        assert_eq!(
            d(&[
                (CONFIG_DIR_ENV, "/a"),
                ("XDG_CONFIG_HOME", "/x"),
                ("HOME", "/h")
            ]),
            Some(PathBuf::from("/a"))
        );
        assert_eq!(
            d(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]),
            Some(PathBuf::from("/x/browser-operator"))
        );
        assert_eq!(
            d(&[("XDG_CONFIG_HOME", "relative"), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.config/browser-operator"))
        );
        assert_eq!(
            d(&[(CONFIG_DIR_ENV, ""), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.config/browser-operator"))
        );
        assert!(matches!(
            config_dir_with(env(&[])),
            Err(TokenError::NoConfigDir)
        ));
    }

    #[test]
    fn created_file_is_private_hex_and_reused() {
        let dir = temp_dir().join("nested");
        let path = dir.join(TOKEN_FILE);
        let t = load_or_create(&path).unwrap();
        assert_eq!(t.value.len(), 64);
        assert!(t
            .value
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_eq!(fs::read_to_string(&path).unwrap(), format!("{}\n", t.value));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir), 0o700);
        }
        assert_eq!(load_or_create(&path).unwrap().value, t.value);
        assert_ne!(generate().unwrap(), t.value);
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn bad_tokens_are_refused_with_their_origin() {
        let e = resolve_with(Some(""), env(&[])).unwrap_err();
        assert_eq!(e.to_string(), "The token from --token is empty");
        let e = resolve_with(None, env(&[(TOKEN_ENV, "a b")])).unwrap_err();
        assert!(e.to_string().contains(TOKEN_ENV), "{e}");
        let dir = temp_dir();
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(TOKEN_FILE), " \n").unwrap();
        let e = load_or_create(&dir.join(TOKEN_FILE)).unwrap_err();
        assert!(e.to_string().contains("is empty"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn debug_hides_the_token() {
        let t = Token {
            value: "secret".into(),
            source: TokenSource::Flag,
        };
        assert!(!format!("{t:?}").contains("secret"));
    }

    #[test]
    fn hex_encodes_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
    }
}
