/**
 * `BrowserOperatorToolset`: the SDK's browser toolset (`browser_toolset_20260801`) served by the
 * person's own Chrome through the Browser Operator extension and `browser-operator serve`.
 *
 * Every member is one command (`POST /commands`) of the extension's own tools, then a
 * `browser_state` command for the report the SDK attaches to the result. The SDK runs its own
 * `urlPolicy`, `filePolicy` and `confirm` before a member is reached; the browser-side policy
 * (`allowedHosts`, `blockedHosts`, `dialogs`) is sent with `set_policy` before the first command,
 * and the extension enforces it on every navigation, not only the ones the model asks for.
 */
import { readFile } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import {
  BetaAbstractBrowserToolset20260801,
  InvalidMemberInputError,
  ToolError,
  ToolsetUsageError,
  type BetaBrowserNavigateResult,
  type BetaBrowserState,
  type BetaBrowserToolsetOptions,
  type BetaScreenshotResult,
  type BetaToolsetCallContext,
} from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type * as Beta from '@anthropic-ai/sdk/resources/beta';
import { CommandClient, DEFAULT_URL, joinedText, resolveToken, type WireBlock } from './client.js';
import { PHRASES, memberError, phrase } from './errors.js';
import { parseState, type Snapshot, type StateChange } from './state.js';

type Ctx = BetaToolsetCallContext;
type Signal = AbortSignal | null | undefined;

/** How a page's native dialogs (`alert`, `confirm`, `prompt`) are answered. */
export type DialogPolicy = 'dismiss' | 'accept' | 'ask';

/** A file `file_upload` sends for a staged document id (see `resolveDocument`). */
export interface UploadFile {
  /** The file name the page sees. */
  name: string;
  /** The bytes. */
  data: Uint8Array;
  /** The MIME type the page sees; guessed from the name when omitted. */
  mimeType?: string | undefined;
}

export interface BrowserOperatorToolsetOptions extends Omit<BetaBrowserToolsetOptions, 'browserState'> {
  /** The server's address (`browser-operator serve`). Default `http://127.0.0.1:8787`. */
  url?: string | undefined;
  /**
   * The server's token. Default `$BROWSER_OPERATOR_TOKEN`, then the token file the server keeps
   * (`$BROWSER_OPERATOR_CONFIG_DIR/token`, `$XDG_CONFIG_HOME/browser-operator/token` or
   * `~/.config/browser-operator/token`).
   */
  token?: string | undefined;
  /** Which connected browser to drive, when several are connected to the server. */
  target?: string | undefined;
  /**
   * The hosts every navigation of the driven tabs may reach, enforced in the browser: the model's
   * `navigate`, redirects, links and scripts alike (`example.com` is that host and its subdomains,
   * `*.example.com` only its subdomains). `null` or omitted: every web host; `[]`: none.
   */
  allowedHosts?: string[] | null | undefined;
  /** Hosts refused even where `allowedHosts` admits them, in the same patterns. */
  blockedHosts?: string[] | undefined;
  /**
   * `'dismiss'` (the default) cancels every native dialog at once, `'accept'` accepts it; both are
   * reported to the model. `'ask'` leaves it open: the page then waits, and so do the driver's
   * calls on that tab.
   */
  dialogs?: DialogPolicy | undefined;
  /**
   * `file_upload` sends the paths themselves instead of the files' bytes: only where the browser
   * runs on this machine (it reads the files itself). Default false: the driver reads each file the
   * file policy allowed and sends its bytes, so the browser may be anywhere.
   */
  sendPaths?: boolean | undefined;
  /**
   * Fetches a staged document (a Files API id the file policy allowed) for `file_upload`. Without
   * it, an upload by document id is answered with an error.
   */
  resolveDocument?: ((documentId: string) => Promise<UploadFile>) | undefined;
  /** The `fetch` the driver uses. Default: the global one. */
  fetch?: typeof fetch | undefined;
}

/** The most bytes `file_upload` sends in all (the extension's bound). */
export const UPLOAD_MAX = 1024 * 1024;

/** Longest text a reading member returns to the model (the SDK sends it uncut). */
export const TEXT_MAX = 100_000;

const MIME: Record<string, string> = {
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.json': 'application/json',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.zip': 'application/zip',
};

function bounded(text: string): string {
  return text.length <= TEXT_MAX ? text : `${text.slice(0, TEXT_MAX)}\n… (cut at ${TEXT_MAX} characters)`;
}

