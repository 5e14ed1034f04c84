//! The activity sign: while a command runs on a group tab (and `LINGER_MS` after), the tab's
//! group title starts with "● " and the toolbar button shows a badge and a title on that tab.
//! Both are the browser's own UI, outside every page: no page can read or remove them, no
//! page's layout changes, and screenshots never show them. Set beside the command, never on
//! its path: a command only updates a table; one task brings the browser's UI to match it.

use crate::chrome::storage::{self, Area};
use crate::chrome::{action, tab_groups};
use crate::js::{log, now_ms, sleep_ms};
use crate::vec_map::{VecMap, VecSet};
use std::cell::RefCell;
use wasm_bindgen_futures::spawn_local;

/// What a group's title starts with while the agent acts on one of its tabs.
pub const MARK: &str = "\u{25CF} ";
const BADGE: &str = "\u{25CF}";
const BADGE_COLOR: &str = "#d93025";
/// The sign stays this long after the last command on the tab ends.
const LINGER_MS: f64 = 1500.0;
/// The groups and tabs showing the sign, for a worker that starts again to take it down.
const SHOWN_KEY: &str = "activitySign";

struct TabSign {
    group: i32,
    running: u32,
    last_end: f64,
    /// A task waits to take the sign down.
    lingering: bool,
}

#[derive(Default)]
struct Signs {
    /// The tabs that should show the sign, with their group.
    wanted: VecMap<i32, TabSign>,
    /// What the browser shows (or is being told to show).
    shown_tabs: VecSet<i32>,
    shown_groups: VecSet<i32>,
    /// The task that makes the browser match `wanted` is running.
    applying: bool,
}

thread_local! {
    static SIGNS: RefCell<Signs> = RefCell::new(Signs::default());
}

fn with<R>(f: impl FnOnce(&mut Signs) -> R) -> R {
    SIGNS.with(|s| f(&mut s.borrow_mut()))
}

/// A command running on a tab: the sign shows from now until `LINGER_MS` after the last such
/// guard is dropped.
pub struct Acting(i32);

/// The command starts acting on `tab` of `group` (no await: the sign is set beside it).
pub fn acting(tab: i32, group: i32) -> Acting {
    let kick = with(|s| {
        let sign = s.wanted.entry(tab).or_insert(TabSign {
            group,
            running: 0,
            last_end: 0.0,
            lingering: false,
        });
        sign.running += 1;
        sign.group = group;
        let behind = !s.shown_tabs.contains(&tab) || !s.shown_groups.contains(&group);
        behind && !std::mem::replace(&mut s.applying, true)
    });
    if kick {
        spawn_local(apply());
    }
    Acting(tab)
}

impl Drop for Acting {
    fn drop(&mut self) {
        let tab = self.0;
        let linger = with(|s| {
            let Some(sign) = s.wanted.get_mut(&tab) else {
                return false;
            };
            sign.running = sign.running.saturating_sub(1);
            if sign.running > 0 {
                return false;
            }
            sign.last_end = now_ms();
            !std::mem::replace(&mut sign.lingering, true)
        });
        if linger {
            spawn_local(take_down_later(tab));
        }
    }
}

/// Takes the tab's sign down once no command ran on it for `LINGER_MS`.
async fn take_down_later(tab: i32) {
    let mut wait = LINGER_MS;
    loop {
        sleep_ms(wait as u32).await;
        let next = with(|s| {
            let sign = s.wanted.get_mut(&tab)?;
            if sign.running > 0 {
                sign.lingering = false;
                return None;
            }
            let left = sign.last_end + LINGER_MS - now_ms();
            if left > 1.0 {
                return Some(left);
            }
            s.wanted.remove(&tab);
            None
        });
        match next {
            Some(left) => wait = left,
            None => break,
        }
    }
    if !with(|s| std::mem::replace(&mut s.applying, true)) {
        apply().await;
    }
}

/// One change that brings the browser's UI closer to what is wanted.
enum Step {
    ShowTab(i32),
    MarkGroup(i32),
    ClearTab(i32),
    UnmarkGroup(i32),
}

