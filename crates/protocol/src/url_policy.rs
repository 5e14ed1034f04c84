//! Which addresses a group tab may show, and which a command may send it to: the web (`http:`,
//! `https:`) and `about:blank`. Everything else is outside the automation boundary: the
//! extension's own pages and other extensions' (they run with an extension's privileges),
//! browser pages (`chrome:`, `devtools:`, `view-source:`, the Web Store), local files, and, as
//! navigations, `javascript:`, `data:` and another origin's `blob:` URLs. One policy, used by every
//! path that changes or acts on a group tab's address; a refusal names the rule that refused.

use crate::host_rules::{HostPolicy, HostRefusal, Owner};
use std::fmt;

/// The rule that refused an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `file:` and `filesystem:`.
    LocalFile,
    /// `javascript:` as a navigation.
    Script,
    /// `data:` as a navigation.
    Data,
    ViewSource,
    /// `chrome:`, `chrome-untrusted:`, `about:` pages other than blank, and the like (the scheme).
    BrowserPage(String),
    /// `chrome-extension:`: this extension's own pages or another extension's.
    ExtensionPage,
    DevTools,
    WebStore,
    /// A `blob:` URL of another origin than the page the tab shows (as a navigation), or of an
    /// origin that is not the web (as a page).
    ForeignBlob,
    /// Any other scheme (`mailto:`, `ftp:`, `ws:`, …).
    OtherScheme(String),
    Empty,
    /// A web host the backend's URL policy refuses (`set_policy`'s `allowedHosts`,
    /// `blockedHosts`), or the person's site rules (Options) do (`HostRefusal::by`).
    Host(HostRefusal),
}

impl Refusal {
    /// The rule, as a clause: "file: URLs (local files) are outside what an agent may open".
    pub fn rule(&self) -> String {
        match self {
            Refusal::LocalFile => {
                "file: URLs (local files) are outside what an agent may open".into()
            }
            Refusal::Script => {
                "javascript: URLs are not navigations (to run code in a page, use javascript_tool)"
                    .into()
            }
            Refusal::Data => {
                "data: URLs are not opened as pages (serve the content over http(s) instead)".into()
            }
            Refusal::ViewSource => {
                "view-source: pages are browser pages (read the page itself with get_page_text or read_page)".into()
            }
            Refusal::BrowserPage(scheme) => format!(
                "{scheme} pages are the browser's own (settings, history, passwords) and outside the automation boundary"
            ),
            Refusal::ExtensionPage => {
                "extension pages (chrome-extension:) run with an extension's privileges and are outside the automation boundary".into()
            }
            Refusal::DevTools => {
                "devtools: pages are the browser's developer tools and outside the automation boundary".into()
            }
            Refusal::WebStore => {
                "the Chrome Web Store is a browser page that extensions may not automate".into()
            }
            Refusal::ForeignBlob => {
                "blob: URLs are opened only from a web page of the same origin".into()
            }
            Refusal::OtherScheme(scheme) => format!(
                "{scheme} URLs are not web pages (only http(s) URLs and about:blank may be opened)"
            ),
            Refusal::Empty => "an empty URL names no page".into(),
            Refusal::Host(h) => h.rule(),
        }
    }

    /// The error of a navigation that was refused.
    pub fn navigation_error(&self, url: &str) -> String {
        let instead = match self {
            Refusal::Host(h) if h.by == Owner::Person => {
                "Only the person can change their site rules: navigate to another site instead"
            }
            Refusal::Host(_) => "Navigate to a host the URL policy allows instead",
            _ => "Navigate to an http(s) URL instead",
        };
        format!(
            "Cannot navigate to {}. Refused: {}. {instead}.",
            shown(url),
            self.rule()
        )
    }

    /// The error of a command on a tab that shows a refused page.
    pub fn page_error(&self, tab: i32, url: &str) -> String {
        let to = match self {
            Refusal::Host(h) if h.by == Owner::Person => "a site the person's rules allow",
            Refusal::Host(_) => "a host the URL policy allows",
            _ => "an http(s) URL",
        };
        format!(
            "Tab {tab} shows {}, which no tool may read or act on. Refused: {}. Navigate the tab to {to} (navigate with a URL works from here), close it, or use another tab.",
            shown(url),
            self.rule()
        )
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Refused: {}.", self.rule())
    }
}

/// A URL as it may appear in an error: at most 200 characters.
fn shown(url: &str) -> String {
    if url.chars().count() > 200 {
        format!("{}…", url.chars().take(200).collect::<String>())
    } else {
        url.to_string()
    }
}

