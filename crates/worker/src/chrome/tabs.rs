//! chrome.tabs: look up, create, update, group and close tabs.

use crate::js::settle;
use crate::js::{error_text, from_js, to_js};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = get)]
    fn get_tab(tab_id: i32) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = query)]
    fn query_tabs(query: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = create)]
    fn create_tab(props: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = update)]
    fn update_tab(tab_id: i32, props: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = remove)]
    fn remove_tab(tab_id: i32) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = group)]
    fn group_tabs(options: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabs"], js_name = connect)]
    fn connect_to(tab_id: i32, info: &JsValue) -> Result<super::runtime::Port, JsValue>;
}

/// The fields of `tabs.Tab` the worker reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tab {
    pub id: Option<i32>,
    pub window_id: i32,
    #[serde(default = "no_group")]
    pub group_id: i32,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub pending_url: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub opener_tab_id: Option<i32>,
}

/// `chrome.tabGroups.TAB_GROUP_ID_NONE`.
pub const NO_GROUP: i32 = -1;

fn no_group() -> i32 {
    NO_GROUP
}

fn fail(op: &str, e: JsValue) -> String {
    format!("chrome.tabs.{op}: {}", error_text(&e))
}

pub async fn get(tab_id: i32) -> Result<Tab, String> {
    from_js(settle(get_tab(tab_id)).await.map_err(|e| fail("get", e))?)
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_id: Option<i32>,
}

pub async fn query(q: &Query) -> Result<Vec<Tab>, String> {
    from_js(
        settle(query_tabs(&to_js(q)?))
            .await
            .map_err(|e| fail("query", e))?,
    )
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CreateProperties<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_id: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    pub active: bool,
}

pub async fn create(props: &CreateProperties<'_>) -> Result<Tab, String> {
    from_js(
        settle(create_tab(&to_js(props)?))
            .await
            .map_err(|e| fail("create", e))?,
    )
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct UpdateProperties<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

pub async fn update(tab_id: i32, props: &UpdateProperties<'_>) -> Result<Tab, String> {
    from_js(
        settle(update_tab(tab_id, &to_js(props)?))
            .await
            .map_err(|e| fail("update", e))?,
    )
}

pub async fn remove(tab_id: i32) -> Result<(), String> {
    settle(remove_tab(tab_id))
        .await
        .map(drop)
        .map_err(|e| fail("remove", e))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupOptions<'a> {
    tab_ids: &'a [i32],
    #[serde(skip_serializing_if = "Option::is_none")]
    group_id: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    create_properties: Option<GroupCreateProperties>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupCreateProperties {
    window_id: i32,
}

/// Adds tabs to `group_id`, or to a new group in `window_id`; returns the group's id.
pub async fn group(tab_ids: &[i32], target: GroupTarget) -> Result<i32, String> {
    let (group_id, create_properties) = match target {
        GroupTarget::Existing(id) => (Some(id), None),
        GroupTarget::NewInWindow(window_id) => (None, Some(GroupCreateProperties { window_id })),
    };
    let opts = to_js(&GroupOptions {
        tab_ids,
        group_id,
        create_properties,
    })?;
    from_js(
        settle(group_tabs(&opts))
            .await
            .map_err(|e| fail("group", e))?,
    )
}

pub enum GroupTarget {
    Existing(i32),
    NewInWindow(i32),
}

/// Opens a port named `name` to the extension's content script in a tab's top frame. Where no
/// content script listens (a page it does not run in, or one loaded before the extension), the
/// port is returned all the same and disconnects at once.
pub fn connect(tab_id: i32, name: &str) -> Result<super::runtime::Port, String> {
    let info = to_js(&serde_json::json!({"frameId": 0, "name": name}))?;
    connect_to(tab_id, &info).map_err(|e| fail("connect", e))
}
