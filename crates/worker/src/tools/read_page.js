// read_page's page-side walk. Runs only in the worker's isolated world (Page.createIsolatedWorld),
// which the page cannot see: the element → id table (the ref table) lives here, with the document.
// Called through Runtime.callFunctionOn as `fn(op, arg, version)`:
//   "tree"    arg {depth, level, interactive, root, prefix, near}: this frame's lines, its iframes
//             (marker lines \u0001<id>), landmark regions, and how many hosts to check
//   "id"      on an element (`this`): its id, assigned on first sight
//   "get"     arg id: the element, or "unknown" / "stale"
//   "hosts"   elements the last walk found that may hold a closed shadow root (each once)
//   "closed"  on a shadow root, arg host: remember it as host's closed root
// The work is done by one function kept in the world (replaced when `version` changes), so that
// V8's type feedback and optimised code carry over from call to call.
function (op, arg, version) {
  const S = globalThis.__browserOperator || (globalThis.__browserOperator = {
    ids: new WeakMap(), els: new Map(), next: 0, closed: new WeakMap(), checked: new WeakSet(),
  });
  if (S.version !== version || !S.run) {
    S.version = version;
    S.run = run;
  }
  return S.run.call(this, op, arg, S);

function run(op, arg, S) {
  // Ids are kept as text: they are written into lines far more often than they are made.
  const idOf = (el) => {
    let id = S.ids.get(el);
    if (id === undefined) {
      const n = ++S.next;
      id = String(n);
      S.ids.set(el, id);
      S.els.set(n, new WeakRef(el));
    }
    return id;
  };
  if (op === 'id') return Number(idOf(this));
  if (op === 'get') {
    const r = S.els.get(arg);
    if (!r) return 'unknown';
    const el = r.deref();
    return el && el.isConnected ? el : 'stale';
  }
  const rootOf = (el) => el.shadowRoot || S.closed.get(el) || null;
  if (op === 'closed') { S.closed.set(arg, this); return true; }
  const HOST_TAGS = new Set(['DIV', 'SPAN', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'FOOTER', 'HEADER',
    'MAIN', 'NAV', 'P', 'SECTION', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
  if (op === 'hosts') {
    const out = S.pending || [];
    S.pending = [];
    return out;
  }

  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE', 'BASE']);
  const NOISE = new Set(['generic', 'none', 'presentation', '']);
  const INTERACTIVE = new Set(['button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox',
    'listbox', 'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'switch', 'slider',
    'spinbutton', 'treeitem', 'date', 'datetime', 'time', 'color']);
  const FROM_CONTENT = new Set(['button', 'link', 'heading', 'option', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'cell', 'columnheader', 'rowheader', 'checkbox', 'radio',
    'switch', 'treeitem', 'tooltip', 'row', 'legend']);
  const REGIONS = new Set(['main', 'navigation', 'banner', 'contentinfo', 'complementary', 'form',
    'region', 'search', 'article']);
  const TAGS = {
    BUTTON: 'button', SUMMARY: 'button', TEXTAREA: 'textbox', OPTION: 'option', H1: 'heading',
    H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading', UL: 'list', OL: 'list',
    MENU: 'list', LI: 'listitem', NAV: 'navigation', MAIN: 'main', ASIDE: 'complementary',
    FORM: 'form', ARTICLE: 'article', TABLE: 'table', TR: 'row', TD: 'cell', TH: 'columnheader',
    P: 'paragraph', FIELDSET: 'group', LEGEND: 'legend', LABEL: 'label', IFRAME: 'iframe',
    DIALOG: 'dialog', PROGRESS: 'progressbar', HR: 'separator', BLOCKQUOTE: 'blockquote',
    FIGURE: 'figure', DETAILS: 'group', SEARCH: 'search', CANVAS: 'canvas', VIDEO: 'video',
    AUDIO: 'audio', PRE: 'pre', CODE: 'code', STRONG: 'strong', EM: 'emphasis', DL: 'list',
    THEAD: 'rowgroup', TBODY: 'rowgroup', TFOOT: 'rowgroup', CAPTION: 'caption', METER: 'meter',
    OUTPUT: 'status', FIGCAPTION: 'figcaption', OPTGROUP: 'group', ADDRESS: 'group',
  };
  const INPUTS = {
    checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button',
    image: 'button', file: 'button', range: 'slider', number: 'spinbutton', search: 'searchbox',
    date: 'date', 'datetime-local': 'datetime', time: 'time', color: 'color', month: 'date',
    week: 'date',
  };
  const PLAIN_TEXT = /^[^\s"](?:[^\s"]| (?! ))*$/;
  const clip = (s, max) => {
    if (s.length <= max && PLAIN_TEXT.test(s) && s[s.length - 1] !== ' ') return s;
    s = s.replace(/\s+/g, ' ').trim();
    if (s.length > max) s = s.slice(0, max) + '…';
    return s.replace(/"/g, '\\"');
  };
  const text = (el) => (el.textContent || '').slice(0, 2000).replace(/\s+/g, ' ').trim();
  const role = (el) => {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit.trim().split(/\s+/)[0].toLowerCase();
    const t = el.tagName;
    if (t === 'A' || t === 'AREA') return el.hasAttribute('href') ? 'link' : 'generic';
    if (t === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'hidden') return null;
      return INPUTS[type] || (el.hasAttribute('list') ? 'combobox' : 'textbox');
    }
    if (t === 'SELECT') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (t === 'IMG') return el.getAttribute('alt') === '' ? 'none' : 'img';
    if (t === 'SECTION') return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : 'generic';
    if (t === 'HEADER' || t === 'FOOTER') {
      const inner = el.parentElement && el.parentElement.closest('article,aside,main,nav,section');
      return inner ? 'generic' : t === 'HEADER' ? 'banner' : 'contentinfo';
    }
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'textbox';
    return TAGS[t] || 'generic';
  };
  const byIds = (el, attr) => {
    const ids = el.getAttribute(attr);
    if (!ids) return '';
    const scope = el.getRootNode();
    return ids.trim().split(/\s+/).map((id) => {
      const r = scope.getElementById ? scope.getElementById(id) : null;
      return r ? (r.getAttribute('aria-label') || text(r)) : '';
    }).join(' ').trim();
  };
  const name = (el, r) => {
    let n = byIds(el, 'aria-labelledby') || (el.getAttribute('aria-label') || '').trim();
    if (n) return n;
    const t = el.tagName;
    if (t === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) {
      return el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : '');
    }
    if (el.labels && el.labels.length) {
      n = Array.from(el.labels, (l) => {
        let s = '';
        for (const c of l.childNodes) {
          if (c.nodeType === 3) s += c.data;
          else if (c !== el && c.nodeType === 1 && !c.labels) s += ' ' + c.textContent;
        }
        return s;
      }).join(' ').replace(/\s+/g, ' ').trim();
      if (n) return n;
    }
    if (t === 'IMG' || t === 'AREA' || (t === 'INPUT' && el.type === 'image')) n = el.getAttribute('alt') || '';
    else if (t === 'FIELDSET') { const l = el.querySelector(':scope > legend'); n = l ? text(l) : ''; }
    else if (t === 'FIGURE') { const c = el.querySelector(':scope > figcaption'); n = c ? text(c) : ''; }
    else if (t === 'TABLE') n = el.caption ? text(el.caption) : '';
    else if (t === 'OPTION') n = el.label || text(el);
    else if (FROM_CONTENT.has(r)) n = text(el);
    if (n) return n;
    return (el.getAttribute('title') || el.getAttribute('placeholder') || '').trim();
  };
  const PLAIN = new Set(['generic', 'paragraph', 'list', 'listitem', 'region', 'main', 'navigation',
    'banner', 'contentinfo', 'complementary', 'article', 'group', 'label', 'legend', 'form', 'img',
    'strong', 'emphasis', 'table', 'row', 'cell', 'columnheader', 'rowgroup', 'figure']);
  const FORM_TAGS = new Set(['INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'SUMMARY', 'BUTTON', 'FIELDSET']);
  const state = (el, r, nm) => {
    let out = '';
    const t = el.tagName;
    if (PLAIN.has(r) && !FORM_TAGS.has(t) && !el.hasAttribute('aria-describedby') &&
        !/aria-(checked|pressed|selected|expanded|disabled|required|readonly|invalid|valuenow)/.test(el.getAttributeNames().join(' '))) {
      return out;
    }
    if (r === 'link' && el.href) out += ' href="' + clip(el.href, 200) + '"';
    let value = '';
    if (t === 'SELECT') { const o = el.selectedOptions[0]; value = o ? o.label || text(o) : ''; }
    else if ((t === 'INPUT' && !['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file'].includes(el.type)) || t === 'TEXTAREA') value = el.type === 'password' ? '' : el.value;
    else if (el.hasAttribute('aria-valuenow')) value = el.getAttribute('aria-valuenow');
    if (value && value !== nm) out += ' value="' + clip(value, 200) + '"';
    const desc = byIds(el, 'aria-describedby');
    if (desc && desc !== nm) out += ' description="' + clip(desc, 200) + '"';
    const aria = (a) => el.getAttribute(a);
    let checked = aria('aria-checked');
    if (t === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) checked = el.indeterminate ? 'mixed' : String(el.checked);
    if (checked === null && ['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'].includes(r)) checked = 'false';
    if (checked === 'true') out += ' checked';
    else if (checked === 'mixed') out += ' checked=mixed';
    else if (checked !== null) out += ' checked=false';
    if (aria('aria-pressed') === 'true') out += ' pressed';
    else if (aria('aria-pressed') === 'mixed') out += ' pressed=mixed';
    if ((t === 'OPTION' && el.selected) || aria('aria-selected') === 'true') out += ' selected';
    let expanded = aria('aria-expanded');
    if (t === 'SUMMARY' && el.parentElement && el.parentElement.tagName === 'DETAILS') expanded = String(el.parentElement.open);
    if (t === 'SELECT' && r === 'combobox') expanded = 'false';
    if (expanded === 'true') out += ' expanded';
    else if (expanded !== null) out += ' expanded=false';
    if (el.disabled || aria('aria-disabled') === 'true') out += ' disabled';
    if (el.required || aria('aria-required') === 'true') out += ' required';
    if ((el.readOnly && (t === 'INPUT' || t === 'TEXTAREA')) || aria('aria-readonly') === 'true') out += ' readonly';
    if (aria('aria-invalid') === 'true') out += ' invalid';
    if (r === 'heading') {
      const l = aria('aria-level') || (/^H[1-6]$/.test(t) ? t[1] : '2');
      out += ' level=' + l;
    }
    return out;
  };
  const hidden = (el, inSelect) => el.hidden || el.getAttribute('aria-hidden') === 'true' ||
    (!inSelect && !el.checkVisibility() && getComputedStyle(el).display !== 'contents');
  // Children of an element: its shadow root's (open or closed, as found) or its own.
  // An element with no light-DOM content that may host a shadow root is asked about once.
  S.pending = [];
  const kids = (el) => {
    const r = rootOf(el);
    if (!r && !el.firstChild && !S.checked.has(el) &&
        (HOST_TAGS.has(el.tagName) || el.localName.includes('-'))) {
      S.checked.add(el);
      S.pending.push(el);
    }
    return r || el;
  };
  const PADS = [];
  const pad = (n) => PADS[n] || (PADS[n] = ' '.repeat(n));

  const { depth, interactive, prefix } = arg;
  const lines = [];
  const frames = [];
  const regions = [];
  const vh = innerHeight;
  const margin = vh * (arg.near || 1);
  const line = (el, r, nm, level, shown) => {
    let s = pad(interactive ? 0 : level) + r;
    if (shown) s += ' "' + clip(shown, 300) + '"';
    s += ' [' + prefix + idOf(el) + ']' + state(el, r, nm);
    lines.push(s);
    if (REGIONS.has(r) && regions.length < 12) {
      regions.push(r + (nm ? ' "' + clip(nm, 60) + '"' : '') + ' [' + prefix + idOf(el) + ']');
    }
  };
  const near = (el) => {
    const b = el.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && b.bottom >= -margin && b.top <= vh + margin;
  };
  const walk = (el, level, parentName, inSelect) => {
    if (SKIP.has(el.tagName) || hidden(el, inSelect)) return;
    const r = role(el);
    if (r === null) return;
    const inSel = inSelect || el.tagName === 'SELECT';
    const nm = NOISE.has(r) && !el.hasAttribute('aria-label') ? '' : name(el, r);
    const parent = kids(el);
    const noise = NOISE.has(r) && !nm;
    if (noise) {
      if (interactive && el.tabIndex >= 0 && level < depth && near(el)) line(el, r, nm, 0, nm);
      for (let c = parent.firstChild; c; c = c.nextSibling) visit(c, level, parentName, inSel);
      return;
    }
    if (level >= depth) return;
    let shown = nm;
    if (!nm) {
      let only = null;
      let count = 0;
      let textOnly = true;
      for (let c = parent.firstChild; c; c = c.nextSibling) {
        const type = c.nodeType;
        if (type !== 3 && type !== 8) textOnly = false;
        if (type === 3 && !c.data.trim()) continue;
        count++;
        only = c;
      }
      if (count === 1 && only.nodeType === 3) shown = only.data;
      // Labels and legends whose only content is text repeat their control's name.
      if ((r === 'label' || r === 'legend') && count > 0 && textOnly) return;
    }
    if (interactive) {
      const can = INTERACTIVE.has(r) || el.isContentEditable || (el.tabIndex >= 0 && r !== 'iframe');
      if (can && near(el)) line(el, r, nm, 0, shown);
    } else {
      line(el, r, nm, level, shown);
    }
    if (r === 'iframe') {
      lines.push('\u0001' + idOf(el));
      frames.push([Number(idOf(el)), level + 1]);
      return;
    }
    if (['date', 'datetime', 'time', 'color', 'textbox', 'searchbox', 'spinbutton', 'slider'].includes(r) && el.tagName !== 'DIV') return;
    const pn = shown.replace(/\s+/g, ' ').trim();
    for (let c = parent.firstChild; c; c = c.nextSibling) visit(c, level + 1, pn, inSel);
  };
  const visit = (node, level, parentName, inSelect) => {
    if (node.nodeType === 1) walk(node, level, parentName, inSelect);
    else if (node.nodeType === 3 && !interactive && level < depth) {
      const t = node.data.replace(/\s+/g, ' ').trim();
      if (t && !parentName.includes(t)) lines.push(pad(level) + 'text "' + clip(t, 500) + '"');
    }
  };
  let level = arg.level || 0;
  if (arg.root) {
    const r = S.els.get(arg.root);
    const el = r && r.deref();
    if (!el || !el.isConnected) return { stale: true };
    if (el.nodeType === 9) arg.root = null;
    else walk(el, level, '', false);
  }
  if (!arg.root) {
    if (level === 0 && !interactive) {
      lines.push('document' + (document.title ? ' "' + clip(document.title, 300) + '"' : '') +
        ' [' + prefix + idOf(document) + ']');
      level = 1;
    } else if (!interactive) {
      lines.push(' '.repeat(level) + 'document' + (document.title ? ' "' + clip(document.title, 300) + '"' : '') +
        ' [' + prefix + idOf(document) + ']');
      level += 1;
    }
    if (document.body) walk(document.body, level, '', false);
  }
  return { text: lines.join('\n'), frames, regions, hosts: S.pending.length };
}
}
