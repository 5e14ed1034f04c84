//! The tool catalog: every tool the extension implements, with a description written for a
//! model and the JSON Schema of its arguments. The worker validates arguments against it and
//! the server lists it; nothing else holds a copy. The data is `catalog.json` next to this file
//! (a list of `{name, description, inputSchema}`, in the order an agent meets the tools), parsed
//! once: as data it costs the worker's wasm a fraction of what code building it did.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::OnceLock;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    /// Runs at once instead of after the commands already queued for its tab (commands for one
    /// tab otherwise run in order): only for tools that read something no command waits on,
    /// such as the page's registered tool list, so a backend can list it while a long command
    /// runs.
    #[serde(skip)]
    pub outside_tab_order: bool,
    /// Set only by the backend that drives the browser (over the protocol): the MCP server
    /// neither lists it to MCP clients nor forwards it from them, and code mode's `browser.*`
    /// does not offer it.
    #[serde(skip)]
    pub backend_only: bool,
}

/// One entry of `catalog.json`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Entry {
    name: String,
    description: String,
    input_schema: Value,
    #[serde(default)]
    outside_tab_order: bool,
    #[serde(default)]
    backend_only: bool,
}

const CATALOG_JSON: &str = include_str!("catalog.json");

/// The parsed catalog, kept for the life of the process (so its strings are `'static`).
fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    // The file is part of the build and the unit tests parse it, so this cannot fail at run time.
    ENTRIES.get_or_init(|| {
        serde_json::from_str(CATALOG_JSON)
            .and_then(crate::json::from_value)
            .expect("catalog.json is valid")
    })
}

impl Entry {
    fn spec(&'static self) -> ToolSpec {
        ToolSpec {
            name: &self.name,
            description: &self.description,
            input_schema: self.input_schema.clone(),
            outside_tab_order: self.outside_tab_order,
            backend_only: self.backend_only,
        }
    }
}

/// All tools, in the order an agent meets them.
pub fn catalog() -> Vec<ToolSpec> {
    entries().iter().map(Entry::spec).collect()
}

/// The spec of one tool, if it exists.
pub fn tool(name: &str) -> Option<ToolSpec> {
    entries().iter().find(|e| e.name == name).map(Entry::spec)
}

/// The JSON Schema of one tool's arguments, borrowed (no copy: the worker checks every
/// command's arguments against it).
pub fn input_schema(name: &str) -> Option<&'static Value> {
    entries()
        .iter()
        .find(|e| e.name == name)
        .map(|e| &e.input_schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_unique_and_schemas_are_objects() {
        let tools = catalog();
        let mut names: Vec<_> = tools.iter().map(|t| t.name).collect();
        crate::sort::sort_dedup(&mut names);
        assert_eq!(names.len(), tools.len());
        for t in &tools {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(t.description.len() > 20, "{}", t.name);
            if let Some(req) = t.input_schema.get("required").and_then(Value::as_array) {
                for r in req {
                    let r = r.as_str().unwrap();
                    assert!(
                        t.input_schema["properties"].get(r).is_some(),
                        "{}: required {r} has no property",
                        t.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_tab_tool_requires_tab_id() {
        for t in catalog() {
            if t.input_schema["properties"].get("tabId").is_some() {
                assert!(t.input_schema["required"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("tabId")));
            }
        }
    }

    #[test]
    fn every_tab_id_is_described_alike_and_reserved_tools_take_nothing() {
        let tab_id = json!({"type": "integer", "description": "A tab id from tabs_context_mcp. Only tabs in the automation tab group are accepted."});
        for t in catalog() {
            if let Some(p) = t.input_schema["properties"].get("tabId") {
                assert_eq!(p, &tab_id, "{}", t.name);
            }
        }
        for name in [
            "gif_creator",
            "shortcuts_list",
            "shortcuts_execute",
            "switch_browser",
        ] {
            let t = tool(name).expect("reserved tool listed");
            assert!(t.description.starts_with("Not available"), "{name}");
            assert_eq!(t.input_schema, json!({"type": "object", "properties": {}}));
        }
    }

    #[test]
    fn only_reading_the_page_tools_skips_the_tab_order() {
        let unordered: Vec<_> = catalog()
            .into_iter()
            .filter(|t| t.outside_tab_order)
            .map(|t| t.name)
            .collect();
        assert_eq!(unordered, ["btcp_interfaces"]);
    }

    #[test]
    fn only_the_policy_is_the_backends_alone() {
        let only: Vec<_> = catalog()
            .into_iter()
            .filter(|t| t.backend_only)
            .map(|t| t.name)
            .collect();
        assert_eq!(only, ["set_policy"]);
    }

    #[test]
    fn lookup() {
        assert!(tool("navigate").is_some());
        assert!(tool("nope").is_none());
    }
}
