// The driver end to end, with the real SDK and no model: hand-built tool_use blocks through
// toolResult(), against headless Chromium with the extension (tests/tests/driver_typescript.rs
// starts the server, the browser and the fixture server, and passes them in BO_URL, BO_TOKEN and
// BO_FIXTURES). Every member runs at least once; each effect is checked on the page itself, through
// the server directly (javascript_tool), not through the driver; the state after each call too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { BrowserOperatorToolset, PHRASES } from 'browser-operator';
import { BetaNodeFilePolicy } from '@anthropic-ai/sdk/helpers/beta/toolsets/node';
import { ToolError } from '@anthropic-ai/sdk/helpers/beta/toolsets';

const SERVER = process.env.BO_URL;
const TOKEN = process.env.BO_TOKEN;
const FIX = process.env.BO_FIXTURES; // http://127.0.0.1:<port>/toolset-ts/
if (!SERVER || !TOKEN || !FIX) {
  throw new Error('BO_URL, BO_TOKEN and BO_FIXTURES are unset: run this through cargo test --test driver_typescript');
}
const PAGE = `${FIX}page.html`;
const PAGE2 = `${FIX}page2.html`;
const OUTSIDE = process.env.BO_OUTSIDE_TAB; // a tab outside the automation group
// The same fixture server under another host name, which the browser-side policy blocks.
const BLOCKED = PAGE2.replace('127.0.0.1', 'localhost');

const uploads = mkdtempSync(join(tmpdir(), 'bo-ts-uploads-'));
const uploadFile = join(uploads, 'notes.txt');
writeFileSync(uploadFile, 'twelve bytes');
const downloads = mkdtempSync(join(tmpdir(), 'bo-ts-downloads-'));

const allowAll = () => true;
const common = {
  url: SERVER,
  token: TOKEN,
  configs: {
    file_upload: { enabled: true },
    read_console: { enabled: true },
    read_network: { enabled: true },
    javascript_exec: { enabled: true },
  },
  confirm: allowAll,
  filePolicy: new BetaNodeFilePolicy({ uploadRoots: [uploads], downloadDir: downloads }),
};
const browser = new BrowserOperatorToolset({ ...common, blockedHosts: ['localhost'], dialogs: 'dismiss' });

let seq = 0;
const use = (name, input = {}) => ({ type: 'tool_use', id: `toolu_${++seq}`, toolset_name: 'browser', name, input });
const call = (name, input, toolset = browser) => toolset.toolResult(use(name, input));
const blocks = (r) => (typeof r.content === 'string' ? [{ type: 'text', text: r.content }] : r.content);
const texts = (r) => blocks(r).filter((b) => b.type === 'text').map((b) => b.text);
const stateOf = (r) => blocks(r).find((b) => b.type === 'browser_state');
const show = (r) => JSON.stringify(r.content, (k, v) => (k === 'data' ? `<${v.length} chars>` : v)).slice(0, 3000);

/** A successful result, with its browser_state block checked against the API's rules. */
function ok(r, what) {
  assert.ok(!r.is_error, `${what} failed: ${show(r)}`);
  assert.equal(r.toolset_name, 'browser');
  const state = stateOf(r);
  assert.ok(state, `${what}: no browser_state block: ${show(r)}`);
  if (state.tabs.length) assert.equal(state.tabs.filter((t) => t.active).length, 1, `${what}: one active tab: ${show(r)}`);
  return r;
}

/** An is_error result whose text starts with `phrase` (or matches it), with no URL or path in it. */
function fails(r, phrase, what) {
  assert.equal(r.is_error, true, `${what} should fail: ${show(r)}`);
  const text = texts(r).join('\n');
  if (phrase instanceof RegExp) assert.match(text, phrase, what);
  else assert.ok(text.startsWith(phrase), `${what}: ${JSON.stringify(text)} should start with ${JSON.stringify(phrase)}`);
  noUrlOrPath(text, what);
  return text;
}

