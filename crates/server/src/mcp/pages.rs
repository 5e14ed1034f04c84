//! Page tools as MCP tools: the tools that the web pages in the automation group's tabs
//! registered (BTCP providers, WebMCP), named `<namespace>.<method>` (or
//! `tab<id>.<namespace>.<method>` when two tabs offer the same name), marked as defined by the
//! page (untrusted) in their description, title, annotations and `_meta`, and the route of each
//! to `btcp_call`; read from the selected browser for tools/list, and watched while a session is
//! open so it hears `notifications/tools/list_changed`.

use super::backend::{Backend, IfGone, Whom};
use super::content::first_text;
use protocol::btcp::PageTools;
use protocol::CommandResult;
use rmcp::model::{Tool, ToolAnnotations};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Reading the group's page tools takes at most this long; a browser slower than that gets
/// tools/list with the catalog only.
const PAGE_TOOLS_BUDGET: Duration = Duration::from_secs(2);
/// How often an open MCP session checks whether the page tools changed.
pub(super) const PAGE_TOOLS_POLL: Duration = Duration::from_secs(3);

/// Where a listed page tool's calls go: `btcp_call {tabId, namespace, method}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub tab: i64,
    pub namespace: String,
    pub method: String,
}

impl Route {
    /// The arguments of the `btcp_call` that calls this page tool with `args`.
    pub(super) fn btcp_call(self, args: Map<String, Value>) -> Map<String, Value> {
        let mut call = Map::new();
        call.insert("tabId".into(), self.tab.into());
        call.insert("namespace".into(), self.namespace.into());
        call.insert("method".into(), self.method.into());
        call.insert("args".into(), Value::Object(args));
        call
    }
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

/// The page tools of the automation-group tabs (the tabs tabs_context_mcp lists) of the
/// browser `target` (or the only one), or `None` when they can't be read within
/// [`PAGE_TOOLS_BUDGET`] (no browser, several and none selected, a slow browser). A tab whose
/// tools can't be read is left out.
pub(super) async fn read(backend: &Backend, target: Whom) -> Option<PageToolList> {
    let read = async {
        // Reads the group without creating one.
        let mut read_group = Map::new();
        read_group.insert("createIfEmpty".into(), false.into());
        let context = ask(backend, "tabs_context_mcp", read_group, target.clone()).await?;
        let context: Value = serde_json::from_str(first_text(&context)?.lines().next()?).ok()?;
        let tabs: Vec<(i64, String)> = context["availableTabs"]
            .as_array()?
            .iter()
            .filter_map(|t| {
                Some((
                    t["tabId"].as_i64()?,
                    t["url"].as_str().unwrap_or_default().to_string(),
                ))
            })
            .collect();
        let reads = tabs.into_iter().map(|(tab, url)| {
            let target = target.clone();
            async move {
                let mut args = Map::new();
                args.insert("tabId".into(), tab.into());
                let answer = ask(backend, "btcp_interfaces", args, target).await?;
                let tools = serde_json::from_str(first_text(&answer)?).ok()?;
                Some((tab, url, tools))
            }
        });
        let tabs: Vec<_> = futures_util::future::join_all(reads)
            .await
            .into_iter()
            .flatten()
            .collect();
        Some(PageToolList::from_tabs(&tabs))
    };
    tokio::time::timeout(PAGE_TOOLS_BUDGET, read)
        .await
        .ok()
        .flatten()
}

/// One of the server's own reads, within [`PAGE_TOOLS_BUDGET`]: a server found gone is left for
/// the next client call to take over, so that call reports it.
async fn ask(
    backend: &Backend,
    tool: &str,
    args: Map<String, Value>,
    target: Whom,
) -> Option<CommandResult> {
    backend
        .run(tool, args, target, PAGE_TOOLS_BUDGET, IfGone::Leave)
        .await
        .ok()
}

/// What one MCP session knows of the page tools: the list it was last shown (in tools/list or
/// by a change notice), and a lock held while a change check runs, so checks never pile up.
#[derive(Clone, Default)]
pub(super) struct Shown {
    list: Arc<Mutex<PageToolList>>,
    checking: Arc<tokio::sync::Mutex<()>>,
}

impl Shown {
    fn list(&self) -> MutexGuard<'_, PageToolList> {
        self.list.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers `list` as shown (by tools/list).
    pub(super) fn set(&self, list: PageToolList) {
        *self.list() = list;
    }

    /// Where the page tool `name` goes: from the tools this session was shown or, failing that,
    /// the page tools of `target` as they are now.
    pub(super) async fn route(&self, backend: &Backend, target: Whom, name: &str) -> Option<Route> {
        let shown = self.list().route(name).cloned();
        match shown {
            Some(route) => Some(route),
            None => read(backend, target)
                .await
                .and_then(|list| list.route(name).cloned()),
        }
    }

    /// Reads the page tools of `target` and, when they differ from what this session was
    /// shown, tells the client with `notifications/tools/list_changed`. Skipped while another
    /// check runs.
    pub(super) async fn check(&self, backend: &Backend, target: Whom, peer: &Peer<RoleServer>) {
        let Ok(_checking) = self.checking.try_lock() else {
            return;
        };
        let Some(now) = read(backend, target).await else {
            return;
        };
        let changed = {
            let mut shown = self.list();
            let changed = *shown != now;
            *shown = now;
            changed
        };
        if changed {
            if let Err(e) = peer.notify_tool_list_changed().await {
                crate::log::line(format_args!(
                    "MCP: the tools/list_changed notice failed: {e}"
                ));
            }
        }
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
