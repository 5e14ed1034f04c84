//! read_page: the accessibility tree of a group tab, one node a line (`role "name" [ref_N]
//! attributes`), indented one space per level, unnamed wrappers collapsed into their children.

use crate::ax::{self, clip, role_name, Snapshot};
use crate::cdp;
use crate::refs;
use futures_util::future::join_all;
use protocol::ToolResult;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    tab_id: i32,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    depth: Option<u32>,
    #[serde(default, rename = "ref_id")]
    ref_id: Option<String>,
    #[serde(default, rename = "max_chars")]
    max_chars: Option<usize>,
}

const DEFAULT_DEPTH: u32 = 15;
const DEFAULT_MAX_CHARS: usize = 50_000;
/// "Near" the viewport: this many viewport heights above and below it.
const NEAR_VIEWPORTS: f64 = 1.0;

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
    let max_chars = args.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
    let interactive = match args.filter.as_deref() {
        None | Some("all") => false,
        Some("interactive") => true,
        Some(other) => {
            return Err(format!(
                "Invalid argument `filter`: expected \"all\" or \"interactive\", got \"{other}\"."
            ))
        }
    };
    let target = match &args.ref_id {
        Some(r) => Some(refs::resolve(tab, r).await?),
        None => None,
    };
    let snap = Snapshot::take(tab).await?;
    let start = match (&target, &args.ref_id) {
        (Some(t), Some(r)) => snap.find_target(t).ok_or_else(|| {
            format!("Stale ref {r}: the element is no longer in the page. Call read_page or find again for fresh refs.")
        })?,
        _ => snap.root,
    };
    let (vw, vh) = viewport(tab).await?;
    let mut out = String::new();
    if interactive {
        let mut found = Vec::new();
        collect_interactive(&snap, start, 0, depth, &mut found);
        let near = in_or_near_viewport(&snap, &found, vh).await;
        for i in near {
            line(&snap, i, 0, &mut out);
        }
        if out.is_empty() {
            out.push_str("(no interactive elements in or near the viewport)\n");
        }
    } else {
        render(&snap, start, 0, depth, "", &mut out);
    }
    for u in &snap.unreadable {
        out.push_str(&format!("(not read: {u})\n"));
    }
    let size = out.chars().count();
    let result = if size > max_chars {
        Err(too_big(&snap, size, max_chars, depth))
    } else {
        out.push_str(&format!("Viewport: {vw}x{vh}"));
        Ok(ToolResult::text(out))
    };
    refs::commit(tab).await;
    result
}

/// The viewport's size in CSS pixels, scrollbars included (what a screenshot shows).
pub async fn viewport(tab: i32) -> Result<(i64, i64), String> {
    let out = cdp::send(
        tab,
        "Runtime.evaluate",
        json!({"expression": "[innerWidth, innerHeight]", "returnByValue": true}),
    )
    .await?;
    let v = out.pointer("/result/value").and_then(Value::as_array);
    let dim = |i: usize| {
        v.and_then(|v| v.get(i))
            .and_then(Value::as_f64)
            .map(|f| f.round() as i64)
    };
    match (dim(0), dim(1)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err("reading the viewport size failed".into()),
    }
}

fn skipped(snap: &Snapshot, i: usize) -> bool {
    let n = &snap.nodes[i];
    n.ignored || n.role == "InlineTextBox" || (ax::is_noise(&n.role) && n.name.is_empty())
}

/// Labels and legends whose only content is text: that text is already the accessible name of
/// their control or group.
fn redundant_label(snap: &Snapshot, i: usize) -> bool {
    let n = &snap.nodes[i];
    matches!(n.role.as_str(), "LabelText" | "Legend")
        && n.name.is_empty()
        && n.children.iter().all(|&c| {
            let c = &snap.nodes[c];
            c.role == "StaticText" || c.ignored
        })
}

/// The text of an unnamed element whose only content is one piece of text (a paragraph, a list
/// item): shown as its name, saving a line.
fn sole_text(snap: &Snapshot, i: usize) -> Option<&str> {
    let n = &snap.nodes[i];
    if !n.name.is_empty() || n.children.len() != 1 {
        return None;
    }
    let c = &snap.nodes[n.children[0]];
    (c.role == "StaticText" && !c.name.is_empty()).then_some(c.name.as_str())
}

