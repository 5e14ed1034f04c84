// The toolbar popup: a parked pairing offer as a card (Accept / Dismiss), otherwise the live
// status with Connect / Disconnect; Stop / Resume, and a link to the activity log. All state
// and decisions live in the worker.
import { renderConnections, watchConnections } from "./connections.js";

const $ = (id) => document.getElementById(id);
const LABELS = { disconnected: "Disconnected", connecting: "Connecting", connected: "Connected", error: "Error" };
const TRANSPORTS = { websocket: "WebSocket", "sse-http": "SSE + HTTP", "http-poll": "HTTP long polling", "http-short-poll": "HTTP short polling" };

let statusChanged = false;

function showPaused(paused) {
  $("paused-note").hidden = !paused;
  $("stop").hidden = paused;
  $("resume").hidden = !paused;
  document.body.dataset.paused = String(paused);
}

function showStatus(status) {
  if (!status) return;
  $("status").dataset.state = status.state;
  const label = LABELS[status.state] ?? status.state;
  // "Connected: Connected to …" says it twice.
  const text = status.message.startsWith(label) ? status.message : `${label}: ${status.message}`;
  $("status").textContent = text;
  const live = status.state === "connected" || status.state === "connecting";
  $("connect").hidden = live;
  $("disconnect").hidden = !live;
}

function showOffer(offer) {
  current = offer;
  $("offer").hidden = !offer;
  if (!offer) return;
  $("offer-brand").textContent = offer.brandName ?? offer.origin;
  $("offer-claim").hidden = !offer.brandName;
  $("offer-origin").textContent = offer.origin;
  $("offer-server").textContent = offer.serverUrl;
  $("offer-transport").textContent = TRANSPORTS[offer.transport] ?? offer.transport;
  $("offer-error").textContent = "";
  // Offers from other pages that came while this one waited: named, not silently dropped.
  const others = offer.alsoOffered ?? [];
  $("offer-also").hidden = !offer.refusedCount;
  $("offer-also").textContent = offer.refusedCount
    ? `While this offer waited, ${offer.refusedCount} other offer(s) came from ${others.join(", ")}${others.length >= 4 ? " (and possibly more pages)" : ""} and were not kept. If you meant one of those, dismiss this one and pair again from that page.`
    : "";
  $("accept").focus();
}

// Answers to getOffer can arrive out of order (an offer parked while the page loads sends a
// second request that may beat the first): only an answer to a later request than the one
// shown is shown.
let offerAsked = 0;
let offerShown = 0;
async function refreshOffer() {
  const asked = ++offerAsked;
  const { offer } = await chrome.runtime.sendMessage({ type: "getOffer" });
  if (asked < offerShown) return;
  offerShown = asked;
  showOffer(offer);
}

async function load() {
  const [state] = await Promise.all([chrome.runtime.sendMessage({ type: "getState" }), refreshOffer()]);
  $("product").textContent = state.productName;
  document.title = state.productName;
  // A change seen while getState was in flight is newer than its snapshot.
  if (!statusChanged) showStatus(state.status);
  if (!pausedChanged) showPaused(state.paused);
  const target = state.config?.target;
  $("target-line").hidden = !target;
  $("target").textContent = target ?? "";
  showConnections(state);
  document.body.dataset.ready = "true";
}

// With more than one connection, each one's group and status.
function showConnections(state) {
  const several = (state.connections ?? []).some((c) => c.id !== 0);
  $("connections").hidden = !several;
  renderConnections($("connections"), several ? state : { connections: [] }, { compact: true });
}

watchConnections(async () => {
  const state = await chrome.runtime.sendMessage({ type: "getState" });
  if (state) showConnections(state);
});

// Loopback servers are in host_permissions; another HTTP backend is asked for on this click.
async function allowServer(offer) {
  if (!offer || offer.transport === "websocket") return true;
  let origin;
  try {
    const u = new URL(offer.serverUrl);
    origin = `${u.protocol}//${u.hostname}/*`;
  } catch {
    return true;
  }
  if (await chrome.permissions.contains({ origins: [origin] })) return true;
  return chrome.permissions.request({ origins: [origin] }).catch(() => false);
}

let current = null;
let pausedChanged = false;

// Stop: every running and queued command ends now, and nothing runs until Resume.
$("stop").addEventListener("click", async () => {
  const reply = await chrome.runtime.sendMessage({ type: "stop" });
  if (reply?.ok) {
    showPaused(true);
    $("resume").focus();
  }
});
$("resume").addEventListener("click", async () => {
  const reply = await chrome.runtime.sendMessage({ type: "resume" });
  if (reply?.ok) {
    showPaused(false);
    $("stop").focus();
  }
});
// The shortcut as the person set it (chrome://extensions/shortcuts), if any.
chrome.commands?.getAll?.().then((commands) => {
  const stop = commands.find((c) => c.name === "stop-agent");
  if (stop?.shortcut) $("shortcut").textContent = stop.shortcut;
  else if (stop) $("stop-hint").textContent = "Ends every running and queued command and pauses until you resume.";
}, () => {});

$("accept").addEventListener("click", async () => {
  if (!(await allowServer(current))) {
    $("offer-error").textContent = "Allow access to the server when Chrome asks, or the extension cannot reach it.";
    return;
  }
  const reply = await chrome.runtime.sendMessage({ type: "acceptOffer" });
  if (reply?.ok) {
    $("offer").hidden = true;
    $("connect").focus();
  } else {
    $("offer-error").textContent = reply?.message ?? "The offer could not be accepted.";
  }
});
$("dismiss").addEventListener("click", async () => {
  await chrome.runtime.sendMessage({ type: "dismissOffer" });
  showOffer(null);
});
$("connect").addEventListener("click", () => chrome.runtime.sendMessage({ type: "connect" }));
$("disconnect").addEventListener("click", () => chrome.runtime.sendMessage({ type: "disconnect" }));

chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== "session") return;
  if (changes.status) {
    statusChanged = true;
    showStatus(changes.status.newValue);
  }
  if (changes.pairOffer) refreshOffer();
  if (changes.paused) {
    pausedChanged = true;
    showPaused(changes.paused.newValue === true);
  }
});

load();
