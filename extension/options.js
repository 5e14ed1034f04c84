// The Options page: shows the config and live status, and asks the worker to save, connect or
// disconnect. It holds no state of its own; the worker validates and decides.
const $ = (id) => document.getElementById(id);
const fields = ["transport", "serverUrl", "token", "target"];
const LABELS = { disconnected: "Disconnected", connecting: "Connecting", connected: "Connected", error: "Error" };

function showStatus(status) {
  if (!status) return;
  const el = $("status");
  el.dataset.state = status.state;
  el.textContent = `${LABELS[status.state] ?? status.state}: ${status.message}`;
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
  }
  $("version").textContent = `Version ${state.version}`;
  showStatus(state.status);
  document.body.dataset.ready = "true";
}

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  clearErrors();
  const config = Object.fromEntries(fields.map((f) => [f, $(f).value]));
  const reply = await chrome.runtime.sendMessage({ type: "saveConfig", config });
  if (reply && !reply.ok) showError(reply.field, reply.message);
});

$("disconnect").addEventListener("click", () => chrome.runtime.sendMessage({ type: "disconnect" }));

$("reveal").addEventListener("click", () => {
  const shown = $("token").type === "text";
  $("token").type = shown ? "password" : "text";
  $("reveal").textContent = shown ? "Show" : "Hide";
  $("reveal").setAttribute("aria-pressed", String(!shown));
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "session" && changes.status) showStatus(changes.status.newValue);
});

load();
