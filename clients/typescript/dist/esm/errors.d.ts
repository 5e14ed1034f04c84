/**
 * What the model reads when a member fails: a fixed phrase per kind of failure, never a URL or a
 * file path. The extension's own error text is matched against the kinds it has; whatever is not
 * recognised is passed on with every URL and path in it replaced, after a fixed opening.
 */
import { ToolError } from '@anthropic-ai/sdk/helpers/beta/toolsets';
/** The fixed phrases. Tests compare against these, so they are the contract of the driver. */
export declare const PHRASES: {
    readonly unreachable: "The Browser Operator server is not reachable. Ask the user to start `browser-operator serve`.";
    readonly noBrowser: "No browser is connected to the Browser Operator server. Ask the user to connect the extension.";
    readonly target: "The Browser Operator server has several browsers connected, or not the one this driver names.";
    readonly timeout: "The browser did not answer in time.";
    readonly tooLarge: "The request is too large for the browser (the files to upload are too big).";
    readonly server: "The Browser Operator server gave an answer the driver cannot read.";
    readonly policy: "The driver could not apply its browser-side policy, so it does not act on the browser.";
    readonly noTab: "That tab is not one of the tabs this toolset may use. Call list_tabs to see them.";
    readonly noTabs: "There is no open tab. Call new_tab to open one.";
    readonly badTabId: "tab_id must be a tab id from the browser state (a decimal number).";
    readonly urlPolicy: "The address is refused by the browser-side URL policy.";
    readonly refusedPage: "This tab shows a page no tool may read or act on. Navigate it to an http(s) address, or use another tab.";
    readonly unsupported: "This browser's Browser Operator extension cannot serve this member (it is older than the driver).";
    readonly staleRef: "That element reference is unknown or no longer on the page. Call read_page or find for current refs.";
    readonly dialog: "A dialog is open on this tab and waits for an answer.";
    readonly noDocuments: "Staged documents cannot be uploaded in this environment.";
    readonly unreadableFile: "A file to upload could not be read.";
    readonly durationTooLong: "duration must be a number of seconds from 0 to 30.";
};
/** `text` with every URL, host name, IP address and file path replaced by a placeholder. */
export declare function scrub(text: string): string;
/**
 * The `ToolError` the model reads for the extension's error text `error` on `member`: a fixed phrase
 * where the failure is one the driver knows, else `The browser could not run <member>: <detail>`
 * with the detail scrubbed of URLs and paths.
 */
export declare function memberError(member: string, error: string): ToolError;
export declare function phraseFor(member: string, error: string): string;
