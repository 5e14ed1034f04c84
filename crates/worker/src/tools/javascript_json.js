function () {
  // JSON of the value, with DOM nodes, functions, cycles and Maps/Sets described instead of lost.
  const seen = new WeakSet();
  try {
    return JSON.stringify(this, function (key, v) {
      if (typeof v === "function") return "[Function " + (v.name || "anonymous") + "]";
      if (typeof v === "bigint") return v.toString() + "n";
      if (v && typeof v === "object") {
        if (typeof Node !== "undefined" && v instanceof Node) {
          return "[" + (v.nodeName || "Node").toLowerCase() + (v.id ? "#" + v.id : "") + "]";
        }
        if (v instanceof Map) return Object.fromEntries(v);
        if (v instanceof Set) return Array.from(v);
        if (seen.has(v)) return "[Circular]";
        seen.add(v);
      }
      return v;
    }, 2);
  } catch (e) {
    return String(this);
  }
}
