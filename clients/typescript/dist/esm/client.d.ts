/** Where `browser-operator serve` listens unless told otherwise. */
export declare const DEFAULT_URL = "http://127.0.0.1:8787";
/** One content block of a tool result, as the protocol sends it. */
export type WireBlock = {
    type: 'text';
    text: string;
} | {
    type: 'image';
    data: string;
    mimeType: string;
};
/** A command's outcome: the tool's content, or the extension's error text. */
export type Outcome = {
    ok: true;
    content: WireBlock[];
} | {
    ok: false;
    error: string;
};
/**
 * The directory `browser-operator` keeps its token file in, resolved the way the server does:
 * `$BROWSER_OPERATOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/browser-operator` (when absolute), else
 * `~/.config/browser-operator`.
 */
export declare function configDir(env?: NodeJS.ProcessEnv): string | undefined;
/**
 * The token to send: the one given, else `$BROWSER_OPERATOR_TOKEN`, else the server's token file.
 * Throws `ToolsetConfigError` (a mistake in the application's setup, which stops the run) when
 * there is none.
 */
export declare function resolveToken(given: string | undefined, env?: NodeJS.ProcessEnv): string;
export interface CommandClientOptions {
    url: string;
    token: string;
    target?: string | undefined;
    /** The `fetch` to use (tests, proxies); the global one by default. */
    fetch?: typeof fetch | undefined;
}
/** Sends tool calls to the server. Every failure of the wire itself is a `ToolError` with a fixed phrase. */
export declare class CommandClient {
    #private;
    constructor(options: CommandClientOptions);
    /** Runs `tool` in the browser. A tool's own failure is `{ok: false}`; a failure to get an answer throws. */
    command(tool: string, args: Record<string, unknown>, signal?: AbortSignal | null | undefined): Promise<Outcome>;
}
/** The text blocks of a result, joined by newlines. */
export declare function joinedText(content: WireBlock[]): string;
