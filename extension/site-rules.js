// Options: the person's site rules (blocked, allowed, "ask first" sites; approvals of scripts and
// uploads; the approval timeout) and the "always allowed" grants, each revocable. The worker
// checks and stores them (chrome.storage.local); this page only shows and sends.
const $ = (id) => document.getElementById(id);
const lines = (id) => $(id).value.split("\n").map((l) => l.trim()).filter((l) => l !== "");

function showRules(rules) {
  $("blockedSites").value = (rules.blocked ?? []).join("\n");
  $("allowedSites").value = (rules.allowed ?? []).join("\n");
  $("askSites").value = (rules.ask ?? []).join("\n");
  $("askTools").checked = rules.askTools !== false;
  $("approvalSeconds").value = String(rules.approvalSeconds ?? 60);
}

function showGrants(grants) {
  const list = $("grants");
  list.replaceChildren();
  $("grants-empty").hidden = grants.length > 0;
  for (const g of grants) {
    const li = document.createElement("li");
    const what = document.createElement("span");
    what.textContent = `${g.tool === "*" ? "Acting tools" : g.tool} on ${g.site}`;
    const revoke = document.createElement("button");
    revoke.type = "button";
    revoke.className = "secondary";
    revoke.textContent = "Revoke";
    revoke.setAttribute("aria-label", `Revoke: ${what.textContent}`);
    revoke.addEventListener("click", async () => {
      const reply = await chrome.runtime.sendMessage({ type: "revokeGrant", site: g.site, tool: g.tool });
      if (reply?.ok) load();
      else $("siteRules-error").textContent = reply?.message ?? "It could not be revoked.";
    });
    li.append(what, revoke);
    list.append(li);
  }
}

async function load() {
  const reply = await chrome.runtime.sendMessage({ type: "getSiteRules" });
  if (!reply?.rules) return;
  showRules(reply.rules);
  showGrants(reply.grants ?? []);
  $("site-rules").dataset.ready = "true";
}

$("site-rules").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("siteRules-error").textContent = "";
  $("siteRules-status").textContent = "";
  const seconds = $("approvalSeconds").value.trim();
  const rules = {
    blocked: lines("blockedSites"),
    allowed: lines("allowedSites"),
    ask: lines("askSites"),
    askTools: $("askTools").checked,
    approvalSeconds: seconds === "" ? 60 : Number(seconds),
  };
  const reply = await chrome.runtime.sendMessage({ type: "saveSiteRules", rules });
  if (reply?.ok) {
    showRules(reply.rules);
    $("siteRules-status").textContent = "Saved.";
  } else {
    $("siteRules-error").textContent = reply?.message ?? "The site rules could not be saved.";
  }
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && (changes.approvalGrants || changes.siteRules)) load();
});

load();
