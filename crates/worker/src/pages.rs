//! Requests from the extension's own pages (Options, popup, the activity log): read the state,
//! save a config and connect, connect, disconnect, save the settings, the parked pairing offer
//! (show, accept, dismiss), each connection's Connect, Disconnect and Remove, Stop and Resume,
//! the log (read, clear), the person's site rules and "always allowed" grants (Options), and
//! the answers to waiting approvals (popup). Pages hold no state; every decision is made here. Content scripts have their own narrow path:
//! only `pairOffer`.

use crate::js::to_js;
use crate::session::{self, Status};
use protocol::{ConfigError, ConnectionConfig};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

/// A page's request: `{type: "getState", ...}`. Read by hand in [`Request::read`] (as serde's
/// derive of an internally tagged enum reads it, without its `Content` buffering, which made
/// this one type about 50 KB of the worker's wasm).
enum Request {
    /// With `tab`: the answer also names what the worker keeps of that tab (`kept`).
    GetState {
        tab: Option<i32>,
    },
    SaveConfig {
        config: Value,
    },
    Connect,
    Disconnect,
    /// One connection of the list (`id` 0: the first).
    ConnectOne {
        id: u32,
    },
    DisconnectOne {
        id: u32,
    },
    RemoveConnection {
        id: u32,
    },
    GetOffer,
    AcceptOffer,
    DismissOffer,
    GetApprovals,
    /// The person's answer to a waiting approval: only ever from the extension's own pages.
    DecideApproval {
        id: u32,
        decision: crate::approvals::Decision,
    },
    GetSiteRules,
    SaveSiteRules {
        rules: Value,
    },
    RevokeGrant {
        site: String,
        tool: String,
    },
    /// The debugger's idle period, in whole minutes (0: never detach).
    SaveSettings {
        idle_minutes: Option<f64>,
    },
    /// The person's Stop: every running and queued command ends; paused until Resume.
    Stop,
    Resume,
    /// The log of the last commands, newest first.
    GetLog,
    ClearLog,
}

/// Every request type, as the pages write it.
const TYPES: &[&str] = &[
    "getState",
    "saveConfig",
    "connect",
    "disconnect",
    "connectOne",
    "disconnectOne",
    "removeConnection",
    "getOffer",
    "acceptOffer",
    "dismissOffer",
    "getApprovals",
    "decideApproval",
    "getSiteRules",
    "saveSiteRules",
    "revokeGrant",
    "saveSettings",
    "stop",
    "resume",
    "getLog",
    "clearLog",
];

impl Request {
    /// Reads a request as serde's derive would (`#[serde(tag = "type", rename_all =
    /// "camelCase")]`): the same errors ("missing field `type`", "unknown variant `x`, expected
    /// one of ...", "missing field `id`"), extra fields ignored.
    fn read(message: Value) -> Result<Request, serde_json::Error> {
        use serde::de::Error;
        let Value::Object(mut m) = message else {
            return Err(Error::invalid_type(
                protocol::json::unexpected(&message),
                &"internally tagged enum Request",
            ));
        };
        let kind: String = take(&mut m, "type")?;
        Ok(match kind.as_str() {
            "getState" => Request::GetState {
                tab: optional(&mut m, "tab")?,
            },
            "saveConfig" => Request::SaveConfig {
                config: take(&mut m, "config")?,
            },
            "connect" => Request::Connect,
            "disconnect" => Request::Disconnect,
            "connectOne" => Request::ConnectOne {
                id: take(&mut m, "id")?,
            },
            "disconnectOne" => Request::DisconnectOne {
                id: take(&mut m, "id")?,
            },
            "removeConnection" => Request::RemoveConnection {
                id: take(&mut m, "id")?,
            },
            "getOffer" => Request::GetOffer,
            "acceptOffer" => Request::AcceptOffer,
            "dismissOffer" => Request::DismissOffer,
            "getApprovals" => Request::GetApprovals,
            "decideApproval" => Request::DecideApproval {
                id: take(&mut m, "id")?,
                decision: take(&mut m, "decision")?,
            },
            "getSiteRules" => Request::GetSiteRules,
            "saveSiteRules" => Request::SaveSiteRules {
                rules: take(&mut m, "rules")?,
            },
            "revokeGrant" => Request::RevokeGrant {
                site: take(&mut m, "site")?,
                tool: take(&mut m, "tool")?,
            },
            "saveSettings" => Request::SaveSettings {
                idle_minutes: optional(&mut m, "idleMinutes")?,
            },
            "stop" => Request::Stop,
            "resume" => Request::Resume,
            "getLog" => Request::GetLog,
            "clearLog" => Request::ClearLog,
            other => return Err(Error::unknown_variant(other, TYPES)),
        })
    }
}

