//! The tools and the one dispatch path for every command, whatever brought it: look the tool up,
//! check the arguments against its schema, check the tab against the automation group, apply the
//! guards its policy asks for (boundary, dialogs), the person's approval where their rules ask
//! for one (`approvals`), then run it.
//!
//! Adding a tool: its entry in `crates/protocol/src/catalog.json` (description and argument
//! schema), one file here declaring a [`Tool`] (name, policy, handler) next to its handler, and
//! one line in [`TOOLS`]. A unit test checks the list against the catalog both ways.

mod browser_state;
mod btcp;
pub mod computer;
mod console;
mod file_upload;
mod find;
mod form_input;
mod javascript;
mod navigate;
mod network;
mod page_text;
mod plan;
mod policy;
mod read_page;
mod switch_tab;
mod tabs;
mod upload;
mod window;

use crate::cdp::{self, idle, record};
use crate::{boundary, boundary_guard, group};
use protocol::{schema, ToolResult};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// What a command answers: its result, or the error the model reads.
pub type Outcome = Result<Output, String>;

/// A tool's result: content the worker built, or the one text a page wrote, kept as the JS
/// string it came as. Such a text goes into the result's JSON without entering wasm memory
/// (get_page_text's 50,000 characters: copying them in, escaping them and copying the frame
/// back out held the worker 0.5 ms of each command).
pub enum Output {
    Content(ToolResult),
    PageText(js_sys::JsString),
}

impl From<ToolResult> for Output {
    fn from(content: ToolResult) -> Self {
        Output::Content(content)
    }
}

impl Output {
    /// As protocol content (a page's text copied into wasm): where the result is read or added
    /// to rather than sent on.
    pub fn into_content(self) -> ToolResult {
        match self {
            Output::Content(content) => content,
            Output::PageText(text) => ToolResult::text(String::from(text)),
        }
    }
}
/// A running tool: each tool's own boxed future (so no one state machine holds every tool's).
pub type Running = Pin<Box<dyn Future<Output = Outcome>>>;

/// One tool: declared in its own file, next to its handler; listed in [`TOOLS`].
pub struct Tool {
    /// Its name in `catalog.json`, which holds its description and argument schema.
    pub name: &'static str,
    /// What it does with a tab, if it takes one (its schema then requires `tabId`, and dispatch
    /// checks that tab against the automation group and the boundary first).
    pub tab: Option<Access>,
    /// May run while a JavaScript dialog is open on its tab (it answers it, or closes the tab);
    /// any other tool is refused then, naming the dialog.
    pub during_dialog: bool,
    /// The work: arguments checked against the schema, typed by the handler (see [`typed`]).
    pub run: fn(Map<String, Value>) -> Running,
}

/// What a tool does with its tab's page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Access {
    /// Only reads the page, or what was recorded of it.
    Reads,
    /// Acts on the page: input, scripts, its dialogs, its window.
    Acts,
    /// Loads a URL in the tab (without the debugger): allowed on a page outside the boundary,
    /// which it leaves. A history step (`back`, `forward`) or `reload` is not, as it acts
    /// through the page.
    Navigates,
    /// Closes the tab: allowed whatever page it shows; nothing is said of a page afterwards.
    Closes,
    /// Makes it the group's active tab without touching its page: allowed whatever page it
    /// shows, and under a dialog (which its answer mentions); nothing is recorded or attached.
    Selects,
}

/// Every tool the worker runs: the catalog names these, no more and no fewer (a test checks).
pub static TOOLS: &[Tool] = &[
    tabs::CONTEXT,
    tabs::CREATE,
    tabs::CLOSE,
    switch_tab::TOOL,
    browser_state::TOOL,
    navigate::TOOL,
    computer::TOOL,
    javascript::TOOL,
    read_page::TOOL,
    find::TOOL,
    form_input::TOOL,
    page_text::TOOL,
    console::TOOL,
    network::TOOL,
    plan::UPDATE,
    window::HANDLE_DIALOG,
    window::RESIZE,
    upload::TOOL,
    file_upload::TOOL,
    plan::GIF_CREATOR,
    plan::SHORTCUTS_LIST,
    plan::SHORTCUTS_EXECUTE,
    plan::SWITCH_BROWSER,
    policy::TOOL,
    btcp::INTERFACES,
    btcp::GET_INTERFACE,
    btcp::CALL,
    btcp::RUN_SCRIPT,
];

