//! read_network_requests: the requests a group tab made since it joined the group (recorded by
//! `observers`; cleared when the page moves to another site).

use crate::observers;
use protocol::ToolResult;
use serde::Deserialize;

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
    let all = observers::requests(args.tab_id, args.clear);
    let pattern = args.url_pattern.unwrap_or_default();
    let matching: Vec<_> = all.iter().filter(|r| r.url.contains(&pattern)).collect();
    if matching.is_empty() {
        return Ok(ToolResult::text(format!(
            "No network requests{} for tab {} (recorded since the tab joined the automation group; cleared when it moves to another site).",
            if pattern.is_empty() { String::new() } else { format!(" with URLs containing \"{pattern}\"") },
            args.tab_id
        )));
    }
    let skip = matching.len().saturating_sub(limit);
    let mut out = format!(
        "{} request(s){}:\n",
        matching.len(),
        if skip > 0 {
            format!(", the last {limit}")
        } else {
            String::new()
        }
    );
    for r in &matching[skip..] {
        let outcome = match (&r.failure, r.status) {
            (Some(f), _) => format!("failed: {f}"),
            (None, Some(s)) => s.to_string(),
            (None, None) => "pending".into(),
        };
        let kind = if r.kind.is_empty() { "Other" } else { &r.kind };
        out.push_str(&format!(
            "{} {} → {outcome} ({kind})\n",
            r.method,
            crate::tools::bounded(r.url.clone(), 500)
        ));
    }
    Ok(ToolResult::text(out.trim_end().to_string()))
}
