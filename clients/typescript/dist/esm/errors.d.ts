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
export declare const MAX_ERROR = 1000;
/** The fixed phrases (`{member}`, `{rule}`, `{reason}`, `{kind}` are filled in). */
export declare const PHRASES: {
    readonly noServer: "The Browser Operator server is not reachable, so nothing was done in the browser.";
    readonly noBrowser: "No browser is connected to the Browser Operator server, so nothing was done.";
    readonly whichBrowser: "Several browsers are connected to the Browser Operator server and this application did not say which one to use, so nothing was done.";
    readonly unknownBrowser: "The browser this application uses is not connected to the Browser Operator server, so nothing was done.";
    readonly busy: "The Browser Operator server has too many commands waiting; try again in a moment.";
    readonly timeout: "The browser did not answer in time; the action may or may not have happened. Take a screenshot to see where the page is.";
    readonly tooLarge: "The request was too large for the Browser Operator server (upload fewer or smaller files).";
    readonly serverFailed: "The Browser Operator server could not run the command.";
    readonly badAnswer: "The browser's answer could not be read.";
    readonly tabMissing: "The tab this call was addressed to is not open; nothing was returned. Use list_tabs to see what is open.";
    readonly tabIdForm: "tab_id must be a tab id from the browser_state report (digits only).";
    readonly notSupported: "The connected browser's Browser Operator extension cannot do {member}: it is older than this driver. Update the extension.";
    readonly policyUnavailable: "The connected browser cannot enforce this application's URL policy (its Browser Operator extension is too old), so no action is run.";
    readonly addressRefused: "This address cannot be opened: {rule}.";
    readonly urlPolicyRefused: "The browser's URL policy refused this address; it is not on a host this application allows.";
    readonly loadFailed: "The page could not be loaded ({reason}).";
    readonly pageOutside: "The tab shows a page outside what the browser may read or act on (a browser, extension or local-file page). Navigate it to a web page, or close it.";
    readonly dialogOpen: "A JavaScript {kind} dialog is open on the page, so nothing was done. This browser's dialog policy waits for the application to answer it.";
    readonly dialogUnknown: "The page does not respond: most likely a JavaScript dialog opened while the browser was not watching the tab, so nothing was done.";
    readonly uploadUnreadable: "A file to upload could not be read.";
    readonly uploadTooLarge: "The files to upload are too large (at most {mb} MB in total).";
    readonly uploadNothing: "file_upload needs paths or document_ids.";
    readonly uploadNoDocuments: "This driver was not given a way to fetch staged documents, so document_ids cannot be uploaded.";
    readonly uploadDocumentFailed: "A staged document could not be fetched.";
    readonly zoomRegion: "zoom needs region as four numbers [x0, y0, x1, y1].";
    readonly noTabs: "There is no open tab. Call new_tab to open one.";
    readonly newTabUnreadable: "The browser opened a tab but did not say which one. Call list_tabs to see the tabs.";
    readonly duration: "{member} needs duration as a number of seconds from 0 to 30.";
    readonly downloadFailed: "the download failed";
};
/** `text` with every URL and path replaced, the protocol's tool names made the SDK's, on one line and cut. */
export declare function scrub(text: string): string;
/** Whether the extension's `message` says the tab is not (or no longer) in the automation group. */
export declare function isTabMissing(message: string): boolean;
/** The phrase the model reads for the extension's error `message` on a call of `member`. */
export declare function phraseFor(member: string, message: string): string;
/** The `ToolError` the model reads for the extension's error `message` on a call of `member`. */
export declare function memberError(member: string, message: string): ToolError;
/** A phrase with its `{member}` filled in. */
export declare function phrase(name: keyof typeof PHRASES, values?: Record<string, string>): string;
/**
 * `download_failed.error` as the model reads it: Chrome's interrupt reason (`NETWORK_FAILED`,
 * `USER_CANCELED`) in words, else a fixed phrase.
 */
export declare function downloadError(error: unknown): string;