/// `key`'s value as a `T`; serde's "missing field" when absent.
fn take<T: serde::de::DeserializeOwned>(
    m: &mut serde_json::Map<String, Value>,
    key: &'static str,
) -> Result<T, serde_json::Error> {
    match m.remove(key) {
        Some(v) => crate::js::from_json(v),
        None => Err(serde::de::Error::missing_field(key)),
    }
}

/// `key`'s value as a `T`, `None` when absent (a field with `#[serde(default)]`).
fn optional<T: serde::de::DeserializeOwned>(
    m: &mut serde_json::Map<String, Value>,
    key: &'static str,
) -> Result<Option<T>, serde_json::Error> {
    m.remove(key)
        .map_or(Ok(None), crate::js::from_json::<Option<T>>)
}

/// The parked offer as the popup shows it: never the token.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OfferView {
    brand_name: Option<String>,
    origin: String,
    server_url: String,
    transport: &'static str,
    target: Option<String>,
    also_offered: Vec<String>,
    refused_count: u32,
}

/// A connection as the pages list it: never its token.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConnectionView {
    id: u32,
    server_url: String,
    transport: &'static str,
    target: Option<String>,
    /// Its tab group's title and colour.
    group_title: String,
    group_color: String,
    want: bool,
    status: Status,
}

