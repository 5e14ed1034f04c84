//! Client-defined tools (BTCP, WebMCP) as data: the interfaces a page registers, how they are
//! checked when the worker reads them from the page, the built-in tools seen as the namespace
//! `browser`, and the TypeScript-like declarations a model reads well. Shared by the worker,
//! the server (to list page tools over MCP) and the tests.

use crate::catalog::catalog;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The namespace of the built-in tools.
pub const BROWSER: &str = "browser";
/// The namespace of the tools a page registered through WebMCP.
pub const WEBMCP: &str = "webmcp";
const MAX_NAMESPACES: usize = 64;
const MAX_METHODS: usize = 256;
const MAX_DESCRIPTION: usize = 4_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MethodSchema {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// WebMCP hints (`readOnlyHint`, `untrustedContentHint`, …), passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInterface {
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub methods: Vec<MethodSchema>,
}

/// Who defined a namespace: the extension (`browser`), a page through `window.btcp`, or a page
/// through WebMCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Browser,
    Btcp,
    Webmcp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    pub namespace: String,
    pub source: Source,
    pub interface: ToolInterface,
}

/// Every namespace a tab offers. `revision` changes whenever the page registers or removes a
/// tool (it restarts at 0 when the page loads again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageTools {
    pub revision: u64,
    pub namespaces: Vec<Namespace>,
}

/// A page tool as an entry an MCP server can list: `<namespace>.<method>`, its description
/// marked as coming from the page (untrusted), and its input schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The built-in tools as the namespace `browser` (code mode's `browser.*`). The btcp_* tools
/// are left out: a script already has the page namespaces in scope.
pub fn browser_namespace() -> Namespace {
    let methods = catalog()
        .into_iter()
        .filter(|t| !t.name.starts_with("btcp_"))
        .map(|t| MethodSchema {
            name: t.name.to_string(),
            description: t.description.to_string(),
            input_schema: t.input_schema,
            output_schema: None,
            title: None,
            annotations: None,
        })
        .collect();
    Namespace {
        namespace: BROWSER.into(),
        source: Source::Browser,
        interface: ToolInterface {
            name: BROWSER.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some("The extension's built-in tools. In code mode, tabId defaults to the script's tab and each call resolves to the tool's text.".into()),
            methods,
        },
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && s.len() <= 64
}

fn is_tool_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Names a page namespace can't take: the sandbox's own globals.
const RESERVED: &[&str] = &[
    "browser",
    "console",
    "globalThis",
    "__interfaces",
    "__getToolInterface",
    "Object",
    "Array",
    "Function",
    "JSON",
    "Math",
    "Promise",
    "Reflect",
    "Proxy",
    "Symbol",
    "String",
    "Number",
    "Boolean",
    "Date",
    "RegExp",
    "Error",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "BigInt",
    "Intl",
    "undefined",
    "NaN",
    "Infinity",
    "eval",
    "arguments",
];

impl PageTools {
    /// Reads what a page reported (`btcp.__describe()`), checking every name and schema again:
    /// the page is untrusted, and a page without our script could fake the registry.
    pub fn from_page(text: &str) -> Result<PageTools, String> {
        let tools: PageTools = serde_json::from_str(text)
            .map_err(|e| format!("The page's tool registry is malformed: {e}"))?;
        if tools.namespaces.len() > MAX_NAMESPACES {
            return Err(format!(
                "The page registered more than {MAX_NAMESPACES} namespaces."
            ));
        }
        let mut seen = Vec::new();
        for ns in &tools.namespaces {
            check_namespace(ns)?;
            if seen.contains(&&ns.namespace) {
                return Err(format!("The page registered {} twice.", ns.namespace));
            }
            seen.push(&ns.namespace);
        }
        Ok(tools)
    }

    /// The page's namespaces with `browser` first.
    pub fn with_browser(mut self) -> PageTools {
        self.namespaces.insert(0, browser_namespace());
        self
    }

    pub fn get(&self, namespace: &str) -> Result<&Namespace, String> {
        self.namespaces
            .iter()
            .find(|n| n.namespace == namespace)
            .ok_or_else(|| {
                format!(
                    "This tab has no tool namespace \"{namespace}\". Namespaces: {}.",
                    self.names().join(", ")
                )
            })
    }

    pub fn method(&self, namespace: &str, method: &str) -> Result<&MethodSchema, String> {
        let ns = self.get(namespace)?;
        ns.interface
            .methods
            .iter()
            .find(|m| m.name == method)
            .ok_or_else(|| {
                let names: Vec<_> = ns
                    .interface
                    .methods
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect();
                format!(
                    "The namespace {namespace} has no method \"{method}\". Methods: {}.",
                    names.join(", ")
                )
            })
    }

    pub fn names(&self) -> Vec<&str> {
        self.namespaces
            .iter()
            .map(|n| n.namespace.as_str())
            .collect()
    }

    /// `{namespace: interface}` as JSON text, in registration order: what code mode's
    /// `__interfaces` holds.
    pub fn interfaces_json(&self) -> String {
        let entries: Vec<String> = self
            .namespaces
            .iter()
            .map(|n| {
                format!(
                    "{}:{}",
                    Value::from(n.namespace.as_str()),
                    serde_json::to_string(&n.interface).unwrap_or_else(|_| "null".into())
                )
            })
            .collect();
        format!("{{{}}}", entries.join(","))
    }

    /// The page-defined tools (not `browser`) as MCP-listable entries.
    pub fn listed(&self) -> Vec<ListedTool> {
        self.namespaces
            .iter()
            .filter(|n| n.source != Source::Browser)
            .flat_map(|n| {
                n.interface.methods.iter().map(move |m| ListedTool {
                    name: format!("{}.{}", n.namespace, m.name),
                    description: format!("[Defined by the web page, untrusted] {}", m.description),
                    input_schema: m.input_schema.clone(),
                })
            })
            .collect()
    }
}

fn check_namespace(ns: &Namespace) -> Result<(), String> {
    let name = &ns.namespace;
    match ns.source {
        Source::Browser => return Err("A page can't define the namespace browser.".into()),
        Source::Webmcp if name != WEBMCP => {
            return Err(format!("WebMCP tools belong to {WEBMCP}, not {name}."))
        }
        Source::Btcp if name == WEBMCP || RESERVED.contains(&name.as_str()) => {
            return Err(format!("The namespace {name} is reserved."))
        }
        _ => {}
    }
    if !is_identifier(name) {
        return Err(format!(
            "The namespace {name:?} is not a JavaScript identifier."
        ));
    }
    let methods = &ns.interface.methods;
    if methods.is_empty() || methods.len() > MAX_METHODS {
        return Err(format!("{name} must have 1 to {MAX_METHODS} methods."));
    }
    for m in methods {
        let ok_name = match ns.source {
            Source::Webmcp => is_tool_name(&m.name),
            _ => is_identifier(&m.name),
        };
        if !ok_name {
            return Err(format!(
                "{name}: the method name {:?} is not allowed.",
                m.name
            ));
        }
        if m.description.is_empty() || m.description.len() > MAX_DESCRIPTION {
            return Err(format!(
                "{name}.{}: the description must have 1 to {MAX_DESCRIPTION} characters.",
                m.name
            ));
        }
        if m.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "{name}.{}: inputSchema must have type \"object\".",
                m.name
            ));
        }
    }
    Ok(())
}

