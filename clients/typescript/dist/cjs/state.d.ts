/**
 * The extension's `browser_state` report (`{"tabs":[{"tabId","title","url","active"}],
 * "changes":[…], "dropped":n}`, camelCase) read into the SDK's `BetaBrowserState` (snake_case, tab
 * ids as decimal strings).
 */
import type { BetaBrowserState } from '@anthropic-ai/sdk/helpers/beta/toolsets';
import type { BetaBrowserStateTabEntry } from '@anthropic-ai/sdk/resources/beta';
export type StateChange = NonNullable<BetaBrowserState['state_changes']>[number];
/** One parsed report: the tabs, and the changes it drained from the extension. */
export interface Snapshot {
    tabs: BetaBrowserStateTabEntry[];
    changes: StateChange[];
    /**
     * The report says no backend policy is in force (its `policy` marker is `null`): the browser
     * restarted and emptied the session storage that held it. An extension without the marker
     * says nothing, and this is false.
     */
    policyGone: boolean;
}
/** One change of the extension's report as the SDK's state change, or undefined for kinds the SDK has none for. */
export declare function changeOf(raw: unknown): StateChange | undefined;
/**
 * Reads the report's JSON text. `lastActive` is the tab the driver last knew as active: when the
 * report marks no tab (or several) active, that one is, else the first, so the SDK's rule of exactly
 * one active tab holds. Throws on text that is not a report.
 */
export declare function parseState(text: string, lastActive: string | undefined): Snapshot;