function invalid(member: string, problem: string): ToolError {
  return new InvalidMemberInputError(member, 'browser', problem);
}

function point(member: string, field: string, target: unknown): [number, number] {
  const t = target as { type?: unknown; x?: unknown; y?: unknown } | null | undefined;
  if (t && t.type === 'coordinate' && Number.isFinite(t.x) && Number.isFinite(t.y)) {
    return [t.x as number, t.y as number];
  }
  throw invalid(member, `${field}: expected {"type": "coordinate", "x": number, "y": number}`);
}

function ref(member: string, target: unknown): string {
  const t = target as { type?: unknown; ref?: unknown } | null | undefined;
  if (t && t.type === 'ref' && typeof t.ref === 'string' && t.ref !== '') return t.ref;
  throw invalid(member, 'target: expected {"type": "ref", "ref": "ref_…"}');
}

/** A click target as the extension's `computer` takes it: a coordinate, or a ref. */
function clickTarget(member: string, target: unknown): { coordinate: [number, number] } | { ref: string } {
  const t = target as { type?: unknown } | null | undefined;
  if (t && t.type === 'ref') return { ref: ref(member, target) };
  if (t && t.type === 'coordinate') return { coordinate: point(member, 'target', target) };
  throw invalid(member, 'target: expected a coordinate target or a ref target');
}

function seconds(member: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 30) {
    throw new ToolError(phrase('duration', { member }));
  }
  return value;
}

/**
 * The extension's navigate answer: `Navigated to <url>` (the tab's URL after redirects), then
 * `HTTP status: <n>` for a load of an http(s) document and `Title: <title>` when the page has one,
 * each on its own line.
 */
function navigation(text: string): { url: string; status?: number; title?: string } {
  const url = /^Navigated to (\S*)/m.exec(text)?.[1] ?? '';
  const status = /^HTTP status: ([0-9]{3})$/m.exec(text)?.[1];
  const title = /^Title: (.+)$/m.exec(text)?.[1];
  const out: { url: string; status?: number; title?: string } = { url };
  if (status !== undefined) out.status = Number(status);
  if (title !== undefined) out.title = title;
  return out;
}

/** The driver's state and its wire, apart from the SDK's class so the `browserState` hook can reach it. */
class Driver {
  readonly client: CommandClient;
  readonly #policy: Record<string, unknown>;
  #policyApplied = false;
  /** Changes drained from the extension and not yet handed to the SDK. */
  #pending: StateChange[] = [];
  /** The tabs of the last report, and the active one among them. */
  #tabs: Beta.BetaBrowserStateTabEntry[] | undefined;
  #active: string | undefined;
  /** A report taken after the member's last command: the state report uses it instead of asking again. */
  fresh: Snapshot | undefined;

  constructor(client: CommandClient, policy: Record<string, unknown>) {
    this.client = client;
    this.#policy = policy;
  }

