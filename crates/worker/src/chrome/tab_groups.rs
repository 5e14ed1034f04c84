//! chrome.tabGroups: find and label the automation group.

use crate::js::settle;
use crate::js::{error_text, from_js, to_js};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabGroups"], js_name = get)]
    fn get_group(group_id: i32) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabGroups"], js_name = query)]
    fn query_groups(query: &JsValue) -> Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(catch, js_namespace = ["chrome", "tabGroups"], js_name = update)]
    fn update_group(group_id: i32, props: &JsValue) -> Result<js_sys::Promise, JsValue>;
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabGroup {
    pub id: i32,
    #[serde(default)]
    pub title: Option<String>,
}

/// The group, or `None` when Chrome no longer knows it.
pub async fn get(group_id: i32) -> Option<TabGroup> {
    from_js(settle(get_group(group_id)).await.ok()?).ok()
}

#[derive(Serialize)]
struct TitleQuery<'a> {
    title: &'a str,
}

pub async fn query_by_title(title: &str) -> Result<Vec<TabGroup>, String> {
    let q = to_js(&TitleQuery { title })?;
    from_js(
        settle(query_groups(&q))
            .await
            .map_err(|e| format!("chrome.tabGroups.query: {}", error_text(&e)))?,
    )
}

#[derive(Serialize)]
pub struct Look<'a> {
    pub title: &'a str,
    pub color: &'a str,
    pub collapsed: bool,
}

pub async fn update(group_id: i32, look: &Look<'_>) -> Result<(), String> {
    settle(update_group(group_id, &to_js(look)?))
        .await
        .map(drop)
        .map_err(|e| format!("chrome.tabGroups.update: {}", error_text(&e)))
}

#[derive(Serialize)]
struct Title<'a> {
    title: &'a str,
}

/// Sets only the group's title.
pub async fn set_title(group_id: i32, title: &str) -> Result<(), String> {
    settle(update_group(group_id, &to_js(&Title { title })?))
        .await
        .map(drop)
        .map_err(|e| format!("chrome.tabGroups.update: {}", error_text(&e)))
}
