//! read_console_messages: the console messages and uncaught exceptions a group tab produced
//! since it joined the group (recorded by `cdp::record`).

use crate::cdp::record;
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;

pub const TOOL: Tool = Tool {
    name: "read_console_messages",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    only_errors: bool,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    clear: bool,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let pattern = match args.pattern.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => Some(crate::js::regexp(p, "i").map_err(|e| {
            format!("Invalid argument `pattern`: not a valid regular expression ({e}).")
        })?),
        None => None,
    };
    let limit = args.limit.unwrap_or(100);
    let all = record::console(args.tab_id, args.clear);
    let matching: Vec<_> = all
        .iter()
        .filter(|e| !args.only_errors || e.level == "error")
        .filter(|e| pattern.as_ref().is_none_or(|p| p.test(&e.text)))
        .collect();
    if matching.is_empty() {
        return Ok(ToolResult::text(format!(
            "No console messages{} for tab {} (recorded since the tab joined the automation group).",
            if args.only_errors || pattern.is_some() { " match" } else { "" },
            args.tab_id
        )));
    }
    let skip = matching.len().saturating_sub(limit);
    let mut out = format!(
        "{} console message(s){}:\n",
        matching.len(),
        if skip > 0 {
            format!(", the last {limit}")
        } else {
            String::new()
        }
    );
    for e in &matching[skip..] {
        let place = match (e.source.is_empty(), e.line) {
            (false, Some(l)) => format!(" ({}:{l})", e.source),
            (false, None) => format!(" ({})", e.source),
            _ => String::new(),
        };
        out.push_str(&format!(
            "[{}] {}{place}\n",
            e.level,
            crate::tools::bounded(e.text.clone(), 2_000)
        ));
    }
    Ok(ToolResult::text(out.trim_end().to_string()))
}