  /** Sends the browser-side policy, once (again after a failure): nothing acts on the browser before it holds. */
  async applyPolicy(signal: Signal): Promise<void> {
    if (this.#policyApplied) return;
    const out = await this.client.command('set_policy', this.#policy, signal);
    if (!out.ok) throw new ToolError(PHRASES.policyUnavailable);
    this.#policyApplied = true;
  }

  /** Runs one of the extension's tools for `member`; its error becomes the member's fixed phrase. */
  async run(member: string, tool: string, args: Record<string, unknown>, signal: Signal): Promise<WireBlock[]> {
    await this.applyPolicy(signal);
    this.fresh = undefined;
    const out = await this.client.command(tool, args, signal);
    if (!out.ok) throw memberError(member, out.error);
    return out.content;
  }

  /** Asks the extension for its state; the changes it drained wait for the next report to the SDK. */
  async state(signal: Signal): Promise<Snapshot> {
    const out = await this.client.command('browser_state', {}, signal);
    if (!out.ok) throw memberError('browser_state', out.error);
    let snap: Snapshot;
    try {
      snap = parseState(joinedText(out.content), this.#active);
    } catch {
      throw new ToolError(PHRASES.badAnswer);
    }
    this.#pending.push(...snap.changes);
    this.#tabs = snap.tabs;
    this.#active = snap.tabs.find((t) => t.active)?.tab_id;
    if (snap.policyGone && this.#policyApplied) {
      // The browser restarted and lost the policy: it holds again before anything else acts.
      this.#policyApplied = false;
      await this.applyPolicy(signal);
    }
    return snap;
  }

  /** A report taken now, kept for the state report that follows the member. */
  async freshState(signal: Signal): Promise<Snapshot> {
    const snap = await this.state(signal);
    this.fresh = snap;
    return snap;
  }

  /**
   * The SDK's `browserState` hook: the tabs now, and every change drained since the last report.
   * When the browser cannot be asked (it went away), the last tabs known, so the model still reads
   * the member's own error; a mistake in the application's setup still stops the run.
   */
  async report(ctx: Ctx): Promise<BetaBrowserState> {
    let tabs = this.#tabs ?? [];
    try {
      tabs = (this.fresh ?? (await this.state(ctx.signal))).tabs;
    } catch (error) {
      if (error instanceof ToolsetUsageError || ctx.signal?.aborted) throw error;
    }
    this.fresh = undefined;
    const changes = this.#pending;
    this.#pending = [];
    return changes.length ? { tabs, state_changes: changes } : { tabs };
  }

  /**
   * The Chrome tab id a member acts on: `tab_id` as given, else the active tab of the last report
   * (asking for one on the first call, and opening a tab in the group when it has none).
   */
  async tab(tabId: string | null | undefined, signal: Signal): Promise<number> {
    if (tabId != null && tabId !== '') return parseTabId(tabId);
    await this.applyPolicy(signal);
    if (this.#tabs === undefined || this.#active === undefined) await this.state(signal);
    if (this.#active === undefined) {
      const out = await this.client.command('tabs_context_mcp', { createIfEmpty: true }, signal);
      if (!out.ok) throw memberError('new_tab', out.error);
      await this.state(signal);
    }
    if (this.#active === undefined) throw new ToolError(PHRASES.noTabs);
    return Number(this.#active);
  }
}

function parseTabId(tabId: unknown): number {
  if (typeof tabId === 'string' && /^\d{1,10}$/.test(tabId)) {
    const n = Number(tabId);
    if (n <= 2 ** 31 - 1) return n;
  }
  throw new ToolError(PHRASES.tabIdForm);
}

function image(member: string, content: WireBlock[]): BetaScreenshotResult {
  const img = content.find((b): b is Extract<WireBlock, { type: 'image' }> => b.type === 'image');
  if (!img) throw memberError(member, 'the browser returned no image');
  const mediaType = (['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const).find((m) => m === img.mimeType);
  return mediaType ? { data: img.data, mediaType } : { data: img.data };
}

function tabEntry(snap: Snapshot, id: number | string): Beta.BetaBrowserStateTabEntry {
  const entry = snap.tabs.find((t) => t.tab_id === String(id));
  if (!entry) throw new ToolError(PHRASES.tabMissing);
  return entry;
}

/**
 * The browser toolset in the user's own Chrome: every member of `browser_toolset_20260801`,
 * served by the Browser Operator extension through `browser-operator serve`.
 *
 * ```ts
 * const browser = new BrowserOperatorToolset({ allowedHosts: ['example.com'] });
 * const runner = new Anthropic().beta.messages.toolRunner({ model, max_tokens, tools: [browser], messages });
 * ```
 */
export class BrowserOperatorToolset extends BetaAbstractBrowserToolset20260801 {
  readonly #d: Driver;
  readonly #sendPaths: boolean;
  readonly #resolveDocument: ((documentId: string) => Promise<UploadFile>) | undefined;

  constructor(options: BrowserOperatorToolsetOptions = {}) {
    const {
      url,
      token,
      target,
      allowedHosts,
      blockedHosts,
      dialogs,
      sendPaths,
      resolveDocument,
      fetch,
      ...sdkOptions
    } = options;
    if (dialogs !== undefined && !['dismiss', 'accept', 'ask'].includes(dialogs)) {
      throw new TypeError(`BrowserOperatorToolset: dialogs must be "dismiss", "accept" or "ask"`);
    }
    const client = new CommandClient({ url: url ?? DEFAULT_URL, token: resolveToken(token), target, fetch });
    const policy: Record<string, unknown> = {
      allowedHosts: allowedHosts ?? null,
      blockedHosts: blockedHosts ?? [],
      dialogs: dialogs ?? 'dismiss',
      // The SDK shows a download's path only where the file policy allows it.
      downloadPaths: sdkOptions.filePolicy !== undefined,
    };
    const driver = new Driver(client, policy);
    super({ ...sdkOptions, browserState: (ctx) => driver.report(ctx) });
    this.#d = driver;
    this.#sendPaths = sendPaths === true;
    this.#resolveDocument = resolveDocument;
  }

  /** The command every `computer` member sends, on the tab the call names (else the active one). */
  async #computer(
    member: string,
    ctx: Ctx,
    tabId: string | null | undefined,
    args: Record<string, unknown>,
  ): Promise<WireBlock[]> {
    const tab = await this.#d.tab(tabId, ctx.signal);
    return this.#d.run(member, 'computer', { ...args, tabId: tab }, ctx.signal);
  }

  async #text(member: string, ctx: Ctx, tabId: string | null | undefined, tool: string, args: Record<string, unknown>) {
    const tab = await this.#d.tab(tabId, ctx.signal);
    return bounded(joinedText(await this.#d.run(member, tool, { ...args, tabId: tab }, ctx.signal)));
  }

  async #click(
    member: 'left_click' | 'right_click' | 'middle_click' | 'double_click' | 'triple_click',
    ctx: Ctx,
    input: Beta.BetaBrowserLeftClickInput,
  ): Promise<void> {
    const args: Record<string, unknown> = { action: member, ...clickTarget(member, input.target) };
    if (input.modifiers != null && input.modifiers !== '') args['modifiers'] = input.modifiers;
    await this.#computer(member, ctx, input.tab_id, args);
  }

  protected override async navigate(ctx: Ctx, input: Beta.BetaBrowserNavigateInput): Promise<BetaBrowserNavigateResult> {
    if (typeof input.url !== 'string' || input.url.trim() === '') throw invalid('navigate', 'url: expected an address');
    const tab = await this.#d.tab(input.tab_id, ctx.signal);
    const text = joinedText(await this.#d.run('navigate', 'navigate', { tabId: tab, url: input.url }, ctx.signal));
    const snap = await this.#d.freshState(ctx.signal);
    const entry = snap.tabs.find((t) => t.tab_id === String(tab));
    const { url, status, title } = navigation(text);
    const landed: BetaBrowserNavigateResult = entry ? { url: entry.url, title: entry.title || title } : { url, title };
    if (status !== undefined) landed.status = status;
    return landed;
  }

  protected override async screenshot(ctx: Ctx, input: Beta.BetaBrowserScreenshotInput): Promise<BetaScreenshotResult> {
    return image('screenshot', await this.#computer('screenshot', ctx, input.tab_id, { action: 'screenshot' }));
  }

  protected override async zoom(ctx: Ctx, input: Beta.BetaBrowserZoomInput): Promise<BetaScreenshotResult> {
    const r = input.region;
    if (!Array.isArray(r) || r.length !== 4 || !r.every((n) => Number.isFinite(n))) {
      throw new ToolError(PHRASES.zoomRegion);
    }
    return image('zoom', await this.#computer('zoom', ctx, input.tab_id, { action: 'zoom', region: r }));
  }

  protected override async left_click(ctx: Ctx, input: Beta.BetaBrowserLeftClickInput): Promise<void> {
    await this.#click('left_click', ctx, input);
  }
  protected override async right_click(ctx: Ctx, input: Beta.BetaBrowserRightClickInput): Promise<void> {
    await this.#click('right_click', ctx, input);
  }
  protected override async middle_click(ctx: Ctx, input: Beta.BetaBrowserMiddleClickInput): Promise<void> {
    await this.#click('middle_click', ctx, input);
  }
  protected override async double_click(ctx: Ctx, input: Beta.BetaBrowserDoubleClickInput): Promise<void> {
    await this.#click('double_click', ctx, input);
  }
  protected override async triple_click(ctx: Ctx, input: Beta.BetaBrowserTripleClickInput): Promise<void> {
    await this.#click('triple_click', ctx, input);
  }

  protected override async hover(ctx: Ctx, input: Beta.BetaBrowserHoverInput): Promise<void> {
    await this.#computer('hover', ctx, input.tab_id, { action: 'hover', ...clickTarget('hover', input.target) });
  }

  protected override async left_click_drag(ctx: Ctx, input: Beta.BetaBrowserLeftClickDragInput): Promise<void> {
    await this.#computer('left_click_drag', ctx, input.tab_id, {
      action: 'left_click_drag',
      start_coordinate: point('left_click_drag', 'from', input.from),
      coordinate: point('left_click_drag', 'target', input.target),
    });
  }

  protected override async left_mouse_down(ctx: Ctx, input: Beta.BetaBrowserLeftMouseDownInput): Promise<void> {
    const coordinate = point('left_mouse_down', 'target', input.target);
    await this.#computer('left_mouse_down', ctx, input.tab_id, { action: 'left_mouse_down', coordinate });
  }
  protected override async mouse_move(ctx: Ctx, input: Beta.BetaBrowserMouseMoveInput): Promise<void> {
    const coordinate = point('mouse_move', 'target', input.target);
    await this.#computer('mouse_move', ctx, input.tab_id, { action: 'mouse_move', coordinate });
  }
  protected override async left_mouse_up(ctx: Ctx, input: Beta.BetaBrowserLeftMouseUpInput): Promise<void> {
    const coordinate = point('left_mouse_up', 'target', input.target);
    await this.#computer('left_mouse_up', ctx, input.tab_id, { action: 'left_mouse_up', coordinate });
  }

  protected override async scroll(ctx: Ctx, input: Beta.BetaBrowserScrollInput): Promise<void> {
    const args: Record<string, unknown> = {
      action: 'scroll',
      coordinate: point('scroll', 'target', input.target),
      scroll_direction: input.scroll_direction,
    };
    if (input.scroll_amount != null) args['scroll_amount'] = input.scroll_amount;
    await this.#computer('scroll', ctx, input.tab_id, args);
  }

  protected override async scroll_to(ctx: Ctx, input: Beta.BetaBrowserScrollToInput): Promise<void> {
    await this.#computer('scroll_to', ctx, input.tab_id, { action: 'scroll_to', ref: ref('scroll_to', input.target) });
  }

  protected override async type_(ctx: Ctx, input: Beta.BetaBrowserTypeInput): Promise<void> {
    if (typeof input.text !== 'string') throw invalid('type', 'text: expected a string');
    await this.#computer('type', ctx, input.tab_id, { action: 'type', text: input.text });
  }

  protected override async key(ctx: Ctx, input: Beta.BetaBrowserKeyInput): Promise<void> {
    if (typeof input.text !== 'string' || input.text.trim() === '') throw invalid('key', 'text: expected a key');
    const args: Record<string, unknown> = { action: 'key', text: input.text };
    if (input.repeat != null) args['repeat'] = input.repeat;
    await this.#computer('key', ctx, input.tab_id, args);
  }

  protected override async hold_key(ctx: Ctx, input: Beta.BetaBrowserHoldKeyInput): Promise<void> {
    if (typeof input.text !== 'string' || input.text.trim() === '') throw invalid('hold_key', 'text: expected a key');
    const duration = seconds('hold_key', input.duration);
    await this.#computer('hold_key', ctx, input.tab_id, { action: 'hold_key', text: input.text, duration });
  }

  protected override async wait(ctx: Ctx, input: Beta.BetaBrowserWaitInput): Promise<void> {
    const duration = seconds('wait', input.duration);
    await this.#computer('wait', ctx, input.tab_id, { action: 'wait', duration });
  }

  protected override async form_input(ctx: Ctx, input: Beta.BetaBrowserFormInputInput): Promise<void> {
    const value = input.value;
    if (!['string', 'number', 'boolean'].includes(typeof value)) {
      throw invalid('form_input', 'value: expected a string, number or boolean');
    }
    const tab = await this.#d.tab(input.tab_id, ctx.signal);
    await this.#d.run('form_input', 'form_input', { tabId: tab, ref: ref('form_input', input.target), value }, ctx.signal);
  }

  /**
   * The SDK's filters are the extension's: omitted is "visible" (every element in the viewport),
   * "all" adds what is off the viewport, "interactive" lists what can be acted on, in or near it.
   */
  protected override async read_page(ctx: Ctx, input: Beta.BetaBrowserReadPageInput): Promise<string> {
    const filter = input.filter === 'interactive' || input.filter === 'all' ? input.filter : 'visible';
    const args: Record<string, unknown> = { filter };
    if (input.depth != null) args['depth'] = input.depth;
    if (input.ref != null && input.ref !== '') args['ref_id'] = input.ref;
    return this.#text('read_page', ctx, input.tab_id, 'read_page', args);
  }

  protected override async find(ctx: Ctx, input: Beta.BetaBrowserFindInput): Promise<string> {
    if (typeof input.query !== 'string' || input.query.trim() === '') throw invalid('find', 'query: expected words');
    return this.#text('find', ctx, input.tab_id, 'find', { query: input.query });
  }

  protected override async get_page_text(ctx: Ctx, input: Beta.BetaBrowserGetPageTextInput): Promise<string> {
    return this.#text('get_page_text', ctx, input.tab_id, 'get_page_text', {});
  }

  protected override async read_console(ctx: Ctx, input: Beta.BetaBrowserReadConsoleInput): Promise<string> {
    return this.#text('read_console', ctx, input.tab_id, 'read_console_messages', { clear: true });
  }

  protected override async read_network(ctx: Ctx, input: Beta.BetaBrowserReadNetworkInput): Promise<string> {
    return this.#text('read_network', ctx, input.tab_id, 'read_network_requests', { clear: true });
  }

  protected override async javascript_exec(ctx: Ctx, input: Beta.BetaBrowserJavascriptExecInput): Promise<string> {
    if (typeof input.text !== 'string') throw invalid('javascript_exec', 'text: expected a string');
    return this.#text('javascript_exec', ctx, input.tab_id, 'javascript_tool', {
      action: 'javascript_exec',
      text: input.text,
    });
  }

  /**
   * `input.paths` arrive already resolved by the file policy (the SDK refuses the call without
   * one). Their bytes are read here and sent, unless `sendPaths` says the browser reads them itself.
   */
  protected override async file_upload(ctx: Ctx, input: Beta.BetaBrowserFileUploadInput): Promise<void> {
    const target = ref('file_upload', input.target);
    const files: Array<{ name: string; mimeType?: string; data: string }> = [];
    let size = 0;
    const add = (name: string, data: Uint8Array, mimeType: string | undefined) => {
      size += data.byteLength;
      if (size > UPLOAD_MAX) throw new ToolError(phrase('uploadTooLarge', { mb: '1' }));
      files.push({ name, ...(mimeType ? { mimeType } : {}), data: Buffer.from(data).toString('base64') });
    };
    for (const id of input.document_ids ?? []) {
      if (this.#resolveDocument === undefined) throw new ToolError(PHRASES.uploadNoDocuments);
      let doc: UploadFile;
      try {
        doc = await this.#resolveDocument(id);
      } catch (error) {
        if (error instanceof ToolError || error instanceof ToolsetUsageError) throw error;
        throw new ToolError(PHRASES.uploadDocumentFailed);
      }
      add(basename(doc.name), doc.data, doc.mimeType ?? MIME[extname(doc.name).toLowerCase()]);
    }
    const given = input.paths ?? [];
    // The extension takes files or paths, not both: with staged documents, the paths' bytes go too.
    const paths = this.#sendPaths && files.length === 0 ? [...given] : [];
    if (paths.length === 0) {
      for (const path of given) {
        let data: Buffer;
        try {
          data = await readFile(path);
        } catch {
          throw new ToolError(PHRASES.uploadUnreadable);
        }
        add(basename(path), data, MIME[extname(path).toLowerCase()]);
      }
    }
    if (files.length === 0 && paths.length === 0) throw new ToolError(PHRASES.uploadNothing);
    const tab = await this.#d.tab(input.tab_id, ctx.signal);
    const args: Record<string, unknown> = { tabId: tab, ref: target };
    if (files.length) args['files'] = files;
    if (paths.length) args['paths'] = paths;
    await this.#d.run('file_upload', 'file_upload', args, ctx.signal);
  }

  protected override async new_tab(ctx: Ctx, _input: Beta.BetaBrowserNewTabInput): Promise<Beta.BetaBrowserStateTabEntry> {
    const text = joinedText(await this.#d.run('new_tab', 'tabs_create_mcp', {}, ctx.signal));
    const created = /Tab ID: (\d+)/.exec(text)?.[1];
    const snap = await this.#d.freshState(ctx.signal);
    if (created === undefined) throw new ToolError(PHRASES.newTabUnreadable);
    return tabEntry(snap, created);
  }

  protected override async list_tabs(ctx: Ctx, _input: Beta.BetaBrowserListTabsInput): Promise<Beta.BetaBrowserStateTabEntry[]> {
    await this.#d.applyPolicy(ctx.signal);
    return (await this.#d.freshState(ctx.signal)).tabs;
  }

  protected override async switch_tab(ctx: Ctx, input: Beta.BetaBrowserSwitchTabInput): Promise<Beta.BetaBrowserStateTabEntry> {
    const tab = parseTabId(input.tab_id);
    await this.#d.run('switch_tab', 'switch_tab', { tabId: tab }, ctx.signal);
    return tabEntry(await this.#d.freshState(ctx.signal), tab);
  }

  protected override async close_tab(ctx: Ctx, input: Beta.BetaBrowserCloseTabInput): Promise<void> {
    const tab = parseTabId(input.tab_id);
    await this.#d.run('close_tab', 'tabs_close_mcp', { tabId: tab }, ctx.signal);
  }
}
