// The activity log: the last commands the agent ran, newest first, as the worker keeps them
// (it escapes the arguments and masks typed passwords); Clear empties it. Text only, never HTML.
const $ = (id) => document.getElementById(id);
const OUTCOMES = { ok: "OK", error: "Error", stopped: "Stopped by you", paused: "Refused: paused" };

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text ?? "";
  if (cls) td.className = cls;
  return td;
}

function show(entries) {
  const body = $("entries");
  body.replaceChildren(...entries.map((e) => {
    const tr = document.createElement("tr");
    tr.dataset.outcome = e.outcome;
    const time = new Date(e.time);
    const when = cell(time.toLocaleTimeString(), "time");
    when.title = time.toISOString();
    const outcome = cell(OUTCOMES[e.outcome] ?? e.outcome, `outcome outcome-${e.outcome}`);
    if (e.error) {
      const detail = document.createElement("span");
      detail.className = "detail";
      detail.textContent = e.error;
      outcome.append(detail);
    }
    tr.append(when, cell(e.backend), cell(e.tool), cell(e.tab ?? "—"), cell(e.site ?? "—"),
      cell(e.args, "args"), outcome);
    return tr;
  }));
  $("log").hidden = entries.length === 0;
  $("empty").hidden = entries.length !== 0;
  $("count").textContent = `${entries.length} command(s)`;
}

async function load() {
  const [state, log] = await Promise.all([
    chrome.runtime.sendMessage({ type: "getState" }),
    chrome.runtime.sendMessage({ type: "getLog" }),
  ]);
  $("product").textContent = state.productName;
  document.title = `${state.productName} — Activity`;
  $("max").textContent = log.max;
  show(log.entries ?? []);
  document.body.dataset.ready = "true";
}

$("clear").addEventListener("click", async () => {
  const reply = await chrome.runtime.sendMessage({ type: "clearLog" });
  if (reply?.ok) show([]);
});

// The worker writes the log in batches, each entry in a slot of its own (activityLog.0 …);
// each write refreshes the page.
chrome.storage.onChanged.addListener(async (changes, area) => {
  if (area !== "session" || !Object.keys(changes).some((k) => k.startsWith("activityLog."))) return;
  const log = await chrome.runtime.sendMessage({ type: "getLog" });
  show(log?.entries ?? []);
});

load();
