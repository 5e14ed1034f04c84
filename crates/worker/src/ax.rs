//! The accessibility snapshot of a tab: Chrome's own tree (`Accessibility.getFullAXTree`) for
//! every frame of the tab (out-of-process iframes through their child sessions), each iframe's
//! document hung under its
//! `<iframe>` element, with roles, names, values and states. Shadow roots (open and closed) are
//! part of Chrome's tree already. find searches it; refs name its nodes (read_page walks the page
//! itself: tools/read_page.js).

use crate::cdp;
use crate::refs::{self, Doc};
use serde_json::{json, Value};
use std::collections::HashMap;

pub struct Node {
    pub role: String,
    pub name: String,
    pub value: String,
    pub description: String,
    pub props: Vec<(String, Value)>,
    pub backend: Option<i64>,
    /// Index into `Snapshot::frames`.
    pub frame: usize,
    pub children: Vec<usize>,
    pub ignored: bool,
}

pub struct Snapshot {
    pub tab: i32,
    pub nodes: Vec<Node>,
    pub root: usize,
    pub frames: Vec<Doc>,
    /// Frames whose tree could not be read (e.g. cross-site iframes in another process).
    pub unreadable: Vec<String>,
}

/// AX value objects (`{type, value}`) as text.
fn ax_text(v: Option<&Value>) -> String {
    match v.and_then(|v| v.get("value")) {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

impl Snapshot {
    pub async fn take(tab: i32) -> Result<Snapshot, String> {
        let frames = refs::frames(tab).await?;
        let live: HashMap<String, String> = frames
            .iter()
            .map(|f| (f.frame.clone(), f.loader.clone()))
            .collect();
        refs::begin(tab, &live).await;
        let mut snap = Snapshot {
            tab,
            nodes: Vec::new(),
            root: 0,
            frames,
            unreadable: Vec::new(),
        };
        let main =
            cdp::send_with_timeout(tab, "Accessibility.getFullAXTree", json!({}), 20_000).await?;
        snap.root = snap
            .add_tree(&main, 0)
            .ok_or("the page has no accessibility tree")?;
        for i in 1..snap.frames.len() {
            let fid = snap.frames[i].frame.clone();
            if let Err(e) = snap.add_frame(i, &fid).await {
                snap.unreadable.push(format!("frame {fid}: {e}"));
            }
        }
        Ok(snap)
    }

    async fn add_frame(&mut self, index: usize, frame_id: &str) -> Result<(), String> {
        // The `<iframe>` element is in the frame's own session, or, for the top frame of an
        // out-of-process iframe, in the session that embeds it.
        let target = self.frames[index].target(self.tab);
        let parent = match cdp::embedder(&target) {
            Some((parent, root)) if root == frame_id => parent,
            _ => target.clone(),
        };
        let owner =
            cdp::send_to(&parent, "DOM.getFrameOwner", json!({"frameId": frame_id})).await?;
        let owner = owner
            .get("backendNodeId")
            .and_then(Value::as_i64)
            .ok_or("no owner element")?;
        // Backend ids are per process: the owner is a node of a frame in `parent`'s session.
        let Some(host) = self.nodes.iter().position(|n| {
            n.backend == Some(owner) && self.frames[n.frame].session == parent.session
        }) else {
            // The iframe element is not in the tree (hidden): nothing to hang its document on.
            return Ok(());
        };
        let already = self.nodes[host]
            .children
            .iter()
            .any(|&c| self.nodes[c].role == "RootWebArea");
        if already {
            return Ok(());
        }
        let tree = cdp::send_to_with_timeout(
            &target,
            "Accessibility.getFullAXTree",
            json!({"frameId": frame_id}),
            20_000,
        )
        .await?;
        if let Some(root) = self.add_tree(&tree, index) {
            self.nodes[host].children.push(root);
        }
        Ok(())
    }

    /// Adds the nodes of one `getFullAXTree` result; returns its root's index.
    fn add_tree(&mut self, tree: &Value, frame: usize) -> Option<usize> {
        let list = tree.get("nodes")?.as_array()?;
        let base = self.nodes.len();
        let index: HashMap<&str, usize> = list
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.get("nodeId")?.as_str()?, base + i)))
            .collect();
        let mut root = None;
        for n in list {
            let children = n
                .get("childIds")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .filter_map(|id| index.get(id.as_str()?).copied())
                        .collect()
                })
                .unwrap_or_default();
            if root.is_none() && n.get("parentId").is_none() {
                root = Some(self.nodes.len());
            }
            let props = n
                .get("properties")
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .filter_map(|p| {
                            Some((
                                p.get("name")?.as_str()?.to_string(),
                                p.pointer("/value/value").cloned().unwrap_or(Value::Null),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.nodes.push(Node {
                role: ax_text(n.get("role")),
                name: ax_text(n.get("name")),
                value: ax_text(n.get("value")),
                description: ax_text(n.get("description")),
                props,
                backend: n.get("backendDOMNodeId").and_then(Value::as_i64),
                frame,
                children,
                ignored: n.get("ignored").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        root.or(if list.is_empty() { None } else { Some(base) })
    }

    /// The node's ref (assigned on first sight), if it is an element.
    pub async fn ref_of(&self, i: usize) -> Option<String> {
        let n = &self.nodes[i];
        refs::ref_of_backend(self.tab, &self.frames[n.frame], n.backend?)
            .await
            .ok()
    }

    pub fn prop(&self, i: usize, name: &str) -> Option<&Value> {
        self.nodes[i]
            .props
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

/// The role as agents know it (ARIA names; Chrome's internal ones mapped).
pub fn role_name(role: &str) -> &str {
    match role {
        "RootWebArea" => "document",
        "StaticText" => "text",
        "Iframe" | "IframePresentational" => "iframe",
        "LabelText" => "label",
        "Legend" => "legend",
        "Date" => "date",
        "DateTime" => "datetime",
        "InputTime" => "time",
        "ColorWell" => "color",
        "DisclosureTriangle" => "button",
        "MenuListPopup" => "listbox",
        "MenuListOption" => "option",
        "HeaderAsNonLandmark" => "header",
        "FooterAsNonLandmark" => "footer",
        "Section" => "region",
        "Canvas" => "canvas",
        "Pre" => "pre",
        "Abbr" => "abbr",
        "Ruby" => "ruby",
        "Video" => "video",
        "Audio" => "audio",
        "Figcaption" => "figcaption",
        "DescriptionListTerm" | "DescriptionListDetail" | "DescriptionList" => "list",
        other => other,
    }
}

/// Wrappers that carry nothing for an agent when they have no name: their children take their
/// place.
pub fn is_noise(role: &str) -> bool {
    matches!(
        role,
        "generic"
            | "none"
            | "presentation"
            | "GenericContainer"
            | "Div"
            | "LayoutTable"
            | "LayoutTableRow"
            | "LayoutTableCell"
            | "MenuListPopup"
            | "LineBreak"
            | "ListMarker"
            | "Unknown"
            | ""
    )
}

/// Roles an agent can act on.
pub fn is_interactive_role(role: &str) -> bool {
    matches!(
        role,
        "button"
            | "link"
            | "textbox"
            | "searchbox"
            | "checkbox"
            | "radio"
            | "combobox"
            | "listbox"
            | "option"
            | "MenuListOption"
            | "menuitem"
            | "menuitemcheckbox"
            | "menuitemradio"
            | "tab"
            | "switch"
            | "slider"
            | "spinbutton"
            | "treeitem"
            | "PopUpButton"
            | "ToggleButton"
            | "DisclosureTriangle"
    )
}

impl Snapshot {
    pub fn is_interactive(&self, i: usize) -> bool {
        let n = &self.nodes[i];
        if n.ignored || n.role == "RootWebArea" || n.role == "StaticText" {
            return false;
        }
        if matches!(n.role.as_str(), "Iframe" | "IframePresentational") {
            return false;
        }
        is_interactive_role(&n.role)
            || self.prop(i, "editable").is_some()
            || self.prop(i, "focusable") == Some(&Value::Bool(true))
    }

    /// The attributes worth showing after the name: `href`, `value`, states.
    pub fn attributes(&self, i: usize) -> String {
        let n = &self.nodes[i];
        let mut out = String::new();
        if let Some(Value::String(url)) = self.prop(i, "url") {
            if !url.is_empty() {
                out.push_str(&format!(" href=\"{}\"", clip(url, 200)));
            }
        }
        if !n.value.is_empty() && n.value != n.name {
            out.push_str(&format!(" value=\"{}\"", clip(&n.value, 200)));
        }
        if !n.description.is_empty() && n.description != n.name {
            out.push_str(&format!(" description=\"{}\"", clip(&n.description, 200)));
        }
        for (key, shown) in [
            ("checked", "checked"),
            ("pressed", "pressed"),
            ("selected", "selected"),
            ("expanded", "expanded"),
            ("disabled", "disabled"),
            ("required", "required"),
            ("readonly", "readonly"),
            ("invalid", "invalid"),
        ] {
            match self.prop(i, key) {
                Some(Value::Bool(true)) => out.push_str(&format!(" {shown}")),
                Some(Value::String(s)) if s == "true" => out.push_str(&format!(" {shown}")),
                Some(Value::String(s)) if s == "mixed" => out.push_str(&format!(" {shown}=mixed")),
                Some(Value::Bool(false)) | Some(Value::String(_))
                    if key == "expanded" || key == "checked" =>
                {
                    out.push_str(&format!(" {shown}=false"))
                }
                _ => {}
            }
        }
        if let Some(Value::Number(l)) = self.prop(i, "level") {
            out.push_str(&format!(" level={l}"));
        }
        out
    }
}

pub fn clip(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let quoted = one_line.replace('"', "\\\"");
    match quoted.char_indices().nth(max) {
        None => quoted,
        Some((cut, _)) => format!("{}…", &quoted[..cut]),
    }
}