/// Every connection there is, the first (when configured) first.
async fn connection_views() -> Vec<ConnectionView> {
    let mut views = Vec::new();
    let mut add = |id: u32, config: ConnectionConfig, want: bool, status: Status| {
        let look = crate::agent::look(&crate::agent::Agent::of(id, None));
        views.push(ConnectionView {
            id,
            server_url: config.server_url,
            transport: config.transport.as_str(),
            target: config.target,
            group_title: look.title,
            group_color: look.color,
            want,
            status,
        });
    };
    if let Some(first) = session::saved_config().await {
        add(
            0,
            first,
            session::first_wanted().await,
            session::status().await,
        );
    }
    for extra in session::extras().await {
        let status = session::status_of(extra.id).await;
        add(extra.id, extra.config, extra.want, status);
    }
    views
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct State {
    config: Option<ConnectionConfig>,
    status: Status,
    /// Every connection (the first is `config` and `status` too).
    connections: Vec<ConnectionView>,
    max_connections: usize,
    version: String,
    product_name: String,
    group_title: String,
    settings: crate::cdp::idle::Settings,
    /// The person paused the browser (Stop): no command runs until Resume.
    paused: bool,
    /// Asked about a tab: the stores that keep anything of it (a closed tab leaves none).
    #[serde(skip_serializing_if = "Option::is_none")]
    kept: Option<Vec<&'static str>>,
}

#[derive(Serialize)]
struct Reply<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

fn reply(result: Result<(), ConfigError>) -> JsValue {
    let r = match &result {
        Ok(()) => Reply {
            ok: true,
            field: None,
            message: None,
        },
        Err(e) => Reply {
            ok: false,
            field: Some(e.field),
            message: Some(e.message.clone()),
        },
    };
    to_js(&r).unwrap_or(JsValue::NULL)
}

/// "There is no connection N" when `found` is false.
fn known(id: u32, found: bool) -> Result<(), ConfigError> {
    if found {
        Ok(())
    } else {
        Err(ConfigError {
            field: "connection",
            message: format!("There is no connection {id} any more."),
        })
    }
}

/// Only the extension's own pages may talk to the worker this way: content scripts (whose
/// `sender.url` is the web page) and other extensions are refused.
fn from_own_page(sender: &JsValue) -> bool {
    let get = |k: &str| {
        js_sys::Reflect::get(sender, &JsValue::from_str(k))
            .ok()
            .and_then(|v| v.as_string())
    };
    let own_id = crate::chrome::runtime::id();
    let own_origin = format!("chrome-extension://{own_id}/");
    get("id").as_deref() == Some(own_id.as_str())
        && get("url").is_some_and(|u| u.starts_with(&own_origin))
}

/// The origin Chrome reports for a content script's page, when the message comes from this
/// extension's content script in a tab.
fn content_script_origin(sender: &JsValue) -> Option<String> {
    let get = |k: &str| js_sys::Reflect::get(sender, &JsValue::from_str(k)).ok();
    let own = get("id")?.as_string()? == crate::chrome::runtime::id();
    let in_tab = get("tab").is_some_and(|t| t.is_object());
    let top = get("frameId").and_then(|f| f.as_f64()) == Some(0.0);
    (own && in_tab && top).then(|| get("origin")?.as_string())?
}

async fn handle_content_script(message: JsValue, origin: String) -> JsValue {
    let message: Value = match crate::js::json_of(&message) {
        Ok(m) => m,
        Err(_) => return JsValue::UNDEFINED,
    };
    if message.get("type").and_then(Value::as_str) != Some("pairOffer") {
        return JsValue::UNDEFINED;
    }
    let ok = match crate::pairing::offer(&message, &origin).await {
        Ok(()) => true,
        Err(e) => {
            crate::js::log(&format!("ignored a pairing offer from {origin}: {e}"));
            false
        }
    };
    to_js(&serde_json::json!({ "ok": ok })).unwrap_or(JsValue::NULL)
}

pub async fn handle(message: JsValue, sender: JsValue) -> JsValue {
    if !from_own_page(&sender) {
        return match content_script_origin(&sender) {
            Some(origin) => handle_content_script(message, origin).await,
            None => JsValue::UNDEFINED,
        };
    }
    let request = match crate::js::json_of(&message)
        .and_then(|m| Request::read(m).map_err(|e| format!("unexpected value from Chrome: {e}")))
    {
        Ok(r) => r,
        Err(e) => {
            return reply(Err(ConfigError {
                field: "request",
                message: e,
            }))
        }
    };
    match request {
        Request::GetState { tab } => {
            let state = State {
                config: session::saved_config().await,
                status: session::status().await,
                connections: connection_views().await,
                max_connections: session::MAX_CONNECTIONS,
                version: crate::chrome::runtime::version(),
                product_name: crate::brand::brand().product_name,
                group_title: crate::brand::brand().group_title,
                settings: crate::cdp::idle::settings().await,
                paused: crate::control::paused().await,
                kept: tab.map(crate::lifetime::kept),
            };
            to_js(&state).unwrap_or(JsValue::NULL)
        }
        Request::SaveConfig { config } => {
            let parsed: Result<ConnectionConfig, ConfigError> = crate::js::from_json(config)
                .map_err(|e| ConfigError {
                    field: if e.to_string().contains("transport") {
                        "transport"
                    } else {
                        "serverUrl"
                    },
                    message: format!("The settings could not be read: {e}"),
                });
            match parsed {
                Ok(c) => reply(session::save_and_connect(c).await),
                Err(e) => reply(Err(e)),
            }
        }
        Request::Connect => {
            if session::saved_config()
                .await
                .is_some_and(|c| c.validate().is_ok())
            {
                session::set_wanted(true).await;
                reply(Ok(()))
            } else {
                reply(Err(ConfigError {
                    field: "token",
                    message: "Enter the server URL and token first.".into(),
                }))
            }
        }
        Request::Disconnect => {
            session::set_wanted(false).await;
            reply(Ok(()))
        }
        Request::ConnectOne { id } => {
            let usable = if id == 0 {
                session::saved_config()
                    .await
                    .is_some_and(|c| c.validate().is_ok())
            } else {
                session::extras()
                    .await
                    .iter()
                    .any(|e| e.id == id && e.config.validate().is_ok())
            };
            if usable && session::set_wanted_of(id, true).await {
                reply(Ok(()))
            } else {
                reply(Err(ConfigError {
                    field: "connection",
                    message: "This connection has no usable server URL and token any more: pair with its backend again.".into(),
                }))
            }
        }
        Request::DisconnectOne { id } => reply(known(id, session::set_wanted_of(id, false).await)),
        Request::RemoveConnection { id } => reply(known(id, session::remove(id).await)),
        Request::GetOffer => {
            let view = crate::pairing::parked().await.map(|p| OfferView {
                brand_name: p.offer.brand.name,
                origin: p.origin,
                server_url: p.offer.config.server_url,
                transport: p.offer.config.transport.as_str(),
                target: p.offer.config.target,
                also_offered: p.also_offered,
                refused_count: p.refused_count,
            });
            to_js(&serde_json::json!({ "offer": view })).unwrap_or(JsValue::NULL)
        }
        Request::AcceptOffer => reply(crate::pairing::accept().await),
        Request::DismissOffer => {
            crate::pairing::dismiss().await;
            reply(Ok(()))
        }
        Request::Stop => {
            crate::control::stop().await;
            reply(Ok(()))
        }
        Request::Resume => {
            crate::control::resume().await;
            reply(Ok(()))
        }
        Request::GetLog => to_js(&serde_json::json!({
            "entries": crate::journal::entries().await,
            "max": crate::journal::MAX,
        }))
        .unwrap_or(JsValue::NULL),
        Request::ClearLog => {
            crate::journal::clear().await;
            reply(Ok(()))
        }
        Request::GetApprovals => {
            to_js(&serde_json::json!({ "approvals": crate::approvals::waiting() }))
                .unwrap_or(JsValue::NULL)
        }
        Request::DecideApproval { id, decision } => reply(
            crate::approvals::decide(id, decision)
                .await
                .map_err(|message| ConfigError {
                    field: "approval",
                    message,
                }),
        ),
        Request::GetSiteRules => {
            let rules = crate::policy::site_rules::stored().await;
            let grants = crate::approvals::list_grants().await;
            to_js(&serde_json::json!({ "rules": rules, "grants": grants })).unwrap_or(JsValue::NULL)
        }
        Request::SaveSiteRules { rules } => {
            let saved = match crate::js::from_json::<crate::policy::site_rules::SiteRules>(rules) {
                Ok(rules) => crate::policy::save_site_rules(rules).await,
                Err(e) => Err(format!("The site rules could not be read: {e}")),
            };
            match saved {
                Ok(rules) => to_js(&serde_json::json!({ "ok": true, "rules": rules }))
                    .unwrap_or(JsValue::NULL),
                Err(message) => reply(Err(ConfigError {
                    field: "siteRules",
                    message,
                })),
            }
        }
        Request::RevokeGrant { site, tool } => reply(
            crate::approvals::revoke(&site, &tool)
                .await
                .map_err(|message| ConfigError {
                    field: "grants",
                    message,
                }),
        ),
        Request::SaveSettings { idle_minutes } => reply(
            crate::cdp::idle::save(idle_minutes)
                .await
                .map_err(|message| ConfigError {
                    field: "idleMinutes",
                    message,
                }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<Request, String> {
        Request::read(v).map_err(|e| e.to_string())
    }

    /// Read as serde's derive of `#[serde(tag = "type")]` read it: fields by name, optional ones
    /// absent or null, extra fields ignored, and serde's own errors.
    #[test]
    fn requests_read_as_the_derive_read_them() {
        assert!(matches!(
            read(json!({"type": "getState"})),
            Ok(Request::GetState { tab: None })
        ));
        assert!(matches!(
            read(json!({"type": "getState", "tab": null})),
            Ok(Request::GetState { tab: None })
        ));
        assert!(matches!(
            read(json!({"type": "getState", "tab": 7})),
            Ok(Request::GetState { tab: Some(7) })
        ));
        assert!(matches!(
            read(json!({"type": "stop", "extra": [1]})),
            Ok(Request::Stop)
        ));
        assert!(matches!(
            read(json!({"type": "decideApproval", "id": 3, "decision": "always"})),
            Ok(Request::DecideApproval {
                id: 3,
                decision: crate::approvals::Decision::Always
            })
        ));
        assert!(matches!(
            read(json!({"type": "saveSettings", "idleMinutes": 2.0})),
            Ok(Request::SaveSettings { idle_minutes: Some(m) }) if m == 2.0
        ));
        assert!(matches!(
            read(json!({"type": "revokeGrant", "site": "a.test", "tool": "navigate"})),
            Ok(Request::RevokeGrant { site, tool }) if site == "a.test" && tool == "navigate"
        ));
        assert_eq!(
            read(json!({"id": 1})).err().unwrap(),
            "missing field `type`"
        );
        assert_eq!(
            read(json!({"type": "connectOne"})).err().unwrap(),
            "missing field `id`"
        );
        assert_eq!(
            read(json!({"type": "connectOne", "id": "1"}))
                .err()
                .unwrap(),
            "invalid type: string \"1\", expected u32"
        );
        let unknown = read(json!({"type": "reboot"})).err().unwrap();
        assert!(
            unknown.starts_with("unknown variant `reboot`, expected one of `getState`, "),
            "{unknown}"
        );
        assert_eq!(
            read(json!("getState")).err().unwrap(),
            "invalid type: string \"getState\", expected internally tagged enum Request"
        );
    }
}
