//! Diagnostic: where one command's time goes inside the worker. Every extension API call the
//! worker makes (each `chrome.debugger.sendCommand` by its CDP method, each
//! `chrome.storage.*.set` by the keys it writes, each question on a port to a content script
//! from its `postMessage` to its answer) and every WebSocket frame in and out is
//! timestamped in the worker by wrappers installed over CDP (nothing in the extension changes:
//! the wasm's bindings look the chrome.* functions up at each call, and the WebSocket opened
//! after the server's restart is made by the wrapped constructor). Then commands run one after
//! another, and for each the calls between its frame's arrival and its result's frame are read.
//!
//! The wrappers and the debugger session on the worker add a little time of their own: compare
//! counts (calls per command, which are exact) more than milliseconds, and milliseconds only
//! within one run. `performance.now()` in a service worker ticks in 0.1 ms steps.
//!
//! Run: `./build.sh build && cargo run --release -p browser-operator-e2e --bin bench_path --
//! [ROUNDS] [TOOL] [ARGS_JSON] [PAGE]` (defaults: 100 `javascript_tool` `{"text":"1+1"}` on
//! `bench/form.html`; `tabId` is added; PAGE is a fixture path). `TRANSPORT` picks the
//! transport (default `websocket`): over the HTTP ones a poll's body read (SSE: an event-stream
//! chunk) is a command's frame in and a result's POST its frame out, and each fetch is timed too.
//! Then the floors: `chrome.debugger.sendCommand` from the worker, and one fetch POST to the
//! server from the worker and from a web page, alike. It prints the start of the last answer
//! (so a `javascript_tool` that times something in the page reports its numbers; `ANSWER_OUT=<file>`
//! writes it whole there), and
//! `PROBE=<file.js>` evaluates that file in the worker at the end (`self.__probeTab` is the
//! command's tab) and prints its value: one-off measurements of what the worker could do.
//! `PROFILE=1` samples the worker's CPU (V8's profiler, every 50 µs) over the measured rounds
//! and prints its self time per command by function: Chrome's bindings (native functions, by
//! whatever name V8 gives each), the wasm-bindgen glue, and the wasm's own functions, named when
//! the module keeps its name section (`./build.sh build` strips it: for a profile, run
//! `wasm-bindgen` without `--remove-name-section` and `wasm-opt` with `-g`, into
//! `extension/pkg`).

use browser_operator_e2e::Result;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const WARM_UP: usize = 20;