/// A handler from a tool's typed function: the arguments parsed into `A`, the future boxed.
pub fn typed<A, F, R>(args: Map<String, Value>, run: impl FnOnce(A) -> F) -> Running
where
    A: DeserializeOwned,
    F: Future<Output = Result<R, String>> + 'static,
    R: Into<Output>,
{
    match parse(args) {
        Ok(args) => {
            let running = run(args);
            Box::pin(async move { running.await.map(Into::into) })
        }
        Err(e) => Box::pin(std::future::ready(Err(e))),
    }
}

/// A command whose tool exists and whose arguments its schema accepts: ready to [`run`].
///
/// [`run`]: Checked::run
pub struct Checked {
    tool: &'static Tool,
    args: Map<String, Value>,
}

/// Why a command can't run as sent. Nothing was done for it.
pub enum Refused {
    /// Said at once: an unknown tool, or arguments its schema refuses.
    Now(String),
    /// A `tabId` its schema refuses: said with the tabs there are, which are looked up.
    Tab { tool: &'static str, message: String },
}

impl Refused {
    /// The tool named, when it exists.
    pub fn tool_name(&self) -> &'static str {
        match self {
            Refused::Now(_) => "",
            Refused::Tab { tool, .. } => tool,
        }
    }

    /// What the model reads.
    pub async fn message(self) -> String {
        match self {
            Refused::Now(message) => message,
            Refused::Tab { message, .. } => {
                format!("{message} {}", group::valid_tabs_note().await)
            }
        }
    }
}

/// The first steps of every command's path, taken without an await: lookup and schema.
pub fn check(name: &str, args: Map<String, Value>) -> Result<Checked, Refused> {
    let found = TOOLS.iter().find(|t| t.name == name);
    let (Some(tool), Some(input_schema)) = (found, protocol::catalog::input_schema(name)) else {
        return Err(Refused::Now(format!("Unknown tool: {name}")));
    };
    if let Err(e) = schema::check_args_at(input_schema, &args) {
        if e.argument == "tabId" {
            return Err(Refused::Tab {
                tool: tool.name,
                message: e.message,
            });
        }
        return Err(Refused::Now(e.message));
    }
    Ok(Checked { tool, args })
}

/// The one path of every command: lookup, schema, group, the guards the tool's policy asks for,
/// run.
pub async fn dispatch(name: &str, args: Map<String, Value>) -> Outcome {
    match check(name, args) {
        Ok(command) => command.run().await,
        Err(refused) => Err(refused.message().await),
    }
}

impl Checked {
    pub fn tool_name(&self) -> &'static str {
        self.tool.name
    }

    /// Whether running the command twice does no more than running it once: it only reads
    /// the page or what was recorded of it (a screenshot, a zoom, a wait included), and clears
    /// nothing. Delivery stores no entry for such a command before it runs (see
    /// `session::delivery`).
    pub fn only_reads(&self) -> bool {
        let Some(access) = self.tool.tab else {
            return false;
        };
        let clears = self.args.get("clear").and_then(Value::as_bool) == Some(true);
        match access {
            Access::Reads => !clears,
            Access::Acts => !access.acts_on_page(self.tool.name, &self.args),
            Access::Navigates | Access::Closes | Access::Selects => false,
        }
    }

    /// The rest of the path: group, the guards the tool's policy asks for, run.
    pub async fn run(self) -> Outcome {
        run_checked(self.tool, self.args).await
    }
}

