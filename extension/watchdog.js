// The watchdog: an offscreen document that starts the service worker again the moment Chrome
// stops it, while the user wants a connection (the worker opens this document when it starts
// connecting and closes it on Disconnect or a rejected token).
//
// It holds a chrome.runtime port to the worker and sends nothing on it, so it does not make the
// worker live longer: Chrome still stops the worker when its rules say so. Chrome closes the
// port when the worker stops; connecting again makes Chrome start the worker for the new port
// at once, instead of up to 30 s later for the keep-alive alarm.
//
// Bounded: at most BURST restarts a minute at once, then one every WINDOW_MS / BURST; a port
// nothing answered (the worker failed to start) is retried after a delay doubling to 30 s.
const NAME = "watchdog";
const BURST = 10;
const WINDOW_MS = 60_000;
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;
const restarts = [];
let retry = 0;

function delay(failed) {
  const now = Date.now();
  while (restarts.length && now - restarts[0] > WINDOW_MS) restarts.shift();
  restarts.push(now);
  if (failed) {
    retry = Math.min(Math.max(retry * 2, FIRST_RETRY_MS), MAX_RETRY_MS);
    return retry;
  }
  retry = 0;
  return restarts.length <= BURST ? 0 : WINDOW_MS / BURST;
}

function watch() {
  const port = chrome.runtime.connect({ name: NAME });
  port.onDisconnect.addListener(() => {
    // Set when no worker took the port ("Could not establish connection…"); reading it also
    // keeps Chrome from logging it.
    const failed = Boolean(chrome.runtime.lastError);
    setTimeout(watch, delay(failed));
  });
}

watch();