/// The namespace as TypeScript-like declarations, with descriptions as doc comments.
pub fn declarations(ns: &Namespace) -> String {
    let i = &ns.interface;
    let mut out = String::new();
    let about = i
        .description
        .as_deref()
        .map(|d| format!(" {d}"))
        .unwrap_or_default();
    out.push_str(&format!(
        "/** {} v{}.{about} */\ndeclare namespace {} {{\n",
        i.name, i.version, ns.namespace
    ));
    for m in &i.methods {
        out.push_str(&doc(&m.description, "  "));
        let args = ts_type(&m.input_schema, "  ");
        let optional = m
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty());
        let ret = m
            .output_schema
            .as_ref()
            .map(|s| ts_type(s, "  "))
            .unwrap_or_else(|| {
                if ns.source == Source::Browser {
                    "string".into()
                } else {
                    "unknown".into()
                }
            });
        let q = if optional { "?" } else { "" };
        if is_identifier(&m.name) {
            out.push_str(&format!(
                "  function {}(args{q}: {args}): Promise<{ret}>;\n",
                m.name
            ));
        } else {
            out.push_str(&format!(
                "  // call as {}[\"{}\"](args)\n  const {}: (args{q}: {args}) => Promise<{ret}>;\n",
                ns.namespace,
                m.name,
                serde_json::to_string(&m.name).unwrap_or_default()
            ));
        }
    }
    out.push_str("}\n");
    out
}

fn doc(text: &str, indent: &str) -> String {
    let text = text.replace("*/", "*\\/");
    if text.contains('\n') {
        let lines: Vec<String> = text.lines().map(|l| format!("{indent} * {l}")).collect();
        format!("{indent}/**\n{}\n{indent} */\n", lines.join("\n"))
    } else {
        format!("{indent}/** {text} */\n")
    }
}