async fn run_checked(tool: &'static Tool, args: Map<String, Value>) -> Outcome {
    // The backend's policy is part of every check below.
    crate::policy::ready().await;
    let Some(access) = tool.tab else {
        return (tool.run)(args).await;
    };
    // Every tool that takes a tabId acts on that tab: the group is checked here, once.
    let tab = group_tab(&args).await?;
    let tab_id = tab.id.ok_or("chrome.tabs returned a tab without an id")?;
    // The person sees the agent acting on this tab (set beside the command, not awaited).
    let _sign = crate::activity::acting(tab_id, tab.group_id);
    // The URL policy's request rules name the tab before anything can send it anywhere.
    crate::policy::rules::cover(tab_id, &crate::agent::current()).await?;
    if access == Access::Selects {
        return with_dialog_note(tab_id, (tool.run)(args).await);
    }
    // The page it shows: nothing outside the web is read or acted on, whatever the tool.
    if let Err(e) = boundary::check(&tab) {
        if !access.leaves(&args) {
            if cdp::is_attached(tab_id) {
                idle::detach(tab_id).await;
            }
            return Err(e);
        }
        approve(tool, access, &tab, &args).await?;
        return with_boundary_note(tab_id, (tool.run)(args).await).await;
    }
    // The tab is in use until the command ends: no idle detach meanwhile.
    let _busy = idle::busy(tab_id);
    // A group tab found here is recorded from now on (console, network, dialogs).
    if let Err(e) = record::observe(tab_id).await {
        crate::js::log(&format!("recording tab {tab_id}: {e}"));
    }
    // An open dialog blocks the page: say so instead of waiting for a timeout.
    if let (Some(d), false) = (record::open_dialog(tab_id), tool.during_dialog) {
        let note = dialog_note(tab_id, &d);
        return Err(format!("{note} Answer it with handle_dialog first."));
    }
    // The person's approval, where their rules ask for one: the last step before the tool.
    approve(tool, access, &tab, &args).await?;
    let result = with_dialog_note(tab_id, (tool.run)(args).await);
    match access {
        Access::Closes => result,
        _ => with_boundary_note(tab_id, result).await,
    }
}

/// Waits for the person's approval when their rules ask for one (`approvals`), then checks
/// that the tab still shows the site approved.
async fn approve(
    tool: &'static Tool,
    access: Access,
    tab: &crate::chrome::tabs::Tab,
    args: &Map<String, Value>,
) -> Result<(), String> {
    let tab_id = tab.id.unwrap_or(-1);
    let here = tab.url.clone().unwrap_or_default();
    // A navigation acts on where it goes; a history step or reload on the page it leaves.
    let goes = match args.get("url").and_then(Value::as_str).map(str::trim) {
        Some("back" | "forward" | "reload") | None => None,
        Some(url) if access == Access::Navigates => Some(protocol::url_policy::normalize(url)),
        Some(_) => None,
    };
    // A navigation the URL policy refuses is refused by the tool: nothing to ask about.
    if goes
        .as_deref()
        .is_some_and(|u| crate::policy::check_page(tab_id, u).is_err())
    {
        return Ok(());
    }
    let site_url = goes.clone().unwrap_or_else(|| here.clone());
    let acting = access.acts_on_page(tool.name, args);
    let Some(mut ask) = crate::approvals::asks(tool.name, acting, &site_url) else {
        return Ok(());
    };
    if goes.is_none() && ask.knows_site() && crate::approvals::error_page(tab_id).await {
        ask.site_unknown();
    }
    ask.wait(tab_id, args).await?;
    if goes.is_some() {
        return Ok(());
    }
    // The page may have moved on while the person decided: what was approved is this site.
    let now = group::check_tab(i64::from(tab_id)).await?;
    let host = |u: &str| protocol::host_rules::web_host(u).flatten();
    let now_url = now.url.clone().unwrap_or_default();
    if host(&now_url) != host(&here) {
        return Err(format!(
            "Tab {tab_id} left the page that was approved while the approval waited (it now shows {}); nothing was done. Send the command again to ask for this page.",
            crate::approvals::escaped(&now_url)
        ));
    }
    boundary::check(&now)
}

impl Access {
    /// Whether the command acts on the page (what approvals ask about): input, scripts, its
    /// dialogs and window, a navigation; not reading it, nor a computer action that only
    /// looks (a screenshot, a zoom, a wait).
    fn acts_on_page(self, tool: &str, args: &Map<String, Value>) -> bool {
        let looks = tool == computer::TOOL.name
            && matches!(
                args.get("action").and_then(Value::as_str),
                Some("screenshot" | "zoom" | "wait")
            );
        matches!(self, Access::Acts | Access::Navigates) && !looks
    }

    /// Whether this command takes the tab away from its page, so it may run on a page outside
    /// the boundary.
    fn leaves(self, args: &Map<String, Value>) -> bool {
        let history = matches!(
            args.get("url").and_then(Value::as_str).map(str::trim),
            Some("back" | "forward" | "reload")
        );
        self == Access::Closes || (self == Access::Navigates && !history)
    }
}

