// The driver without a browser: its phrases and scrubbing, the state report's reading, the token's
// resolution, and the commands it sends, over a scripted fetch standing in for the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserOperatorToolset, PHRASES, phraseFor, resolveToken, scrub } from 'browser-operator';

test('scrub replaces every URL, path and address', () => {
  const text =
    'Cannot open https://a.example/x?y=1, file:///etc/passwd, about:blank, /home/ada/notes.txt, C:\\Users\\ada, ' +
    'localhost:3000/admin, 10.0.0.7:8080 and shop.example.com/cart; call tabs_context_mcp with createIfEmpty: true.';
  const out = scrub(text);
  assert.doesNotMatch(out, /example|passwd|about:|home|Users|localhost|10\.0|cart/);
  assert.match(out, /\(a URL\).*\(a path\)/);
  assert.match(out, /call list_tabs\./);
  assert.equal(scrub('Press ctrl+a / shift and/or x'), 'Press ctrl+a / shift and/or x');
  assert.ok(scrub('x'.repeat(5000)).length <= 1000);
});

test("the extension's failures a driver knows become fixed phrases", () => {
  assert.equal(phraseFor('navigate', 'Tab 42 is not in the automation tab group.'), PHRASES.tabMissing);
  assert.equal(phraseFor('navigate', 'Tab 42 does not exist.'), PHRASES.tabMissing);
  assert.equal(
    phraseFor('middle_click', 'Invalid argument `action`: must be one of "screenshot", "left_click", got "middle_click".'),
    PHRASES.notSupported.replace('{member}', 'middle_click'),
  );
  assert.equal(phraseFor('switch_tab', 'Unknown tool: switch_tab'), PHRASES.notSupported.replace('{member}', 'switch_tab'));
  assert.equal(
    phraseFor('navigate', 'Cannot navigate to file:///etc/passwd. Refused: file: URLs (local files) are outside what an agent may open. Navigate to an http(s) URL instead.'),
    'This address cannot be opened: file: URLs (local files) are outside what an agent may open.',
  );
  assert.equal(phraseFor('navigate', 'Navigation to http://x.invalid/ failed: net::ERR_NAME_NOT_RESOLVED'), 'The page could not be loaded (net::ERR_NAME_NOT_RESOLVED).');
  assert.equal(phraseFor('navigate', 'The URL policy refuses http://evil.example/ (host not allowed).'), PHRASES.urlPolicyRefused);
  // Anything else: the extension's words, scrubbed.
  assert.equal(phraseFor('find', 'Nothing matched at /srv/app/index.html'), 'Nothing matched at (a path)');
});

test('the token: given, else $BROWSER_OPERATOR_TOKEN, else the token file, else a setup error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bo-ts-config-'));
  assert.equal(resolveToken('given', { BROWSER_OPERATOR_TOKEN: 'env' }), 'given');
  assert.equal(resolveToken(undefined, { BROWSER_OPERATOR_TOKEN: 'env', BROWSER_OPERATOR_CONFIG_DIR: dir }), 'env');
  assert.throws(() => resolveToken(undefined, { BROWSER_OPERATOR_CONFIG_DIR: dir }), { name: 'ToolsetConfigError' });
  writeFileSync(join(dir, 'token'), 'from-file\n');
  assert.equal(resolveToken(undefined, { BROWSER_OPERATOR_CONFIG_DIR: dir }), 'from-file');
  const xdg = mkdtempSync(join(tmpdir(), 'bo-ts-xdg-'));
  assert.throws(() => resolveToken(undefined, { XDG_CONFIG_HOME: xdg }), /browser-operator/);
});

/** A toolset whose server is `answer(tool, args)`; `sent` records every command. */
function scripted(answer, options = {}) {
  const sent = [];
  const fetch = async (url, init) => {
    assert.equal(url, 'http://127.0.0.1:8787/commands');
    assert.equal(init.headers.authorization, 'Bearer t0ken');
    const { tool, args } = JSON.parse(init.body);
    sent.push({ tool, args });
    const out = await answer(tool, args);
    const body = typeof out === 'string' ? { commandId: 'c', result: { content: [{ type: 'text', text: out }] } } : out;
    return new Response(JSON.stringify(body), { status: out?.status ?? 200 });
  };
  return { sent, toolset: new BrowserOperatorToolset({ token: 't0ken', fetch, ...options }) };
}
const use = (name, input = {}) => ({ type: 'tool_use', id: 'toolu_1', toolset_name: 'browser', name, input });
const state = (tabs, changes = []) => JSON.stringify({ tabs, changes, dropped: 0 });

