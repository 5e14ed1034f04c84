// Loads the Rust worker and hands it every event. Listeners are registered synchronously, at
// the top level, so the event that woke the worker is never lost while the wasm loads.
// First: the storage the worker reads as it boots is asked for now, beside the wasm's loading.
import "./early-reads.js";
import init, * as worker from "./pkg/browser_operator_worker.js";

// Why Chrome started this worker: the first extension event this instance handled (Chrome
// starts a stopped worker to deliver an event: "watchdog", "alarm:keepalive", "message", …);
// null until one came. Logged, and readable by tests through self.browserOperator.
let startedFor = null;
const saw = (event) => {
  if (startedFor !== null) return;
  startedFor = event;
  console.info(`[browser-operator] first event of this worker: ${event}`);
};

// The wasm instance's memory, for self.browserOperator.wasmMemoryBytes() (the soak watches it).
let memory = null;

const ready = init({ module_or_path: new URL("./pkg/browser_operator_worker_bg.wasm", import.meta.url) })
  .then((exports) => {
    memory = exports.memory;
    worker.boot();
  });

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  saw("message");
  ready
    .then(() => worker.onMessage(message, sender))
    .then(sendResponse, (e) => sendResponse({ ok: false, field: "request", message: String(e) }));
  return true; // the answer comes asynchronously
});
chrome.alarms.onAlarm.addListener((alarm) => {
  saw(`alarm:${alarm.name}`);
  ready.then(() => worker.onAlarm(alarm.name));
});
chrome.debugger.onDetach.addListener((source) => {
  saw("debugger");
  ready.then(() => worker.onDebuggerDetach(source));
});
// CDP events (console, network, dialogs) of group tabs; params is undefined for some events.
chrome.debugger.onEvent.addListener((source, method, params) => {
  saw("debugger");
  ready.then(() => worker.onDebuggerEvent(source, method, params ?? null));
});
// Only the local area's changes: the delivery ledger is written to the session area on every
// command, and a listener for every area would have Chrome dispatch each of those writes back
// to this worker as an event, on the path of the next command.
chrome.storage.local.onChanged.addListener((changes) => {
  saw("storage");
  if (changes.debuggerIdleSeconds) ready.then(() => worker.onIdleSettingChanged());
  if (changes.siteRules) ready.then(() => worker.onSiteRulesChanged());
  if (changes.approvalGrants) ready.then(() => worker.onApprovalGrantsChanged());
});
// A waiting approval's notification (shown while the popup is closed): clicking it opens the
// popup, where the approval card is (or, where Chrome cannot open it, the popup page in a tab).
chrome.notifications.onClicked.addListener((id) => {
  if (!id.startsWith("approval-")) return;
  saw("notification");
  chrome.action.openPopup().catch(() =>
    chrome.tabs.create({ url: chrome.runtime.getURL("extension/popup.html") }));
});
chrome.tabs.onCreated.addListener((tab) => {
  saw("tabs");
  ready.then(() => worker.onTabCreated(tab));
});
chrome.tabs.onRemoved.addListener((tabId) => {
  saw("tabs");
  ready.then(() => worker.onTabRemoved(tabId));
});
// A tab joining or leaving a group (dragged by the person, grouped by a script): the
// automation group's tabs are recorded from the moment they join. Every update of a grouped
// tab (its address, its group) keeps what the worker knows of the group's tabs current.
chrome.tabs.onUpdated.addListener((tabId, change, tab) => {
  const regrouped = "groupId" in change;
  if (!regrouped && tab.groupId === -1) return;
  ready.then(() => worker.onTabUpdated(tab));
  if (!regrouped) return;
  saw("tabs");
  ready.then(() => worker.onTabGroupChanged(tabId, change.groupId));
});
// A page or frame request that a request rule refused (the URL policy's, or another
// extension's): the worker reports the policy's refusals.
chrome.webNavigation.onErrorOccurred.addListener((details) => {
  if (details.error !== "net::ERR_BLOCKED_BY_CLIENT" || details.tabId < 0) return;
  saw("webNavigation");
  ready.then(() => worker.onNavigationBlocked(details.tabId, details.url));
});
// A tab replaced by another (prerendering) or moved to another window: looked up again.
chrome.tabs.onReplaced.addListener((added, removed) => {
  saw("tabs");
  ready.then(() => { worker.onTabChanged(added); worker.onTabChanged(removed); });
});
chrome.tabs.onAttached.addListener((tabId) => {
  saw("tabs");
  ready.then(() => worker.onTabChanged(tabId));
});
// The watchdog (extension/watchdog.js, an offscreen document) holds a port to this worker so
// it can start the worker again as soon as Chrome stops it. Nothing is sent on the port; being
// connected to is the event, and boot() does the rest. Other ports are refused.
const WATCHDOG_URL = chrome.runtime.getURL("extension/watchdog.html");
chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== "watchdog" || port.sender?.url !== WATCHDOG_URL || port.sender?.tab) {
    port.disconnect();
    return;
  }
  saw("watchdog");
});
// The person's keyboard shortcut for Stop (manifest "commands").
chrome.commands.onCommand.addListener((name) => {
  saw("command");
  ready.then(() => worker.onShortcut(name));
});
// Startup and install only need the worker to run: boot() does the rest.
chrome.runtime.onStartup.addListener(() => {
  saw("startup");
  return ready;
});
chrome.runtime.onInstalled.addListener(() => {
  saw("install");
  return ready;
});
// The direct transport: code running in this worker (tests, an embedding build) runs a command
// through the same dispatch as the network transports, without a server; and two diagnostics:
// what started this worker, and the size of its wasm memory.
self.browserOperator = Object.freeze({
  run: (command) => ready.then(() => worker.runCommand(command)),
  startedFor: () => startedFor,
  wasmMemoryBytes: () => memory?.buffer.byteLength ?? 0,
  // The changes waiting for the next browser_state report, not drained.
  pendingChanges: () => ready.then(() => JSON.parse(worker.pendingChanges())),
  // What the keyboard shortcut's listener calls (headless Chrome cannot press a shortcut).
  shortcut: (name) => ready.then(() => worker.onShortcut(name)),
});
