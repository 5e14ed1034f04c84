//! The Browser Operator service worker. `extension/worker.js` loads this wasm, registers every
//! chrome.* listener synchronously and hands the events to the functions exported here.

mod active;
mod activity;
mod agent;
mod approvals;
mod boundary;
mod boundary_guard;
mod brand;
mod btcp;
mod cdp;
mod changes;
mod chrome;
mod content_script;
mod control;
mod debugging_bar;
mod file_input;
mod geometry;
mod group;
mod images;
mod isolated_world;
mod journal;
mod js;
mod lifetime;
mod pages;
mod pairing;
mod policy;
mod session;
mod tools;
mod transport;
mod vec_map;
mod watchdog;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

/// The worker started (install, browser start, or Chrome woke it for an event).
#[wasm_bindgen]
pub fn boot() {
    policy::use_browser_hosts();
    // The connection first: the storage it needs was read as the worker started
    // (extension/early-reads.js), so its WebSocket opens in this task, and its handshake goes
    // on in the network service while the rest of the boot computes, a task later.
    spawn_local(session::resume());
    spawn_local(async {
        js::sleep_ms(0).await;
        // What every command reads first (the policies, the paused state) is read now, beside
        // the connect, not at the first command.
        spawn_local(policy::ready());
        spawn_local(async {
            control::paused().await;
        });
        // Group tabs still attached from before a restart are recorded again at once.
        spawn_local(lifetime::resume());
        // A sign left up by a worker that stopped while a command ran comes down.
        spawn_local(activity::resume());
    });
}

/// `chrome.commands.onCommand`: the person's keyboard shortcut for Stop.
#[wasm_bindgen(js_name = onShortcut)]
pub async fn on_shortcut(name: String) {
    if name == "stop-agent" {
        control::stop().await;
    }
}

/// A `chrome.alarms` alarm: the backstop that reconnects after Chrome stopped the worker.
#[wasm_bindgen(js_name = onAlarm)]
pub fn on_alarm(name: String) {
    if name == session::ALARM {
        spawn_local(session::resume());
    }
    if name == cdp::idle::ALARM {
        spawn_local(lifetime::idle_alarm());
    }
}

/// `chrome.storage.local.onChanged` for the debugger's idle period: applied at once.
#[wasm_bindgen(js_name = onIdleSettingChanged)]
pub fn on_idle_setting_changed() {
    cdp::idle::setting_changed();
}

/// `chrome.debugger.onDetach`: forget the session so the next command attaches again.
#[wasm_bindgen(js_name = onDebuggerDetach)]
pub fn on_debugger_detach(source: JsValue) {
    let tab = js_sys::Reflect::get(&source, &JsValue::from_str("tabId"))
        .ok()
        .and_then(|v| v.as_f64());
    if let Some(tab) = tab {
        cdp::on_detach(tab as i32);
        cdp::record::on_detach(tab as i32);
        cdp::idle::forget(tab as i32);
    }
}

/// `chrome.debugger.onEvent`: CDP events of attached tabs, recorded by `cdp::record`.
#[wasm_bindgen(js_name = onDebuggerEvent)]
pub fn on_debugger_event(source: JsValue, method: String, params: JsValue) {
    let tab = js_sys::Reflect::get(&source, &JsValue::from_str("tabId"))
        .ok()
        .and_then(|v| v.as_f64());
    let Some(tab) = tab else { return };
    let session = js_sys::Reflect::get(&source, &JsValue::from_str("sessionId"))
        .ok()
        .and_then(|v| v.as_string());
    let params = js::json_of(&params).unwrap_or(serde_json::Value::Null);
    boundary_guard::on_event(tab as i32, session.as_deref(), &method, &params);
    cdp::record::on_event(tab as i32, session.as_deref(), &method, &params);
}

/// `chrome.tabs.onCreated`: a tab opened by a group tab (window.open, target=_blank) joins the
/// group and is recorded from the start.
#[wasm_bindgen(js_name = onTabCreated)]
pub fn on_tab_created(tab: JsValue) {
    let Ok(tab) = js::from_js::<chrome::tabs::Tab>(tab) else {
        return;
    };
    if let Some(id) = tab.id {
        debugging_bar::tab_created(id);
    }
    let Some(id) = tab.id else { return };
    if !tab.opener_tab_id.is_some_and(policy::rules::covers) {
        // Not opened by a group tab: someone else's, which the rules for tabs a group tab's
        // page opens leave alone.
        policy::rules::other(id);
    }
    let Some(opener) = tab.opener_tab_id else {
        return;
    };
    spawn_local(async move {
        // A tab a group tab opened is held to the URL policy from now, before it is known to
        // join the group (it leaves the rules again if it does not).
        if let Some(owner) = policy::rules::owner(opener) {
            if let Err(e) = policy::rules::cover(id, &agent::Agent::from_key(&owner)).await {
                js::log(&format!("tab {id} opened by {opener}: {e}"));
            }
        }
        if let Err(e) = lifetime::adopt(id, opener).await {
            js::log(&format!("tab {id} opened by {opener}: {e}"));
        }
    });
}

