/**
 * What the model reads when something fails: one fixed phrase per failure, never a URL or a file
 * path. The same phrases and the same scrubbing rule as the Python driver (`clients/python`,
 * `browser_operator/_phrases.py`).
 *
 * - The connection to `browser-operator serve` (unreachable, no browser, timeouts): a phrase each.
 * - The extension's own errors, written for agents and quoting the address or file they are about:
 *   the failures a driver knows (a tab outside the group, an address refused, a load that failed, a
 *   dialog in the way, a member the extension is too old for) become fixed phrases; anything else
 *   is passed on scrubbed (every URL `(a URL)`, every path `(a path)`, bare host names and IP
 *   addresses `(an address)`, the protocol's tool names as the SDK's members), cut at `MAX_ERROR`.
 * - The driver's own checks (a bad `tab_id`, an unreadable upload): fixed phrases.
 */
import { ToolError } from '@anthropic-ai/sdk/helpers/beta/toolsets';

/** The most of an extension's message the model reads (after scrubbing). */
export const MAX_ERROR = 1000;

/** The fixed phrases (`{member}`, `{rule}`, `{reason}`, `{kind}` are filled in). */
export const PHRASES = {
  noServer: 'The Browser Operator server is not reachable, so nothing was done in the browser.',
  noBrowser: 'No browser is connected to the Browser Operator server, so nothing was done.',
  whichBrowser:
    'Several browsers are connected to the Browser Operator server and this application did not say which one to use, so nothing was done.',
  unknownBrowser:
    'The browser this application uses is not connected to the Browser Operator server, so nothing was done.',
  busy: 'The Browser Operator server has too many commands waiting; try again in a moment.',
  timeout:
    'The browser did not answer in time; the action may or may not have happened. Take a screenshot to see where the page is.',
  tooLarge: 'The request was too large for the Browser Operator server (upload fewer or smaller files).',
  serverFailed: 'The Browser Operator server could not run the command.',
  badAnswer: "The browser's answer could not be read.",
  tabMissing:
    'The tab this call was addressed to is not open; nothing was returned. Use list_tabs to see what is open.',
  tabIdForm: 'tab_id must be a tab id from the browser_state report (digits only).',
  notSupported:
    "The connected browser's Browser Operator extension cannot do {member}: it is older than this driver. Update the extension.",
  policyUnavailable:
    "The connected browser cannot enforce this application's URL policy (its Browser Operator extension is too old), so no action is run.",
  addressRefused: 'This address cannot be opened: {rule}.',
  urlPolicyRefused: "The browser's URL policy refused this address; it is not on a host this application allows.",
  loadFailed: 'The page could not be loaded ({reason}).',
  pageOutside:
    'The tab shows a page outside what the browser may read or act on (a browser, extension or local-file page). Navigate it to a web page, or close it.',
  dialogOpen:
    "A JavaScript {kind} dialog is open on the page, so nothing was done. This browser's dialog policy waits for the application to answer it.",
  dialogUnknown:
    'The page does not respond: most likely a JavaScript dialog opened while the browser was not watching the tab, so nothing was done.',
  uploadUnreadable: 'A file to upload could not be read.',
  uploadTooLarge: 'The files to upload are too large (at most {mb} MB in total).',
  uploadNothing: 'file_upload needs paths or document_ids.',
  uploadNoDocuments:
    'This driver was not given a way to fetch staged documents, so document_ids cannot be uploaded.',
  uploadDocumentFailed: 'A staged document could not be fetched.',
  zoomRegion: 'zoom needs region as four numbers [x0, y0, x1, y1].',
  noTabs: 'There is no open tab. Call new_tab to open one.',
  newTabUnreadable: 'The browser opened a tab but did not say which one. Call list_tabs to see the tabs.',
  duration: '{member} needs duration as a number of seconds from 0 to 30.',
  downloadFailed: 'the download failed',
} as const;

const fill = (phrase: string, values: Record<string, string>): string =>
  phrase.replace(/\{(\w+)\}/g, (m, k: string) => values[k] ?? m);

const BROWSER_SCHEMES =
  'javascript|data|blob|about|file|filesystem|mailto|tel|view-source|chrome|chrome-extension|chrome-untrusted' +
  '|devtools|edge|brave|opera|vivaldi|moz-extension|ws|wss|http|https|ftp';
