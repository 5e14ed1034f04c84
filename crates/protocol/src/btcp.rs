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

/// What a page may register. extension/page-tools.js refuses a registration past these bounds
/// (its `LIMITS` object holds the same numbers; `page_tools_js_agrees` checks that), and the
/// worker checks each namespace again when it reads the registry, refusing only the namespace
/// that breaks one. Lengths are in UTF-16 code units on the page and in characters here, so
/// whatever the page accepts, the worker accepts.
pub mod limits {
    /// Namespaces per page (WebMCP's `webmcp` counts as one).
    pub const NAMESPACES: usize = 64;
    /// Methods per namespace (WebMCP tools per page).
    pub const METHODS: usize = 256;
    /// A method's or an interface's description.
    pub const DESCRIPTION: usize = 4_000;
    /// An interface's name and version, a method's title.
    pub const LABEL: usize = 128;
    /// One method's inputSchema, outputSchema and annotations together, as JSON text.
    pub const SCHEMA: usize = 32_768;
    /// How deeply one schema (or annotations object) may nest objects and arrays.
    pub const SCHEMA_DEPTH: usize = 24;
    /// The whole registry as JSON text (what `btcp.__describe()` returns).
    pub const REGISTRY: usize = 524_288;
}
use limits::{
    DESCRIPTION as MAX_DESCRIPTION, LABEL as MAX_LABEL, METHODS as MAX_METHODS,
    NAMESPACES as MAX_NAMESPACES, REGISTRY as MAX_REGISTRY, SCHEMA as MAX_SCHEMA,
    SCHEMA_DEPTH as MAX_SCHEMA_DEPTH,
};

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
    /// Namespaces the page offered that broke a rule, each with the rule: they are left out,
    /// the others are served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refused>,
}

/// A namespace the worker left out of a page's registry, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refused {
    pub namespace: String,
    pub error: String,
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
        // set_policy is the backend's alone: a script cannot change the policy it runs under.
        .filter(|t| !t.name.starts_with("btcp_") && !t.backend_only)
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

/// `{"browser": interface}` as JSON text: the first entry of every tab's
/// [`PageTools::interfaces_json`].
pub fn browser_interfaces_json() -> String {
    interfaces_json(std::iter::once(&browser_namespace()))
}

fn interfaces_json<'a>(namespaces: impl Iterator<Item = &'a Namespace>) -> String {
    let entries: Vec<String> = namespaces
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

/// Names a page namespace can't take: the sandbox's own globals (extension/page-tools.js keeps
/// the same list). Names starting with `__` and the members of `Object.prototype` are refused
/// too ([`reserved`]).
pub const RESERVED: &[&str] = &[
    "browser",
    "webmcp",
    "console",
    "globalThis",
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

/// Names that are properties of every object in JavaScript: neither a namespace nor a method
/// may take them (a method `constructor` would find `Object` on any API object).
pub const OBJECT_MEMBERS: &[&str] = &[
    "constructor",
    "prototype",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
];

/// Why `name` can't be a page's namespace (`None`: it can).
pub fn reserved_namespace(name: &str) -> Option<&'static str> {
    if name.starts_with("__") {
        Some("names starting with __ are reserved")
    } else if name == BROWSER {
        Some("it is the extension's built-in tools")
    } else if name == WEBMCP {
        Some("it holds the page's WebMCP tools (document.modelContext.registerTool)")
    } else if RESERVED.contains(&name) {
        Some("it is a name the code-mode sandbox already uses")
    } else if OBJECT_MEMBERS.contains(&name) {
        Some("it is a property of every JavaScript object")
    } else {
        None
    }
}

/// Why `name` can't be a method or WebMCP tool name (`None`: it can).
pub fn reserved_method(name: &str) -> Option<&'static str> {
    if name.starts_with("__") {
        Some("names starting with __ are reserved")
    } else if OBJECT_MEMBERS.contains(&name) {
        Some("it is a property of every JavaScript object")
    } else {
        None
    }
}

