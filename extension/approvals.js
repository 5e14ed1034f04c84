// The popup's approval card: the first waiting approval (tool, site, tab, why, the arguments
// exactly as the worker escaped them), answered with Allow once / Always on this site / Deny.
// The worker holds the queue (and mirrors it to session storage for this card); answers are
// only taken from the extension's own pages.
const $ = (id) => document.getElementById(id);
let shown = null;
let ticker = null;

function left(a) {
  const s = Math.max(0, Math.ceil((a.deadline - Date.now()) / 1000));
  return `Denied in ${s} s unless you answer.`;
}

function show(approvals) {
  const a = approvals[0] ?? null;
  const same = a && shown && a.id === shown.id;
  shown = a;
  $("approval").hidden = !a;
  clearInterval(ticker);
  if (!a) return;
  $("approval").dataset.id = String(a.id);
  $("approval-tool").textContent = a.tool;
  $("approval-site").textContent = a.site ?? "Unknown (about:blank or an error page): asked every time";
  $("approval-tab").textContent = String(a.tab);
  $("approval-reason").textContent = a.reason;
  $("approval-args").textContent = a.arguments;
  $("approve-always").hidden = !a.site;
  const more = approvals.length - 1;
  $("approval-more").hidden = more === 0;
  $("approval-more").textContent = `${more} more waiting after this one.`;
  $("approval-left").textContent = left(a);
  ticker = setInterval(() => { $("approval-left").textContent = left(a); }, 1000);
  if (!same) {
    $("approval-error").textContent = "";
    $("approve-once").focus();
  }
}

async function refresh() {
  const reply = await chrome.runtime.sendMessage({ type: "getApprovals" });
  show(reply?.approvals ?? []);
}

async function decide(decision) {
  if (!shown) return;
  const reply = await chrome.runtime.sendMessage({ type: "decideApproval", id: shown.id, decision });
  if (!reply?.ok) $("approval-error").textContent = reply?.message ?? "The answer was not taken.";
  refresh();
}

$("approve-once").addEventListener("click", () => decide("once"));
$("approve-always").addEventListener("click", () => decide("always"));
$("approve-deny").addEventListener("click", () => decide("deny"));

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "session" && changes.approvals) show(changes.approvals.newValue ?? []);
});

refresh();
