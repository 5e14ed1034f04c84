"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PHRASES = void 0;
exports.scrub = scrub;
exports.memberError = memberError;
exports.phraseFor = phraseFor;
/**
 * What the model reads when a member fails: a fixed phrase per kind of failure, never a URL or a
 * file path. The extension's own error text is matched against the kinds it has; whatever is not
 * recognised is passed on with every URL and path in it replaced, after a fixed opening.
 */
const toolsets_1 = require("@anthropic-ai/sdk/helpers/beta/toolsets");
/** The fixed phrases. Tests compare against these, so they are the contract of the driver. */
exports.PHRASES = {
    unreachable: 'The Browser Operator server is not reachable. Ask the user to start `browser-operator serve`.',
    noBrowser: 'No browser is connected to the Browser Operator server. Ask the user to connect the extension.',
    target: 'The Browser Operator server has several browsers connected, or not the one this driver names.',
    timeout: 'The browser did not answer in time.',
    tooLarge: 'The request is too large for the browser (the files to upload are too big).',
    server: 'The Browser Operator server gave an answer the driver cannot read.',
    policy: 'The driver could not apply its browser-side policy, so it does not act on the browser.',
    noTab: 'That tab is not one of the tabs this toolset may use. Call list_tabs to see them.',
    noTabs: 'There is no open tab. Call new_tab to open one.',
    badTabId: 'tab_id must be a tab id from the browser state (a decimal number).',
    urlPolicy: 'The address is refused by the browser-side URL policy.',
    refusedPage: 'This tab shows a page no tool may read or act on. Navigate it to an http(s) address, or use another tab.',
    unsupported: "This browser's Browser Operator extension cannot serve this member (it is older than the driver).",
    staleRef: 'That element reference is unknown or no longer on the page. Call read_page or find for current refs.',
    dialog: 'A dialog is open on this tab and waits for an answer.',
    noDocuments: 'Staged documents cannot be uploaded in this environment.',
    unreadableFile: 'A file to upload could not be read.',
    durationTooLong: 'duration must be a number of seconds from 0 to 30.',
};
const URL_RE = /\b(?:[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]*|(?:about|data|javascript|blob|mailto|file|view-source|chrome|chrome-extension|devtools|tel):[^\s"'<>)\],;.][^\s"'<>]*)/gi;
// A host with a dot and a letter TLD, as in `example.com/path` or `www.example.org:8080`.
const HOST_RE = /\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(?::\d+)?(?:\/[^\s"'<>]*)?/gi;
const IP_RE = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:\/[^\s"'<>]*)?/g;
// Unix paths (`/a/b`, `~/a`, `./a`) that start a token, and Windows paths (`C:\a`).
const PATH_RE = /(?<![\w.:/])(?:~|\.{1,2})?\/[^\s"'<>/][^\s"'<>]*|\b[a-z]:\\[^\s"'<>]*/gi;
/** `text` with every URL, host name, IP address and file path replaced by a placeholder. */
function scrub(text) {
    return text
        .replace(URL_RE, 'a URL')
        .replace(IP_RE, 'an address')
        .replace(HOST_RE, 'an address')
        .replace(PATH_RE, 'a path');
}
/** Longest extension detail passed on after the fixed opening of an unrecognised failure. */
const DETAIL_MAX = 400;
/**
 * The `ToolError` the model reads for the extension's error text `error` on `member`: a fixed phrase
 * where the failure is one the driver knows, else `The browser could not run <member>: <detail>`
 * with the detail scrubbed of URLs and paths.
 */
function memberError(member, error) {
    return new toolsets_1.ToolError(phraseFor(member, error));
}
function phraseFor(member, error) {
    const e = error;
    if (/^Unknown tool: /.test(e) || /Invalid argument `action`.*(not supported|must be one of)/s.test(e)) {
        return exports.PHRASES.unsupported;
    }
    if (/\btab \d+ (does not exist|is not in the automation tab group)/i.test(e))
        return exports.PHRASES.noTab;
    if (/No automation tab group|automation group has no tabs/i.test(e))
        return exports.PHRASES.noTabs;
    if (/url policy|allowed hosts|blocked host|not an allowed host|host is (refused|blocked)/i.test(e)) {
        return exports.PHRASES.urlPolicy;
    }
    if (/which no tool may read or act on/.test(e))
        return exports.PHRASES.refusedPage;
    if (/^(Unknown|Stale) ref /.test(e))
        return exports.PHRASES.staleRef;
    if (/dialog is open on tab/i.test(e))
        return exports.PHRASES.dialog;
    const net = /failed: (net::[A-Z_]+)/.exec(e);
    if (net)
        return `The page could not be loaded (${net[1]}).`;
    const refused = /^Cannot (navigate|go (?:back|forward)) to .*? Refused: (.*?)\. Navigate to an http\(s\) URL instead\.$/s.exec(e);
    if (refused)
        return `The address is refused: ${scrub(refused[2])}.`;
    let detail = scrub(e.replace(/\s+/g, ' ').trim());
    if (detail.length > DETAIL_MAX)
        detail = detail.slice(0, DETAIL_MAX) + '…';
    return `The browser could not run ${member}: ${detail}`;
}
