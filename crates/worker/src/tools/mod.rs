//! The one dispatch path for every command, whatever brought it: look the tool up in the
//! catalog, check the arguments against its schema, check the tab against the automation group,
//! then run the tool.

pub mod computer;
mod console;
mod find;
mod form_input;
mod javascript;
mod navigate;
mod network;
mod page_text;
mod plan;
pub mod read_page;
mod tabs;
mod upload;
mod window;

use crate::{boundary, btcp, cdp, group, observers};
use protocol::{schema, ToolResult};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub async fn dispatch(tool: &str, args: Map<String, Value>) -> Result<ToolResult, String> {
    let spec = protocol::tool(tool).ok_or_else(|| format!("Unknown tool: {tool}"))?;
    if let Err(e) = schema::check_args_at(&spec.input_schema, &args) {
        if e.argument == "tabId" {
            return Err(format!("{} {}", e.message, group::valid_tabs_note().await));
        }
        return Err(e.message);
    }
    // Every tool that takes a tabId acts on that tab: the boundary is checked here, once.
    if let Some(tab_arg) = args.get("tabId") {
        // The schema let only integers through; one beyond i64 is no tab either.
        let Some(tab_arg) = tab_arg.as_i64() else {
            return Err(format!(
                "Tab {tab_arg} does not exist. {}",
                group::valid_tabs_note().await
            ));
        };
        // A recorded tab's page is known from events; any other is looked up now.
        let tab = match group::reported(tab_arg).filter(boundary::current) {
            Some(tab) => tab,
            None => group::check_tab(tab_arg).await?,
        };
        let tab_id = tab.id.ok_or("chrome.tabs returned a tab without an id")?;
        // The page it shows: nothing outside the web is read or acted on, whatever the tool.
        // Closing the tab, or navigating it to a URL (without the debugger), still works.
        if let Err(e) = boundary::check(&tab) {
            let history = matches!(
                args.get("url").and_then(Value::as_str).map(str::trim),
                Some("back" | "forward")
            );
            let leaves = tool == "tabs_close_mcp" || (tool == "navigate" && !history);
            if !leaves {
                if cdp::is_attached(tab_id) {
                    crate::idle::detach(tab_id).await;
                }
                return Err(e);
            }
            return with_boundary_note(tab_id, run(tool, args).await).await;
        }
        // The tab is in use until the command ends: no idle detach meanwhile.
        let _busy = crate::idle::busy(tab_id);
        // A group tab found here is recorded from now on (console, network, dialogs).
        if let Err(e) = observers::observe(tab_id).await {
            crate::js::log(&format!("recording tab {tab_id}: {e}"));
        }
        // An open dialog blocks the page: say so instead of waiting for a timeout.
        if let Some(d) = observers::open_dialog(tab_id) {
            if !matches!(tool, "handle_dialog" | "tabs_close_mcp") {
                return Err(format!(
                    "{} Answer it with handle_dialog first.",
                    dialog_note(tab_id, &d)
                ));
            }
        }
        let result = run(tool, args).await;
        let result = match observers::open_dialog(tab_id) {
            None => result,
            Some(d) => {
                let note = dialog_note(tab_id, &d);
                match result {
                    Ok(mut r) => {
                        r.content.push(protocol::ContentBlock::text(format!(
                            "{note} Answer it with handle_dialog."
                        )));
                        Ok(r)
                    }
                    Err(e) => Err(format!("{e}\n{note} Answer it with handle_dialog.")),
                }
            }
        };
        if tool == "tabs_close_mcp" {
            return result;
        }
        return with_boundary_note(tab_id, result).await;
    }
    run(tool, args).await
}

/// A command that left its tab on a page outside the boundary says so (and the tab is detached).
async fn with_boundary_note(
    tab_id: i32,
    result: Result<ToolResult, String>,
) -> Result<ToolResult, String> {
    let Some(note) = boundary::after_command(tab_id).await else {
        return result;
    };
    match result {
        Ok(mut r) => {
            r.content.push(protocol::ContentBlock::text(note));
            Ok(r)
        }
        Err(e) => Err(format!("{e}\n{note}")),
    }
}

fn dialog_note(tab: i32, d: &observers::Dialog) -> String {
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

async fn run(tool: &str, args: Map<String, Value>) -> Result<ToolResult, String> {
    match tool {
        "tabs_context_mcp" => tabs::context(parse(args)?).await,
        "tabs_create_mcp" => tabs::create().await,
        "tabs_close_mcp" => tabs::close(parse(args)?).await,
        "navigate" => navigate::run(parse(args)?).await,
        "computer" => computer::run(parse(args)?).await,
        "javascript_tool" => javascript::run(parse(args)?).await,
        "read_page" => read_page::run(parse(args)?).await,
        "find" => find::run(parse(args)?).await,
        "form_input" => form_input::run(parse(args)?).await,
        "get_page_text" => page_text::run(parse(args)?).await,
        "read_console_messages" => console::run(parse(args)?).await,
        "read_network_requests" => network::run(parse(args)?).await,
        "update_plan" => plan::update(parse(args)?).await,
        "handle_dialog" => window::handle_dialog(parse(args)?).await,
        "resize_window" => window::resize(parse(args)?).await,
        "upload_image" => upload::run(parse(args)?).await,
        "gif_creator" | "shortcuts_list" | "shortcuts_execute" | "switch_browser" => {
            Ok(plan::reserved(tool))
        }
        "btcp_interfaces" => btcp::interfaces(parse(args)?).await,
        "btcp_get_interface" => btcp::get_interface(parse(args)?).await,
        "btcp_call" => btcp::call(parse(args)?).await,
        "btcp_run_script" => btcp::run_script(parse(args)?).await,
        _ => Err(format!("Unknown tool: {tool}")),
    }
}

/// Typed arguments; the schema check has already given the friendly message for most mistakes.
fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, String> {
    crate::js::from_json(Value::Object(args)).map_err(|e| format!("Invalid arguments: {e}"))
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
    use super::bounded;

    #[test]
    fn bounded_cuts_on_characters() {
        assert_eq!(bounded("abc".into(), 5), "abc");
        assert_eq!(
            bounded("héllo".into(), 2),
            "hé… (truncated: 3 more characters)"
        );
    }
}