/// `text` (JSON) with each escaped lone surrogate (`\ud800` not followed by a trailing one, or a
/// trailing one alone), which JavaScript's JSON.stringify writes and serde_json refuses, turned
/// into U+FFFD, so that one odd string spoils nothing.
pub fn without_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\u") {
        return text.into();
    }
    let b = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = b.get(at..at + 4)?;
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            out.extend_from_slice(&b[i..i + 2]);
            i += 2;
            continue;
        }
        match unit(i + 2) {
            Some(0xD800..=0xDBFF) => {
                let pair = b.get(i + 6..i + 8) == Some(b"\\u".as_slice())
                    && matches!(unit(i + 8), Some(0xDC00..=0xDFFF));
                if pair {
                    out.extend_from_slice(&b[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                i += 6;
            }
            Some(_) => {
                out.extend_from_slice(&b[i..i + 6]);
                i += 6;
            }
            None => {
                out.extend_from_slice(&b[i..i + 2]);
                i += 2;
            }
        }
    }
    // Only ASCII escapes were rewritten, so the bytes are still UTF-8.
    String::from_utf8(out).map_or_else(|_| text.into(), Into::into)
}

/// How deeply `v` nests objects and arrays (a scalar is 0).
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Characters of `v` as JSON text.
fn json_chars(v: &Value) -> usize {
    serde_json::to_string(v).map_or(usize::MAX, |t| t.chars().count())
}

impl PageTools {
    /// Reads what a page reported (`btcp.__describe()`), checking every name and schema again:
    /// the page is untrusted, and a page without our script could fake the registry. A
    /// namespace that breaks a rule is left out and listed in `refused` with the rule; the
    /// others are kept. Only a registry that is not JSON, or larger than
    /// [`limits::REGISTRY`], is refused whole.
    pub fn from_page(text: &str) -> Result<PageTools, String> {
        if text.len() > MAX_REGISTRY && text.chars().count() > MAX_REGISTRY {
            return Err(format!(
                "The page's tool registry is larger than {MAX_REGISTRY} characters."
            ));
        }
        #[derive(Deserialize)]
        struct Raw {
            revision: u64,
            namespaces: Vec<Value>,
        }
        let raw: Raw = serde_json::from_str(&without_lone_surrogates(text))
            .and_then(crate::json::from_value)
            .map_err(|e| format!("The page's tool registry is malformed: {e}"))?;
        let mut tools = PageTools {
            revision: raw.revision,
            namespaces: Vec::new(),
            refused: Vec::new(),
        };
        for value in raw.namespaces {
            let name = value
                .get("namespace")
                .and_then(Value::as_str)
                .map(|n| n.chars().take(64).collect::<String>())
                .unwrap_or_default();
            let checked = crate::json::from_value::<Namespace>(value)
                .map_err(|e| format!("{name}: the namespace is malformed: {e}"))
                .and_then(|ns| {
                    check_namespace(&ns)?;
                    if tools.namespaces.iter().any(|n| n.namespace == ns.namespace) {
                        return Err(format!("The page registered {} twice.", ns.namespace));
                    }
                    if tools.namespaces.len() >= MAX_NAMESPACES {
                        return Err(format!(
                            "The page registered more than {MAX_NAMESPACES} namespaces."
                        ));
                    }
                    Ok(ns)
                });
            match checked {
                Ok(ns) => tools.namespaces.push(ns),
                Err(error) => tools.refused.push(Refused {
                    namespace: name,
                    error,
                }),
            }
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
            .ok_or_else(|| match self.refused.iter().find(|r| r.namespace == namespace) {
                Some(r) => format!(
                    "This tab's page offered the namespace \"{namespace}\" but it was refused: {} Namespaces: {}.",
                    r.error,
                    self.names().join(", ")
                ),
                None => format!(
                    "This tab has no tool namespace \"{namespace}\". Namespaces: {}.",
                    self.names().join(", ")
                ),
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
        interfaces_json(self.namespaces.iter())
    }

    /// [`PageTools::interfaces_json`] without `browser`: the page's own namespaces. Code mode's
    /// isolate has `browser` ([`browser_interfaces_json`]) before the page's are known.
    pub fn page_interfaces_json(&self) -> String {
        interfaces_json(
            self.namespaces
                .iter()
                .filter(|n| n.source != Source::Browser),
        )
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
        Source::Btcp => {
            if let Some(why) = reserved_namespace(name) {
                return Err(format!("The namespace {name} is reserved: {why}."));
            }
        }
        Source::Webmcp => {}
    }
    if !is_identifier(name) {
        return Err(format!(
            "The namespace {name:?} is not a JavaScript identifier."
        ));
    }
    let i = &ns.interface;
    if i.name.chars().count() > MAX_LABEL || i.version.chars().count() > MAX_LABEL {
        return Err(format!(
            "{name}: the interface's name and version must have at most {MAX_LABEL} characters."
        ));
    }
    if i.description
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION)
    {
        return Err(format!(
            "{name}: the interface's description must have at most {MAX_DESCRIPTION} characters."
        ));
    }
    let methods = &i.methods;
    if methods.is_empty() || methods.len() > MAX_METHODS {
        return Err(format!("{name} must have 1 to {MAX_METHODS} methods."));
    }
    for (k, m) in methods.iter().enumerate() {
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
        if let Some(why) = reserved_method(&m.name) {
            return Err(format!(
                "{name}: the method name {} is reserved: {why}.",
                m.name
            ));
        }
        if methods[..k].iter().any(|o| o.name == m.name) {
            return Err(format!("{name}.{} is declared twice.", m.name));
        }
        let chars = m.description.chars().count();
        if chars == 0 || chars > MAX_DESCRIPTION {
            return Err(format!(
                "{name}.{}: the description must have 1 to {MAX_DESCRIPTION} characters.",
                m.name
            ));
        }
        if m.title
            .as_ref()
            .is_some_and(|t| t.chars().count() > MAX_LABEL)
        {
            return Err(format!(
                "{name}.{}: the title must have at most {MAX_LABEL} characters.",
                m.name
            ));
        }
        if m.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "{name}.{}: inputSchema must have type \"object\".",
                m.name
            ));
        }
        let parts = [
            Some(&m.input_schema),
            m.output_schema.as_ref(),
            m.annotations.as_ref(),
        ];
        if parts.iter().flatten().any(|v| depth(v) > MAX_SCHEMA_DEPTH) {
            return Err(format!(
                "{name}.{}: a schema nests deeper than {MAX_SCHEMA_DEPTH} levels.",
                m.name
            ));
        }
        let size: usize = parts.iter().flatten().map(|v| json_chars(v)).sum();
        if size > MAX_SCHEMA {
            return Err(format!(
                "{name}.{}: its schemas and annotations are {size} characters of JSON; the limit is {MAX_SCHEMA}.",
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
        // Split as code mode's isolate takes them: browser first, then the page's.
        let browser: Value = serde_json::from_str(&browser_interfaces_json()).unwrap();
        let page: Value = serde_json::from_str(&tools.page_interfaces_json()).unwrap();
        assert_eq!(browser.as_object().unwrap().len(), 1);
        assert_eq!(browser["browser"], parsed["browser"]);
        assert_eq!(page, json!({"todo": parsed["todo"]}));
        let listed = tools.listed();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "todo.add");
        assert!(listed[0].description.contains("untrusted"));
    }

    #[test]
    fn refuses_what_a_page_must_not_register() {
        let refused = |ns: Value| -> String {
            let tools = PageTools::from_page(&page(json!([ns]))).unwrap();
            assert!(tools.namespaces.is_empty(), "{tools:?}");
            tools.refused[0].error.clone()
        };
        let mut bad = todo();
        bad["namespace"] = json!("browser");
        assert!(refused(bad).contains("reserved"));
        let mut bad = todo();
        bad["source"] = json!("browser");
        assert_eq!(refused(bad), "A page can't define the namespace browser.");
        let mut bad = todo();
        bad["namespace"] = json!("JSON");
        assert!(refused(bad).contains("reserved"));
        let mut bad = todo();
        bad["namespace"] = json!("a-b");
        assert!(refused(bad).contains("identifier"));
        let mut bad = todo();
        bad["interface"]["methods"][0]["inputSchema"] = json!({"type": "string"});
        assert!(refused(bad).contains("inputSchema"));
        assert!(PageTools::from_page("{\"revision\": 1}").is_err());
    }

    /// The numbers and reserved names extension/page-tools.js enforces at registration are
    /// the ones the worker checks.
    #[test]
    fn page_tools_js_agrees() {
        let js = include_str!("../../../extension/page-tools.js");
        let line = js
            .lines()
            .find(|l| l.trim_start().starts_with("const LIMITS = freeze({"))
            .expect("page-tools.js has a LIMITS line");
        let body = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        let numbers: std::collections::HashMap<&str, usize> = body
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once(':').unwrap();
                (k.trim(), v.trim().parse().unwrap())
            })
            .collect();
        let expect = [
            ("namespaces", limits::NAMESPACES),
            ("methods", limits::METHODS),
            ("description", limits::DESCRIPTION),
            ("label", limits::LABEL),
            ("schema", limits::SCHEMA),
            ("schemaDepth", limits::SCHEMA_DEPTH),
            ("registry", limits::REGISTRY),
        ];
        assert_eq!(numbers.len(), expect.len(), "{line}");
        for (k, v) in expect {
            assert_eq!(numbers.get(k), Some(&v), "LIMITS.{k} in page-tools.js");
        }
        let set = |name: &str| -> Vec<String> {
            let start = js.find(&format!("const {name} = new Set([")).unwrap();
            let rest = &js[start..];
            let list = &rest[rest.find('[').unwrap() + 1..rest.find(']').unwrap()];
            list.split(',')
                .map(|s| s.trim().trim_matches('"').to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        assert_eq!(set("RESERVED"), RESERVED);
        assert_eq!(set("OBJECT_MEMBERS"), OBJECT_MEMBERS);
    }

    /// One namespace that breaks a rule is left out with the rule; the others are served.
    #[test]
    fn one_bad_namespace_does_not_take_the_others_down() {
        let mut many = todo();
        many["namespace"] = json!("many");
        let method = many["interface"]["methods"][0].clone();
        many["interface"]["methods"] = Value::Array(
            (0..300)
                .map(|i| {
                    let mut m = method.clone();
                    m["name"] = json!(format!("m{i}"));
                    m
                })
                .collect(),
        );
        let mut proto = todo();
        proto["namespace"] = json!("__proto__");
        let mut big = todo();
        big["namespace"] = json!("big");
        big["interface"]["methods"][0]["inputSchema"]["description"] = json!("x".repeat(40_000));
        let mut deep = todo();
        deep["namespace"] = json!("deep");
        let mut schema = json!({"type": "object"});
        for _ in 0..30 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        deep["interface"]["methods"][0]["inputSchema"] = schema;
        let mut ctor = todo();
        ctor["namespace"] = json!("shop");
        ctor["interface"]["methods"][0]["name"] = json!("constructor");
        let malformed = json!({"namespace": "broken", "source": "btcp", "interface": 5});
        let tools = PageTools::from_page(&page(json!([
            many,
            proto,
            todo(),
            big,
            deep,
            ctor,
            malformed,
            todo()
        ])))
        .unwrap();
        assert_eq!(tools.names(), vec!["todo"]);
        let refused: Vec<(&str, &str)> = tools
            .refused
            .iter()
            .map(|r| (r.namespace.as_str(), r.error.as_str()))
            .collect();
        assert_eq!(
            refused,
            vec![
                ("many", "many must have 1 to 256 methods."),
                (
                    "__proto__",
                    "The namespace __proto__ is reserved: names starting with __ are reserved."
                ),
                ("big", "big.add: its schemas and annotations are 40228 characters of JSON; the limit is 32768."),
                ("deep", "deep.add: a schema nests deeper than 24 levels."),
                (
                    "shop",
                    "shop: the method name constructor is reserved: it is a property of every JavaScript object."
                ),
                ("broken", "broken: the namespace is malformed: invalid type: integer `5`, expected struct ToolInterface"),
                ("todo", "The page registered todo twice."),
            ]
        );
        let tools = tools.with_browser();
        assert_eq!(tools.names(), vec!["browser", "todo"]);
        assert!(tools.get("big").unwrap_err().starts_with(
            "This tab's page offered the namespace \"big\" but it was refused: big.add: its schemas"
        ));
        // Still listed for the backend, which sees why.
        let shown: Value = serde_json::to_value(&tools).unwrap();
        assert_eq!(shown["refused"][0]["namespace"], "many");
        // A lone surrogate (which JSON.stringify writes as an escape) spoils only its namespace.
        let text = page(json!([todo()])).replace("Add an item.", "\\ud800");
        let lone = PageTools::from_page(&text).unwrap();
        assert_eq!(
            lone.get("todo").unwrap().interface.methods[0].description,
            "\u{fffd}"
        );
        assert_eq!(
            without_lone_surrogates(r#""\ud83d\ude00 \\ud800 \udc00\ud800x \u00e9 \u12""#),
            r#""\ud83d\ude00 \\ud800 \ufffd\ufffdx \u00e9 \u12""#
        );
        // A registry past the whole bound is refused whole, with the bound.
        let huge = format!(
            "{{\"revision\":1,\"namespaces\":[],\"x\":\"{}\"}}",
            "x".repeat(limits::REGISTRY)
        );
        assert_eq!(
            PageTools::from_page(&huge).unwrap_err(),
            "The page's tool registry is larger than 524288 characters."
        );
    }

    #[test]
    fn reserved_names() {
        for name in [
            "__proto__",
            "__x",
            "constructor",
            "prototype",
            "toString",
            "browser",
            "webmcp",
            "JSON",
        ] {
            assert!(reserved_namespace(name).is_some(), "{name}");
        }
        for name in ["todo", "_private", "$", "gmail"] {
            assert!(reserved_namespace(name).is_none(), "{name}");
        }
        assert!(reserved_method("__defineGetter__").is_some());
        assert!(reserved_method("valueOf").is_some());
        assert!(reserved_method("browser").is_none());
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
