/**
 * Browser Operator for Claude's browser toolset (`browser_toolset_20260801`): the SDK's abstract
 * browser toolset served by the person's own Chrome, through the Browser Operator extension and
 * `browser-operator serve`.
 */
export { BrowserOperatorToolset, TEXT_MAX, type BrowserOperatorToolsetOptions, type DialogPolicy, type UploadFile, } from './toolset.js';
export { DEFAULT_URL, configDir, resolveToken } from './client.js';
export { PHRASES, phraseFor, scrub } from './errors.js';