/// What a URL parser ignores: leading and trailing C0 controls and spaces, and tabs and line
/// breaks anywhere (so `java\nscript:` is `javascript:`).
fn clean(url: &str) -> String {
    url.trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

/// Schemes written without `//`: a word before `:` is one of these, or a host (`localhost:8080`).
const OPAQUE: [&str; 11] = [
    "about",
    "data",
    "javascript",
    "view-source",
    "blob",
    "mailto",
    "tel",
    "filesystem",
    "file",
    "chrome",
    "chrome-extension",
];

/// The URL's scheme, lowercased, if it has one.
fn scheme(url: &str) -> Option<String> {
    let (candidate, rest) = url.split_once(':')?;
    let mut chars = candidate.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid {
        return None;
    }
    let lower = candidate.to_ascii_lowercase();
    if rest.starts_with("//") || rest.starts_with("\\\\") || OPAQUE.contains(&lower.as_str()) {
        return Some(lower);
    }
    // `localhost:8080/x`, `example.com:443`: a host and a port.
    if rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(lower)
}

/// `https://` added to an address without a scheme (`example.com/a`, `localhost:8080`).
pub fn normalize(url: &str) -> String {
    let url = clean(url);
    if url.is_empty() || scheme(&url).is_some() {
        url
    } else {
        format!("https://{url}")
    }
}

/// The host of a hierarchical URL (`scheme://[user@]host[:port]/…`), lowercased, without port.
fn host(url: &str) -> String {
    let after = url.split_once(':').map_or("", |(_, r)| r);
    let after = after.trim_start_matches(['/', '\\']);
    let authority = after.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or("");
    let host = if authority.starts_with('[') {
        authority.split(']').next().map_or("", |h| h).to_string() + "]"
    } else {
        authority.split(':').next().unwrap_or("").to_string()
    };
    host.to_ascii_lowercase().trim_end_matches('.').to_string()
}

/// `scheme://host[:port]` of an http(s) URL, default ports left out; `None` for other URLs.
fn web_origin(url: &str) -> Option<String> {
    let scheme = scheme(url)?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let after = url.split_once(':').map_or("", |(_, r)| r);
    let after = after.trim_start_matches(['/', '\\']);
    let authority = after.split(['/', '\\', '?', '#']).next().unwrap_or("");
    let authority = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let default = if scheme == "http" { ":80" } else { ":443" };
    let authority = authority.strip_suffix(default).unwrap_or(&authority);
    Some(format!("{scheme}://{authority}"))
}

fn is_web_store(url: &str) -> bool {
    let host = host(url);
    if host == "chromewebstore.google.com" {
        return true;
    }
    if host == "chrome.google.com" {
        let after = url.split_once("://").map_or("", |(_, r)| r);
        let path = after.find(['/', '\\']).map_or("", |i| &after[i..]);
        return path
            .to_ascii_lowercase()
            .replace('\\', "/")
            .starts_with("/webstore");
    }
    false
}

/// Whether a tab showing `url` may be read and acted on (checked before every tool that takes a
/// tab, at every debugger attach, and on each history entry a step would return to).
pub fn check_page(url: &str) -> Result<(), Refusal> {
    let url = clean(url);
    if url.is_empty() {
        return Err(Refusal::Empty);
    }
    let Some(scheme) = scheme(&url) else {
        return Err(Refusal::OtherScheme("scheme-less".into()));
    };
    let rest = &url[scheme.len() + 1..];
    match scheme.as_str() {
        "http" | "https" if is_web_store(&url) => Err(Refusal::WebStore),
        "http" | "https" => Ok(()),
        "about" => {
            let page = rest.split(['?', '#']).next().unwrap_or("");
            if page.eq_ignore_ascii_case("blank") || page.eq_ignore_ascii_case("srcdoc") {
                Ok(())
            } else {
                Err(Refusal::BrowserPage("about:".into()))
            }
        }
        // A page made of its URL has an opaque origin and no privileges: readable once shown
        // (a person typed it); navigate never opens one.
        "data" => Ok(()),
        "blob" => {
            if rest.starts_with("null/") {
                Ok(())
            } else if web_origin(rest).is_some() {
                check_page(rest).map_err(|_| Refusal::ForeignBlob)
            } else {
                Err(match check_page(rest) {
                    Err(Refusal::ExtensionPage) => Refusal::ExtensionPage,
                    _ => Refusal::ForeignBlob,
                })
            }
        }
        _ => Err(refused_scheme(&scheme)),
    }
}

fn refused_scheme(scheme: &str) -> Refusal {
    match scheme {
        "file" | "filesystem" => Refusal::LocalFile,
        "javascript" => Refusal::Script,
        "data" => Refusal::Data,
        "view-source" => Refusal::ViewSource,
        "chrome-extension" | "extension" | "moz-extension" => Refusal::ExtensionPage,
        "devtools" => Refusal::DevTools,
        "chrome" | "chrome-untrusted" | "chrome-search" | "chrome-native" | "chrome-error"
        | "edge" | "brave" | "opera" | "vivaldi" => Refusal::BrowserPage(format!("{scheme}:")),
        other => Refusal::OtherScheme(format!("{other}:")),
    }
}

/// Whether a command may send a tab to `url` (`https://` added to a bare host): returns the URL
/// to load. `current` is the page the tab shows now (a `blob:` URL is opened only from a page
/// of its own origin).
pub fn check_navigation(url: &str, current: Option<&str>) -> Result<String, Refusal> {
    let url = normalize(url);
    if url.is_empty() {
        return Err(Refusal::Empty);
    }
    match scheme(&url).as_deref() {
        Some("javascript") => return Err(Refusal::Script),
        Some("data") => return Err(Refusal::Data),
        Some("blob") => {
            let inner = web_origin(&url["blob:".len()..]);
            let here = current.map(clean).and_then(|c| web_origin(&c));
            if inner.is_none() || inner != here {
                return Err(match check_page(&url) {
                    Err(Refusal::ExtensionPage) => Refusal::ExtensionPage,
                    _ => Refusal::ForeignBlob,
                });
            }
        }
        _ => {}
    }
    check_page(&url)?;
    Ok(url)
}

/// [`check_page`], then the backend's hosts: the one policy every group tab's page is held to.
pub fn check_page_with(url: &str, hosts: &HostPolicy) -> Result<(), Refusal> {
    check_page(url)?;
    hosts.check_url(&clean(url)).map_err(Refusal::Host)
}

/// [`check_navigation`], then the backend's hosts: returns the URL to load.
pub fn check_navigation_with(
    url: &str,
    current: Option<&str>,
    hosts: &HostPolicy,
) -> Result<String, Refusal> {
    let url = check_navigation(url, current)?;
    hosts.check_url(&url).map_err(Refusal::Host)?;
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backends_hosts_are_the_second_half_of_the_one_policy() {
        let hosts = HostPolicy::new(Some(&["example.com".into()]), &["bad.example.com".into()])
            .expect("valid");
        assert_eq!(
            check_navigation_with("www.example.com/a", None, &hosts).as_deref(),
            Ok("https://www.example.com/a")
        );
        // The scheme boundary first: its rule is the one named.
        assert_eq!(
            check_navigation_with("file:///etc/passwd", None, &hosts),
            Err(Refusal::LocalFile)
        );
        let e = check_navigation_with("https://example.com@evil.test/", None, &hosts).unwrap_err();
        assert_eq!(
            e.navigation_error("https://example.com@evil.test/"),
            "Cannot navigate to https://example.com@evil.test/. Refused: the URL policy refuses the host evil.test (it is not among the allowed hosts). Navigate to a host the URL policy allows instead."
        );
        let page = check_page_with("https://bad.example.com/x", &hosts).unwrap_err();
        assert!(page
            .page_error(4, "https://bad.example.com/x")
            .contains("Refused: the URL policy refuses the host bad.example.com (it is a blocked host). Navigate the tab to a host the URL policy allows"));
        assert_eq!(check_page_with("about:blank", &hosts), Ok(()));
        assert_eq!(check_page_with("blob:null/1", &hosts), Ok(()));
    }

    #[test]
    fn web_pages_and_about_blank_are_allowed() {
        for (given, loaded) in [
            ("example.com/a", "https://example.com/a"),
            ("http://127.0.0.1:9/x", "http://127.0.0.1:9/x"),
            ("  https://example.com  ", "https://example.com"),
            ("localhost:8080/x", "https://localhost:8080/x"),
            ("example.com:443", "https://example.com:443"),
            ("HTTPS://EXAMPLE.COM", "HTTPS://EXAMPLE.COM"),
            ("about:blank", "about:blank"),
        ] {
            assert_eq!(
                check_navigation(given, None).as_deref(),
                Ok(loaded),
                "{given}"
            );
        }
        for page in [
            "https://example.com",
            "about:blank",
            "about:srcdoc",
            "data:text/html,hi",
            "blob:https://example.com/1d2c",
            "blob:null/1d2c",
        ] {
            assert_eq!(check_page(page), Ok(()), "{page}");
        }
    }

    #[test]
    fn every_scheme_outside_the_web_is_refused_with_its_rule() {
        let id = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
        for (url, rule) in [
            ("file:///etc/passwd", Refusal::LocalFile),
            ("FILE:///etc/passwd", Refusal::LocalFile),
            ("file:/etc/passwd", Refusal::LocalFile),
            ("filesystem:http://a.test/temporary/x", Refusal::LocalFile),
            ("javascript:alert(1)", Refusal::Script),
            ("  JavaScript:alert(1)", Refusal::Script),
            ("java\nscr\tipt:alert(1)", Refusal::Script),
            ("data:text/html,<script>1</script>", Refusal::Data),
            ("view-source:https://example.com", Refusal::ViewSource),
            ("chrome://settings", Refusal::BrowserPage("chrome:".into())),
            ("chrome:settings", Refusal::BrowserPage("chrome:".into())),
            (
                "chrome-untrusted://terminal/",
                Refusal::BrowserPage("chrome-untrusted:".into()),
            ),
            ("about:settings", Refusal::BrowserPage("about:".into())),
            ("edge://flags", Refusal::BrowserPage("edge:".into())),
            (
                "devtools://devtools/bundled/inspector.html",
                Refusal::DevTools,
            ),
            (
                &format!("{id}/extension/options.html"),
                Refusal::ExtensionPage,
            ),
            ("Chrome-Extension://x/popup.html", Refusal::ExtensionPage),
            (&format!("blob:{id}/5e1a"), Refusal::ExtensionPage),
            ("blob:https://other.test/5e1a", Refusal::ForeignBlob),
            (
                "https://chromewebstore.google.com/detail/x",
                Refusal::WebStore,
            ),
            ("https://CHROMEWEBSTORE.google.com./", Refusal::WebStore),
            ("https://chrome.google.com/webstore/x", Refusal::WebStore),
            (
                "https://u@chromewebstore.google.com:443/",
                Refusal::WebStore,
            ),
            ("mailto:a@b.test", Refusal::OtherScheme("mailto:".into())),
            ("ftp://example.com/", Refusal::OtherScheme("ftp:".into())),
            ("ws://example.com/", Refusal::OtherScheme("ws:".into())),
            ("", Refusal::Empty),
            (" \t", Refusal::Empty),
        ] {
            assert_eq!(
                check_navigation(url, Some("https://example.com/")),
                Err(rule),
                "{url}"
            );
        }
        assert!(check_navigation("https://chrome.google.com/search", None).is_ok());
    }

    #[test]
    fn pages_shown_are_checked_as_strictly_except_data() {
        for (url, rule) in [
            ("file:///tmp/x.html", Refusal::LocalFile),
            (
                "chrome-extension://abc/extension/options.html",
                Refusal::ExtensionPage,
            ),
            ("chrome://newtab/", Refusal::BrowserPage("chrome:".into())),
            ("devtools://devtools/x", Refusal::DevTools),
            ("view-source:https://a.test/", Refusal::ViewSource),
            ("blob:chrome://x/1", Refusal::ForeignBlob),
            ("about:version", Refusal::BrowserPage("about:".into())),
            ("javascript:1", Refusal::Script),
        ] {
            assert_eq!(check_page(url), Err(rule), "{url}");
        }
    }

    #[test]
    fn blob_urls_open_only_from_their_own_origin() {
        let blob = "blob:http://a.test:8080/5e1a";
        assert!(check_navigation(blob, Some("http://a.test:8080/page")).is_ok());
        assert!(check_navigation(blob, Some("HTTP://A.TEST:8080")).is_ok());
        assert_eq!(
            check_navigation(blob, Some("http://a.test:8081/page")),
            Err(Refusal::ForeignBlob)
        );
        assert_eq!(check_navigation(blob, None), Err(Refusal::ForeignBlob));
        assert!(check_navigation("blob:https://a.test/1", Some("https://a.test:443/x")).is_ok());
    }

    #[test]
    fn errors_say_which_rule_refused_and_what_to_do() {
        let e = check_navigation("file:///etc/passwd", None).unwrap_err();
        assert_eq!(
            e.navigation_error("file:///etc/passwd"),
            "Cannot navigate to file:///etc/passwd. Refused: file: URLs (local files) are outside what an agent may open. Navigate to an http(s) URL instead."
        );
        assert_eq!(
            e.to_string(),
            "Refused: file: URLs (local files) are outside what an agent may open."
        );
        let page = Refusal::ExtensionPage.page_error(7, "chrome-extension://x/o.html");
        assert!(
            page.starts_with("Tab 7 shows chrome-extension://x/o.html"),
            "{page}"
        );
        assert!(
            page.contains("Navigate the tab to an http(s) URL"),
            "{page}"
        );
        let long = format!("https://a.test/{}", "x".repeat(500));
        assert!(Refusal::WebStore.navigation_error(&long).len() < 400);
    }
}