/// Installed in the worker: `self.__pathTrace` collects `[start, end, label]`.
const TRACE_JS: &str = r#"(() => {
  if (self.__pathTrace) return "already";
  const trace = self.__pathTrace = [];
  const now = () => performance.now();
  const apis = { tabs: chrome.tabs, tabGroups: chrome.tabGroups, windows: chrome.windows,
    debugger: chrome.debugger, alarms: chrome.alarms, action: chrome.action,
    "storage.local": chrome.storage.local, "storage.session": chrome.storage.session,
    declarativeNetRequest: chrome.declarativeNetRequest, downloads: chrome.downloads,
    notifications: chrome.notifications, webNavigation: chrome.webNavigation, runtime: chrome.runtime,
    offscreen: chrome.offscreen };
  for (const [apiName, api] of Object.entries(apis)) {
    if (!api) continue;
    for (const name of ["get", "set", "remove", "clear", "query", "create", "update", "group",
      "ungroup", "attach", "detach", "sendCommand", "getTargets", "setBadgeText",
      "setBadgeBackgroundColor", "setTitle", "executeScript", "getAll", "move",
      "updateSessionRules", "getSessionRules", "search", "getContexts", "getFrame", "getBadgeText",
      "getPlatformInfo", "createDocument", "closeDocument", "sendMessage"]) {
      const f = api[name];
      if (typeof f !== "function") continue;
      api[name] = function (...args) {
        let label = apiName + "." + name;
        if (api === chrome.debugger && name === "sendCommand") label = "cdp " + args[1];
        else if (name === "set" && args[0] && typeof args[0] === "object")
          label += " [" + [...new Set(Object.keys(args[0]).map((k) => k.replace(/\.\d+$/, ".N")))].join(",") + "]";
        if (self.__run === undefined) {
          self.__run = (self.__runs = (self.__runs || 0) + 1);
          queueMicrotask(() => { self.__run = undefined; });
        }
        if (self.__lastRun === self.__run) label += " (same run as the call before)";
        self.__lastRun = self.__run;
        const t0 = now();
        const p = f.apply(api, args);
        const sync = now() - t0;
        if (p && typeof p.then === "function") {
          p.then(() => trace.push([t0, now(), label, sync]), () => trace.push([t0, now(), label + " (failed)", sync]));
        } else trace.push([t0, t0, label, sync]);
        return p;
      };
    }
  }
  const WS = self.WebSocket;
  const send = WS.prototype.send;
  WS.prototype.send = function (d) {
    const t0 = now();
    trace.push([t0, t0, "frame out", 0]);
    const r = send.call(this, d);
    trace.push([t0, t0, "WebSocket send, frame out", now() - t0]);
    return r;
  };
  // A port to a content script (get_page_text's questions): each question from its
  // postMessage to the reply with its number.
  const connect0 = chrome.tabs.connect;
  chrome.tabs.connect = function (...a) {
    const port = connect0.apply(chrome.tabs, a);
    const asked = new Map();
    const post = port.postMessage;
    port.postMessage = function (m) {
      const t0 = now();
      asked.set(m && m.n, t0);
      const r = post.call(port, m);
      asked.set(m && m.n, [t0, now() - t0]);
      return r;
    };
    port.onMessage.addListener((r) => {
      const t = asked.get(r && r.n);
      if (!t) return;
      asked.delete(r.n);
      trace.push([t[0], now(), "port question to its answer", t[1]]);
    });
    return port;
  };
  function Traced(...a) {
    const w = new WS(...a);
    w.addEventListener("message", () => trace.push([now(), now(), "frame in", 0]));
    return w;
  }
  // The HTTP transports: a poll's body read is a command's frame in, a POST a result's frame
  // out; each fetch is timed to its headers.
  const fetch0 = self.fetch;
  self.fetch = function (url, init) {
    const post = init && init.method === "POST";
    const t0 = now();
    if (post) trace.push([t0, t0, "frame out", 0]);
    const p = fetch0.call(self, url, init);
    const sync = now() - t0;
    p.then(() => trace.push([t0, now(), post ? "fetch POST, to its answer" : "fetch GET, to its headers", sync]), () => {});
    return p;
  };
  const text0 = Response.prototype.text;
  Response.prototype.text = function () {
    const p = text0.call(this);
    p.then((t) => { if (t.includes('"commands"') && !t.includes('"commands":[]')) trace.push([now(), now(), "frame in", 0]); }, () => {});
    return p;
  };
  // SSE: a chunk of the event stream that holds a command is its frame in.
  const read0 = ReadableStreamDefaultReader.prototype.read;
  const utf8 = new TextDecoder();
  ReadableStreamDefaultReader.prototype.read = function () {
    const p = read0.call(this);
    p.then((r) => {
      if (r && r.value && utf8.decode(r.value).includes('"tool"')) trace.push([now(), now(), "frame in", 0]);
    }, () => {});
    return p;
  };
  Traced.prototype = WS.prototype;
  for (const k of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Traced[k] = WS[k];
  self.WebSocket = Traced;
  chrome.debugger.onEvent.addListener((s, m) => trace.push([now(), now(), "event " + m, 0]));
  return "installed";
})()"#;