test('the policy goes first; a member is one command; the report maps the changes', async () => {
  let reports = 0;
  const { sent, toolset } = scripted((tool) => {
    if (tool === 'set_policy') return '{}';
    if (tool === 'browser_state') {
      reports += 1;
      return state(
        [{ tabId: 7, title: 'A', url: 'https://a.test/', active: true }, { tabId: 8, title: 'B', url: 'https://b.test/', active: false }],
        reports === 2
          ? [
              { type: 'download_completed', downloadId: 'd1', url: 'https://a.test/f.pdf', fileName: 'f.pdf', sizeBytes: 9, path: '/dl/f.pdf' },
              { type: 'dialog_dismissed', tabId: 7, kind: 'confirm', message: 'Sure?', accepted: false },
              { type: 'navigation_refused', tabId: 7, url: 'https://evil.test/' },
              { type: 'tab_opened', tabId: 8 },
              { type: 'download_failed', downloadId: 'd2', url: 'https://a.test/g', error: 'free text /tmp/x' },
            ]
          : [],
      );
    }
    return 'Clicked at (10, 20)';
  }, { allowedHosts: ['a.test'], blockedHosts: ['b.a.test'] });
  const r = await toolset.toolResult(use('left_click', { target: { type: 'coordinate', x: 10, y: 20 }, modifiers: 'shift' }));
  assert.deepEqual(sent.map((s) => s.tool), ['set_policy', 'browser_state', 'computer', 'browser_state']);
  assert.deepEqual(sent[0].args, { allowedHosts: ['a.test'], blockedHosts: ['b.a.test'], dialogs: 'dismiss', downloadPaths: false });
  assert.deepEqual(sent[2].args, { action: 'left_click', coordinate: [10, 20], modifiers: 'shift', tabId: 7 });
  assert.equal(r.is_error, undefined);
  const texts = r.content.filter((b) => b.type === 'text').map((b) => b.text);
  assert.deepEqual(texts, ['Clicked.', 'A navigation was refused.', 'A confirm dialog "Sure?" was dismissed.']);
  const block = r.content.find((b) => b.type === 'browser_state');
  assert.deepEqual(block.tabs, [
    { tab_id: '7', title: 'A', url: 'https://a.test/', active: true },
    { tab_id: '8', title: 'B', url: 'https://b.test/', active: false },
  ]);
  assert.deepEqual(block.state_changes, [
    { type: 'download_completed', download_id: 'd1', url: 'https://a.test/f.pdf', size_bytes: 9 },
    { type: 'tab_opened', tab_id: '8' },
    { type: 'download_failed', download_id: 'd2', url: 'https://a.test/g', error: PHRASES.downloadFailed },
  ]);
  // The policy is sent once.
  await toolset.toolResult(use('list_tabs'));
  assert.equal(sent.filter((s) => s.tool === 'set_policy').length, 1);
});

test('a policy the browser lost (its report says policy: null) is sent again before the next action', async () => {
  let marker = null;
  const { sent, toolset } = scripted((tool) => {
    if (tool === 'set_policy') {
      marker = '0123456789abcdef';
      return '{}';
    }
    if (tool === 'browser_state') {
      return JSON.stringify({ tabs: [{ tabId: 7, title: 'A', url: 'https://a.test/', active: true }], changes: [], dropped: 0, policy: marker });
    }
    return 'Clicked at (1, 2)';
  }, { allowedHosts: ['a.test'] });
  const click = use('left_click', { target: { type: 'coordinate', x: 1, y: 2 } });
  await toolset.toolResult(click);
  assert.deepEqual(sent.map((s) => s.tool), ['set_policy', 'browser_state', 'computer', 'browser_state']);
  sent.length = 0;
  await toolset.toolResult(click);
  assert.deepEqual(sent.map((s) => s.tool), ['computer', 'browser_state']);
  marker = null; // the browser restarted
  sent.length = 0;
  const r = await toolset.toolResult(click);
  assert.equal(r.is_error, undefined);
  assert.deepEqual(sent.map((s) => s.tool), ['computer', 'browser_state', 'set_policy']);
  assert.deepEqual(sent[2].args.allowedHosts, ['a.test']);
  sent.length = 0;
  await toolset.toolResult(click);
  assert.deepEqual(sent.map((s) => s.tool), ['computer', 'browser_state']);
});