const URL_RE = new RegExp(
  [
    String.raw`\b[a-z][a-z0-9+.\-]*:\/\/[^\s"'<>]*`, // scheme://anything up to a space or quote
    String.raw`\b(?:${BROWSER_SCHEMES}):[^\s"'<>]+`, // javascript:… data:… about:blank …
    String.raw`(?<![\w:/])\/\/[a-z0-9\-]+(?:\.[a-z0-9\-]+)+[^\s"'<>]*`, // //host/path
  ].join('|'),
  'gi',
);
const PATH_RE = new RegExp(
  [
    String.raw`(?<![\w.\-~/\\:])(?:~|\.{1,2})?\/[^\s/"'<>()]+(?:\/[^\s/"'<>()]*)*`, // /a/b, ~/a, ./a, ../a
    String.raw`\b[A-Za-z]:\\[^\s"'<>]*`, // C:\a\b
    String.raw`(?<![\w\\])\\\\[^\s\\"'<>]+\\[^\s"'<>]*`, // \\host\share
  ].join('|'),
  'g',
);
// Beyond the Python driver's rule: an address without a scheme (`example.com/a`, `10.0.0.7:8080`).
const HOST_RE = /\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|org|net|io|dev|app|edu|gov|co|uk|de|fr|info|test|invalid|local|internal))(?::\d+)?(?:\/[^\s"'<>]*)?(?![\w.-])/gi;

// The protocol's tool names, as the SDK's members call them.
const TOOL_NAMES: Array<[RegExp, string]> = [
  [/\btabs_context_mcp\b(?: with createIfEmpty: true)?/g, 'list_tabs'],
  [/\btabs_create_mcp\b/g, 'new_tab'],
  [/\btabs_close_mcp\b/g, 'close_tab'],
  [/\bjavascript_tool\b/g, 'javascript_exec'],
  [/\bread_console_messages\b/g, 'read_console'],
  [/\bread_network_requests\b/g, 'read_network'],
  [/`ref_id`|\bref_id\b/g, 'ref'],
];
// Advice about a tool the SDK has no member for.
const NO_MEMBER_ADVICE = /\s*\(?[^.()]*\bhandle_dialog\b[^.()]*[.)]?/g;

/** `text` with every URL and path replaced, the protocol's tool names made the SDK's, on one line and cut. */
export function scrub(text: string): string {
  let out = text.replace(URL_RE, '(a URL)').replace(PATH_RE, '(a path)').replace(HOST_RE, '(an address)');
  for (const [pattern, name] of TOOL_NAMES) out = out.replace(pattern, name);
  out = out.replace(NO_MEMBER_ADVICE, '');
  out = out.split(/\s+/).filter(Boolean).join(' ');
  if (out.length > MAX_ERROR) out = out.slice(0, MAX_ERROR - 1) + '…';
  return out || PHRASES.serverFailed;
}

const UNKNOWN_TOOL = /^Unknown tool: /;
const UNSUPPORTED_ACTION =
  /^Invalid argument `action`: (?:must be one of .*|\S+ is not supported)|^Invalid argument `url`:.*\breload\b|^Invalid argument `(?:files|paths)`/s;
const TAB_MISSING = /^Tab \S+ (?:does not exist|is not in the automation tab group)/;
const ADDRESS_REFUSED = /^Cannot (?:navigate|go (?:back|forward)) to .*?Refused: (.+?)\.(?: [A-Z].*)?$/s;
const URL_POLICY = /URL policy/i;
const LOAD_FAILED = /^Navigation to .* failed: (net::[A-Z_]+|[A-Za-z ]+)\s*$/s;
const PAGE_OUTSIDE = /^Tab \d+ shows .*which no tool may read or act on/s;
const DIALOG = /A JavaScript ([a-z]+) dialog (?:is open|opened)/;
const DIALOG_UNKNOWN = /^Tab \d+ does not respond: most likely a JavaScript dialog/;

/** Whether the extension's `message` says the tab is not (or no longer) in the automation group. */
export function isTabMissing(message: string): boolean {
  return TAB_MISSING.test(message.trim());
}

/** The phrase the model reads for the extension's error `message` on a call of `member`. */
export function phraseFor(member: string, message: string): string {
  const first = message.trim();
  if (TAB_MISSING.test(first)) return PHRASES.tabMissing;
  if (UNKNOWN_TOOL.test(first) || UNSUPPORTED_ACTION.test(first)) return fill(PHRASES.notSupported, { member });
  if (URL_POLICY.test(first)) return PHRASES.urlPolicyRefused;
  const refused = ADDRESS_REFUSED.exec(first);
  if (refused) return fill(PHRASES.addressRefused, { rule: scrub(refused[1]!) });
  if (PAGE_OUTSIDE.test(first)) return PHRASES.pageOutside;
  const failed = LOAD_FAILED.exec(first);
  if (failed) return fill(PHRASES.loadFailed, { reason: failed[1]!.trim() });
  if (DIALOG_UNKNOWN.test(first)) return PHRASES.dialogUnknown;
  const dialog = DIALOG.exec(first);
  if (dialog && first.includes('handle_dialog')) return fill(PHRASES.dialogOpen, { kind: dialog[1]! });
  return scrub(first);
}

/** The `ToolError` the model reads for the extension's error `message` on a call of `member`. */
export function memberError(member: string, message: string): ToolError {
  return new ToolError(phraseFor(member, message));
}

/** A phrase with its `{member}` filled in. */
export function phrase(name: keyof typeof PHRASES, values: Record<string, string> = {}): string {
  return fill(PHRASES[name], values);
}

/**
 * `download_failed.error` as the model reads it: Chrome's interrupt reason (`NETWORK_FAILED`,
 * `USER_CANCELED`) in words, else a fixed phrase.
 */
export function downloadError(error: unknown): string {
  return typeof error === 'string' && /^[A-Z][A-Z_]+$/.test(error)
    ? error.toLowerCase().replace(/_/g, ' ')
    : PHRASES.downloadFailed;
}
