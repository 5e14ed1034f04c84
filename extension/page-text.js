// get_page_text's reader: the whole answer, written in the page. One function, two callers:
// as a content script it runs in the extension's isolated world of every http(s) page, where
// content.js answers the worker's "pageText" message with it (the page's own scripts cannot
// reach it there); for a page without the content script (about:blank, a tab loaded before the
// extension), the worker evaluates the same source over CDP as `(source)(max)`.
function pageText(max) {
  // The readable text: the longest main content region the page marks (over 200 characters),
  // else the body. innerText lays out and walks all it covers, so each region's text is read
  // once, and a region inside another is not read on its own: the outer one's text holds its
  // text, so it is at least as long and comes first (document order).
  const doc = document;
  let text = null;
  let outer = null;
  for (const el of doc.querySelectorAll("article, main, [role=main]")) {
    if (outer && outer.contains(el)) continue;
    outer = el;
    const t = el.innerText || "";
    if ((text === null || t.length > text.length) && t.trim().length > 200) text = t;
  }
  if (text === null) {
    const root = doc.body || doc.documentElement;
    text = root ? (root.innerText || root.textContent || "") : "";
  }
  // Whitespace collapsed: runs of spaces to one, no blank lines, no indents. Single spaces
  // (most of them) are left as they are rather than replaced one by one.
  text = text.replace(/[ \t\f\v\u00a0]{2,}|[\t\f\v\u00a0]/g, " ").replace(/ ?\n\s*/g, "\n").trim();
  const total = text.length;
  if (total > max) {
    // Not between the two halves of a character outside the BMP (an emoji): half of one is no
    // text at all.
    const last = text.charCodeAt(max - 1);
    const cut = last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
    text = text.slice(0, cut) + `\n… (truncated: ${total - cut} more characters)`;
  }
  // The whole answer, as the tool gives it.
  return `Title: ${doc.title}\nURL: ${location.href}\n\n${text}`;
}