test('navigate reads the status and the title; read_page maps the filters', async () => {
  const answers = {
    'https://a.test/gone': 'Navigated to https://a.test/gone\nHTTP status: 404\nTitle: Not here',
    back: 'Navigated to https://a.test/',
  };
  const { sent, toolset } = scripted((tool, args) => {
    if (tool === 'set_policy') return '{}';
    // The tab's entry has no title yet: the answer's is used.
    if (tool === 'browser_state') return state([{ tabId: 7, title: '', url: 'https://a.test/gone', active: true }]);
    if (tool === 'navigate') return answers[args.url];
    return 'tree';
  });
  const gone = await toolset.toolResult(use('navigate', { url: 'https://a.test/gone' }));
  assert.equal(gone.content[0].text, 'Navigated to https://a.test/gone — Not here (HTTP 404)');
  const back = await toolset.toolResult(use('navigate', { url: 'back' }));
  assert.equal(back.content[0].text, 'Navigated to https://a.test/gone', 'no status for a history step');
  for (const [given, wire] of [[undefined, 'visible'], ['interactive', 'interactive'], ['all', 'all']]) {
    sent.length = 0;
    await toolset.toolResult(use('read_page', given === undefined ? {} : { filter: given }));
    assert.equal(sent.find((s) => s.tool === 'read_page').args.filter, wire, `filter ${given}`);
  }
});

test('without the browser-side policy nothing acts on the browser', async () => {
  const { sent, toolset } = scripted((tool) =>
    tool === 'set_policy' ? { commandId: 'c', error: 'Unknown tool: set_policy' } : state([{ tabId: 7, title: '', url: '', active: true }]),
  );
  const r = await toolset.toolResult(use('navigate', { url: 'https://a.test/' }));
  assert.equal(r.is_error, true);
  assert.deepEqual(r.content, [{ type: 'text', text: PHRASES.policyUnavailable }]);
  assert.ok(!sent.some((s) => s.tool === 'navigate'), JSON.stringify(sent));
});

test('a report that cannot be had keeps the last tabs; the member error reaches the model', async () => {
  let up = true;
  const { toolset } = scripted((tool) => {
    if (tool === 'set_policy') return '{}';
    if (tool === 'browser_state') return up ? state([{ tabId: 7, title: 'A', url: 'https://a.test/', active: true }]) : { status: 503, error: 'No browser is connected.' };
    up = false;
    return { status: 503, error: 'No browser is connected.' };
  });
  const r = await toolset.toolResult(use('get_page_text'));
  assert.equal(r.is_error, true);
  assert.deepEqual(r.content, [{ type: 'text', text: PHRASES.noBrowser }]);
  const again = await toolset.toolResult(use('list_tabs'));
  assert.equal(again.is_error, true, JSON.stringify(again));
});

test('an unreachable server and a wrong token', async () => {
  const down = new BrowserOperatorToolset({ token: 'x', fetch: async () => { throw new TypeError('fetch failed: connect ECONNREFUSED 127.0.0.1:8787'); } });
  const r = await down.toolResult(use('screenshot'));
  assert.deepEqual(r.content, [{ type: 'text', text: PHRASES.noServer }]);
  const { toolset } = scripted(() => ({ status: 401, error: 'Missing or wrong bearer token' }));
  await assert.rejects(toolset.toolResult(use('screenshot')), { name: 'ToolsetConfigError' });
});

test('file_upload sends the bytes of the allowed paths, within the bound', async () => {
  const { BetaNodeFilePolicy } = await import('@anthropic-ai/sdk/helpers/beta/toolsets/node');
  const root = mkdtempSync(join(tmpdir(), 'bo-ts-up-'));
  writeFileSync(join(root, 'a.csv'), 'x,y\n');
  writeFileSync(join(root, 'big.bin'), Buffer.alloc(1024 * 1024 + 1));
  const { sent, toolset } = scripted((tool) => (tool === 'browser_state' ? state([{ tabId: 7, title: '', url: '', active: true }]) : '{}'), {
    configs: { file_upload: { enabled: true } },
    confirm: () => true,
    filePolicy: new BetaNodeFilePolicy({ uploadRoots: [root] }),
  });
  const input = (paths) => ({ target: { type: 'ref', ref: 'ref_3' }, paths });
  const r = await toolset.toolResult(use('file_upload', input([join(root, 'a.csv')])));
  assert.equal(r.is_error, undefined, JSON.stringify(r));
  const upload = sent.find((s) => s.tool === 'file_upload');
  assert.deepEqual(upload.args, { tabId: 7, ref: 'ref_3', files: [{ name: 'a.csv', mimeType: 'text/csv', data: Buffer.from('x,y\n').toString('base64') }] });
  const big = await toolset.toolResult(use('file_upload', input([join(root, 'big.bin')])));
  assert.deepEqual(big.content, [{ type: 'text', text: 'The files to upload are too large (at most 1 MB in total).' }]);
  assert.equal(sent.filter((s) => s.tool === 'file_upload').length, 1);
});
