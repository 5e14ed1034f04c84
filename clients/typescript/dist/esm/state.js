import { downloadError } from './errors.js';
const str = (v) => (typeof v === 'string' ? v : '');
const id = (v) => typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'string' && v !== '' ? v : undefined;
/** One change of the extension's report as the SDK's state change, or undefined for kinds the SDK has none for. */
export function changeOf(raw) {
    if (raw === null || typeof raw !== 'object')
        return undefined;
    const c = raw;
    switch (c['type']) {
        case 'tab_opened': {
            const tab = id(c['tabId']);
            return tab === undefined ? undefined : { type: 'tab_opened', tab_id: tab };
        }
        case 'download_started': {
            const d = id(c['downloadId']);
            return d === undefined ? undefined : { type: 'download_started', download_id: d, url: str(c['url']) };
        }
        case 'download_completed': {
            const d = id(c['downloadId']);
            if (d === undefined)
                return undefined;
            const out = { type: 'download_completed', download_id: d, url: str(c['url']) };
            if (typeof c['sizeBytes'] === 'number')
                out.size_bytes = c['sizeBytes'];
            // The SDK keeps a path only where the file policy shows it to the model.
            if (typeof c['path'] === 'string' && c['path'] !== '')
                out.path = c['path'];
            return out;
        }
        case 'download_failed': {
            const d = id(c['downloadId']);
            if (d === undefined)
                return undefined;
            return { type: 'download_failed', download_id: d, url: str(c['url']), error: downloadError(c['error']) };
        }
        case 'dialog_dismissed':
            return {
                type: 'dialog_dismissed',
                kind: str(c['kind']) || 'dialog',
                ...(typeof c['message'] === 'string' ? { message: c['message'] } : {}),
            };
        case 'navigation_refused':
            return { type: 'navigation_refused' };
        default:
            return undefined;
    }
}
/**
 * Reads the report's JSON text. `lastActive` is the tab the driver last knew as active: when the
 * report marks no tab (or several) active, that one is, else the first, so the SDK's rule of exactly
 * one active tab holds. Throws on text that is not a report.
 */
export function parseState(text, lastActive) {
    const value = JSON.parse(text);
    if (value === null || typeof value !== 'object' || !Array.isArray(value.tabs)) {
        throw new Error('not a browser_state report');
    }
    const tabs = [];
    const seen = new Set();
    for (const t of value.tabs) {
        if (t === null || typeof t !== 'object')
            continue;
        const r = t;
        const tab = id(r['tabId']);
        if (tab === undefined || seen.has(tab))
            continue;
        seen.add(tab);
        tabs.push({ tab_id: tab, title: str(r['title']), url: str(r['url']), active: r['active'] === true });
    }
    const active = tabs.filter((t) => t.active);
    if (tabs.length > 0 && active.length !== 1) {
        const keep = active.find((t) => t.tab_id === lastActive) ?? tabs.find((t) => t.tab_id === lastActive) ?? active[0] ?? tabs[0];
        for (const t of tabs)
            t.active = t === keep;
    }
    const changes = [];
    for (const raw of Array.isArray(value.changes) ? value.changes : []) {
        const c = changeOf(raw);
        if (c !== undefined)
            changes.push(c);
    }
    // The API takes at most 100 tabs: the active one is always among those reported.
    const shown = tabs.length <= 100 ? tabs : [tabs.find((t) => t.active), ...tabs.filter((t) => !t.active)].slice(0, 100);
    return { tabs: shown, changes, policyGone: 'policy' in value && value.policy === null };
}