/// `chrome.tabs.onUpdated` with a `groupId` change: a tab that joins the automation group is
/// recorded from now on; one that leaves it is no longer watched.
#[wasm_bindgen(js_name = onTabGroupChanged)]
pub fn on_tab_group_changed(tab: i32, group: i32) {
    spawn_local(lifetime::group_changed(tab, group));
}

/// `chrome.tabs.onUpdated` of a tab that is or was in a group, with the tab as it is now: the
/// automation group's tabs as last reported (`group::reported`) stay current.
#[wasm_bindgen(js_name = onTabUpdated)]
pub fn on_tab_updated(tab: JsValue) {
    match js::from_js::<chrome::tabs::Tab>(tab) {
        Ok(tab) => {
            if let Some(id) = tab.id {
                activity::tab_updated(id);
            }
            policy::rules::shows(&tab);
            group::tab_updated(tab);
        }
        Err(e) => js::log(&format!("chrome.tabs.onUpdated: {e}")),
    }
}

/// `chrome.tabs.onReplaced` and `onAttached`: the tab is asked about again at its next command.
#[wasm_bindgen(js_name = onTabChanged)]
pub fn on_tab_changed(tab: i32) {
    group::tab_gone(tab);
}

/// `webNavigation.onErrorOccurred` with `net::ERR_BLOCKED_BY_CLIENT`: a request rule refused a
/// page or frame of the tab; reported when it was the URL policy's.
#[wasm_bindgen(js_name = onNavigationBlocked)]
pub fn on_navigation_blocked(tab: i32, url: String) {
    policy::navigation_blocked(tab, &url);
}

/// `chrome.storage.local.onChanged` of `siteRules`: the person's site rules are read again.
#[wasm_bindgen(js_name = onSiteRulesChanged)]
pub async fn on_site_rules_changed() {
    policy::site_rules_changed().await;
}

/// `chrome.storage.local.onChanged` of `approvalGrants`: read again at the next approval.
#[wasm_bindgen(js_name = onApprovalGrantsChanged)]
pub fn on_approval_grants_changed() {
    approvals::grants_changed();
}

/// The changes waiting for the next state report, as JSON, without draining them (a
/// diagnostic for tests and embedding code in the worker; see worker.js).
#[wasm_bindgen(js_name = pendingChanges)]
pub fn pending_changes() -> String {
    serde_json::to_string(&changes::peek()).unwrap_or_else(|_| "[]".into())
}

/// `chrome.tabs.onRemoved`: everything kept of the closed tab goes.
#[wasm_bindgen(js_name = onTabRemoved)]
pub fn on_tab_removed(tab: i32) {
    lifetime::forget(tab);
    policy::closed(tab);
}

/// `chrome.runtime.onMessage`: requests from the extension's own pages (Options). The answer
/// is passed to `sendResponse`.
/// `chrome.runtime.onMessage`: requests from the extension's own pages (Options, popup) and
/// pairing offers from the content script. The answer is passed to `sendResponse`.
#[wasm_bindgen(js_name = onMessage)]
pub async fn on_message(message: JsValue, sender: JsValue) -> JsValue {
    pages::handle(message, sender).await
}

/// The direct transport: a command `{id, tool, args}` run in-process through the same dispatch
/// as every network transport, answered with its result `{commandId, result | error}`. Used by
/// tests and embedding code in the worker (`self.browserOperator.run`, see worker.js).
#[wasm_bindgen(js_name = runCommand)]
pub async fn run_command(command: JsValue) -> JsValue {
    let command: protocol::Command = match js::from_js(command) {
        Ok(c) => c,
        Err(e) => {
            return js::to_js(&serde_json::json!({
                "commandId": "",
                "error": format!("Malformed command: {e}; send {{id, tool, args}}"),
            }))
            .unwrap_or(JsValue::NULL)
        }
    };
    let (outcome, paused) = session::execute(&command.tool, command.args).await;
    let result = protocol::CommandResult {
        command_id: command.id,
        outcome,
        paused,
    };
    js::to_js(&result).unwrap_or(JsValue::NULL)
}