function noUrlOrPath(text, what) {
  assert.doesNotMatch(text, /[a-z]+:\/\/|127\.0\.0\.1|localhost|\/tmp\/|\/home\//i, `${what}: a URL or path in ${JSON.stringify(text)}`);
}

const activeTab = (r) => stateOf(r).tabs.find((t) => t.active);

/** The server directly, not the driver: how the page itself is checked. */
async function direct(tool, args) {
  const res = await fetch(`${SERVER}/commands`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tool, args }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${tool}: ${body.error}`);
  return body.result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}
/** `expr` evaluated in tab `tabId`'s page, as JSON. */
const onPage = async (tabId, expr) => JSON.parse(await direct('javascript_tool', { tabId: Number(tabId), text: `JSON.stringify(${expr})` }));

/** Polls `probe` until it returns a truthy value (at most `ms`); returns it, or fails with `what`. */
async function until(what, probe, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Width and height of a PNG or JPEG, from its header. */
function imageSize(base64) {
  const b = Buffer.from(base64, 'base64');
  if (b.readUInt32BE(0) === 0x89504e47) return [b.readUInt32BE(16), b.readUInt32BE(20)];
  for (let i = 2; i < b.length; ) {
    const marker = b[i + 1];
    if (marker >= 0xc0 && marker <= 0xc3) return [b.readUInt16BE(i + 7), b.readUInt16BE(i + 5)];
    i += 2 + b.readUInt16BE(i + 2);
  }
  throw new Error('not a PNG or JPEG');
}
const imageOf = (r) => blocks(r).find((b) => b.type === 'image');

const center = async (tab, sel) =>
  onPage(tab, `(() => { const r = document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect(); return { x: Math.round(r.x + r.width / 2), y: Math.round(r.y + r.height / 2) }; })()`);
const at = (p) => ({ type: 'coordinate', x: p.x, y: p.y });
const eventsOf = (tab, type) => onPage(tab, `log.filter((e) => e.type === ${JSON.stringify(type)})`);
const clearLog = (tab) => onPage(tab, 'log.length = 0');
/** The ref `find` gives for `query` (its first match). */
async function refOf(query) {
  const r = ok(await call('find', { query }), `find ${query}`);
  const ref = /\[?(ref_[0-9_]+)\]?/.exec(texts(r)[0])?.[1];
  assert.ok(ref, `find ${query}: no ref in ${show(r)}`);
  return ref;
}

let tab; // the first tab's id, as the driver reports it

test('the toolset serves every member', async (t) => {
  assert.equal(browser.toJSON().type, 'browser_toolset_20260801');
  const disabled = Object.entries(browser.toJSON().configs ?? {}).filter(([, c]) => c.enabled === false);
  assert.deepEqual(disabled, [], 'no member is sent as disabled');
  // The CommonJS build is the same driver.
  const cjs = createRequire(import.meta.url)('browser-operator');
  assert.equal(typeof cjs.BrowserOperatorToolset, 'function');
  assert.equal(cjs.PHRASES.tabMissing, PHRASES.tabMissing);
});

test('members against the browser', async (t) => {
  await t.test('navigate', async () => {
    const r = ok(await call('navigate', { url: PAGE }), 'navigate');
    // Where it landed, the title and the main document's HTTP status, as the SDK renders them.
    assert.equal(texts(r)[0], `Navigated to ${PAGE} — Toolset fixture (HTTP 200)`);
    tab = activeTab(r).tab_id;
    assert.equal(activeTab(r).url, PAGE);
    assert.equal(await onPage(tab, 'location.href'), PAGE);
    // A page that is not there loads (the server's 404 page) and says so.
    const missing = `${FIX}missing.html`;
    const gone = texts(ok(await call('navigate', { url: missing }), 'navigate to a missing page'))[0];
    assert.ok(gone.startsWith(`Navigated to ${missing}`) && gone.endsWith('(HTTP 404)'), gone);
    ok(await call('navigate', { url: PAGE }), 'navigate back to the fixture');
  });

  await t.test('screenshot: the viewport at DPR 1', async () => {
    const r = ok(await call('screenshot'), 'screenshot');
    const img = imageOf(r);
    assert.ok(img, show(r));
    const [w, h] = imageSize(img.source.data);
    const vp = await onPage(tab, '[innerWidth, innerHeight]');
    assert.deepEqual([w, h], vp, 'screenshot pixels are viewport CSS pixels');
  });

  await t.test('zoom: the region scaled up', async () => {
    const r = ok(await call('zoom', { region: [400, 20, 450, 45] }), 'zoom');
    const [w, h] = imageSize(imageOf(r).source.data);
    assert.ok(w > 50 && h > 25, `zoomed ${w}x${h} is larger than the 50x25 region`);
    assert.equal(Math.round((w / h) * 10), 20, 'aspect ratio kept');
  });

  await t.test('left_click with modifiers', async () => {
    await clearLog(tab);
    const r = ok(await call('left_click', { target: at(await center(tab, '#btn')), modifiers: 'shift' }), 'left_click');
    assert.equal(texts(r)[0], 'Clicked.');
    const clicks = await eventsOf(tab, 'click');
    assert.equal(clicks.length, 1);
    assert.equal(clicks[0].id, 'btn');
    assert.equal(clicks[0].shift, true);
  });

  await t.test('right_click', async () => {
    await clearLog(tab);
    ok(await call('right_click', { target: at(await center(tab, '#btn')) }), 'right_click');
    const menu = await eventsOf(tab, 'contextmenu');
    assert.equal(menu.length, 1);
    assert.equal(menu[0].button, 2);
  });

  await t.test('middle_click', async () => {
    await clearLog(tab);
    const r = ok(await call('middle_click', { target: at(await center(tab, '#btn')) }), 'middle_click');
    assert.equal(texts(r)[0], 'Middle-clicked.');
    const aux = await eventsOf(tab, 'auxclick');
    assert.equal(aux.length, 1, JSON.stringify(aux));
    assert.equal(aux[0].button, 1);
  });

  await t.test('double_click and triple_click', async () => {
    await clearLog(tab);
    ok(await call('double_click', { target: at(await center(tab, '#btn')) }), 'double_click');
    assert.equal((await eventsOf(tab, 'dblclick')).length, 1);
    await clearLog(tab);
    ok(await call('triple_click', { target: at(await center(tab, '#btn')) }), 'triple_click');
    const clicks = await eventsOf(tab, 'click');
    assert.deepEqual(clicks.map((c) => c.detail), [1, 2, 3]);
  });

  await t.test('hover', async () => {
    await clearLog(tab);
    const r = ok(await call('hover', { target: at(await center(tab, '#hover')) }), 'hover');
    assert.equal(texts(r)[0], 'Hovered.');
    assert.ok((await eventsOf(tab, 'mouseover')).some((e) => e.id === 'hover'));
  });

  await t.test('find, read_page', async () => {
    const ref = await refOf('Name field');
    const tree = ok(await call('read_page', {}), 'read_page');
    assert.match(texts(tree)[0], /Name field/);
    assert.doesNotMatch(texts(tree)[0], /The far paragraph/, 'the default reads what is in the viewport');
    assert.match(texts(ok(await call('read_page', { filter: 'all' }), 'read_page all'))[0], /The far paragraph/);
    // Scrolled to the end: the far paragraph is in view, the button at the top is not.
    await onPage(tab, "(document.querySelector('#far').scrollIntoView({ block: 'end' }), 1)");
    const end = texts(ok(await call('read_page', {}), 'read_page scrolled'))[0];
    assert.match(end, /The far paragraph/);
    assert.doesNotMatch(end, /Press me/);
    await onPage(tab, '(scrollTo(0, 0), 1)');
    const inter = ok(await call('read_page', { filter: 'interactive' }), 'read_page interactive');
    assert.match(texts(inter)[0], /Press me/);
    assert.doesNotMatch(texts(inter)[0], /The far paragraph/);
    const sub = ok(await call('read_page', { ref, depth: 2 }), 'read_page ref');
    assert.match(texts(sub)[0], /Name field/);
    assert.doesNotMatch(texts(sub)[0], /Press me/);
  });

  await t.test('left_click by ref, type, key', async () => {
    const ref = await refOf('Name field');
    ok(await call('left_click', { target: { type: 'ref', ref } }), 'left_click ref');
    assert.equal(await onPage(tab, 'document.activeElement.id'), 'name');
    const typed = ok(await call('type', { text: 'hello' }), 'type');
    assert.equal(texts(typed)[0], 'Typed.');
    assert.equal(await onPage(tab, "document.querySelector('#name').value"), 'hello');
    const key = ok(await call('key', { text: 'BackSpace', repeat: 2 }), 'key');
    assert.equal(texts(key)[0], 'Pressed BackSpace.');
    assert.equal(await onPage(tab, "document.querySelector('#name').value"), 'hel');
  });

  await t.test('hold_key', async () => {
    await clearLog(tab);
    const r = ok(await call('hold_key', { text: 'shift', duration: 1 }), 'hold_key');
    assert.equal(texts(r)[0], 'Held shift for 1s.');
    const down = (await eventsOf(tab, 'keydown')).filter((e) => e.key === 'Shift');
    const up = (await eventsOf(tab, 'keyup')).filter((e) => e.key === 'Shift');
    assert.ok(down.length >= 1 && up.length === 1, JSON.stringify({ down, up }));
    // Held, not tapped: released no sooner than the duration after it was pressed.
    assert.ok(up[0].t - down[0].t >= 900, `held for ${up[0].t - down[0].t} ms`);
  });

  await t.test('form_input', async () => {
    const color = await refOf('Color choice');
    const r = ok(await call('form_input', { target: { type: 'ref', ref: color }, value: 'green' }), 'form_input select');
    assert.equal(texts(r)[0], `Set the value of ${color}.`);
    assert.equal(await onPage(tab, "document.querySelector('#color').value"), 'green');
    const agree = await refOf('Agree box');
    ok(await call('form_input', { target: { type: 'ref', ref: agree }, value: true }), 'form_input checkbox');
    assert.equal(await onPage(tab, "document.querySelector('#agree').checked"), true);
  });

  await t.test('left_click_drag', async () => {
    const from = await center(tab, '#drag');
    ok(await call('left_click_drag', { from: at(from), target: at({ x: from.x + 100, y: from.y + 20 }) }), 'left_click_drag');
    const moved = await center(tab, '#drag');
    assert.deepEqual([moved.x, moved.y], [from.x + 100, from.y + 20]);
  });

  await t.test('left_mouse_down, mouse_move, left_mouse_up: a drag held across calls', async () => {
    const from = await center(tab, '#drag');
    await onPage(tab, 'moves.length = 0');
    ok(await call('left_mouse_down', { target: at(from) }), 'left_mouse_down');
    const r = ok(await call('mouse_move', { target: at({ x: from.x + 50, y: from.y + 10 }) }), 'mouse_move');
    assert.equal(texts(r)[0], 'Moved the mouse.');
    const mid = await center(tab, '#drag');
    assert.deepEqual([mid.x, mid.y], [from.x + 50, from.y + 10], 'the box follows while the button is held');
    assert.ok((await onPage(tab, 'moves')).every((b) => b === 1), 'the button is down during the move');
    ok(await call('left_mouse_up', { target: at({ x: from.x + 50, y: from.y + 10 }) }), 'left_mouse_up');
    ok(await call('mouse_move', { target: at({ x: from.x + 90, y: from.y + 40 }) }), 'mouse_move after release');
    const end = await center(tab, '#drag');
    assert.deepEqual([end.x, end.y], [from.x + 50, from.y + 10], 'released: the box stays');
  });

  await t.test('scroll, scroll_to', async () => {
    const r = ok(await call('scroll', { target: at({ x: 300, y: 300 }), scroll_direction: 'down', scroll_amount: 3 }), 'scroll');
    assert.equal(texts(r)[0], 'Scrolled down.');
    assert.ok((await onPage(tab, 'scrollY')) > 0);
    const far = await refOf('The far paragraph');
    ok(await call('scroll_to', { target: { type: 'ref', ref: far } }), 'scroll_to');
    const top = await onPage(tab, "document.querySelector('#far').getBoundingClientRect().top");
    assert.ok(top >= 0 && top < (await onPage(tab, 'innerHeight')), `the paragraph is in view (top ${top})`);
    await onPage(tab, 'scrollTo(0, 0)');
  });

  await t.test('wait', async () => {
    const r = ok(await call('wait', { duration: 0.2 }), 'wait');
    assert.equal(texts(r)[0], 'Waited 0.2s.');
  });

  await t.test('get_page_text, javascript_exec', async () => {
    const text = ok(await call('get_page_text'), 'get_page_text');
    assert.match(texts(text)[0], /Toolset fixture heading/);
    const js = ok(await call('javascript_exec', { text: 'document.title + " / " + (6 * 7)' }), 'javascript_exec');
    assert.equal(texts(js)[0], 'Toolset fixture / 42');
  });

  await t.test('read_console, read_network: reading drains', async () => {
    await onPage(tab, "(console.log('marker one'), 1)");
    const first = ok(await call('read_console'), 'read_console');
    assert.match(texts(first)[0], /marker one/);
    const second = ok(await call('read_console'), 'read_console again');
    assert.doesNotMatch(texts(second)[0], /marker one/);
    const net = ok(await call('read_network'), 'read_network');
    assert.match(texts(net)[0], /data\.txt\?from=page/);
    const again = ok(await call('read_network'), 'read_network again');
    assert.doesNotMatch(texts(again)[0], /data\.txt\?from=page/);
  });

  await t.test('file_upload: the bytes of a path the file policy allows', async () => {
    const ref = await refOf('Upload file');
    const r = ok(await call('file_upload', { target: { type: 'ref', ref }, paths: [uploadFile] }), 'file_upload');
    assert.equal(texts(r)[0], 'Uploaded.');
    assert.deepEqual(await onPage(tab, 'files'), ['notes.txt:12']);
    // Outside the upload roots: the SDK's file policy refuses it before the driver.
    const refused = await call('file_upload', { target: { type: 'ref', ref }, paths: ['/etc/hostname'] });
    assert.equal(refused.is_error, true, show(refused));
    assert.deepEqual(await onPage(tab, 'files'), ['notes.txt:12']);
  });

  await t.test('a dialog is dismissed and reported', async () => {
    try {
      const r = ok(await call('left_click', { target: at(await center(tab, '#confirm')) }), 'left_click confirm');
      const all = texts(r).join('\n');
      // Answered at once by the policy; the line may come with this call or the next.
      const line = 'A confirm dialog "Delete everything?" was dismissed.';
      if (!all.includes(line)) {
        const next = ok(await call('wait', { duration: 0.1 }), 'wait');
        assert.ok(texts(next).includes(line), show(next));
      }
      assert.equal(await onPage(tab, 'document.body.dataset.confirm'), 'false');
    } finally {
      // A dialog left open (the policy failed) would stop every later check on this tab.
      await direct('handle_dialog', { tabId: Number(tab), accept: false }).catch(() => undefined);
    }
  });

  await t.test('a dialog that reopens itself: each one answered and counted, no hang', async () => {
    try {
      let count = 0;
      const tally = (r) => {
        for (const line of texts(r)) {
          if (/^A confirm dialog "Again \d+\?" was dismissed\.$/.test(line)) count += 1;
          const more = /^(\d+) more dialogs were dismissed\.$/.exec(line);
          if (more) count += Number(more[1]);
        }
      };
      tally(ok(await call('left_click', { target: at(await center(tab, '#nag')) }), 'left_click nag'));
      await until('ten dialogs reported', async () => {
        if (count >= 10) return true;
        tally(ok(await call('wait', { duration: 0.1 }), 'wait'));
        return false;
      });
      assert.equal(count, 10);
      assert.equal(await onPage(tab, 'document.body.dataset.nags'), '10');
    } finally {
      // Dialogs left open (the policy failed): answer them all, the next opening as the last closes.
      const answer = () => direct('handle_dialog', { tabId: Number(tab), accept: false }).then(() => true, () => false);
      for (let i = 0, misses = 0; i < 12 && misses < 2; i++) {
        if (await answer()) misses = 0;
        else (misses += 1, await new Promise((r) => setTimeout(r, 200)));
      }
    }
  });

  await t.test('a download is reported', async () => {
    let changes = [];
    const r = ok(await call('left_click', { target: at(await center(tab, '#download')) }), 'left_click download');
    changes.push(...(stateOf(r).state_changes ?? []));
    await until('download_completed', async () => {
      if (changes.some((c) => c.type === 'download_completed')) return true;
      const w = ok(await call('wait', { duration: 0.2 }), 'wait');
      changes.push(...(stateOf(w).state_changes ?? []));
      return false;
    });
    const done = changes.find((c) => c.type === 'download_completed');
    assert.match(done.url, /\/toolset-ts\/data\.txt$/);
    assert.equal(done.size_bytes, 30);
    assert.equal(done.path, undefined, 'the path stays hidden: the file policy does not expose it');

    // A download that never finishes: reported as started, never as finished, and the browser keeps serving.
    changes = [];
    const e = ok(await call('left_click', { target: at(await center(tab, '#endless')) }), 'left_click endless');
    changes.push(...(stateOf(e).state_changes ?? []));
    const endless = (c) => c.url.endsWith('/__never-ends');
    await until('the endless download reported as started', async () => {
      if (changes.some((c) => c.type === 'download_started' && endless(c))) return true;
      changes.push(...(stateOf(ok(await call('wait', { duration: 0.2 }), 'wait')).state_changes ?? []));
      return false;
    });
    assert.ok(!changes.some((c) => c.type !== 'download_started' && c.url && endless(c)), JSON.stringify(changes));
    assert.match(texts(ok(await call('get_page_text'), 'get_page_text'))[0], /Toolset fixture heading/);
  });

  let second;
  await t.test('new_tab, list_tabs, switch_tab, close_tab', async () => {
    const r = ok(await call('new_tab'), 'new_tab');
    const state = stateOf(r);
    second = activeTab(r).tab_id;
    assert.notEqual(second, tab);
    assert.deepEqual(state.state_changes, [{ type: 'tab_opened', tab_id: second }]);
    assert.deepEqual(blocks(r).map((b) => b.type), ['browser_state'], 'a tab member answers with the state only');
    ok(await call('navigate', { url: PAGE2 }), 'navigate in the new tab');
    assert.equal(await onPage(second, 'document.title'), 'Toolset page two');
    const list = ok(await call('list_tabs'), 'list_tabs');
    assert.deepEqual(stateOf(list).tabs.map((t) => [t.tab_id, t.active]).sort(), [[tab, false], [second, true]].sort());
    const sw = ok(await call('switch_tab', { tab_id: tab }), 'switch_tab');
    assert.equal(activeTab(sw).tab_id, tab);
    // The switched-to tab is the one its window shows.
    await until('the first tab shown', async () => (await onPage(tab, 'document.visibilityState')) === 'visible');
    assert.equal(await onPage(second, 'document.visibilityState'), 'hidden');
    // Without a tab_id, members act on the active tab.
    const js = ok(await call('javascript_exec', { text: 'document.title' }), 'javascript_exec on the active tab');
    assert.equal(texts(js)[0], 'Toolset fixture');
    const closed = ok(await call('close_tab', { tab_id: second }), 'close_tab');
    assert.deepEqual(stateOf(closed).tabs.map((t) => t.tab_id), [tab]);
    assert.doesNotMatch(await direct('tabs_context_mcp', {}), new RegExp(`"tabId":${second}\\b`));
  });

  await t.test('a popup the page opens becomes the active tab', async () => {
    const r = ok(await call('left_click', { target: at(await center(tab, '#popup')) }), 'left_click popup');
    let changes = [...(stateOf(r).state_changes ?? [])];
    let state = stateOf(r);
    await until('tab_opened', async () => {
      if (changes.some((c) => c.type === 'tab_opened')) return true;
      const w = ok(await call('list_tabs'), 'list_tabs');
      state = stateOf(w);
      changes.push(...(state.state_changes ?? []));
      return false;
    });
    const opened = changes.find((c) => c.type === 'tab_opened').tab_id;
    assert.equal(state.tabs.find((t) => t.active).tab_id, opened);
    ok(await call('close_tab', { tab_id: opened }), 'close the popup');
    ok(await call('switch_tab', { tab_id: tab }), 'switch back');
  });

  await t.test('navigate back, forward, reload', async () => {
    ok(await call('navigate', { url: PAGE2, tab_id: tab }), 'navigate page two');
    const back = ok(await call('navigate', { url: 'back' }), 'back');
    assert.equal(activeTab(back).url, PAGE);
    assert.doesNotMatch(texts(back)[0], /\(HTTP/, 'a history step has no status of its own');
    assert.equal(await onPage(tab, 'location.href'), PAGE);
    const fwd = ok(await call('navigate', { url: 'forward' }), 'forward');
    assert.equal(activeTab(fwd).url, PAGE2);
    await onPage(tab, '(window.marker = 1)');
    const reload = ok(await call('navigate', { url: 'Reload' }), 'reload');
    assert.match(texts(reload)[0], /\(HTTP 200\)$/);
    assert.equal(activeTab(reload).url, PAGE2, 'reload stays on the page (not https://reload/)');
    assert.equal(await onPage(tab, 'typeof window.marker'), 'undefined', 'the page was loaded again');
    ok(await call('navigate', { url: PAGE }), 'navigate back to the fixture');
  });

  await t.test('a blocked host: directly, by a redirect and by a script', async () => {
    const direct_ = await call('navigate', { url: BLOCKED });
    fails(direct_, PHRASES.urlPolicyRefused, 'navigate to a blocked host');
    assert.equal(await onPage(tab, 'location.href'), PAGE);

    // Refused before the request left: the tab may show the browser's error page under the
    // refused address, but the page itself never loaded.
    const neverLoaded = async (what) => {
      const tabs = stateOf(ok(await call('list_tabs'), 'list_tabs')).tabs;
      const shown = tabs.find((t) => t.tab_id === tab);
      assert.notEqual(shown.title, 'Toolset page two', `${what}: the blocked page loaded: ${JSON.stringify(tabs)}`);
    };
    const redirect = `${FIX.replace(/toolset-ts\/$/, '')}__redirect?to=${encodeURIComponent(BLOCKED)}`;
    const r = await call('navigate', { url: redirect });
    assert.ok(texts(r).includes('A navigation was refused.'), `redirect: ${show(r)}`);
    noUrlOrPath(texts(r).filter((x) => !x.startsWith('Navigated to')).join('\n'), 'redirect');
    await neverLoaded('redirect');

    ok(await call('navigate', { url: PAGE }), 'navigate back to the fixture');
    const s = ok(await call('javascript_exec', { text: `location.href = ${JSON.stringify(BLOCKED)}; 'sent'` }), 'script navigation');
    let seen = texts(s).includes('A navigation was refused.');
    await until('the refusal reported', async () => {
      if (seen) return true;
      // The tab may show the browser's error page under the refused address, where every tool
      // is refused: the report comes with the refusal as with any answer.
      seen = texts(await call('wait', { duration: 0.2 })).includes('A navigation was refused.');
      return false;
    });
    await neverLoaded('script');
    ok(await call('navigate', { url: PAGE }), 'navigate back to the fixture');
  });

  await t.test('errors: fixed phrases without URLs or paths', async () => {
    ok(await call('navigate', { url: PAGE, tab_id: tab }), 'navigate to the fixture');
    fails(await call('get_page_text', { tab_id: '987654' }), PHRASES.tabMissing, 'a tab id outside the group');
    fails(await call('switch_tab', { tab_id: '987654' }), PHRASES.tabMissing, 'switch to a tab outside the group');
    // A real tab outside the group (a person's own, which driver_typescript.rs opened and checks afterwards).
    for (const [name, input] of [['navigate', { url: PAGE2 }], ['get_page_text', {}], ['left_click', { target: at({ x: 5, y: 5 }) }], ['switch_tab', {}], ['close_tab', {}]]) {
      fails(await call(name, { ...input, tab_id: OUTSIDE }), PHRASES.tabMissing, `${name} on the person's tab`);
    }
    fails(await call('get_page_text', { tab_id: 'seven' }), PHRASES.tabIdForm, 'a tab id that is no number');
    fails(await call('left_click', { target: { type: 'ref', ref: 'ref_98765' } }), /^(Unknown|Stale) ref ref_98765: .*Call read_page or find/, 'an unknown ref');
    fails(await call('hold_key', { text: 'a', duration: 31 }), 'hold_key needs duration as a number of seconds from 0 to 30.', 'hold_key over 30 s');
    fails(
      await call('file_upload', { target: { type: 'ref', ref: await refOf('Upload file') }, document_ids: ['file_1'] }),
      'document not in the upload allowlist',
      'a staged document the file policy does not know',
    );
    const bad = await call('left_click', { target: { type: 'coordinate', x: 'left' } });
    assert.equal(bad.is_error, true);
    fails(await call('navigate', { url: 'http://no-such-host.invalid/' }), 'The page could not be loaded (net::', 'an unknown host');
    ok(await call('navigate', { url: PAGE }), 'navigate back to the fixture');
    // The extension keeps serving.
    ok(await call('list_tabs'), 'list_tabs after the errors');
  });
});

