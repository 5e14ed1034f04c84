// The extension's relay in the page (isolated world, top frame of http(s) pages).
// Pairing: answers presence pings and relays pair-offers to the worker, which validates again
// and waits for the user's click. Only this page's own window, same-origin messages with the
// __browserOperator marker count; the origin relayed is the event's, never one the message
// claims.
// Page text: answers the worker's "pageText" message with pageText() (page-text.js, loaded
// before this file into the same world), which is cheaper than carrying the text through
// chrome.debugger.
(() => {
  const MARK = "__browserOperator";
  const MAX_STRING = 4096;
  const TRANSPORT_SCHEMES = {
    websocket: ["ws:", "wss:"],
    "sse-http": ["http:", "https:"],
    "http-poll": ["http:", "https:"],
    "http-short-poll": ["http:", "https:"],
  };

  // After the extension is reloaded or removed, this script is orphaned: go quiet.
  const alive = () => {
    try {
      return Boolean(chrome.runtime && chrome.runtime.id);
    } catch {
      return false;
    }
  };

  const isString = (v, max = MAX_STRING) => typeof v === "string" && v.length > 0 && v.length <= max;
  const optional = (v) => v === undefined || v === null || (typeof v === "string" && v.length <= MAX_STRING);

  function offerShape(data) {
    const c = data.config;
    if (!c || typeof c !== "object" || Array.isArray(c)) return null;
    const schemes = TRANSPORT_SCHEMES[c.transport];
    if (!schemes || !isString(c.serverUrl, 2048) || !isString(c.token)) return null;
    let url;
    try {
      url = new URL(c.serverUrl);
    } catch {
      return null;
    }
    if (!schemes.includes(url.protocol)) return null;
    if (!optional(c.commandPath) || !optional(c.resultPath) || !optional(c.target)) return null;
    const config = { transport: c.transport, serverUrl: c.serverUrl, token: c.token };
    for (const k of ["commandPath", "resultPath", "target"]) if (typeof c[k] === "string") config[k] = c[k];
    let brand;
    if (data.brand !== undefined && data.brand !== null) {
      if (typeof data.brand !== "object" || !optional(data.brand.name) || (data.brand.name ?? "").length > 64) return null;
      if (typeof data.brand.name === "string") brand = { name: data.brand.name };
    }
    return brand ? { config, brand } : { config };
  }

  function onMessage(event) {
    if (event.source !== window || event.origin !== window.location.origin) return;
    const data = event.data;
    if (!data || typeof data !== "object" || typeof data[MARK] !== "string") return;
    if (!alive()) {
      window.removeEventListener("message", onMessage);
      return;
    }
    if (data[MARK] === "ping") {
      const nonce = typeof data.nonce === "string" ? data.nonce.slice(0, 128) : "";
      const manifest = chrome.runtime.getManifest();
      window.postMessage(
        { [MARK]: "pong", nonce, version: manifest.version, productName: manifest.name },
        window.location.origin,
      );
    } else if (data[MARK] === "pair-offer") {
      const offer = offerShape(data);
      if (!offer) return;
      try {
        chrome.runtime.sendMessage({ type: "pairOffer", origin: event.origin, offer }).catch(() => {});
      } catch {
        window.removeEventListener("message", onMessage);
      }
    }
  }

  window.addEventListener("message", onMessage);

  // The worker's questions come on a port it opens to this frame and keeps while the page
  // lasts (a message of its own each time takes twice as long); each answer carries its
  // question's number. Only this extension can connect to its content script; the sender is
  // checked anyway. A failed read answers null, and the worker reads the page over CDP instead
  // (which reports it).
  chrome.runtime.onConnect.addListener((port) => {
    if (port.sender?.id !== chrome.runtime.id || port.name !== "worker") {
      port.disconnect();
      return;
    }
    port.onMessage.addListener((message) => {
      if (!message || typeof message !== "object") return;
      let answer = null;
      try {
        if (message.type === "pageText" && Number.isSafeInteger(message.max) && message.max > 0) {
          answer = pageText(message.max);
        }
      } catch {
        answer = null;
      }
      try {
        port.postMessage({ n: message.n, answer });
      } catch {
        // The worker went (the page's port with it): nobody waits for this answer.
      }
    });
  });
})();
