// Loads the Rust worker and hands it every event. Listeners are registered synchronously, at
// the top level, so the event that woke the worker is never lost while the wasm loads.
import init, * as worker from "./pkg/browser_operator_worker.js";

const ready = init({ module_or_path: new URL("./pkg/browser_operator_worker_bg.wasm", import.meta.url) })
  .then(() => worker.boot());

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  ready
    .then(() => worker.onMessage(message, sender))
    .then(sendResponse, (e) => sendResponse({ ok: false, field: "request", message: String(e) }));
  return true; // the answer comes asynchronously
});
chrome.alarms.onAlarm.addListener((alarm) => ready.then(() => worker.onAlarm(alarm.name)));
chrome.debugger.onDetach.addListener((source) => ready.then(() => worker.onDebuggerDetach(source)));
// CDP events (console, network, dialogs) of group tabs; params is undefined for some events.
chrome.debugger.onEvent.addListener((source, method, params) =>
  ready.then(() => worker.onDebuggerEvent(source, method, params ?? null)));
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && changes.debuggerIdleSeconds) ready.then(() => worker.onIdleSettingChanged());
});
chrome.tabs.onCreated.addListener((tab) => ready.then(() => worker.onTabCreated(tab)));
chrome.tabs.onRemoved.addListener((tabId) => ready.then(() => worker.onTabRemoved(tabId)));
// A tab joining or leaving a group (dragged by the person, grouped by a script): the
// automation group's tabs are recorded from the moment they join.
chrome.tabs.onUpdated.addListener((tabId, change) => {
  if ("groupId" in change) ready.then(() => worker.onTabGroupChanged(tabId, change.groupId));
});
// Startup and install only need the worker to run: boot() does the rest.
chrome.runtime.onStartup.addListener(() => ready);
chrome.runtime.onInstalled.addListener(() => ready);
// The direct transport: code running in this worker (tests, an embedding build) runs a command
// through the same dispatch as the network transports, without a server.
self.browserOperator = Object.freeze({ run: (command) => ready.then(() => worker.runCommand(command)) });