fn next_step(s: &mut Signs) -> Option<Step> {
    let wanted_groups: VecSet<i32> = s.wanted.values().map(|t| t.group).collect();
    let step = if let Some(t) = s.wanted.keys().find(|t| !s.shown_tabs.contains(t)) {
        Step::ShowTab(*t)
    } else if let Some(g) = wanted_groups.iter().find(|g| !s.shown_groups.contains(g)) {
        Step::MarkGroup(*g)
    } else if let Some(t) = s.shown_tabs.iter().find(|t| !s.wanted.contains_key(t)) {
        Step::ClearTab(*t)
    } else if let Some(g) = s.shown_groups.iter().find(|g| !wanted_groups.contains(g)) {
        Step::UnmarkGroup(*g)
    } else {
        return None;
    };
    match step {
        Step::ShowTab(t) => s.shown_tabs.insert(t),
        Step::MarkGroup(g) => s.shown_groups.insert(g),
        Step::ClearTab(t) => s.shown_tabs.remove(&t),
        Step::UnmarkGroup(g) => s.shown_groups.remove(&g),
    };
    Some(step)
}

/// Makes the browser show what is wanted, one change at a time (the caller set `applying`),
/// then stores what it shows.
async fn apply() {
    let mut changed = false;
    while let Some(step) = with(next_step) {
        changed = true;
        let done = match step {
            Step::ShowTab(tab) => show_tab(tab).await,
            Step::ClearTab(tab) => clear_tab(tab).await,
            Step::MarkGroup(g) => retitle(g, true).await,
            Step::UnmarkGroup(g) => retitle(g, false).await,
        };
        if let Err(e) = done {
            // A tab or group that closed meanwhile has nothing left to show.
            log(&format!("activity sign: {e}"));
        }
    }
    let shown = with(|s| {
        s.applying = false;
        (
            s.shown_groups.iter().copied().collect::<Vec<_>>(),
            s.shown_tabs.iter().copied().collect::<Vec<_>>(),
        )
    });
    if changed {
        if let Err(e) = storage::set(Area::Session, SHOWN_KEY, &shown).await {
            log(&format!("cannot store the activity sign: {e}"));
        }
    }
}

async fn show_tab(tab: i32) -> Result<(), String> {
    let title = format!(
        "{}: the agent is acting on this tab. Open this menu to Stop it.",
        crate::brand::brand().product_name
    );
    action::set_tab_badge_color(tab, BADGE_COLOR).await?;
    action::set_tab_badge_text(tab, Some(BADGE)).await?;
    action::set_title(Some(tab), &title).await
}

async fn clear_tab(tab: i32) -> Result<(), String> {
    action::set_tab_badge_text(tab, None).await?;
    // Chrome takes no "back to the default" for one tab's title: the default, set for it.
    let title = crate::brand::brand().product_name;
    action::set_title(Some(tab), &title).await
}

/// `chrome.tabs.onUpdated` of a group tab: Chrome resets a tab's own badge and title when it
/// navigates, so a tab showing the sign is shown again.
pub fn tab_updated(tab: i32) {
    let kick = with(|s| {
        s.shown_tabs.remove(&tab)
            && s.wanted.contains_key(&tab)
            && !std::mem::replace(&mut s.applying, true)
    });
    if kick {
        spawn_local(apply());
    }
}

/// Adds or removes the mark at the start of the group's title.
async fn retitle(group: i32, mark: bool) -> Result<(), String> {
    let Some(found) = tab_groups::get(group).await else {
        return Ok(()); // closed: nothing to mark
    };
    let title = found.title.unwrap_or_default();
    let new = match (mark, title.strip_prefix(MARK)) {
        (true, None) => format!("{MARK}{title}"),
        (false, Some(rest)) => rest.to_string(),
        _ => return Ok(()),
    };
    tab_groups::set_title(group, &new).await
}

/// A worker starting again takes down a sign its predecessor left up.
pub async fn resume() {
    let stored: Option<(Vec<i32>, Vec<i32>)> =
        storage::get(Area::Session, SHOWN_KEY).await.ok().flatten();
    let Some((groups, tabs)) = stored else {
        return;
    };
    if groups.is_empty() && tabs.is_empty() {
        return;
    }
    let kick = with(|s| {
        s.shown_groups.extend(groups);
        s.shown_tabs.extend(tabs);
        !std::mem::replace(&mut s.applying, true)
    });
    if kick {
        apply().await;
    }
}

#[cfg(test)]
#[test]
fn its_key_is_read_early_as_the_worker_starts() {
    assert!(crate::chrome::storage::early_reads::asks(
        "session", SHOWN_KEY
    ));
}
