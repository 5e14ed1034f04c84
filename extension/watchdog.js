// The watchdog: an offscreen document that starts the service worker again the moment Chrome
// stops it, while the user wants a connection (the worker opens this document when it starts
// connecting and closes it on Disconnect or a rejected token).
//
// It holds a chrome.runtime port to the worker and sends nothing on it, so it does not make the
// worker live longer: Chrome still stops the worker when its rules say so. Chrome closes the
// port when the worker stops; connecting again makes Chrome start the worker for the new port
// at once, instead of up to 30 s later for the keep-alive alarm. A worker that stops again soon
// after starting (a crash loop) is restarted after a growing delay, at most the alarm's period.
const NAME = "watchdog";
const SHORT_LIFE_MS = 5_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 30_000;
let delay = 0;

function watch() {
  const since = Date.now();
  const port = chrome.runtime.connect({ name: NAME });
  port.onDisconnect.addListener(() => {
    // Read so Chrome does not log it: "Could not establish connection" when no worker took it.
    void chrome.runtime.lastError;
    const lived = Date.now() - since;
    delay = lived >= SHORT_LIFE_MS ? 0 : Math.min(Math.max(delay * 2, FIRST_DELAY_MS), MAX_DELAY_MS);
    setTimeout(watch, delay);
  });
}

watch();
