//! find: elements matching a plain-language query, ranked, with refs and points in screenshot
//! coordinates. The words are matched against what Chrome's accessibility tree knows of each
//! element: role, accessible name (which already folds in label, title, placeholder, alt),
//! description, value and the element's own text.

use crate::ax::{self, clip, role_name, Snapshot};
use crate::coords;
use crate::refs;
use protocol::ToolResult;
use serde::Deserialize;

const MAX_RESULTS: usize = 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Args {
    query: String,
    tab_id: i32,
}

/// Words that say nothing about which element is meant.
const STOP: &[&str] = &[
    "the", "a", "an", "of", "to", "for", "on", "in", "at", "with", "and", "or", "field", "element",
    "that", "this", "which", "is", "me",
];

pub async fn run(args: Args) -> Result<ToolResult, String> {
    let tab = args.tab_id;
    let query = args.query.trim().to_lowercase();
    if query.is_empty() {
        return Err("Invalid argument `query`: it must not be empty.".into());
    }
    let snap = Snapshot::take(tab).await?;
    let mut scored: Vec<(u32, usize)> = (0..snap.nodes.len())
        .filter_map(|i| Some((score(&snap, i, &query)?, i)))
        .collect();
    // Best first; document order among equals.
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut lines = Vec::new();
    for &(_, i) in &scored {
        if lines.len() == MAX_RESULTS {
            break;
        }
        let Some(backend) = snap.nodes[i].backend else {
            continue;
        };
        let Some(r) = snap.ref_of(i).await else {
            continue;
        };
        let n = &snap.nodes[i];
        let mut line = format!("[{r}] {}", role_name(&n.role));
        if !n.name.is_empty() {
            line.push_str(&format!(" \"{}\"", clip(&n.name, 120)));
        }
        line.push_str(&snap.attributes(i));
        match refs::box_of(snap.frames[n.frame].target(tab), backend).await {
            Ok((x, y, _, _)) => {
                let (sx, sy) = coords::to_screenshot(tab, x, y);
                line.push_str(&format!(" at ({sx}, {sy})"));
            }
            Err(_) => line.push_str(" (not visible)"),
        }
        lines.push(line);
    }
    refs::commit(tab).await;
    if lines.is_empty() {
        return Ok(ToolResult::text(format!(
            "No elements match \"{}\". Try other words, or read_page to see the page.",
            args.query.trim()
        )));
    }
    let head = if scored.len() > MAX_RESULTS {
        format!(
            "Found {} elements matching \"{}\"; the best {MAX_RESULTS} (refine the query to see others):",
            scored.len(),
            args.query.trim()
        )
    } else {
        format!(
            "Found {} element(s) matching \"{}\":",
            lines.len(),
            args.query.trim()
        )
    };
    let text = format!("{head}\n{}", lines.join("\n"));
    Ok(ToolResult::text(text))
}

/// The text of a node's direct text children (through collapsed wrappers).
fn own_text(snap: &Snapshot, i: usize, out: &mut String, budget: &mut usize) {
    for &c in &snap.nodes[i].children {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let n = &snap.nodes[c];
        if n.role == "StaticText" {
            out.push(' ');
            out.push_str(&n.name);
        } else if n.ignored || ax::is_noise(&n.role) {
            own_text(snap, c, out, budget);
        }
    }
}

fn score(snap: &Snapshot, i: usize, query: &str) -> Option<u32> {
    let n = &snap.nodes[i];
    if n.ignored || n.backend.is_none() || n.role == "StaticText" || n.role == "InlineTextBox" {
        return None;
    }
    if ax::is_noise(&n.role) && n.name.is_empty() && !snap.is_interactive(i) {
        return None;
    }
    let name = n.name.to_lowercase();
    let role = role_name(&n.role).to_lowercase();
    let mut text = String::new();
    own_text(snap, i, &mut text, &mut 50);
    let other = format!(
        "{} {} {}",
        n.value.to_lowercase(),
        n.description.to_lowercase(),
        text.to_lowercase()
    );
    let mut s = 0u32;
    if !name.is_empty() && name == query {
        s += 100;
    } else if !name.is_empty() && name.contains(query) {
        s += 50;
    } else if other.contains(query) {
        s += 30;
    }
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOP.contains(w))
        .collect();
    let mut matched = 0;
    for w in &words {
        let mut hit = false;
        if name.contains(w) {
            s += 10;
            hit = true;
        }
        if role.contains(w) || synonym(w).is_some_and(|r| role == r) {
            s += 8;
            hit = true;
        }
        if other.contains(w) {
            s += 4;
            hit = true;
        }
        if hit {
            matched += 1;
        }
    }
    if s == 0 || (s < 30 && matched * 2 < words.len()) {
        return None;
    }
    if snap.is_interactive(i) {
        s += 3;
    }
    Some(s)
}

/// Everyday words for roles.
fn synonym(word: &str) -> Option<&'static str> {
    Some(match word {
        "input" | "box" | "textfield" | "text" => "textbox",
        "dropdown" | "select" => "combobox",
        "tickbox" => "checkbox",
        "title" | "headline" => "heading",
        "hyperlink" => "link",
        "image" | "picture" | "photo" => "image",
        _ => return None,
    })
}