/// A JSON Schema as a TypeScript type (the common subset; anything else is `unknown`).
pub fn ts_type(schema: &Value, indent: &str) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    match schema.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .map(|t| ts_type(&with_type(schema, t), indent))
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => match schema.get("items") {
                Some(items) => {
                    let inner = ts_type(items, indent);
                    if inner.contains(' ') && !inner.starts_with('{') {
                        format!("({inner})[]")
                    } else {
                        format!("{inner}[]")
                    }
                }
                None => "unknown[]".into(),
            },
            "object" => object_type(schema, indent),
            _ => "unknown".into(),
        },
        _ => "unknown".into(),
    }
}

fn with_type(schema: &Value, t: &Value) -> Value {
    let mut s = schema.clone();
    if let Some(o) = s.as_object_mut() {
        o.insert("type".into(), t.clone());
    }
    s
}

fn object_type(schema: &Value, indent: &str) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "Record<string, unknown>".into();
    };
    if props.is_empty() {
        return "{}".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for (name, sub) in props {
        if let Some(d) = sub.get("description").and_then(Value::as_str) {
            out.push_str(&doc(d, &inner));
        }
        let key = if is_identifier(name) {
            name.clone()
        } else {
            serde_json::to_string(name).unwrap_or_default()
        };
        let q = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!("{inner}{key}{q}: {};\n", ts_type(sub, &inner)));
    }
    out.push_str(indent);
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(namespaces: Value) -> String {
        json!({"revision": 3, "namespaces": namespaces}).to_string()
    }

    fn todo() -> Value {
        json!({"namespace": "todo", "source": "btcp", "interface": {
            "name": "Todo list", "version": "1.0",
            "methods": [{"name": "add", "description": "Add an item.", "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to do."}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["text"]
            }, "outputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}}}]
        }})
    }

    #[test]
    fn reads_a_page_registry_and_puts_browser_first() {
        let tools = PageTools::from_page(&page(json!([todo()])))
            .unwrap()
            .with_browser();
        assert_eq!(tools.names(), vec!["browser", "todo"]);
        assert_eq!(tools.revision, 3);
        assert!(tools.method("todo", "add").is_ok());
        assert!(tools.method("browser", "navigate").is_ok());
        assert!(tools
            .method("browser", "btcp_run_script")
            .unwrap_err()
            .contains("Methods: tabs_context_mcp"));
        let e = tools.get("gmail").unwrap_err();
        assert_eq!(
            e,
            "This tab has no tool namespace \"gmail\". Namespaces: browser, todo."
        );
        let interfaces = tools.interfaces_json();
        assert!(interfaces.starts_with("{\"browser\":{"), "{interfaces}");
        let parsed: Value = serde_json::from_str(&interfaces).unwrap();
        assert_eq!(parsed["todo"]["version"], "1.0");
        let listed = tools.listed();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "todo.add");
        assert!(listed[0].description.contains("untrusted"));
    }

    #[test]
    fn refuses_what_a_page_must_not_register() {
        let mut bad = todo();
        bad["namespace"] = json!("browser");
        assert!(PageTools::from_page(&page(json!([bad]))).is_err());
        let mut bad = todo();
        bad["namespace"] = json!("JSON");
        assert!(PageTools::from_page(&page(json!([bad])))
            .unwrap_err()
            .contains("reserved"));
        let mut bad = todo();
        bad["namespace"] = json!("a-b");
        assert!(PageTools::from_page(&page(json!([bad])))
            .unwrap_err()
            .contains("identifier"));
        let mut bad = todo();
        bad["interface"]["methods"][0]["inputSchema"] = json!({"type": "string"});
        assert!(PageTools::from_page(&page(json!([bad])))
            .unwrap_err()
            .contains("inputSchema"));
        assert!(PageTools::from_page(&page(json!([todo(), todo()])))
            .unwrap_err()
            .contains("twice"));
        assert!(PageTools::from_page("{\"revision\": 1}").is_err());
    }

    #[test]
    fn declarations_read_like_typescript() {
        let tools = PageTools::from_page(&page(json!([todo()]))).unwrap();
        let d = declarations(tools.get("todo").unwrap());
        assert_eq!(
            d,
            "/** Todo list v1.0. */\ndeclare namespace todo {\n  /** Add an item. */\n  function add(args: {\n    tags?: string[];\n    /** What to do. */\n    text: string;\n  }): Promise<{\n    id?: number;\n  }>;\n}\n"
        );
        let browser = declarations(&browser_namespace());
        assert!(browser.contains("function navigate(args: {"), "{browser}");
        assert!(
            browser.contains("action?: \"javascript_exec\";"),
            "{browser}"
        );
    }
}
