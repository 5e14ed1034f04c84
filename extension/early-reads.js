// The storage a starting worker reads before it can serve (its connection, the policies, the
// paused state, the delivery ledger, the activity log), asked of Chrome as this module loads:
// while the wasm compiles, not after. A woken worker's first command waited for these reads
// (each 10–60 ms while Chrome starts the worker) after the wasm was ready.
//
// crates/worker/src/chrome/storage.rs takes from here: a read whose keys were all asked early
// gets the early answer, once per key. A key changed since (written by the worker, or by another
// page of the extension, seen through onChanged) is read from Chrome again. After 10 s, or once
// every key was served, everything goes to Chrome.
//
// The keys are the Rust modules' own (each checks, in its tests, that this line names them:
// crates/worker/src/chrome/storage.rs reads it).
// `numbered` keys are prefix + 0 … count − 1.
const READS = {"local":["approvalGrants","config","connections","debuggerIdleSeconds","siteRules","wantConnected"],"session":["activitySign","groupId","outbox","paused","policies","policy"],"numbered":{"session":{"activityLog.":200,"delivery.":512}}};

const CLOSE_AFTER_MS = 10_000;

const areas = { local: chrome.storage.local, session: chrome.storage.session };
const early = new Map();
for (const area of Object.keys(areas)) {
  const keys = listOf(area);
  // A failed early read answers nothing: each read then goes to Chrome itself.
  early.set(area, { keys: new Set(keys), answer: areas[area].get(keys).catch(() => null) });
}

function listOf(area) {
  const keys = [...(READS[area] ?? [])];
  for (const [prefix, count] of Object.entries(READS.numbered[area] ?? {})) {
    for (let i = 0; i < count; i++) keys.push(prefix + i);
  }
  return keys;
}

const changed = (changes, area) => forget(area, Object.keys(changes));
chrome.storage.onChanged.addListener(changed);
const closing = setTimeout(close, CLOSE_AFTER_MS);

function close() {
  early.clear();
  clearTimeout(closing);
  chrome.storage.onChanged.removeListener(changed);
}

// The early answer for `keys` of `area` (an object with those of them that are stored), or
// undefined when any of them was not asked early, was served already or changed since.
export function take(area, keys) {
  const e = early.get(area);
  if (!e || keys.length === 0 || !keys.every((k) => e.keys.has(k))) return undefined;
  for (const k of keys) e.keys.delete(k);
  if (e.keys.size === 0) {
    early.delete(area);
    if (early.size === 0) close();
  }
  return e.answer.then((all) => {
    if (all === null) return areas[area].get(keys);
    const picked = {};
    for (const k of keys) if (Object.hasOwn(all, k)) picked[k] = all[k];
    return picked;
  });
}

// Keys about to be written or removed (or changed elsewhere): never served early again.
export function forget(area, keys) {
  const e = early.get(area);
  if (e) for (const k of keys) e.keys.delete(k);
}
