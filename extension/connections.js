// The list of connections (one per backend, each with its own tab group), shared by Options
// and the popup: each one's group, server, status, and its Connect / Disconnect / Remove. The
// worker holds the list and decides; this only shows it and sends the person's clicks.
const LABELS = { disconnected: "Disconnected", connecting: "Connecting", connected: "Connected", error: "Error" };
// Chrome's tab group colours, as swatches.
const SWATCH = { grey: "#5f6368", blue: "#1a73e8", red: "#d93025", yellow: "#f9ab00", green: "#188038",
  pink: "#d01884", purple: "#a142f4", cyan: "#007b83", orange: "#fa903e" };

function statusText(status) {
  const label = LABELS[status.state] ?? status.state;
  return status.message.startsWith(label) ? status.message : `${label}: ${status.message}`;
}

function button(text, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

// Fills `list` (a <ul>) with the connections of `state`; `compact` (the popup) shows only
// the group, the status and Connect / Disconnect.
export function renderConnections(list, state, { compact = false, onError = () => {} } = {}) {
  list.replaceChildren();
  for (const c of state.connections ?? []) {
    const li = document.createElement("li");
    li.className = "connection";
    li.dataset.id = String(c.id);
    li.dataset.state = c.status.state;
    const head = document.createElement("p");
    head.className = "connection-head";
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = SWATCH[c.groupColor] ?? SWATCH.grey;
    swatch.setAttribute("aria-hidden", "true");
    const title = document.createElement("strong");
    title.className = "connection-group";
    title.textContent = c.groupTitle;
    head.append(swatch, title);
    if (!compact) {
      const where = document.createElement("span");
      where.className = "connection-server";
      where.textContent = ` ${c.serverUrl}${c.target ? ` (target ${c.target})` : ""}`;
      head.append(where);
    }
    const status = document.createElement("p");
    status.className = "status connection-status";
    status.dataset.state = c.status.state;
    status.textContent = statusText(c.status);
    const actions = document.createElement("div");
    actions.className = "actions connection-actions";
    const send = async (type) => {
      const reply = await chrome.runtime.sendMessage({ type, id: c.id });
      if (reply && !reply.ok) onError(reply.message);
    };
    const live = c.status.state === "connected" || c.status.state === "connecting";
    const name = c.groupTitle;
    const connect = button("Connect", "", () => send("connectOne"));
    connect.classList.add("connection-connect");
    connect.setAttribute("aria-label", `Connect ${name}`);
    const disconnect = button("Disconnect", "secondary connection-disconnect", () => send("disconnectOne"));
    disconnect.setAttribute("aria-label", `Disconnect ${name}`);
    connect.hidden = live;
    disconnect.hidden = !live;
    actions.append(connect, disconnect);
    if (!compact) {
      const remove = button("Remove", "secondary connection-remove", () => send("removeConnection"));
      remove.setAttribute("aria-label", `Remove ${name}`);
      actions.append(remove);
    }
    li.append(head, status, actions);
    list.append(li);
  }
}

// Calls `refresh` whenever a connection's status or the list changes.
export function watchConnections(refresh) {
  chrome.storage.onChanged.addListener((changes, area) => {
    const keys = Object.keys(changes);
    if (area === "session" && keys.some((k) => k === "status" || k.startsWith("status:"))) refresh();
    if (area === "local" && keys.some((k) => k === "connections" || k === "config")) refresh();
  });
}