/// The group tab a command names (the schema let only integers through; one beyond i64 is no
/// tab either).
async fn group_tab(args: &Map<String, Value>) -> Result<crate::chrome::tabs::Tab, String> {
    let tab_arg = args.get("tabId").unwrap_or(&Value::Null);
    let Some(id) = tab_arg.as_i64() else {
        let note = group::valid_tabs_note().await;
        return Err(format!("Tab {tab_arg} does not exist. {note}"));
    };
    // A recorded tab's page is known from events; any other is looked up now.
    match group::reported(id).filter(boundary_guard::current) {
        Some(tab) => Ok(tab),
        None => group::check_tab(id).await,
    }
}

/// A dialog open when the command ends is said with its answer.
fn with_dialog_note(tab_id: i32, result: Outcome) -> Outcome {
    let Some(d) = record::open_dialog(tab_id) else {
        return result;
    };
    let note = dialog_note(tab_id, &d);
    match result {
        Ok(output) => {
            let mut r = output.into_content();
            r.content.push(protocol::ContentBlock::text(format!(
                "{note} Answer it with handle_dialog."
            )));
            Ok(r.into())
        }
        Err(e) => Err(format!("{e}\n{note} Answer it with handle_dialog.")),
    }
}

/// A command that left its tab on a page outside the boundary says so (and the tab is detached).
async fn with_boundary_note(tab_id: i32, result: Outcome) -> Outcome {
    let Some(note) = boundary_guard::after_command(tab_id).await else {
        return result;
    };
    match result {
        Ok(output) => {
            let mut r = output.into_content();
            r.content.push(protocol::ContentBlock::text(note));
            Ok(r.into())
        }
        Err(e) => Err(format!("{e}\n{note}")),
    }
}

fn dialog_note(tab: i32, d: &record::Dialog) -> String {
    if d.unknown {
        return format!(
            "Tab {tab} does not respond: most likely a JavaScript dialog opened while the debugger was detached from the idle tab (Chrome does not report such a dialog to a debugger that attaches later, so its text is unknown and it can only be dismissed)."
        );
    }
    let prompt = if d.kind == "prompt" && !d.default_prompt.is_empty() {
        format!(" (default answer \"{}\")", d.default_prompt)
    } else {
        String::new()
    };
    format!(
        "A JavaScript {} dialog is open on tab {tab}: \"{}\"{prompt}.",
        d.kind, d.message
    )
}

/// Typed arguments; the schema check has already given the friendly message for most mistakes.
fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, String> {
    crate::js::from_json(Value::Object(args)).map_err(|e| format!("Invalid arguments: {e}"))
}

/// The tab closed or left the group: what tools keep of it goes (read_page's kept trees, the
/// screenshots' images and capture mode, a held mouse button).
pub fn forget(tab: i32) {
    read_page::forget(tab);
    computer::forget(tab);
    crate::images::forget(tab);
}

/// Whether tools keep something of the tab.
pub fn holds(tab: i32) -> bool {
    read_page::holds(tab) || computer::holds(tab) || crate::images::holds(tab)
}

