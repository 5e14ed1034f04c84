//! Page tools as MCP tools: the tools that the web pages in the automation group's tabs
//! registered (BTCP providers, WebMCP), named `<namespace>.<method>` (or
//! `tab<id>.<namespace>.<method>` when two tabs offer the same name), marked as defined by the
//! page (untrusted) in their description, title, annotations and `_meta`, and the route of each
//! to `btcp_call`.

use protocol::btcp::PageTools;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Where a listed page tool's calls go: `btcp_call {tabId, namespace, method}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub tab: i64,
    pub namespace: String,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq)]
struct PageTool {
    name: String,
    description: String,
    schema: Map<String, Value>,
    route: Route,
}

/// The page tools of a set of tabs, as listed to one MCP session. Two lists are equal when a
/// client would see the same tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PageToolList {
    tools: Vec<PageTool>,
}

/// The longest page URL put into a description.
const MAX_URL: usize = 200;

impl PageToolList {
    /// The page tools of `tabs` (`(tabId, url, the tab's btcp_interfaces answer)`), in tab
    /// order. A name offered by several tabs is qualified with the tab id in every tab.
    pub fn from_tabs(tabs: &[(i64, String, PageTools)]) -> PageToolList {
        let mut count: HashMap<String, usize> = HashMap::new();
        for (_, _, page) in tabs {
            for tool in page.listed() {
                *count.entry(tool.name).or_default() += 1;
            }
        }
        let mut tools = Vec::new();
        for (tab, url, page) in tabs {
            let url: String = url.chars().take(MAX_URL).collect();
            for tool in page.listed() {
                let Some((namespace, method)) = tool.name.split_once('.') else {
                    continue;
                };
                let name = if count.get(&tool.name).copied().unwrap_or(0) > 1 {
                    format!("tab{tab}.{}", tool.name)
                } else {
                    tool.name.clone()
                };
                let schema = match tool.input_schema {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                tools.push(PageTool {
                    description: format!("{} (Page tool of tab {tab}, {url}.)", tool.description),
                    route: Route {
                        tab: *tab,
                        namespace: namespace.to_string(),
                        method: method.to_string(),
                    },
                    name,
                    schema,
                });
            }
        }
        PageToolList { tools }
    }

    /// Where the tool called `name` goes, if this list has it.
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.tools.iter().find(|t| t.name == name).map(|t| &t.route)
    }

    /// The tools as MCP tools.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|t| {
                let title = format!("{} (web page tool, untrusted)", t.name);
                let meta = json!({"browserOperator": {
                    "definedBy": "page",
                    "untrusted": true,
                    "tabId": t.route.tab,
                    "namespace": t.route.namespace,
                    "method": t.route.method,
                }});
                let mut tool = Tool::new(t.name.clone(), t.description.clone(), t.schema.clone())
                    .with_title(title.clone())
                    .with_annotations(ToolAnnotations::with_title(title).open_world(true));
                if let Value::Object(meta) = meta {
                    tool = tool.with_meta(meta.into());
                }
                tool
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(namespaces: Value) -> PageTools {
        serde_json::from_value(json!({"revision": 1, "namespaces": namespaces})).unwrap()
    }

    fn todo() -> Value {
        json!({"namespace": "todo", "source": "btcp", "interface": {"name": "Todo", "version": "1", "methods": [
            {"name": "add", "description": "Add a todo.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
        ]}})
    }

    fn browser() -> Value {
        json!({"namespace": "browser", "source": "browser", "interface": {"name": "browser", "version": "1", "methods": [
            {"name": "navigate", "description": "Go.", "inputSchema": {"type": "object"}}
        ]}})
    }

    #[test]
    fn page_tools_are_named_by_namespace_and_marked_untrusted() {
        let list =
            PageToolList::from_tabs(&[(7, "http://a/".into(), page(json!([browser(), todo()])))]);
        let tools = list.tools();
        assert_eq!(tools.len(), 1, "the built-in namespace is not listed again");
        let v = serde_json::to_value(&tools[0]).unwrap();
        assert_eq!(v["name"], "todo.add");
        let description = v["description"].as_str().unwrap();
        assert!(description.starts_with("[Defined by the web page, untrusted] Add a todo."));
        assert!(description.contains("tab 7"), "{description}");
        assert_eq!(v["annotations"]["openWorldHint"], true);
        assert_eq!(v["_meta"]["browserOperator"]["untrusted"], true);
        assert_eq!(v["inputSchema"]["properties"]["text"]["type"], "string");
        assert_eq!(
            list.route("todo.add"),
            Some(&Route {
                tab: 7,
                namespace: "todo".into(),
                method: "add".into()
            })
        );
        assert_eq!(list.route("todo.remove"), None);
    }

    #[test]
    fn a_name_offered_by_two_tabs_is_qualified_with_the_tab() {
        let list = PageToolList::from_tabs(&[
            (1, "http://a/".into(), page(json!([todo()]))),
            (2, "http://b/".into(), page(json!([todo()]))),
        ]);
        let names: Vec<_> = list.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["tab1.todo.add", "tab2.todo.add"]);
        assert_eq!(list.route("tab2.todo.add").map(|r| r.tab), Some(2));
        assert_eq!(list.route("todo.add"), None);
    }
}
