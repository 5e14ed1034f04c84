// The Options page: shows the config and live status, and asks the worker to save, connect or
// disconnect. It holds no state of its own; the worker validates and decides.
import { renderConnections, watchConnections } from "./connections.js";

const $ = (id) => document.getElementById(id);
const fields = ["transport", "serverUrl", "token", "commandPath", "resultPath", "target"];
const EXAMPLES = { websocket: "ws://127.0.0.1:8787/ws" };
const HTTP_EXAMPLE = "http://127.0.0.1:8787";

// The HTTP transports need the path fields; WebSocket doesn't.
function showTransport() {
  const http = $("transport").value !== "websocket";
  for (const el of document.querySelectorAll(".http-only")) el.hidden = !http;
  const example = EXAMPLES[$("transport").value] ?? HTTP_EXAMPLE;
  $("serverUrl").placeholder = example;
  $("serverUrl-example").textContent = example;
}

// Loopback servers are in the manifest's host_permissions; any other backend is asked for on
// Save (it needs the click), so the extension can only reach the servers its user chose.
async function allowServer(url) {
  let origin;
  try {
    const u = new URL(url.replace(/^ws/, "http"));
    origin = `${u.protocol}//${u.hostname}/*`;
  } catch {
    return true; // the worker reports the bad URL next to the field
  }
  if (await chrome.permissions.contains({ origins: [origin] })) return true;
  try {
    return await chrome.permissions.request({ origins: [origin] });
  } catch {
    return false;
  }
}
const LABELS = { disconnected: "Disconnected", connecting: "Connecting", connected: "Connected", error: "Error" };

let statusChanged = false;

function showStatus(status) {
  if (!status) return;
  const el = $("status");
  el.dataset.state = status.state;
  const label = LABELS[status.state] ?? status.state;
  // "Connected: Connected to …" says it twice.
  const text = status.message.startsWith(label) ? status.message : `${label}: ${status.message}`;
  el.textContent = text;
}

function clearErrors() {
  for (const f of fields) {
    $(`${f}-error`).textContent = "";
    $(f).removeAttribute("aria-invalid");
  }
}

function showError(field, message) {
  const known = fields.includes(field) ? field : "serverUrl";
  $(`${known}-error`).textContent = message;
  $(known).setAttribute("aria-invalid", "true");
  $(known).focus();
}

async function load() {
  const state = await chrome.runtime.sendMessage({ type: "getState" });
  if (!state) return;
  const c = state.config;
  if (c) {
    $("transport").value = c.transport;
    $("serverUrl").value = c.serverUrl ?? "";
    $("token").value = c.token ?? "";
    $("target").value = c.target ?? "";
    $("commandPath").value = c.commandPath ?? "";
    $("resultPath").value = c.resultPath ?? "";
  }
  showTransport();
  $("version").textContent = `Version ${state.version}`;
  $("product").textContent = state.productName;
  $("group-title").textContent = state.groupTitle;
  document.title = `${state.productName} — Options`;
  // A change seen while getState was in flight is newer than its snapshot.
  if (!statusChanged) showStatus(state.status);
  if (state.settings) $("idleMinutes").value = String(state.settings.idleMinutes);
  showConnections(state);
  document.body.dataset.ready = "true";
}

// The list of connections, shown once there is more than the one the form edits.
function showConnections(state) {
  $("connections-section").hidden = !(state.connections ?? []).some((c) => c.id !== 0);
  $("max-connections").textContent = String(state.maxConnections ?? 8);
  renderConnections($("connections"), state, {
    onError: (message) => { $("connections-error").textContent = message; },
  });
}

watchConnections(async () => {
  const state = await chrome.runtime.sendMessage({ type: "getState" });
  if (state) showConnections(state);
});

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  clearErrors();
  const config = Object.fromEntries(fields.map((f) => [f, $(f).value]));
  if (config.transport === "websocket") {
    delete config.commandPath;
    delete config.resultPath;
  }
  if (config.transport !== "websocket" && !(await allowServer(config.serverUrl))) {
    showError("serverUrl", "Allow access to this server when Chrome asks, or the extension cannot reach it.");
    return;
  }
  const reply = await chrome.runtime.sendMessage({ type: "saveConfig", config });
  if (reply && !reply.ok) showError(reply.field, reply.message);
});

// Settings that apply without reconnecting; the worker validates them.
$("settings").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("idleMinutes-error").textContent = "";
  $("idleMinutes").removeAttribute("aria-invalid");
  $("settings-status").textContent = "";
  const idleMinutes = $("idleMinutes").value.trim() === "" ? NaN : Number($("idleMinutes").value);
  const reply = await chrome.runtime.sendMessage({ type: "saveSettings", idleMinutes });
  if (reply && reply.ok) {
    $("settings-status").textContent = "Saved.";
  } else {
    $("idleMinutes-error").textContent = reply?.message ?? "The settings could not be saved.";
    $("idleMinutes").setAttribute("aria-invalid", "true");
    $("idleMinutes").focus();
  }
});

$("transport").addEventListener("change", showTransport);

$("disconnect").addEventListener("click", () => chrome.runtime.sendMessage({ type: "disconnect" }));

$("reveal").addEventListener("click", () => {
  const shown = $("token").type === "text";
  $("token").type = shown ? "password" : "text";
  $("reveal").textContent = shown ? "Show" : "Hide";
  $("reveal").setAttribute("aria-pressed", String(!shown));
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "session" && changes.status) {
    statusChanged = true;
    showStatus(changes.status.newValue);
  }
});

load();