/// Cuts `text` to at most `max` characters, saying how much was left out.
pub fn bounded(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}… (truncated: {rest} more characters)", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{bounded, check, Access, TOOLS};
    use serde_json::{json, Value};

    /// Which commands delivery may store after their tool starts: those that, run twice, change
    /// nothing more than once. Reading, looking and waiting do; acting, navigating, closing,
    /// clearing what was recorded and every tool without a tab do not.
    #[test]
    fn only_reads_is_reading_looking_and_waiting() {
        let reads = |tool: &str, args: Value| {
            let Value::Object(args) = args else {
                panic!("arguments are an object")
            };
            match check(tool, args) {
                Ok(checked) => checked.only_reads(),
                Err(_) => panic!("{tool}: its schema refused the arguments"),
            }
        };
        for (tool, args) in [
            ("get_page_text", json!({"tabId": 1})),
            ("read_page", json!({"tabId": 1, "filter": "interactive"})),
            ("find", json!({"tabId": 1, "query": "buy"})),
            ("computer", json!({"tabId": 1, "action": "screenshot"})),
            (
                "computer",
                json!({"tabId": 1, "action": "wait", "duration": 1}),
            ),
            ("read_console_messages", json!({"tabId": 1})),
            ("read_network_requests", json!({"tabId": 1, "clear": false})),
            ("btcp_interfaces", json!({"tabId": 1})),
        ] {
            assert!(reads(tool, args.clone()), "{tool} {args} only reads");
        }
        for (tool, args) in [
            ("javascript_tool", json!({"tabId": 1, "text": "1"})),
            (
                "computer",
                json!({"tabId": 1, "action": "left_click", "coordinate": [1, 1]}),
            ),
            (
                "navigate",
                json!({"tabId": 1, "url": "https://example.com"}),
            ),
            ("read_console_messages", json!({"tabId": 1, "clear": true})),
            ("read_network_requests", json!({"tabId": 1, "clear": true})),
            (
                "btcp_call",
                json!({"tabId": 1, "namespace": "n", "method": "m"}),
            ),
            ("tabs_context_mcp", json!({})),
            ("tabs_create_mcp", json!({})),
        ] {
            assert!(!reads(tool, args.clone()), "{tool} {args} acts");
        }
    }

    /// The list and `catalog.json` name the same tools, each once: a tool without a handler (or
    /// a handler the catalog does not describe) fails here, not as `Unknown tool` at run time.
    #[test]
    fn the_list_and_the_catalog_name_the_same_tools() {
        let listed: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        let catalog: Vec<&str> = protocol::catalog().iter().map(|t| t.name).collect();
        for name in &catalog {
            let n = listed.iter().filter(|l| *l == name).count();
            assert_eq!(
                n, 1,
                "catalog.json names {name}; tools::TOOLS lists it {n} times"
            );
        }
        for name in &listed {
            assert!(
                catalog.contains(name),
                "tools::TOOLS lists {name}, which catalog.json does not describe"
            );
        }
        assert_eq!(listed, catalog, "the list follows the catalog's order");
    }

    /// A tool takes a tab exactly when its schema requires `tabId`; dialogs are answered or
    /// their tab closed, nothing else runs under one.
    #[test]
    fn each_policy_matches_its_schema() {
        for tool in TOOLS {
            let schema = protocol::catalog::input_schema(tool.name).expect("in the catalog");
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            let needs_tab = required.contains(&Value::from("tabId"));
            assert_eq!(tool.tab.is_some(), needs_tab, "{}: tab policy", tool.name);
            if tool.during_dialog {
                assert!(
                    matches!(
                        tool.tab,
                        Some(Access::Acts | Access::Closes | Access::Selects)
                    ),
                    "{} runs under a dialog but does not act on its tab",
                    tool.name
                );
            }
        }
        let under_dialog: Vec<&str> = TOOLS
            .iter()
            .filter(|t| t.during_dialog)
            .map(|t| t.name)
            .collect();
        assert_eq!(
            under_dialog,
            ["tabs_close_mcp", "switch_tab", "handle_dialog"]
        );
    }

    /// What a command needs before it runs: refused at once (no await, nothing done), refused
    /// with the tabs listed, or checked.
    #[test]
    fn check_refuses_before_anything_is_done() {
        use super::{check, Refused};
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(matches!(
            check("no_such_tool", args(serde_json::json!({}))),
            Err(Refused::Now(m)) if m == "Unknown tool: no_such_tool"
        ));
        assert!(matches!(
            check("javascript_tool", args(serde_json::json!({"tabId": 1}))),
            Err(Refused::Now(_))
        ));
        assert!(matches!(
            check(
                "javascript_tool",
                args(serde_json::json!({"tabId": "one", "text": "1"}))
            ),
            Err(Refused::Tab {
                tool: "javascript_tool",
                ..
            })
        ));
        let ok = check(
            "javascript_tool",
            args(serde_json::json!({"tabId": 1, "text": "1+1"})),
        );
        assert!(matches!(ok, Ok(c) if c.tool_name() == "javascript_tool"));
    }

    #[test]
    fn bounded_cuts_on_characters() {
        assert_eq!(bounded("abc".into(), 5), "abc");
        assert_eq!(
            bounded("héllo".into(), 2),
            "hé… (truncated: 3 more characters)"
        );
    }
}