test("the SDK's own policies run before the driver", async () => {
  const refuse = (_ctx, url) => {
    if (url.includes('page2')) throw new ToolError('page two is off limits');
  };
  const strict = new BrowserOperatorToolset({
    ...common,
    urlPolicy: refuse,
    confirm: (ctx) => ctx.member !== 'javascript_exec',
    blockedHosts: ['localhost'],
  });
  ok(await call('navigate', { url: PAGE, tab_id: tab }), 'navigate to the fixture');
  const r = await call('navigate', { url: PAGE2 }, strict);
  assert.equal(r.is_error, true);
  assert.deepEqual(texts(r), ['page two is off limits']);
  assert.equal(await onPage(tab, 'location.href'), PAGE, 'the driver never navigated');
  await onPage(tab, '(window.untouched = 1)');
  const js = await call('javascript_exec', { text: 'window.untouched = 2' }, strict);
  assert.equal(js.is_error, true);
  assert.match(texts(js)[0], /did not grant permission/);
  assert.equal(await onPage(tab, 'window.untouched'), 1, 'the script never ran');
});

test('a policy that refuses every host: an error, never a hang', async () => {
  const none = new BrowserOperatorToolset({ ...common, allowedHosts: [] });
  fails(await call('navigate', { url: PAGE2 }, none), PHRASES.urlPolicyRefused, 'navigate with no allowed host');
  ok(await call('list_tabs', {}, none), 'list_tabs');
});

test('a wrong token stops the run with a setup error', async () => {
  const wrong = new BrowserOperatorToolset({ ...common, token: 'not-the-token' });
  await assert.rejects(call('list_tabs', {}, wrong), /refused the token/);
});
