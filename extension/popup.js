// The toolbar popup: a parked pairing offer as a card (Accept / Dismiss), otherwise the live
// status with Connect / Disconnect. All state and decisions live in the worker.
import { renderConnections, watchConnections } from "./connections.js";

const $ = (id) => document.getElementById(id);
const LABELS = { disconnected: "Disconnected", connecting: "Connecting", connected: "Connected", error: "Error" };
const TRANSPORTS = { websocket: "WebSocket", "sse-http": "SSE + HTTP", "http-poll": "HTTP long polling", "http-short-poll": "HTTP short polling" };

let statusChanged = false;

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
});

load();
