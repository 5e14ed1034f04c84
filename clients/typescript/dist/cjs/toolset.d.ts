import { BetaAbstractBrowserToolset20260801, type BetaBrowserNavigateResult, type BetaBrowserToolsetOptions, type BetaScreenshotResult, type BetaToolsetCallContext } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type * as Beta from '@anthropic-ai/sdk/resources/beta';
type Ctx = BetaToolsetCallContext;
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
export declare const UPLOAD_MAX: number;
/** Longest text a reading member returns to the model (the SDK sends it uncut). */
export declare const TEXT_MAX = 100000;
/**
 * The browser toolset in the user's own Chrome: every member of `browser_toolset_20260801`,
 * served by the Browser Operator extension through `browser-operator serve`.
 *
 * ```ts
 * const browser = new BrowserOperatorToolset({ allowedHosts: ['example.com'] });
 * const runner = new Anthropic().beta.messages.toolRunner({ model, max_tokens, tools: [browser], messages });
 * ```
 */
export declare class BrowserOperatorToolset extends BetaAbstractBrowserToolset20260801 {
    #private;
    constructor(options?: BrowserOperatorToolsetOptions);
    protected navigate(ctx: Ctx, input: Beta.BetaBrowserNavigateInput): Promise<BetaBrowserNavigateResult>;
    protected screenshot(ctx: Ctx, input: Beta.BetaBrowserScreenshotInput): Promise<BetaScreenshotResult>;
    protected zoom(ctx: Ctx, input: Beta.BetaBrowserZoomInput): Promise<BetaScreenshotResult>;
    protected left_click(ctx: Ctx, input: Beta.BetaBrowserLeftClickInput): Promise<void>;
    protected right_click(ctx: Ctx, input: Beta.BetaBrowserRightClickInput): Promise<void>;
    protected middle_click(ctx: Ctx, input: Beta.BetaBrowserMiddleClickInput): Promise<void>;
    protected double_click(ctx: Ctx, input: Beta.BetaBrowserDoubleClickInput): Promise<void>;
    protected triple_click(ctx: Ctx, input: Beta.BetaBrowserTripleClickInput): Promise<void>;
    protected hover(ctx: Ctx, input: Beta.BetaBrowserHoverInput): Promise<void>;
    protected left_click_drag(ctx: Ctx, input: Beta.BetaBrowserLeftClickDragInput): Promise<void>;
    protected left_mouse_down(ctx: Ctx, input: Beta.BetaBrowserLeftMouseDownInput): Promise<void>;
    protected mouse_move(ctx: Ctx, input: Beta.BetaBrowserMouseMoveInput): Promise<void>;
    protected left_mouse_up(ctx: Ctx, input: Beta.BetaBrowserLeftMouseUpInput): Promise<void>;
    protected scroll(ctx: Ctx, input: Beta.BetaBrowserScrollInput): Promise<void>;
    protected scroll_to(ctx: Ctx, input: Beta.BetaBrowserScrollToInput): Promise<void>;
    protected type_(ctx: Ctx, input: Beta.BetaBrowserTypeInput): Promise<void>;
    protected key(ctx: Ctx, input: Beta.BetaBrowserKeyInput): Promise<void>;
    protected hold_key(ctx: Ctx, input: Beta.BetaBrowserHoldKeyInput): Promise<void>;
    protected wait(ctx: Ctx, input: Beta.BetaBrowserWaitInput): Promise<void>;
    protected form_input(ctx: Ctx, input: Beta.BetaBrowserFormInputInput): Promise<void>;
    /**
     * The SDK's filters are the extension's: omitted is "visible" (every element in the viewport),
     * "all" adds what is off the viewport, "interactive" lists what can be acted on, in or near it.
     */
    protected read_page(ctx: Ctx, input: Beta.BetaBrowserReadPageInput): Promise<string>;
    protected find(ctx: Ctx, input: Beta.BetaBrowserFindInput): Promise<string>;
    protected get_page_text(ctx: Ctx, input: Beta.BetaBrowserGetPageTextInput): Promise<string>;
    protected read_console(ctx: Ctx, input: Beta.BetaBrowserReadConsoleInput): Promise<string>;
    protected read_network(ctx: Ctx, input: Beta.BetaBrowserReadNetworkInput): Promise<string>;
    protected javascript_exec(ctx: Ctx, input: Beta.BetaBrowserJavascriptExecInput): Promise<string>;
    /**
     * `input.paths` arrive already resolved by the file policy (the SDK refuses the call without
     * one). Their bytes are read here and sent, unless `sendPaths` says the browser reads them itself.
     */
    protected file_upload(ctx: Ctx, input: Beta.BetaBrowserFileUploadInput): Promise<void>;
    protected new_tab(ctx: Ctx, _input: Beta.BetaBrowserNewTabInput): Promise<Beta.BetaBrowserStateTabEntry>;
    protected list_tabs(ctx: Ctx, _input: Beta.BetaBrowserListTabsInput): Promise<Beta.BetaBrowserStateTabEntry[]>;
    protected switch_tab(ctx: Ctx, input: Beta.BetaBrowserSwitchTabInput): Promise<Beta.BetaBrowserStateTabEntry>;
    protected close_tab(ctx: Ctx, input: Beta.BetaBrowserCloseTabInput): Promise<void>;
}
export {};