/// `PROFILE=1`: the worker's CPU profile over the measured rounds, as self time per command by
/// function (wasm functions by their names when the module keeps its name section: build it
/// without `--remove-name-section`, and `wasm-opt -g`).
fn print_profile(profile: &Value, rounds: usize) {
    let nodes = profile["nodes"].as_array().cloned().unwrap_or_default();
    let name: BTreeMap<i64, String> = nodes
        .iter()
        .filter_map(|n| {
            let f = &n["callFrame"];
            let fname = f["functionName"].as_str().unwrap_or("");
            let url = f["url"].as_str().unwrap_or("");
            let file = url.rsplit('/').next().unwrap_or("");
            Some((
                n["id"].as_i64()?,
                format!(
                    "{} {file}",
                    if fname.is_empty() {
                        "(anonymous)"
                    } else {
                        fname
                    }
                ),
            ))
        })
        .collect();
    let samples = profile["samples"].as_array().cloned().unwrap_or_default();
    let deltas = profile["timeDeltas"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut self_ms: BTreeMap<String, f64> = BTreeMap::new();
    for (s, d) in samples
        .iter()
        .zip(deltas.iter().skip(1).chain(std::iter::once(&json!(0))))
    {
        let label = s
            .as_i64()
            .and_then(|id| name.get(&id))
            .cloned()
            .unwrap_or_default();
        *self_ms.entry(label).or_default() += d.as_f64().unwrap_or(0.0) / 1e3;
    }
    let mut rows: Vec<_> = self_ms.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("worker CPU self time per command (ms), by function:");
    for (label, ms) in rows.iter().take(40) {
        println!("{:>8.3}  {label}", ms / rounds.max(1) as f64);
    }
    // Total time: each sample counts once for every function on its stack.
    let parent: BTreeMap<i64, i64> = nodes
        .iter()
        .flat_map(|n| {
            let id = n["id"].as_i64().unwrap_or(-1);
            n["children"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(move |c| Some((c.as_i64()?, id)))
        })
        .collect();
    let mut total_ms: BTreeMap<String, f64> = BTreeMap::new();
    for (s, d) in samples
        .iter()
        .zip(deltas.iter().skip(1).chain(std::iter::once(&json!(0))))
    {
        let mut on_stack = std::collections::BTreeSet::new();
        let mut at = s.as_i64();
        while let Some(id) = at {
            if let Some(label) = name.get(&id) {
                on_stack.insert(label.clone());
            }
            at = parent.get(&id).copied();
        }
        for label in on_stack {
            *total_ms.entry(label).or_default() += d.as_f64().unwrap_or(0.0) / 1e3;
        }
    }
    let mut rows: Vec<_> = total_ms.into_iter().collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!("worker CPU total time per command (ms), by function (its callees included):");
    for (label, ms) in rows.iter().take(60) {
        println!("{:>8.3}  {label}", ms / rounds.max(1) as f64);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut argv = std::env::args().skip(1);
    let rounds: usize = argv.next().and_then(|r| r.parse().ok()).unwrap_or(100);
    let tool = argv.next().unwrap_or_else(|| "javascript_tool".into());
    let mut args: Value = argv
        .next()
        .map(|a| serde_json::from_str(&a))
        .transpose()?
        .unwrap_or_else(|| json!({"text": "1+1"}));
    let page = argv.next().unwrap_or_else(|| "bench/form.html".into());

    let transport = std::env::var("TRANSPORT").unwrap_or_else(|_| "websocket".into());
    let (fixtures, mut backend, browser) = browser_operator_e2e::connected_over(&transport).await?;
    let (tab, _) = backend.first_tab().await?;
    backend.navigate(tab, &fixtures.url(&page)).await?;
    args["tabId"] = json!(tab);

    let worker = browser.worker().await?;
    println!("trace: {}", worker.eval(TRACE_JS).await?);
    // A new WebSocket, made by the wrapped constructor.
    let before = backend.connections().await?;
    backend.start_again().await?;
    backend
        .wait_reconnected(&before, Duration::from_secs(30))
        .await?;

    let mut rtt = Vec::new();
    let mut last = None;
    let profile = std::env::var_os("PROFILE").is_some();
    for i in 0..WARM_UP + rounds {
        if profile && i == WARM_UP {
            worker.call("Profiler.enable", json!({})).await?;
            worker
                .call("Profiler.setSamplingInterval", json!({"interval": 50}))
                .await?;
            worker.call("Profiler.start", json!({})).await?;
        }
        let t = Instant::now();
        last = Some(backend.command(&tool, args.clone()).await?);
        if i >= WARM_UP {
            rtt.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    if profile {
        let stopped = worker.call("Profiler.stop", json!({})).await?;
        print_profile(&stopped["profile"], rounds);
    }
    let last = serde_json::to_string(&last)?;
    if let Ok(file) = std::env::var("ANSWER_OUT") {
        std::fs::write(&file, &last)?;
    }
    let cut = last.char_indices().nth(400).map_or(last.len(), |(i, _)| i);
    println!(
        "last answer ({} bytes of JSON): {}",
        last.len(),
        &last[..cut]
    );
    let trace = worker.eval("JSON.stringify(self.__pathTrace)").await?;
    let mut trace: Vec<(f64, f64, String, f64)> =
        serde_json::from_str(trace.as_str().unwrap_or("[]"))?;
    trace.sort_by(|a, b| a.0.total_cmp(&b.0));

    // Each command: from its frame in to the next frame in (its result's frame out inside).
    let ins: Vec<usize> = (0..trace.len())
        .filter(|&i| trace[i].2 == "frame in")
        .collect();
    let cycles: Vec<(usize, usize)> = ins
        .windows(2)
        .map(|w| (w[0], w[1]))
        .skip(ins.len().saturating_sub(rounds + 1))
        .collect();
    #[derive(Default)]
    struct Stat {
        on_path: usize,
        after: usize,
        start: Vec<f64>,
        took: Vec<f64>,
        sync: Vec<f64>,
    }
    let mut stats: BTreeMap<String, Stat> = BTreeMap::new();
    let (mut total, mut before_first, mut after_last) = (Vec::new(), Vec::new(), Vec::new());
    for &(a, b) in &cycles {
        let t0 = trace[a].0;
        let Some(out) = (a..b).find(|&i| trace[i].2 == "frame out") else {
            continue;
        };
        let sent = trace[out].0;
        total.push(sent - t0);
        let calls: Vec<_> = trace[a + 1..b]
            .iter()
            .filter(|e| !e.2.starts_with("frame ") && !e.2.starts_with("event "))
            .collect();
        let on_path: Vec<_> = calls.iter().filter(|e| e.0 < sent).collect();
        if let Some(first) = on_path.first() {
            before_first.push(first.0 - t0);
        }
        if let Some(last) = on_path.iter().map(|e| e.1).reduce(f64::max) {
            after_last.push(sent - last);
        }
        for e in &calls {
            let s = stats.entry(e.2.clone()).or_default();
            if e.0 < sent {
                s.on_path += 1;
                s.start.push(e.0 - t0);
                s.took.push(e.1 - e.0);
            } else {
                s.after += 1;
            }
            s.sync.push(e.3);
        }
    }
    let n = cycles.len().max(1) as f64;
    println!(
        "{tool} {args} on {page}: {} commands after {WARM_UP} warm-up",
        cycles.len()
    );
    println!(
        "round trip at the bench (median): {:.2} ms; in the worker, frame in to result out: {:.2} ms",
        median(rtt),
        median(total)
    );
    println!(
        "frame in to the first extension API call: {:.2} ms; last call answered to result out: {:.2} ms",
        median(before_first),
        median(after_last)
    );
    println!(
        "{:<60} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "extension API call (per command)", "on path", "after", "issued at", "took", "sync"
    );
    for (label, s) in &stats {
        println!(
            "{:<60} {:>8.2} {:>8.2} {:>7.2}ms {:>7.2}ms {:>7.2}ms",
            label,
            s.on_path as f64 / n,
            s.after as f64 / n,
            median(s.start.clone()),
            median(s.took.clone()),
            median(s.sync.clone())
        );
    }
    // The floor of the one call: Runtime.evaluate "1+1" from the worker itself, plain, with
    // javascript_tool's parameters for "1+1", and with them in REPL mode (a text that declares or
    // awaits), alternating.
    let probe = format!(
        r#"(async () => {{
      const tab = {{tabId: {tab}}};
      const kinds = {{
        "plain": {{expression: "1+1"}},
        "javascript_tool's parameters": {{expression: "1+1", replMode: false, awaitPromise: true,
          userGesture: true, objectGroup: "browser-operator-js", timeout: 10000}},
        "the same in REPL mode": {{expression: "1+1", replMode: true, awaitPromise: true,
          userGesture: true, objectGroup: "browser-operator-js", timeout: 10000}},
      }};
      const out = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
      for (let i = 0; i < {WARM_UP} + {rounds}; i++) for (const [k, params] of Object.entries(kinds)) {{
        const t = performance.now();
        await chrome.debugger.sendCommand(tab, "Runtime.evaluate", params);
        if (i >= {WARM_UP}) out[k].push(performance.now() - t);
      }}
      return JSON.stringify(out);
    }})()"#
    );
    let out = worker
        .call(
            "Runtime.evaluate",
            json!({"expression": probe, "awaitPromise": true, "returnByValue": true}),
        )
        .await?;
    let out: BTreeMap<String, Vec<f64>> =
        serde_json::from_str(out["result"]["value"].as_str().unwrap_or("{}"))?;
    for (kind, times) in out {
        println!(
            "chrome.debugger.sendCommand Runtime.evaluate \"1+1\" from the worker, {kind}: {:.2} ms (median)",
            median(times)
        );
    }
    // The same no-cors POST from the worker and from a web page (a tab outside the group): what
    // the extension's own fetch costs beside a page's.
    let fetches = format!(
        r#"(async () => {{
      const t = [];
      for (let i = 0; i < {WARM_UP} + {rounds}; i++) {{
        const t0 = performance.now();
        await fetch("http://{server}/bench-path-probe", {{method: "POST", body: "x", mode: "no-cors",
          cache: "no-store", credentials: "omit"}});
        if (i >= {WARM_UP}) t.push(performance.now() - t0);
      }}
      t.sort((a, b) => a - b);
      return t[t.length >> 1];
    }})()"#,
        server = backend.addr()
    );
    let page = browser.open_page(&fixtures.url("bench/form.html")).await?;
    for (who, ms) in [
        ("the worker", worker.eval(&fetches).await?),
        ("a web page", page.eval(&fetches).await?),
    ] {
        println!(
            "no-cors fetch POST to the server from {who}: {:.2} ms (median)",
            ms.as_f64().unwrap_or(f64::NAN)
        );
    }
    // PROBE (the module doc says what for).
    if let Ok(file) = std::env::var("PROBE") {
        let source = std::fs::read_to_string(&file)?;
        worker.eval(&format!("self.__probeTab = {tab};")).await?;
        println!("probe {file}: {}", worker.eval(&source).await?);
    }
    browser.close().await?;
    Ok(())
}