/// Controls whose inner parts (date fields' spinbuttons) say nothing more than the control.
fn opaque(role: &str) -> bool {
    matches!(role, "Date" | "DateTime" | "InputTime" | "ColorWell")
}

fn line(snap: &Snapshot, i: usize, level: usize, out: &mut String) {
    let n = &snap.nodes[i];
    for _ in 0..level {
        out.push(' ');
    }
    out.push_str(role_name(&n.role));
    let name = if n.name.is_empty() {
        sole_text(snap, i).unwrap_or("")
    } else {
        &n.name
    };
    if !name.is_empty() {
        out.push_str(&format!(" \"{}\"", clip(name, 300)));
    }
    if let Some(r) = snap.ref_of(i) {
        out.push_str(&format!(" [{r}]"));
    }
    out.push_str(&snap.attributes(i));
    out.push('\n');
}

fn render(snap: &Snapshot, i: usize, level: u32, depth: u32, parent_name: &str, out: &mut String) {
    let n = &snap.nodes[i];
    if skipped(snap, i) {
        for &c in &n.children {
            render(snap, c, level, depth, parent_name, out);
        }
        return;
    }
    if level >= depth || redundant_label(snap, i) {
        return;
    }
    if n.role == "StaticText" {
        // Text already said by its parent's name is not repeated.
        if !n.name.is_empty() && !parent_name.contains(n.name.as_str()) {
            for _ in 0..level {
                out.push(' ');
            }
            out.push_str(&format!("text \"{}\"\n", clip(&n.name, 500)));
        }
        return;
    }
    line(snap, i, level as usize, out);
    if opaque(&n.role) {
        return;
    }
    let name = if n.name.is_empty() {
        sole_text(snap, i).unwrap_or("")
    } else {
        &n.name
    };
    for &c in &n.children {
        render(snap, c, level + 1, depth, name, out);
    }
}

fn collect_interactive(snap: &Snapshot, i: usize, level: u32, depth: u32, out: &mut Vec<usize>) {
    if level >= depth {
        return;
    }
    let next = if skipped(snap, i) { level } else { level + 1 };
    if !snap.nodes[i].ignored && snap.is_interactive(i) {
        out.push(i);
    }
    for &c in &snap.nodes[i].children {
        collect_interactive(snap, c, next, depth, out);
    }
}

/// The nodes that have a box within `NEAR_VIEWPORTS` viewport heights of the visible area.
async fn in_or_near_viewport(snap: &Snapshot, nodes: &[usize], vh: i64) -> Vec<usize> {
    let margin = vh as f64 * NEAR_VIEWPORTS;
    let boxes = join_all(nodes.iter().map(|&i| async move {
        match snap.nodes[i].backend {
            Some(b) => refs::box_of(snap.tab, b).await.ok(),
            None => None,
        }
    }))
    .await;
    nodes
        .iter()
        .zip(boxes)
        .filter_map(|(&i, b)| {
            let (_, y, _, h) = b?;
            (y + h / 2.0 >= -margin && y - h / 2.0 <= vh as f64 + margin).then_some(i)
        })
        .collect()
}

fn too_big(snap: &Snapshot, size: usize, max: usize, depth: u32) -> String {
    let regions: Vec<String> = snap
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            matches!(
                n.role.as_str(),
                "main"
                    | "navigation"
                    | "banner"
                    | "contentinfo"
                    | "complementary"
                    | "form"
                    | "region"
                    | "search"
                    | "article"
            )
        })
        .take(12)
        .filter_map(|(i, n)| {
            let r = snap.ref_of(i)?;
            Some(if n.name.is_empty() {
                format!("{} [{r}]", role_name(&n.role))
            } else {
                format!("{} \"{}\" [{r}]", role_name(&n.role), clip(&n.name, 60))
            })
        })
        .collect();
    let smaller = (depth / 2).max(1);
    let mut msg = format!(
        "The page's tree is {size} characters, over max_chars ({max}). Call read_page with a smaller depth (e.g. depth: {smaller}), with filter: \"interactive\", or with ref_id set to the element whose subtree you need"
    );
    if regions.is_empty() {
        msg.push('.');
    } else {
        msg.push_str(&format!(", e.g. one of: {}.", regions.join(", ")));
    }
    msg
}
