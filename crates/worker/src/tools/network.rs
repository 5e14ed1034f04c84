//! read_network_requests: the requests a group tab made since it joined the group (recorded by
//! `cdp::record`; cleared when the page moves to another site), with the times the debugger was
//! detached from the idle tab said in place, filled from the page's resource timing.

use crate::cdp::record::{self, Gap, Request};
use crate::tools::{typed, Access, Tool};
use protocol::ToolResult;
use serde::Deserialize;

pub const TOOL: Tool = Tool {
    name: "read_network_requests",
    tab: Some(Access::Reads),
    during_dialog: false,
    run: |args| typed(args, run),
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
    #[serde(default)]
    url_pattern: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    clear: bool,
}

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let limit = args.limit.unwrap_or(100);
    let (all, gaps) = record::requests(args.tab_id, args.clear);
    let pattern = args.url_pattern.unwrap_or_default();
    let matching: Vec<_> = all.iter().filter(|r| r.url.contains(&pattern)).collect();
    let skip = matching.len().saturating_sub(limit);
    let shown = &matching[skip..];
    // Gaps since the first request shown (or all of them when none is).
    let since = shown.first().map_or(f64::MIN, |r| r.at);
    let gaps: Vec<&Gap> = gaps
        .iter()
        .filter(|g| g.to.unwrap_or(f64::MAX) >= since)
        .collect();
    if matching.is_empty() && gaps.is_empty() {
        return Ok(ToolResult::text(format!(
            "No network requests{} for tab {} (recorded since the tab joined the automation group; cleared when it moves to another site).",
            if pattern.is_empty() { String::new() } else { format!(" with URLs containing \"{pattern}\"") },
            args.tab_id
        )));
    }
    let mut out = format!(
        "{} request(s){}:\n",
        matching.len(),
        if skip > 0 {
            format!(", the last {limit}")
        } else {
            String::new()
        }
    );
    let mut gaps = gaps.into_iter().peekable();
    for r in shown {
        while let Some(g) = gaps.next_if(|g| g.from <= r.at) {
            out.push_str(&gap_lines(g, &pattern));
        }
        out.push_str(&request_line(r));
    }
    for g in gaps {
        out.push_str(&gap_lines(g, &pattern));
    }
    Ok(ToolResult::text(out.trim_end().to_string()))
}

fn request_line(r: &Request) -> String {
    let outcome = match (&r.failure, r.status) {
        (Some(f), _) => format!("failed: {f}"),
        (None, Some(s)) => s.to_string(),
        (None, None) => "pending".into(),
    };
    let kind = if r.kind.is_empty() { "Other" } else { &r.kind };
    format!(
        "{} {} → {outcome} ({kind})\n",
        r.method,
        crate::tools::bounded(r.url.clone(), 500)
    )
}

/// "Not recorded from … to …" and what the page's resource timing lists from that time.
fn gap_lines(g: &Gap, pattern: &str) -> String {
    let to = g.to.map_or_else(|| "now".to_string(), clock);
    let mut out = format!(
        "Not recorded from {} to {to}: the debugger was detached while the tab was idle.",
        clock(g.from)
    );
    let timing: Vec<_> = g
        .timing
        .iter()
        .filter(|t| t.url.contains(pattern))
        .collect();
    if timing.is_empty() {
        out.push('\n');
        return out;
    }
    out.push_str(&format!(
        " The page's resource timing lists {} request(s) from that time (method unknown, failures not told apart):\n",
        timing.len()
    ));
    for t in timing {
        let status = if t.status > 0 {
            t.status.to_string()
        } else {
            "status unknown".into()
        };
        out.push_str(&format!(
            "  {} → {status} ({}, from resource timing)\n",
            crate::tools::bounded(t.url.clone(), 500),
            t.initiator
        ));
    }
    out
}

/// HH:MM:SS in the browser's local time.
fn clock(ms: f64) -> String {
    let d = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms));
    format!(
        "{:02}:{:02}:{:02}",
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds()
    )
}
