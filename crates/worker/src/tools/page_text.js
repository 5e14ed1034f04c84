function (max) {
  // The readable text: the main content region when the page marks one, else the body.
  const doc = document;
  const pick = () => {
    const candidates = Array.from(doc.querySelectorAll("article, main, [role=main]"))
      .filter((el) => (el.innerText || "").trim().length > 200);
    if (candidates.length) {
      return candidates.reduce((a, b) => ((b.innerText || "").length > (a.innerText || "").length ? b : a));
    }
    return doc.body || doc.documentElement;
  };
  const root = pick();
  let text = root ? (root.innerText || root.textContent || "") : "";
  text = text.replace(/[ \t\f\v\u00a0]+/g, " ").replace(/ *\n[\s]*/g, "\n").trim();
  const total = text.length;
  if (total > max) text = text.slice(0, max) + `\n… (truncated: ${total - max} more characters)`;
  return { title: doc.title, url: location.href, text };
}
