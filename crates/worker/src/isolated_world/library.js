// The page-side walk shared by read_page and find. Runs only in the worker's isolated world
// (Page.createIsolatedWorld), which the page cannot see: the element → id table (the ref table)
// lives here, with the document. Called through Runtime.callFunctionOn as `fn(op, arg, version)`:
//   "tree"    arg {depth, level, shift, interactive, visible, root, prefix, base, near, have}: this frame's
//             lines (indented by level less shift), its iframes (marker lines \u0001<id>, and
//             [id, level, shift] for their documents), landmark regions, and how many hosts to check.
//             `visible`: only what lies in the viewport (widened by `near` viewport heights).
//             The whole document with every element (no root, not interactive) is kept with what
//             it was made from; while none of that changed, the kept answer is given again (or
//             only `same: true` when the caller holds it: `have` is its token). A new walk whose
//             caller holds the last one's text sends only the lines between what the two share
//             at the start (`head` lines) and at the end (`tail` lines), `base` naming the last
//   "find"    arg {query, prefix, base, max}: this frame's elements that match, best first, with points
//   "id"      on an element (`this`): its id, assigned on first sight
//   "get"     arg id: the element, or "unknown" / "stale"
//   "hosts"   elements the last walk found that may hold a closed shadow root (each once)
//   "closed"  on a shadow root, arg host: remember it as host's closed root
// Roles and names follow Chrome's accessibility tree (implicit roles by tag and type, names from
// aria-labelledby, aria-label, labels, alt, content, title, placeholder). The functions are made
// once per world and kept (replaced when `version` changes), so V8's type feedback and optimised
// code carry over from call to call.
function (op, arg, version) {
  const S = globalThis.__browserOperator || (globalThis.__browserOperator = {
    ids: new WeakMap(), els: new Map(), next: 0, closed: new WeakMap(), checked: new WeakSet(),
  });
  if (S.version !== version || !S.run) {
    // A world that an older version used may hold closed roots already.
    S.closedAny = S.closedAny || S.next > 0;
    S.version = version;
    S.run = make();
    S.cache = null;
    S.found = null;
    // The observer and the parts of the last walk belong to the functions they were made by.
    if (S.observer) S.observer.disconnect();
    S.observer = null;
    S.watching = false;
    S.prev = null;
    S.memo = new WeakMap();
  }
  return S.run.call(this, op, arg, S);

function make() {
  const set = (s) => new Set(s.split(' '));
  // Tags whose subtree is never shown.
  const SKIP = set('script style noscript template head meta link title base datalist param source track');
  // Implicit roles by tag (special cases are in `role`).
  const TAGS = new Map(Object.entries({
    button: 'button', summary: 'button', textarea: 'textbox', option: 'option', h1: 'heading',
    h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading', ul: 'list', ol: 'list',
    menu: 'list', li: 'listitem', nav: 'navigation', main: 'main', form: 'form', article: 'article',
    table: 'table', tr: 'row', td: 'cell', p: 'paragraph', fieldset: 'group', legend: 'legend',
    label: 'label', iframe: 'iframe', dialog: 'dialog', progress: 'progressbar', hr: 'separator',
    blockquote: 'blockquote', figure: 'figure', details: 'group', search: 'search', canvas: 'canvas',
    video: 'video', audio: 'audio', code: 'code', strong: 'strong', em: 'emphasis', dl: 'list',
    dt: 'term', dd: 'definition', dfn: 'term', thead: 'rowgroup', tfoot: 'rowgroup',
    caption: 'caption', meter: 'meter', output: 'status', figcaption: 'figcaption',
    optgroup: 'group', address: 'group', hgroup: 'group', abbr: 'abbr', mark: 'mark',
    del: 'deletion', ins: 'insertion', sub: 'subscript', sup: 'superscript', time: 'time',
    math: 'math', svg: 'image', img: 'image', select: 'combobox', input: 'textbox', a: 'generic',
    area: 'generic', section: 'generic', aside: 'complementary', header: 'banner',
    footer: 'contentinfo', th: 'columnheader',
  }));
  const INPUTS = new Map(Object.entries({
    checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button',
    image: 'button', file: 'button', range: 'slider', number: 'spinbutton', search: 'searchbox',
    date: 'date', 'datetime-local': 'datetime', time: 'time', color: 'color', month: 'date',
    week: 'date',
  }));
  // Input types whose role says it all; others show `type=`.
  const PLAIN_TYPES = set('text checkbox radio range number search date datetime-local time color month week button');
  const NOISE = set('generic none presentation');
  const INTERACTIVE = set('button link textbox searchbox checkbox radio combobox listbox option menuitem menuitemcheckbox menuitemradio tab switch slider spinbutton treeitem date datetime time color gridcell');
  // Roles named by their content (as Chrome does).
  const FROM_CONTENT = set('button link heading option tab menuitem menuitemcheckbox menuitemradio cell gridcell columnheader rowheader checkbox radio switch treeitem tooltip term');
  const REGIONS = set('main navigation banner contentinfo complementary form region search article');
  // Roles without states worth showing (unless ARIA attributes say otherwise).
  const LEAF_FIELDS = set('date datetime time color textbox searchbox spinbutton slider combobox');
  const FORM_TAGS = set('input select textarea option summary button fieldset optgroup');
  const CHECKABLE = set('checkbox radio switch menuitemcheckbox menuitemradio');
  // Inline formatting: folded into the text around it.
  const INLINE = set('b i u s em strong small mark span code sub sup abbr cite q kbd samp var time font del ins bdi bdo dfn br wbr data big tt');
  // Elements whose content is separated by spaces in a name.
  const BLOCK = set('div p li ul ol dl dt dd br h1 h2 h3 h4 h5 h6 section article header footer nav main aside table tr td th tbody thead tfoot caption blockquote pre figure figcaption form fieldset legend address hr details summary');
  const SECTIONING = 'article,aside,main,nav,section';
  // Text that needs no tidying: words with single spaces between them (and, for `clip`, no quote
  // or backslash to escape).
  const TIDY = /^\S+(?: \S+)*$/;
  const QUOTABLE = /^[^\s"\\]+(?: [^\s"\\]+)*$/;
  const clip = (s, max) => {
    if (s.length <= max && QUOTABLE.test(s)) return s;
    s = s.replace(/\s+/g, ' ').trim();
    if (s.length > max) s = s.slice(0, max) + '…';
    return s.replace(/["\\]/g, '\\$&');
  };
  const squash = (s) => (TIDY.test(s) ? s : s.replace(/\s+/g, ' ').trim());
  // A link's address, relative to the document when it is of the same origin (path, query and
  // fragment), else whole. Root-relative addresses made of plain characters are taken as written
  // (when the base is of the document's origin): asking the element (`el.href`) parses every
  // one, which is slow on long pages.
  let origin = null;
  const SIMPLE_PATH = /^\/(?![\/\\])(?:[\w\-~\/?#&=%+:@,;!$*'()]|\.(?![.\/]))*$/;
  const href = (el) => {
    const h = el.getAttribute('href');
    if (origin !== null && SIMPLE_PATH.test(h)) return h;
    const a = el.href;
    if (origin !== null && a.startsWith(origin) && a.charCodeAt(origin.length) === 47) return a.slice(origin.length);
    return a;
  };
  // Names and text are cut at this many characters, the cut marked with `…`.
  const CUT = 100;
  const PADS = [];
  const pad = (n) => PADS[n] || (PADS[n] = ' '.repeat(n));

  // Per-call state, set by `run`.
  let labelled = new Map();
  let S, interactive, visible, depth, prefix, lines, frames, regions, vh, vw, margin, finding, found, allRefs;
  // Levels count toward `depth`; a line is indented by its level less `shift`, the number of
  // document lines above it (a document's content is not indented under its own line).
  let shift = 0;
  // The element a ref_id read starts from: its line keeps its ref.
  let top = null;

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
  // Elements that can hold a shadow root: these tags and custom elements.
  const HOST_TAGS = set('div span article aside blockquote body footer header main nav p section h1 h2 h3 h4 h5 h6');
  const canHost = (tag) => HOST_TAGS.has(tag) || tag.indexOf('-') > 0;
  // The shadow root of a host (open or closed, as found), or null. A kept answer depends on
  // each root (watched for changes) and on each host having none (a page may attach one later).
  const shadowOf = (el) => {
    const r = el.shadowRoot || (S.closedAny && S.closed.get(el)) || null;
    if (deps) {
      if (!r) deps.hosts.push(el);
      else if (!S.roots.has(r)) { S.roots.add(r); S.observer.observe(r, OBSERVE); }
    }
    return r;
  };
  const rootOf = (el) => (canHost(el.localName) && shadowOf(el)) || null;
  // Children of an element: its shadow root's or its own. An element with no light-DOM content
  // that may host a shadow root is asked about once.
  const kids = (el, tag) => {
    if (!canHost(tag)) return el;
    const r = shadowOf(el);
    if (r) return r;
    if (!el.firstChild && !S.checked.has(el)) {
      S.checked.add(el);
      S.pending.push(el);
    }
    return el;
  };
  // The nodes a slot shows: those assigned to it, else its own.
  const slotted = (el) => {
    const a = el.assignedNodes();
    if (deps) deps.slots.push(el, a);
    return a.length ? a : null;
  };

  // What a kept answer was made from besides the DOM (which a MutationObserver watches): the
  // visibility of each element asked, the state of each form control read, hosts without a
  // shadow root, slots' assigned nodes. Nothing else the walk reads changes without a mutation.
  const OBSERVE = { subtree: true, childList: true, attributes: true, characterData: true };
  let deps = null;
  const formState = (el) => {
    const t = el.localName;
    if (t === 'select') return el.selectedIndex;
    if (t === 'option') return el.selected;
    return el.value + (el.checked ? '\u0001' : '') + (el.indeterminate ? '\u0002' : '');
  };
  // Called before reading a control's value, checkedness or selection.
  const watch = (el) => {
    if (deps) deps.form.push(el, formState(el));
  };
  // Mutations: nothing kept is right any more. The nodes they name are noted for the next whole
  // walk, which walks anew only the parts that changed (see `walk`); past CHANGES of them the
  // observer stops (a busy page pays for no more notifications), and the next walk is a whole
  // one that watches afresh.
  const CHANGES = 2000;
  const noted = (records) => {
    S.cache = null;
    S.found = null;
    if (!S.watching) return;
    const c = S.changes;
    for (const r of records) c.push(r.type === 'characterData' ? r.target.parentNode : r.target);
    if (c.length > CHANGES) {
      S.observer.disconnect();
      S.watching = false;
    }
  };
  // Something the observer does not see changed (a closed shadow root was found).
  const forget = () => {
    S.cache = null;
    S.found = null;
    S.prev = null;
  };
  // Starts recording for a walk whose answer will be kept (watching the DOM, if the observer
  // is not watching: the parts of the last walk are then of no use).
  const record = () => {
    if (!S.observer) S.observer = new MutationObserver(noted);
    if (!S.watching) {
      S.observer.disconnect();
      S.roots = new WeakSet();
      S.observer.observe(document, OBSERVE);
      S.watching = true;
      S.changes = [];
      S.prev = null;
    }
    return { vis: [], form: [], hosts: [], slots: [] };
  };
  // Whether a kept answer is still what a walk would give.
  const unchanged = (d, skip) => {
    const recs = S.observer.takeRecords();
    if (recs.length) {
      noted(recs);
      return false;
    }
    for (let i = 0; i < d.form.length; i += 2) if (formState(d.form[i]) !== d.form[i + 1]) return false;
    for (const el of d.hosts) if (el.shadowRoot) return false;
    for (let i = 0; i < d.slots.length; i += 2) {
      const was = d.slots[i + 1];
      const now = d.slots[i].assignedNodes();
      if (now.length !== was.length || now.some((n, k) => n !== was[k])) return false;
    }
    for (let i = 0; i < d.vis.length; i += 2) {
      if (skip !== undefined && skip[i >> 1] === 1) continue;
      if (hiddenNow(d.vis[i]) !== d.vis[i + 1]) return false;
    }
    return true;
  };

  // Whether an element is left out as hidden: it has no box (display: none, its own or an
  // ancestor's; content-visibility) or it is invisible (visibility: hidden).
  const FULL = { visibilityProperty: true };
  const hiddenNow = (el) => !el.checkVisibility(FULL) && getComputedStyle(el).display !== 'contents';
  const hidden = (el) => {
    const h = hiddenNow(el);
    if (deps) deps.vis.push(el, h);
    return h;
  };
  const ariaHidden = (el) => el.hasAttributes() &&
    (el.hasAttribute('hidden') || el.getAttribute('aria-hidden') === 'true');

  // The first token of a role attribute, as Chrome names it.
  const explicitRole = (v) => {
    const r = TIDY.test(v) && v.indexOf(' ') < 0 ? v.toLowerCase() : v.trim().split(/\s+/)[0].toLowerCase();
    return r === 'img' ? 'image' : r === 'presentation' ? 'none' : r;
  };
  // The implicit role of an element without a role attribute.
  const role = (el, tag, attrs) => {
    const r = TAGS.get(tag);
    if (r === undefined) return 'generic';
    if (r === 'generic') {
      if (!attrs) return r;
      if (tag === 'a' || tag === 'area') return el.hasAttribute('href') ? 'link' : 'generic';
      if (tag === 'section') return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : 'generic';
      return r;
    }
    if (r === 'textbox' && tag === 'input') {
      const type = el.type;
      if (type === 'hidden') return null;
      return INPUTS.get(type) || (el.hasAttribute('list') ? 'combobox' : 'textbox');
    }
    if (r === 'combobox' && tag === 'select') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (r === 'image') {
      if (tag === 'img' && attrs) {
        const alt = el.getAttribute('alt');
        return alt === '' && !el.hasAttribute('title') && !el.hasAttribute('aria-label') ? 'none' : 'image';
      }
      return 'image';
    }
    if (r === 'banner' || r === 'contentinfo') {
      const p = el.parentElement;
      if (p && p.closest(SECTIONING)) return r === 'banner' ? 'sectionheader' : 'sectionfooter';
      return r;
    }
    if (r === 'row' || r === 'cell' || r === 'rowgroup') return layoutTable(el) ? 'generic' : r;
    if (r === 'listitem') {
      const p = el.parentElement;
      const pr = p && p.getAttribute('role');
      return pr === 'none' || pr === 'presentation' ? 'generic' : r;
    }
    if (r === 'complementary') {
      const p = el.parentElement;
      if (p && p.closest(SECTIONING) && !el.hasAttribute('aria-label') && !el.hasAttribute('aria-labelledby')) return 'generic';
      return r;
    }
    if (r === 'columnheader') {
      const s = (el.getAttribute('scope') || '').toLowerCase();
      if (layoutTable(el)) return 'generic';
      if (s === 'row' || s === 'rowgroup') return 'rowheader';
      if (s === 'col' || s === 'colgroup') return r;
      const row = el.parentElement;
      if (row && row.parentElement && row.parentElement.localName === 'thead') return r;
      for (let c = row && row.firstElementChild; c; c = c.nextElementSibling) {
        if (c.localName === 'td') return 'rowheader';
      }
      return r;
    }
    return r;
  };

  // Rows and cells of a table marked as presentation are wrappers too.
  const layoutTable = (el) => {
    const t = el.closest('table');
    const tr = t && t.getAttribute('role');
    return tr === 'none' || tr === 'presentation';
  };

  // Text of the nodes under `parent` as a name: text as it is, elements by their own name or
  // content; hidden ones left out.
  const contentOf = (parent, budget) => {
    let s = '';
    for (let c = parent.firstChild; c; c = c.nextSibling) {
      const t = c.nodeType;
      if (t === 3) s += c.data;
      else if (t === 1 && budget > 0) s += nameInContent(c, budget - 1);
      if (s.length > 2000) break;
    }
    return s;
  };
  const nameInContent = (el, budget) => {
    const tag = el.localName;
    if (SKIP.has(tag) || ariaHidden(el) || hidden(el)) return '';
    if (el.hasAttributes()) {
      const l = el.getAttribute('aria-label');
      if (l && l.trim()) return ' ' + l + ' ';
    }
    if (tag === 'img' || (tag === 'input' && el.type === 'image')) return el.getAttribute('alt') || '';
    if (tag === 'input' || tag === 'textarea' || tag === 'select') watch(el);
    if (tag === 'input') return el.type === 'checkbox' || el.type === 'radio' ? '' : el.value;
    if (tag === 'textarea') return el.value;
    if (tag === 'select') { const o = el.selectedOptions[0]; return o ? o.label : ''; }
    if (tag === 'br') return ' ';
    if (tag === 'svg') { const t = el.querySelector(':scope > title'); return t ? ' ' + t.textContent + ' ' : ''; }
    let inner;
    if (tag === 'slot') {
      const a = slotted(el);
      if (a) { inner = ''; for (const n of a) inner += n.nodeType === 3 ? n.data : n.nodeType === 1 ? nameInContent(n, budget - 1) : ''; }
    }
    if (inner === undefined) inner = contentOf(rootOf(el) || el, budget);
    return BLOCK.has(tag) ? ' ' + inner + ' ' : inner;
  };
  const fromContent = (el) => {
    const f = el.firstChild;
    if (f && !f.nextSibling && f.nodeType === 3 && !rootOf(el)) return f.data;
    return contentOf(rootOf(el) || el, 8);
  };
  const byIds = (el, ids) => {
    nonlocal++;
    const scope = el.getRootNode();
    if (!scope.getElementById) return '';
    let s = '';
    for (const id of ids.trim().split(/\s+/)) {
      const r = scope.getElementById(id);
      if (!r) continue;
      const l = r.getAttribute('aria-label');
      const field = r.localName === 'input' || r.localName === 'textarea';
      if (field) watch(r);
      s += ' ' + (l && l.trim() ? l : field ? r.value : contentOf(rootOf(r) || r, 8));
    }
    return s;
  };
  // Whether the element's document or shadow root has labels at all (asked once per root and
  // walk): `el.labels` makes a live list, too dear to ask of every control of a long page.
  const hasLabels = (el) => {
    const root = el.getRootNode();
    let has = labelled.get(root);
    if (has === undefined) {
      has = !!(root.querySelector && root.querySelector('label'));
      labelled.set(root, has);
    }
    return has;
  };
  // The text a label gives its control: its content without the control itself.
  const labelText = (label, control) => {
    let s = '';
    for (let c = label.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) s += c.data;
      else if (c.nodeType === 1 && c !== control) s += nameInContent(c, 8);
    }
    return s;
  };
  // The accessible name: aria-labelledby, aria-label, the host language's own sources, content
  // (for roles named by it), then title and placeholder.
  const name = (el, tag, r, attrs) => {
    let n = '';
    if (attrs) {
      const by = el.getAttribute('aria-labelledby');
      if (by) n = squash(byIds(el, by));
      if (n) return n;
      n = el.getAttribute('aria-label');
      if (n && (n = n.trim())) return n;
      n = '';
    }
    if (tag === 'input') {
      const type = el.type;
      watch(el);
      if (type === 'button' || type === 'submit' || type === 'reset') {
        return el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (type === 'image') return el.getAttribute('alt') || el.value || 'Submit';
    }
    if ((FORM_TAGS.has(tag) || tag === 'meter' || tag === 'progress' || tag === 'output') && hasLabels(el)) {
      nonlocal++;
      const labels = el.labels;
      if (labels && labels.length) {
        for (const l of labels) n += ' ' + labelText(l, el);
        n = squash(n);
        if (n) return n;
      }
    }
    if (tag === 'img' || tag === 'area') {
      // An empty alt is an empty name (a title does not replace it).
      const alt = attrs ? el.getAttribute('alt') : null;
      if (alt !== null) return alt.trim();
    }
    else if (tag === 'fieldset') { const l = el.querySelector(':scope > legend'); n = l ? squash(fromContent(l)) : ''; }
    else if (tag === 'table') { const c = el.caption; n = c ? squash(fromContent(c)) : ''; }
    else if (tag === 'optgroup') n = el.label;
    else if (tag === 'option') n = el.label;
    else if (tag === 'svg') { const t = el.querySelector(':scope > title'); n = t ? t.textContent : ''; }
    else if (FROM_CONTENT.has(r) || (r === 'row' && attrs && el.hasAttribute('role'))) n = squash(fromContent(el));
    if (n) return n.trim();
    if (!attrs) return '';
    n = el.getAttribute('title') || '';
    if (!n && (tag === 'input' || tag === 'textarea')) n = el.getAttribute('placeholder') || '';
    if (!n) n = el.getAttribute('aria-placeholder') || '';
    return n.trim();
  };

  // States and attributes worth showing after the ref.
  const state = (el, tag, r, nm, attrs) => {
    let out = '';
    // ARIA states are read only from elements that have some.
    const stated = attrs && hasState(el);
    const form = FORM_TAGS.has(tag);
    if (!form && !LEAF_FIELDS.has(r) && !CHECKABLE.has(r) && r !== 'heading' && r !== 'link' && !stated) {
      return out;
    }
    const aria = (a) => (stated ? el.getAttribute(a) : null);
    if (tag === 'input' || tag === 'select' || tag === 'textarea' || tag === 'option') watch(el);
    if (r === 'link' && (tag === 'a' || tag === 'area')) out += ' href="' + clip(href(el), 200) + '"';
    if (tag === 'input' && !PLAIN_TYPES.has(el.type)) out += ' type=' + el.type;
    let value = '';
    if (tag === 'select') { const o = el.selectedOptions[0]; value = o ? o.label : ''; }
    else if (tag === 'textarea' || (tag === 'input' && LEAF_FIELDS.has(r))) value = el.type === 'password' ? '' : el.value;
    else if (stated && el.hasAttribute('aria-valuenow')) value = el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow');
    if (value && value !== nm) out += ' value="' + clip(value, CUT) + '"';
    if (attrs && (tag === 'input' || tag === 'textarea')) {
      const ph = el.getAttribute('placeholder');
      if (ph && ph !== nm) out += ' placeholder="' + clip(ph, CUT) + '"';
    }
    if (stated) {
      const d = el.getAttribute('aria-describedby');
      const desc = d ? squash(byIds(el, d)) : '';
      if (desc && desc !== nm) out += ' description="' + clip(desc, CUT) + '"';
    }
    let checked = aria('aria-checked');
    if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) checked = el.indeterminate ? 'mixed' : String(el.checked);
    if (checked === null && CHECKABLE.has(r)) checked = 'false';
    if (checked === 'true') out += ' checked';
    else if (checked === 'mixed') out += ' checked=mixed';
    else if (checked !== null) out += ' checked=false';
    const pressed = aria('aria-pressed');
    if (pressed === 'true') out += ' pressed';
    else if (pressed === 'mixed') out += ' pressed=mixed';
    if ((tag === 'option' && el.selected) || aria('aria-selected') === 'true') out += ' selected';
    let expanded = aria('aria-expanded');
    if (tag === 'summary' && el.parentElement && el.parentElement.localName === 'details') expanded = String(el.parentElement.open);
    if (tag === 'select' && r === 'combobox') expanded = 'false';
    if (expanded === 'true') out += ' expanded';
    else if (expanded !== null) out += ' expanded=false';
    if ((form && el.disabled) || aria('aria-disabled') === 'true') out += ' disabled';
    if ((form && el.required) || aria('aria-required') === 'true') out += ' required';
    if (((tag === 'input' || tag === 'textarea') && el.readOnly) || aria('aria-readonly') === 'true') out += ' readonly';
    if (aria('aria-invalid') === 'true') out += ' invalid';
    const current = aria('aria-current');
    if (current && current !== 'false') out += current === 'true' ? ' current' : ' current=' + current;
    if (r === 'heading') out += ' level=' + (aria('aria-level') || (tag.length === 2 && tag[0] === 'h' ? tag[1] : '2'));
    return out;
  };

  const STATE_ATTRS = set('aria-checked aria-pressed aria-selected aria-expanded aria-disabled aria-required aria-readonly aria-invalid aria-valuenow aria-describedby aria-current aria-level');
  const hasState = (el) => {
    for (const a of el.getAttributeNames()) if (STATE_ATTRS.has(a)) return true;
    return false;
  };

  // The text of an element of inline formatting without a role of its own ('' when it shows
  // nothing), or null if it is not one.
  const inlineText = (c, budget) => {
    const tag = c.localName;
    if (!INLINE.has(tag) || budget === 0 || rootOf(c)) return SKIP.has(tag) ? '' : null;
    if (c.hasAttributes()) {
      if (c.hasAttribute('role') || c.hasAttribute('aria-label') || c.hasAttribute('aria-labelledby') ||
          c.hasAttribute('tabindex') || c.hasAttribute('contenteditable') || c.hasAttribute('title') ||
          c.hasAttribute('aria-describedby') || c.hasAttribute('onclick')) {
        return ariaHidden(c) ? '' : null;
      }
      // Without attributes it takes its visibility from the text around it (checked).
      if (hidden(c)) return '';
    }
    if (tag === 'br') return ' ';
    return plainText(c, budget - 1);
  };
  // The text of content made only of text and inline formatting (no roles of its own), or null.
  const plainText = (parent, budget) => {
    let s = '';
    for (let c = parent.firstChild; c; c = c.nextSibling) {
      const t = c.nodeType;
      if (t === 3) s += c.data;
      else if (t === 1) {
        const inner = inlineText(c, budget);
        if (inner === null) return null;
        s += inner;
      }
    }
    return s;
  };
  // Elements that may sit in running text with lines of their own (links, controls, images…).
  const PHRASING = set('a area button img input select textarea label svg audio video canvas meter progress output iframe object embed');
  // Content of running text: text, inline formatting and elements that get lines of their own
  // (no block among them). Gives the text as read (up to a little over CUT characters), whether
  // any of it is the element's own (outside those elements), and those elements; or null.
  const phrasing = (parent) => {
    let s = '';
    let own = false;
    let cut = false;
    const els = [];
    for (let c = parent.firstChild; c; c = c.nextSibling) {
      const t = c.nodeType;
      if (t === 3) {
        const d = c.data;
        if (!own && !blank(d)) own = true;
        if (s.length <= CUT) s += d;
        else cut = true;
      } else if (t === 1) {
        const inner = inlineText(c, 4);
        if (inner !== null) {
          if (!own && inner.trim()) own = true;
          if (s.length <= CUT) s += inner;
          else cut = true;
          continue;
        }
        if (!PHRASING.has(c.localName) && !(INLINE.has(c.localName) && !rootOf(c))) return null;
        els.push(c);
        if (s.length <= CUT) s += nameInContent(c, 4);
        else cut = true;
      }
    }
    return { text: s, own, els, cut };
  };
  // The nodes from `first` on, under a visible element (or the wrapper `host`, checked at its
  // first text): elements walked, runs of text and inline formatting each one text line.
  const children = (first, level, parentName, inSel, owner, host) => {
    let run = '';
    let vis = host ? 0 : 1;
    const flush = () => {
      if (vis === 0) vis = inSel || !hidden(host) ? 1 : -1;
      if (vis > 0) text(run, level, parentName, owner);
      run = '';
    };
    for (let c = first; c; c = c.nextSibling) {
      const t = c.nodeType;
      if (t === 3) {
        if (run || !blank(c.data)) run += c.data;
      } else if (t === 1) {
        if (!finding && !interactive) {
          const inner = inlineText(c, 4);
          if (inner !== null) {
            run += inner;
            continue;
          }
        }
        if (run && !blank(run)) flush();
        run = '';
        walk(c, level, parentName, inSel, owner);
      }
    }
    if (run && !blank(run)) flush();
  };

  // Roles that are only text or structure get no ref of their own (unless the element can be
  // focused, edited or has a click handler in its markup): nothing acts on them, and find gives
  // any element's ref.
  const NO_REF = set('paragraph list listitem term definition blockquote caption figcaption strong emphasis code abbr mark deletion insertion subscript superscript time separator cell row rowgroup math label legend');
  // Headings and landmarks are structure too: nothing acts on them, and the tree shows what is in
  // them. They get a ref where the tree leaves their content out (at the depth limit), to read it
  // with ref_id (the error for a tree over max_chars names landmarks with their refs too).
  const STRUCTURE = set('heading main navigation banner contentinfo complementary form region search article sectionheader sectionfooter');
  const needsRef = (el, r, attrs, level) => (!NO_REF.has(r) && !(STRUCTURE.has(r) && level + 1 < depth && el !== top)) ||
    (attrs && (el.hasAttribute('tabindex') || el.hasAttribute('onclick') || el.hasAttribute('contenteditable')));
  const line = (el, r, nm, level, shown, tag, attrs) => {
    let s = pad(interactive ? 0 : level - shift) + r;
    if (shown) s += ' "' + clip(shown, CUT) + '"';
    if (interactive || allRefs || needsRef(el, r, attrs, level)) s += ' [' + prefix + idOf(el) + ']';
    // All of them when the walk's parts are kept (a part gives its regions again); the first 12
    // are named (with refs) in the answer.
    if (REGIONS.has(r) && !interactive && (memoOn || regions.length < 36)) regions.push(el, r, nm);
    lines.push(s + state(el, tag, r, nm, attrs));
  };
  const far = (el) => {
    const b = el.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && (b.bottom < -margin || b.top > vh + margin);
  };
  // filter "visible": an element whose box lies wholly outside the viewport (above, below, left
  // or right of it; widened by `margin` above and below) is left out with what is in it (the
  // body never: what is positioned in it may lie outside its box).
  const outside = (el) => {
    const b = el.getBoundingClientRect();
    return b.width > 0 && b.height > 0 &&
      (b.bottom < -margin || b.top > vh + margin || b.right < 0 || b.left > vw);
  };
  const near = (el) => {
    const b = el.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && b.bottom >= -margin && b.top <= vh + margin;
  };
  const editableRoot = (el) => {
    const v = el.getAttribute('contenteditable');
    return v !== null && v !== 'false' && !(el.parentElement && el.parentElement.isContentEditable);
  };
  // A matching candidate for find: its role, name and the text it shows.
  const candidate = (el, r, nm, shown, tag, attrs) => {
    const c = { el, r, nm, text: shown === nm ? '' : shown, extra: '', order: found.length };
    if (attrs) {
      const t = el.getAttribute('title');
      const p = el.getAttribute('placeholder');
      if (t) c.extra += ' ' + t;
      if (p) c.extra += ' ' + p;
    }
    if (tag === 'input' || tag === 'textarea') {
      watch(el);
      c.extra += ' ' + el.value;
    }
    found.push(c);
    return c;
  };

  // One element: its line (unless it is an unnamed wrapper), then its children.
  // `parentName`: text already said by the nearest line above (not repeated as text lines).
  // `owner`: find's candidate that text below belongs to.
  // Visibility is decided where it shows: for each element that gets a line (or gives text to
  // one) and once for a wrapper with text of its own; unnamed wrappers themselves are not
  // checked (an element inside a hidden one has no box either, so it is found hidden in turn).
  // A whole walk of the document keeps, for each element with element children, its part of
  // the answer (its lines, and the entries of what they were made from) and the context it was
  // walked in. After a change, an element outside the parts that changed, walked in the same
  // context, gives its part of the last walk again once what that part was made from is checked
  // (visibility, form state, hosts, slots, as for the kept tree). What changed: the subtree of
  // each node a mutation names (the parent of changed text), and of a shadow host whose light
  // children changed (its slots show them); the elements above those are walked anew, their
  // children each taken whole where they can be. An element whose lines read outside its own
  // subtree (names and descriptions from other elements by id, a control's labels, a label's
  // control) gives no part and is walked each time; a change outside the body, a style of
  // labelling that changed (labels added to a document that had none), or more changes than the
  // observer notes, and the walk is a whole one.
  let memoOn = false;
  let prev = null;
  let deep = null;
  let path = null;
  let inDeep = false;
  let nonlocal = 0;
  const walk = (el, level, parentName, inSel, owner) => {
    if (!memoOn) {
      if (!finding) return walkEl(el, level, parentName, inSel, owner);
      // find: the candidates the element's walk made end here (its own is the first).
      const f0 = found.length;
      walkEl(el, level, parentName, inSel, owner);
      if (found.length > f0 && found[f0].el === el) found[f0].end = found.length;
      return;
    }
    const was = inDeep;
    if (deep !== null && deep.has(el)) inDeep = true;
    if (prev !== null && !inDeep && !path.has(el)) {
      const m = S.memo.get(el);
      if (m !== undefined && m.gen === prev.gen && m.level === level && m.parentName === parentName &&
          m.inSel === inSel && still(m)) {
        replay(el, m);
        inDeep = was;
        return;
      }
    }
    const l0 = lines.length, v0 = deps.vis.length, f0 = deps.form.length, h0 = deps.hosts.length;
    const s0 = deps.slots.length, fr0 = frames.length, rg0 = regions.length, n = nonlocal;
    walkEl(el, level, parentName, inSel, owner);
    if (nonlocal === n && el.firstElementChild !== null) {
      S.memo.set(el, {
        gen: S.gen, level, parentName, inSel, l0, l1: lines.length, v0, v1: deps.vis.length,
        f0, f1: deps.form.length, h0, h1: deps.hosts.length, s0, s1: deps.slots.length,
        fr0, fr1: frames.length, rg0, rg1: regions.length,
      });
    }
    inDeep = was;
  };
  // Whether what an element's part of the last walk was made from is still so. Each visibility
  // and form state is asked once a walk (parts hold their children's): 1 still so, -1 not.
  let visOk = null;
  let formOk = null;
  const still = (m) => {
    const d = prev.deps;
    for (let i = m.v0; i < m.v1; i += 2) {
      let ok = visOk[i >> 1];
      if (ok === 0) visOk[i >> 1] = ok = hiddenNow(d.vis[i]) === d.vis[i + 1] ? 1 : -1;
      if (ok < 0) return false;
    }
    for (let i = m.f0; i < m.f1; i += 2) {
      let ok = formOk[i >> 1];
      if (ok === 0) formOk[i >> 1] = ok = formState(d.form[i]) === d.form[i + 1] ? 1 : -1;
      if (ok < 0) return false;
    }
    for (let i = m.h0; i < m.h1; i++) if (d.hosts[i].shadowRoot) return false;
    for (let i = m.s0; i < m.s1; i += 2) {
      const was = d.slots[i + 1];
      const now = d.slots[i].assignedNodes();
      if (now.length !== was.length || now.some((x, k) => x !== was[k])) return false;
    }
    return true;
  };
  // An element's part of the last walk, given again (and kept as its part of this one).
  const replay = (el, m) => {
    const d = prev.deps;
    const l0 = lines.length, v0 = deps.vis.length, f0 = deps.form.length, h0 = deps.hosts.length;
    const s0 = deps.slots.length, fr0 = frames.length, rg0 = regions.length;
    for (let i = m.l0; i < m.l1; i++) lines.push(prev.lines[i]);
    for (let i = m.v0; i < m.v1; i++) deps.vis.push(d.vis[i]);
    for (let i = m.f0; i < m.f1; i++) deps.form.push(d.form[i]);
    for (let i = m.h0; i < m.h1; i++) deps.hosts.push(d.hosts[i]);
    for (let i = m.s0; i < m.s1; i++) deps.slots.push(d.slots[i]);
    for (let i = m.fr0; i < m.fr1; i++) frames.push(prev.frames[i]);
    for (let i = m.rg0; i < m.rg1; i++) regions.push(prev.regions[i]);
    S.memo.set(el, {
      gen: S.gen, level: m.level, parentName: m.parentName, inSel: m.inSel, l0, l1: lines.length,
      v0, v1: deps.vis.length, f0, f1: deps.form.length, h0, h1: deps.hosts.length, s0,
      s1: deps.slots.length, fr0, fr1: frames.length, rg0, rg1: regions.length,
    });
  };
  // What changed since the last whole walk: fills `deep` (the nodes whose subtrees are walked
  // anew) and `path` (the elements above them); false when the last walk is of no use.
  const changes = () => {
    const recs = S.observer.takeRecords();
    if (recs.length) noted(recs);
    const c = S.changes;
    S.changes = [];
    if (!S.watching || S.prev === null) return false;
    for (const [root, had] of S.prev.labelled) {
      if (!!(root.querySelector && root.querySelector('label')) !== had) return false;
    }
    deep = new Set();
    path = new Set();
    const body = document.body;
    for (let n of c) {
      if (n === null) continue;
      if (n.nodeType === 11) n = n.host;
      if (!n.isConnected) continue;
      if (n.nodeType !== 1) return false;
      deep.add(n);
      let inBody = n === body;
      for (let x = n; x !== body; ) {
        let p = x.parentNode;
        if (p === null) break;
        if (p.nodeType === 11) p = p.host;
        else if (p.nodeType !== 1) break;
        else if (p.shadowRoot || (S.closedAny && S.closed.get(p))) deep.add(p);
        if (p === body || path.has(p)) { inBody = true; path.add(p); break; }
        path.add(p);
        x = p;
      }
      if (!inBody) return false;
    }
    return true;
  };
  const walkEl = (el, level, parentName, inSelect, owner) => {
    const tag = el.localName;
    if (SKIP.has(tag)) return;
    const attrs = el.hasAttributes();
    let explicit = null;
    if (attrs) {
      if (el.hasAttribute('hidden') || el.getAttribute('aria-hidden') === 'true') return;
      explicit = el.getAttribute('role');
    }
    let r = explicit ? explicitRole(explicit) : role(el, tag, attrs);
    if (r === null) return;
    const inSel = inSelect || tag === 'select';
    if (interactive) {
      active(el, tag, attrs, r, level, inSel);
      return;
    }
    // Checked from the top down, so a long page costs one box per section out of view; what in
    // such a section is fixed to the viewport is walked in its place.
    if (visible && el !== document.body && outside(el)) {
      if (el.firstElementChild) escaped(el, kids(el, tag), level, inSel);
      return;
    }
    let nm = '';
    let editable = false;
    let focusable = false;
    // The visibility entry that let the element in (find: see `relevant`).
    let gate = -1;
    if (NOISE.has(r)) {
      let labelled = false;
      if (attrs) {
        for (const a of el.getAttributeNames()) {
          if (a === 'aria-label' || a === 'aria-labelledby' || a === 'title') labelled = true;
          else if (a === 'contenteditable') editable = editableRoot(el);
          else if (a === 'tabindex') focusable = true;
        }
      }
      if (labelled || editable) {
        gate = deps !== null && !inSel ? deps.vis.length : -1;
        if (!inSel && hidden(el)) return;
        nm = name(el, tag, r, attrs);
        if (nm && r !== 'generic') r = 'generic';
      }
      if (!nm && !editable) {
        wrapper(el, tag, level, parentName, inSel, owner, focusable);
        return;
      }
    } else {
      gate = deps !== null && !inSel ? deps.vis.length : -1;
      if (!inSel && hidden(el)) return;
      nm = name(el, tag, r, attrs);
    }
    if (level >= depth) return;
    const parent = kids(el, tag);
    // Labels and legends: their text is their control's (or group's) name already.
    if (r === 'label' && !nm) {
      nonlocal++;
      if (el.control || el.querySelector('input,select,textarea,button,meter,progress,output')) {
        const said = labelText(el, el.control);
        for (let c = parent.firstChild; c; c = c.nextSibling) if (c.nodeType === 1) walk(c, level, said, inSel, owner);
        return;
      }
    }
    if (r === 'legend' && !nm && el.parentElement && el.parentElement.localName === 'fieldset') {
      for (let c = parent.firstChild; c; c = c.nextSibling) if (c.nodeType === 1) walk(c, level, '', inSel, owner);
      return;
    }
    let shown = nm;
    let leaf = r === 'image' || (LEAF_FIELDS.has(r) && tag !== 'div' && tag !== 'span' && tag !== 'select');
    // Content that is only text: shown as the name when there is none, else as one text line.
    let rest = '';
    const first = parent.firstChild;
    if (!leaf && first) {
      const t = first.nextSibling === null && first.nodeType === 3 ? first.data : plainText(parent, 4);
      if (t !== null) {
        leaf = true;
        if (!nm) shown = squash(t);
        else if (t !== nm) {
          rest = squash(t);
          if (nm.includes(rest)) rest = '';
        }
      }
    }
    // Running text with links or controls in it: its text on this line (when some is its own),
    // then a line for each of those elements.
    let els = null;
    if (!leaf && first && !finding && tag !== 'slot' && r !== 'iframe') {
      const p = phrasing(parent);
      if (p) {
        els = p.els;
        if (!nm && p.own) {
          shown = squash(p.text);
          if (p.cut && shown.length <= CUT) shown += '…';
        }
      }
    }
    let mine = owner;
    if (finding) {
      mine = candidate(el, r, nm, shown, tag, attrs);
      if (gate >= 0 && deps.vis[gate] === el) mine.gate = gate;
      if (rest) mine.text += ' ' + rest;
    } else {
      line(el, r, nm, level, shown, tag, attrs);
    }
    if (r === 'iframe') {
      if (!finding) {
        lines.push('\u0001' + idOf(el));
        frames.push([Number(idOf(el)), level + 1, shift]);
      }
      return;
    }
    if (leaf) {
      if (rest && !finding && level + 1 < depth) textLine(rest, level + 1, nm);
      return;
    }
    const said = shown ? squash(shown) : '';
    if (els) {
      for (const c of els) walk(c, level + 1, said, inSel, mine);
      return;
    }
    if (tag === 'slot') {
      const a = slotted(el);
      if (a) { for (const n of a) visit(n, level + 1, said, inSel, mine); return; }
    }
    children(first, level + 1, said, inSel, mine, null);
  };
  // filter "interactive": only what can be acted on in or near the viewport gets a line, with
  // its role and name; nothing else is named, and a frame far from the viewport is not entered.
  const FOCUS_TAGS = set('a area button input select textarea summary audio video embed object');
  const active = (el, tag, attrs, r, level, inSel) => {
    if (level >= depth) return;
    const editable = attrs && el.hasAttribute('contenteditable') && editableRoot(el);
    const parent = kids(el, tag);
    // The focusable: by role, by a tabindex, and media with controls (asking every element for
    // its tabIndex is what made this walk slow).
    const can = INTERACTIVE.has(r) || editable ||
      (((attrs && el.hasAttribute('tabindex')) || FOCUS_TAGS.has(tag)) && r !== 'iframe' && el.tabIndex >= 0);
    if (r === 'iframe') {
      if (near(el) && !hidden(el)) {
        const id = idOf(el);
        lines.push('\u0001' + id);
        frames.push([Number(id), 0, 0]);
      }
      return;
    }
    if (can && near(el) && (inSel || !hidden(el))) {
      const nm = name(el, tag, r, attrs);
      let shown = nm;
      if (!shown && parent.firstChild) {
        const t = plainText(parent, 4);
        if (t) shown = squash(t);
      }
      line(el, NOISE.has(r) ? 'generic' : r, nm, 0, shown, tag, attrs);
    }
    if (r === 'image' || (LEAF_FIELDS.has(r) && tag !== 'div' && tag !== 'span' && tag !== 'select')) return;
    const next = NOISE.has(r) ? level : level + 1;
    // What is far from the viewport is not walked: a container whose box lies wholly outside
    // the margin (checked from the top down, so most of a long page costs one box per section),
    // but for what in it is fixed to the viewport (a dialog or popover shown in the top layer is
    // too).
    if (!can && el.firstElementChild && far(el)) {
      escaped(el, parent, next, inSel);
      return;
    }
    if (tag === 'slot') {
      const a = slotted(el);
      if (a) { for (const n of a) if (n.nodeType === 1) walk(n, next, '', inSel, null); return; }
    }
    for (let c = parent.firstChild; c; c = c.nextSibling) if (c.nodeType === 1) walk(c, next, '', inSel, null);
  };
  // The elements fixed to the viewport under a far container (`el`, whose content is `parent`),
  // each walked in its place. The candidates are asked once a walk: the elements that a style
  // rule, an inline style or the top layer (modal dialogs, open popovers, fullscreen) may make
  // fixed, kept if their position is `fixed`. Style sheets whose rules cannot be read (of another
  // origin) leave it to looking at every element under the container: a fixed one has no
  // offsetParent (nor has one without a box: not looked into; or with `display: contents`).
  let fixedList = null;
  let fixedDone = null;
  const escaped = (el, parent, level, inSel) => {
    if (fixedList === null) fixedList = fixedCandidates();
    if (fixedList === true) return scanFixed(parent, level, inSel);
    for (const f of fixedList) {
      if (!el.contains(f) || (fixedDone !== null && fixedDone.contains(f))) continue;
      const up = f.parentElement;
      if (up !== null && up.closest('[aria-hidden="true" i]')) continue;
      fixedDone = f;
      walk(f, level, '', inSel || (up !== null && up.closest('select') !== null), null);
    }
  };
  const scanFixed = (parent, level, inSel) => {
    for (let x = parent.firstElementChild; x; x = x.nextElementSibling) {
      if (x.offsetParent === null) {
        const cs = getComputedStyle(x);
        if (cs.position === 'fixed') {
          walk(x, level, '', inSel, null);
          continue;
        }
        if (cs.display === 'none') continue;
      }
      const tag = x.localName;
      const root = canHost(tag) ? shadowOf(x) : null;
      if (root === null && x.firstElementChild === null) continue;
      if (SKIP.has(tag) || ariaHidden(x)) continue;
      scanFixed(root || x, level, inSel || tag === 'select');
    }
  };
  // The document's elements that are fixed, in document order, or true when some style sheet
  // cannot be read. A selector of a nested rule is taken as a superset (`&` as any element).
  const fixedCandidates = () => {
    const sels = [':modal', ':popover-open', ':fullscreen', '[style*="fixed" i]'];
    let unreadable = false;
    const scan = (rules) => {
      for (const r of rules) {
        const st = r.style;
        if (st && r.selectorText) {
          const p = st.position;
          if (p && (p.includes('fixed') || p.includes('var('))) sels.push(r.selectorText.replace(/&/g, '*'));
        }
        if (r.styleSheet) sheet(r.styleSheet);
        else if (r.cssRules && r.cssRules.length) scan(r.cssRules);
      }
    };
    const sheet = (sh) => {
      let rules;
      try { rules = sh.cssRules; } catch (e) { unreadable = true; return; }
      if (rules) scan(rules);
    };
    for (const sh of document.styleSheets) sheet(sh);
    for (const sh of document.adoptedStyleSheets || []) sheet(sh);
    if (unreadable) return true;
    // One pass over the document (in its order), or one a selector if some selector is refused.
    let found;
    try {
      found = [...document.querySelectorAll(sels.join(','))];
    } catch (e) {
      found = [];
      for (const sel of sels) {
        try { for (const f of document.querySelectorAll(sel)) if (!found.includes(f)) found.push(f); } catch (e2) { /* not a selector here */ }
      }
      found.sort((a, b) => (a.compareDocumentPosition(b) & 4 ? -1 : 1));
    }
    return found.filter((f) => getComputedStyle(f).position === 'fixed');
  };
  // An unnamed wrapper: its children take its place.
  const wrapper = (el, tag, level, parentName, inSel, owner, focusable) => {
    const parent = kids(el, tag);
    if (focusable && finding && el.tabIndex >= 0 && !hidden(el)) owner = candidate(el, 'generic', '', '', tag, true);
    if (tag === 'slot') {
      const a = slotted(el);
      if (a) {
        for (const n of a) visit(n, level, parentName, inSel, owner);
        return;
      }
    }
    const first = parent.firstChild;
    if (first) children(first, level, parentName, inSel, owner, el);
  };
  // A piece of text: a line, or find's candidate's text.
  const text = (d, level, parentName, owner) => {
    if (finding) { if (owner) owner.text += ' ' + d; }
    else if (!interactive && level < depth) textLine(d, level, parentName);
  };
  const blank = (d) => d.charCodeAt(0) <= 32 && !d.trim();
  const textLine = (t, level, parentName) => {
    t = squash(t);
    if (t && !parentName.includes(t)) lines.push(pad(level - shift) + 'text "' + clip(t, CUT) + '"');
  };
  // A node under a visible element.
  const visit = (node, level, parentName, inSelect, owner) => {
    const t = node.nodeType;
    if (t === 1) walk(node, level, parentName, inSelect, owner);
    else if (t === 3) {
      const d = node.data;
      if (!blank(d)) text(d, level, parentName, owner);
    }
  };

  // find: words matched against role, name, text, placeholder, label and title.
  const STOP = set('the a an of to for on in at with and or field element that this which is me');
  const SYNONYMS = new Map(Object.entries({
    input: 'textbox', box: 'textbox', textfield: 'textbox', text: 'textbox', dropdown: 'combobox',
    select: 'combobox', tickbox: 'checkbox', title: 'heading', headline: 'heading', hyperlink: 'link',
    img: 'image', picture: 'image', photo: 'image',
  }));
  const score = (c, query, words) => {
    // Lower-cased once per candidate: the kept candidates are matched again by later finds.
    if (c.ln === undefined) {
      c.ln = c.nm.toLowerCase();
      c.lo = (c.text + ' ' + c.extra).replace(/\s+/g, ' ').toLowerCase();
    }
    const name = c.ln;
    const other = c.lo;
    let s = 0;
    if (name && name === query) s += 100;
    else if (name && name.includes(query)) s += 50;
    else if (other.includes(query)) s += 30;
    let matched = 0;
    for (const w of words) {
      let hit = false;
      if (name.includes(w)) { s += 10; hit = true; }
      if (c.r.includes(w) || SYNONYMS.get(w) === c.r) { s += 8; hit = true; }
      if (other.includes(w)) { s += 4; hit = true; }
      if (hit) matched++;
    }
    if (s === 0 || (s < 30 && matched * 2 < words.length)) return 0;
    if (INTERACTIVE.has(c.r) || c.el.tabIndex >= 0) s += 3;
    return s;
  };

  // The visibility entries of the kept candidates that this query's answer does not depend
  // on (1: not checked). A candidate's own entry is the one that let it in: were it hidden now,
  // a new walk would leave out the candidate and what its walk made (the candidates after it up
  // to its `end`, and the text below it, which went to them), and nothing else. So while none
  // of those is a match, its entry can be left unchecked: the matches, their order and their
  // count come out the same. Every other entry is checked: those recorded hidden (what they
  // hold may show now), those a name or a text was read through, and the matches' own and
  // their ancestors'.
  const relevant = (list, hits, d) => {
    const n = list.length;
    const before = new Int32Array(n + 1);
    for (const h of hits) before[h[1].order + 1] = 1;
    for (let i = 0; i < n; i++) before[i + 1] += before[i];
    const skip = new Uint8Array(d.vis.length >> 1);
    for (const c of list) {
      if (c.gate !== undefined && c.end !== undefined && before[c.end] === before[c.order]) skip[c.gate >> 1] = 1;
    }
    return skip;
  };

  return function run(op, arg, state) {
    S = state;
    if (op === 'id') return Number(idOf(this));
    if (op === 'get') {
      const r = S.els.get(arg);
      if (!r) return 'unknown';
      const el = r.deref();
      return el && el.isConnected ? el : 'stale';
    }
    if (op === 'closed') { S.closed.set(arg, this); S.closedAny = true; forget(); return true; }
    if (op === 'hosts') {
      const out = S.pending || [];
      S.pending = [];
      return out;
    }
    S.pending = [];
    deps = null;
    // The tab's top document numbers its elements from `base` on (above those of the documents
    // it had before): a ref from an earlier page is never another element of this one.
    if (arg.base && S.next < arg.base - 1) S.next = arg.base - 1;
    const viewport = [Math.round(innerWidth), Math.round(innerHeight)];
    const key = op === 'tree' && !arg.interactive && !arg.visible && !arg.root ? arg.depth + ' ' + (arg.level || 0) + ' ' + (arg.shift || 0) + ' ' + arg.prefix : null;
    const kept = S.cache;
    if (key !== null && kept && kept.key === key && unchanged(kept.deps)) {
      if (arg.have === kept.token) return { same: true, token: kept.token, viewport, next: S.next };
      return { text: kept.lines.join('\n'), frames: kept.frames, regions: kept.regions, hosts: 0, viewport, token: kept.token, next: S.next };
    }
    memoOn = false;
    prev = null;
    deep = null;
    path = null;
    inDeep = false;
    if (key !== null) {
      S.cache = null;
      deps = record();
      memoOn = true;
      if (changes() && S.prev.key === key) {
        prev = S.prev;
        visOk = new Int8Array(prev.deps.vis.length >> 1);
        formOk = new Int8Array(prev.deps.form.length >> 1);
      }
      S.gen = (S.gen || 0) + 1;
    }
    // Whether each root has labels: what the last walk found still holds when its parts are used.
    labelled = prev !== null ? new Map(prev.labelled) : new Map();
    prefix = arg.prefix;
    // Every line with its ref (for tests that compare lines with Chrome's tree by element).
    allRefs = !!arg.allRefs;
    shift = arg.shift || 0;
    top = null;
    fixedList = null;
    fixedDone = null;
    lines = [];
    frames = [];
    regions = [];
    vh = innerHeight;
    vw = innerWidth;
    margin = vh * (typeof arg.near === 'number' ? arg.near : 1);
    finding = op === 'find';
    const base = document.baseURI;
    origin = base.startsWith('http') && new URL(base).origin === location.origin ? location.origin : null;
    found = [];
    interactive = !finding && !!arg.interactive;
    visible = !finding && !interactive && !!arg.visible;
    depth = finding ? Infinity : arg.depth;
    if (finding) {
      const query = String(arg.query).toLowerCase().trim();
      const words = query.split(/[^\p{L}\p{N}]+/u).filter((w) => w && !STOP.has(w));
      const match = (list) => {
        const out = [];
        for (const c of list) {
          const s = score(c, query, words);
          if (s) out.push([s, c]);
        }
        return out;
      };
      // The candidates of the last find are kept like the tree, and matched again; what they
      // were made from is checked as far as this query's answer depends on it.
      const kept = S.found;
      let hits = null;
      if (kept && kept.prefix === prefix) {
        const h = match(kept.list);
        if (unchanged(kept.deps, relevant(kept.list, h, kept.deps))) {
          found = kept.list;
          hits = h;
        }
      }
      if (hits === null) {
        S.found = null;
        deps = record();
        if (document.body) walk(document.body, 0, '', false, null);
        S.found = { prefix, deps, list: found };
        deps = null;
        hits = match(found);
      }
      hits.sort((a, b) => b[0] - a[0] || a[1].order - b[1].order);
      const out = [];
      for (const [s, c] of hits.slice(0, arg.max)) {
        const shown = c.nm || (c.text ? squash(c.text) : '');
        let point = null;
        for (const b of c.el.getClientRects()) {
          if (b.width > 0 && b.height > 0) { point = [b.left + b.width / 2, b.top + b.height / 2]; break; }
        }
        out.push({ line: '[' + prefix + idOf(c.el) + '] ' + c.r + (shown ? ' "' + clip(shown, CUT) + '"' : ''), score: s, point });
      }
      found = [];
      return { matches: out, total: hits.length, hosts: S.pending.length, next: S.next };
    }
    let level = arg.level || 0;
    let root = arg.root;
    if (root) {
      const r = S.els.get(root);
      const el = r && r.deref();
      if (!el || !el.isConnected) return { stale: true };
      if (el.nodeType === 9) root = null;
      else {
        top = el;
        walk(el, level, '', false, null);
      }
    }
    if (!root) {
      if (!interactive) {
        lines.push(pad(level - shift) + 'document' + (document.title ? ' "' + clip(document.title, CUT) + '"' : '') +
          ' [' + prefix + idOf(document) + ']');
        level += 1;
        shift += 1;
      }
      if (document.body) walk(document.body, level, '', false, null);
    }
    const text = lines.join('\n');
    const shown = [];
    for (let i = 0; i < regions.length && i < 36; i += 3) {
      const nm = regions[i + 2];
      shown.push(regions[i + 1] + (nm ? ' "' + clip(nm, 60) + '"' : '') + ' [' + prefix + idOf(regions[i]) + ']');
    }
    const out = { text, frames, regions: shown, hosts: S.pending.length, viewport, next: S.next };
    if (deps) {
      // Named uniquely across worlds: the worker may hold one from an earlier world.
      S.tokens = (S.tokens || 0) + 1;
      if (!S.born) S.born = Math.random().toString(36).slice(2);
      const token = S.born + '.' + S.tokens;
      S.cache = { key, token, deps, lines, frames, regions: shown };
      S.prev = { key, gen: S.gen, lines, deps, frames, regions, labelled };
      memoOn = false;
      prev = null;
      deep = null;
      path = null;
      visOk = null;
      formOk = null;
      out.token = token;
      deps = null;
      // The last walk's lines stay (a change forgets the kept tree and what it was made from,
      // not these) for the next walk to send only what differs from them.
      const last = S.last;
      S.last = { key, token, lines };
      if (last && last.key === key && arg.have === last.token) {
        const was = last.lines;
        const n = Math.min(was.length, lines.length);
        let head = 0;
        while (head < n && was[head] === lines[head]) head++;
        let tail = 0;
        while (tail < n - head && was[was.length - 1 - tail] === lines[lines.length - 1 - tail]) tail++;
        if (head + tail > 0) {
          out.text = lines.slice(head, lines.length - tail).join('\n');
          out.base = last.token;
          out.head = head;
          out.tail = tail;
          out.lines = lines.length;
        }
      }
    }
    lines = [];
    return out;
  };
}
}
