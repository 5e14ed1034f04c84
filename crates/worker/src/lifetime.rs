//! A group tab's lifetime, as the worker sees it: it joins the automation group (recorded from
//! then; a tab a group tab's page opens joins it), it is found again after a worker restart (recorded again, its idle clock restarted),
//! and it leaves the group or closes: then everything kept of it goes, through [`forget`].

use crate::cdp::{self, idle, record};
use crate::chrome::debugger;
use crate::chrome::tabs::{self, GroupTarget};
use crate::vec_map::VecSet;
use crate::{active, boundary, debugging_bar, geometry, group, isolated_world, js, policy, tools};

/// Everything the worker keeps of a tab, in every module, forgotten in one call: the tab closed
/// or left the automation group. A store added anywhere is forgotten here, and listed in
/// [`kept`].
pub fn forget(tab: i32) {
    group::tab_gone(tab);
    boundary::forget(tab);
    cdp::on_detach(tab);
    record::forget(tab);
    idle::forget(tab);
    isolated_world::forget(tab);
    geometry::scale::forget(tab);
    debugging_bar::forget(tab);
    tools::forget(tab);
    policy::forget(tab);
    active::forget(tab);
}

/// The stores that keep anything of the tab, by name: what an extension page asking about a
/// tab is told (`kept` of its state), so a closed tab can be seen to leave nothing. Every store
/// [`forget`] clears is listed here.
pub fn kept(tab: i32) -> Vec<&'static str> {
    STORES
        .iter()
        .filter(|(_, holds)| holds(tab))
        .map(|(name, _)| *name)
        .collect()
}

/// Whether a store holds anything of a tab.
type Holds = fn(i32) -> bool;

/// Every per-tab store, by name.
const STORES: [(&str, Holds); 13] = [
    ("group", group::holds),
    ("boundary", boundary::holds),
    ("debugger", cdp::is_attached),
    ("child sessions", cdp::children::holds),
    ("recording", record::holds),
    ("idle clock", idle::holds),
    ("refs", isolated_world::holds),
    ("screenshot scale", geometry::scale::holds),
    ("debugging bar", debugging_bar::holds),
    ("tools", tools::holds),
    ("URL policy", policy::holds),
    ("active tab", active::holds),
    ("held mouse button", tools::computer::button_held),
];

/// A tab's group changed (`chrome.tabs.onUpdated`): joining the automation group starts its
/// recording now, not at its first command, and is reported (`TabOpened`; a tab a command or a
/// page opened was made active there already); leaving it detaches it and forgets all of it.
pub async fn group_changed(tab: i32, group: i32) {
    if let Some(owner) = group::owner_of(group).await {
        if let Err(e) = policy::rules::cover(tab, &owner).await {
            js::log(&format!(
                "the URL policy for tab {tab}, which joined the group: {e}"
            ));
        }
        if !active::is_deciding(tab) {
            active::joined(tab, false).await;
        }
        if let Err(e) = record::observe(tab).await {
            js::log(&format!("recording tab {tab}, which joined the group: {e}"));
        }
    } else {
        if cdp::is_attached(tab) {
            idle::detach(tab).await;
        }
        forget(tab);
    }
}

/// A tab opened by `opener`, a group tab: it joins the group as its active tab. Chrome itself
/// puts a tab that a group tab's page opens (a link, `window.open`) in the group; one it left out
/// joins when the opener's page opened a window just now (`Page.windowOpen`). Chrome also names
/// an opener for tabs that the user or another program creates next to a group tab; those stay
/// out.
pub async fn adopt(tab_id: i32, opener: i32) -> Result<(), String> {
    // Decided here rather than by the group event; reports wait for the decision.
    let from_group = group::reported_any(opener).is_some();
    if from_group {
        active::deciding(tab_id);
    }
    let joined = adopted(tab_id, opener).await;
    if from_group {
        active::decided(tab_id);
    }
    joined
}

async fn adopted(tab_id: i32, opener: i32) -> Result<(), String> {
    let not_ours = || {
        // Held to the URL policy since it opened (lib.rs): not a group tab after all.
        policy::rules::uncover(tab_id);
        Ok(())
    };
    // The opener's group, whichever agent's it is: the new tab joins that one.
    let group_id = tabs::get(opener).await?.group_id;
    if group::owner_of(group_id).await.is_none() {
        return not_ours();
    }
    let grouped = tabs::get(tab_id).await?.group_id == group_id;
    if !grouped {
        let mut opened = false;
        for _ in 0..20 {
            if record::opened_window_within(opener, 3_000.0) {
                opened = true;
                break;
            }
            js::sleep_ms(50).await;
        }
        if !opened {
            return not_ours();
        }
    }
    // Active before it is listed in the group (where Chrome may have put it already).
    active::activate(tab_id).await;
    if !grouped {
        if let Err(e) = tabs::group(&[tab_id], GroupTarget::Existing(group_id)).await {
            active::forget(tab_id);
            return Err(e);
        }
    }
    active::opened(tab_id);
    record::observe(tab_id).await?;
    Ok(())
}

/// At worker start: the group's tabs that the debugger is still attached to (a restart while
/// they were recorded) are recorded again at once (console messages Chrome holds are replayed,
/// the idle clock starts). Tabs detached for idleness stay so until a command.
pub async fn resume() {
    let attached = debugger::attached_tabs().await.unwrap_or_default();
    for t in group::all_tabs().await.unwrap_or_default() {
        let Some(id) = t.id.filter(|id| attached.contains(id)) else {
            continue;
        };
        if let Err(e) = record::observe(id).await {
            js::log(&format!("recording tab {id} again after a restart: {e}"));
        }
    }
}

/// The idle alarm fired: a worker that restarted while group tabs stayed attached does not know
/// them; their idle clock starts now.
pub async fn idle_alarm() {
    if idle::watching() {
        return;
    }
    let in_group: VecSet<i32> = group::all_tabs()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| t.id)
        .collect();
    let attached = debugger::attached_tabs().await.unwrap_or_default();
    let found: Vec<i32> = attached
        .into_iter()
        .filter(|t| in_group.contains(t))
        .collect();
    if found.is_empty() {
        idle::stop_alarm().await;
        return;
    }
    for tab in found {
        idle::attached_after_restart(tab);
    }
}
