/**
 * The wire to `browser-operator serve`: `POST /commands` with the bearer token, and where that token
 * comes from when the caller passes none (`BROWSER_OPERATOR_TOKEN`, then the server's token file).
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { ToolError, ToolsetConfigError } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import { PHRASES } from './errors.js';

/** Where `browser-operator serve` listens unless told otherwise. */
export const DEFAULT_URL = 'http://127.0.0.1:8787';

/** One content block of a tool result, as the protocol sends it. */
export type WireBlock = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

/** A command's outcome: the tool's content, or the extension's error text. */
export type Outcome = { ok: true; content: WireBlock[] } | { ok: false; error: string };

/**
 * The directory `browser-operator` keeps its token file in, resolved the way the server does:
 * `$BROWSER_OPERATOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/browser-operator` (when absolute), else
 * `~/.config/browser-operator`.
 */
export function configDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = env['BROWSER_OPERATOR_CONFIG_DIR'];
  if (dir) return dir;
  const xdg = env['XDG_CONFIG_HOME'];
  if (xdg && isAbsolute(xdg)) return join(xdg, 'browser-operator');
  const home = env['HOME'] || homedir();
  return home && isAbsolute(home) ? join(home, '.config', 'browser-operator') : undefined;
}

/**
 * The token to send: the one given, else `$BROWSER_OPERATOR_TOKEN`, else the server's token file.
 * Throws `ToolsetConfigError` (a mistake in the application's setup, which stops the run) when
 * there is none.
 */
export function resolveToken(given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (given !== undefined) {
    if (given.trim() === '') throw new ToolsetConfigError('BrowserOperatorToolset: token is empty');
    return given.trim();
  }
  const fromEnv = env['BROWSER_OPERATOR_TOKEN'];
  if (fromEnv && fromEnv.trim() !== '') return fromEnv.trim();
  const dir = configDir(env);
  const file = dir === undefined ? undefined : join(dir, 'token');
  if (file !== undefined) {
    try {
      const token = readFileSync(file, 'utf8').trim();
      if (token !== '') return token;
    } catch {
      // no file: the message below says what to do
    }
  }
  throw new ToolsetConfigError(
    'BrowserOperatorToolset: no token. Pass token, set BROWSER_OPERATOR_TOKEN, or start ' +
      '`browser-operator serve` once on this machine so that it writes its token file' +
      (file !== undefined ? ` (${file})` : ''),
  );
}

export interface CommandClientOptions {
  url: string;
  token: string;
  target?: string | undefined;
  /** The `fetch` to use (tests, proxies); the global one by default. */
  fetch?: typeof fetch | undefined;
}

/** Sends tool calls to the server. Every failure of the wire itself is a `ToolError` with a fixed phrase. */
export class CommandClient {
  readonly #endpoint: string;
  readonly #token: string;
  readonly #target: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: CommandClientOptions) {
    let base: URL;
    try {
      base = new URL(options.url);
    } catch {
      throw new ToolsetConfigError(`BrowserOperatorToolset: url is not a URL: ${JSON.stringify(options.url)}`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new ToolsetConfigError(
        `BrowserOperatorToolset: url must be the server's http(s) address, such as ${DEFAULT_URL}`,
      );
    }
    this.#endpoint = new URL('commands', base.href.endsWith('/') ? base.href : base.href + '/').href;
    this.#token = options.token;
    this.#target = options.target === undefined || options.target.trim() === '' ? undefined : options.target;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') {
      throw new ToolsetConfigError('BrowserOperatorToolset: this runtime has no fetch (Node.js 18 or later has)');
    }
    this.#fetch = f;
  }

  /** Runs `tool` in the browser. A tool's own failure is `{ok: false}`; a failure to get an answer throws. */
  async command(
    tool: string,
    args: Record<string, unknown>,
    signal?: AbortSignal | null | undefined,
  ): Promise<Outcome> {
    const body: Record<string, unknown> = { tool, args };
    if (this.#target !== undefined) body['target'] = this.#target;
    let response: Response;
    try {
      response = await this.#fetch(this.#endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.#token}` },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error; // the run is being cancelled: the SDK propagates it
      throw new ToolError(PHRASES.noServer);
    }
    let payload: unknown;
    try {
      payload = await response.json();
    } catch {
      payload = undefined;
    }
    switch (response.status) {
      case 200:
        break;
      case 401:
        // The application's setup is wrong, not the model's call: stop the run and say how to fix it.
        throw new ToolsetConfigError(
          'BrowserOperatorToolset: the server refused the token (401). Pass the token `browser-operator token` ' +
            'prints, or set BROWSER_OPERATOR_TOKEN',
        );
      case 409:
        throw new ToolError(this.#target === undefined ? PHRASES.whichBrowser : PHRASES.unknownBrowser);
      case 413:
        throw new ToolError(PHRASES.tooLarge);
      case 503: {
        const why = (payload as { error?: unknown } | undefined)?.error;
        throw new ToolError(typeof why === 'string' && why.startsWith('Too many') ? PHRASES.busy : PHRASES.noBrowser);
      }
      case 504:
        throw new ToolError(PHRASES.timeout);
      default:
        throw new ToolError(PHRASES.serverFailed);
    }
    const p = payload as { result?: { content?: unknown }; error?: unknown } | undefined;
    if (p && typeof p.error === 'string') return { ok: false, error: p.error };
    const content = p?.result?.content;
    if (!Array.isArray(content)) throw new ToolError(PHRASES.badAnswer);
    return { ok: true, content: content as WireBlock[] };
  }
}

/** The text blocks of a result, joined by newlines. */
export function joinedText(content: WireBlock[]): string {
  return content
    .filter((b): b is { type: 'text'; text: string } => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');
}
