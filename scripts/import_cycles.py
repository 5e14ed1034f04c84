#!/usr/bin/env python3
"""Import circles between the modules of a crate: none allowed (`./build.sh lint` runs this).

A module and everything below it count as one unit (a parent composes its children, and they
may use the parent's shared types, as each tool uses `tools::Tool`). Between sibling units,
uses must run one way: when `a` (or anything in it) names `b` (or anything in it), nothing in
`b` may name `a`, directly or through other siblings. And the crate root (lib.rs) defines
nothing any module names: it only declares the modules, the entry points and re-exports.

What counts as naming: every path in the source (a `use`, a call, a type, test modules
included) that starts with `crate::`, `super::`, `self::`, a child module's name or a module
imported by `use`, resolved to the deepest module of the crate it reaches.

  python3 scripts/import_cycles.py SRC_DIR...   each a crate's src/ holding lib.rs or main.rs
Prints each circle with the uses that make it, and exits 1 if there is any.
"""

import os
import re
import sys
from collections import defaultdict

TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|b?r(#*)\"(?:.|\n)*?\"\1|b?\"(?:\\.|[^\"\\])*\"|'(?:\\[^']{1,10}|[^\\'])'", re.S)


def strip(text):
    """The source without comments, strings and char literals (a lifetime stays)."""
    return TOKEN.sub(lambda m: '""' if m.group(0).endswith(('"', "#")) else " ", text)


def modules(src):
    """Module path (tuple) -> its file, following `mod name;` from the crate root."""
    root = next(os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f)))
    found = {}

    def walk(path, file):
        found[path] = file
        base = os.path.dirname(file)
        if os.path.basename(file) not in ("lib.rs", "main.rs", "mod.rs"):
            base = os.path.join(base, os.path.basename(file)[:-3])
        for name in re.findall(r"\bmod\s+(\w+)\s*;", strip(open(file).read())):
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.exists(cand):
                    walk(path + (name,), cand)
                    break

    walk((), root)
    return found


def use_trees(text, i):
    """The paths of a path or use tree at text[i:] (`a::b::{c, d::{self, e as f}}`), each
    (segments, alias), and where it ends."""
    out, segs = [], []
    while True:
        m = re.compile(r"\s*(\w+)\s*").match(text, i)
        if not m:
            if text.startswith("*", i):
                return out + [(segs, None)], i + 1
            return out + [(segs, None)], i
        segs, i = segs + [m.group(1)], m.end()
        if not text.startswith("::", i):
            alias = re.compile(r"as\s+(\w+)").match(text, i)
            return out + [(segs, alias.group(1) if alias else None)], alias.end() if alias else i
        i += 2
        brace = re.compile(r"\s*\{").match(text, i)
        if brace:
            i = brace.end()
            while True:
                sub, i = use_trees(text, i)
                out += [(segs + s, a) for s, a in sub if s]
                sep = re.compile(r"\s*(,|\})\s*").match(text, i)
                if not sep:
                    return out, i
                i = sep.end()
                if sep.group(1) == "}":
                    return out, i
                close = re.compile(r"\s*\}").match(text, i)
                if close:
                    return out, close.end()


def uses(mods):
    """(from module, to module) -> the paths that make that use."""
    found = defaultdict(set)
    for here, file in mods.items():
        text = strip(open(file).read())
        kids = {m[-1] for m in mods if m[:-1] == here and m}
        aliases = {}  # name imported by `use` -> the module it names
        scope, depth, stack = list(here), 0, []
        starts = re.compile(r"\bmod\s+(\w+)\s*\{|\{|\}|(?<![\w:])(\w+)\s*::")
        pos = 0
        while (m := starts.search(text, pos)) is not None:
            pos = m.end()
            if m.group(1):
                stack.append(depth)
                depth += 1
                scope.append(m.group(1))
                continue
            if m.group(0) in "{}":
                depth += 1 if m.group(0) == "{" else -1
                if m.group(0) == "}" and stack and stack[-1] == depth:
                    stack.pop()
                    scope.pop()
                continue
            first = m.group(2)
            if first not in ("crate", "super", "self") and first not in kids and first not in aliases:
                continue
            trees, end = use_trees(text, m.start(2))
            pos = max(pos, end)
            is_use = re.search(r"\buse\s+$", text[max(0, m.start(2) - 40):m.start(2)]) is not None
            for segs, alias in trees:
                if segs[0] == "crate":
                    base, rest = [], segs[1:]
                elif segs[0] in ("super", "self"):
                    base, rest = list(scope), segs
                    while rest and rest[0] in ("super", "self"):
                        base = base[:-1] if rest[0] == "super" else base
                        rest = rest[1:]
                elif segs[0] in aliases and segs[0] not in kids:
                    base, rest = list(aliases[segs[0]]), segs[1:]
                else:
                    base, rest = list(scope), segs
                full = base + [s for s in rest if s != "self"]
                target = tuple(full)
                while target and target not in mods:
                    target = target[:-1]
                if is_use and target == tuple(full) and full:
                    aliases[alias or full[-1]] = target
                if target != here:
                    found[(here, target)].add("::".join(segs))
    return found


def name(path):
    return "::".join(("crate",) + path)


def circles(mods, found):
    """Circles between sibling units, and uses of the crate root's own items."""
    problems = []
    for (a, b), paths in sorted(found.items()):
        if b == ():
            problems.append(f"{name(a)} names an item of the crate root ({', '.join(sorted(paths))})")
    lifted = defaultdict(lambda: defaultdict(list))  # parent -> unit -> [(unit, a, b)]
    for a, b in found:
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        if k < len(a) and k < len(b):
            lifted[a[:k]][a[k]].append((b[k], a, b))
    for parent, graph in sorted(lifted.items()):
        index, low, on, stack, counter = {}, {}, set(), [], [0]

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w, _, _ in graph.get(v, ()):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    lines = [f"circle between {', '.join(name(parent + (u,)) for u in sorted(part))}:"]
                    for u in sorted(part):
                        for w, a, b in sorted(graph.get(u, ())):
                            if w in part:
                                lines.append(f"  {name(a)} -> {name(b)} ({', '.join(sorted(found[(a, b)]))})")
                    problems.append("\n".join(lines))

        for v in sorted(graph):
            if v not in index:
                visit(v)
    return problems


def main(dirs):
    bad = False
    for src in dirs:
        mods = modules(src)
        problems = circles(mods, uses(mods))
        for p in problems:
            print(f"{src}: {p}")
        if problems:
            bad = True
        else:
            print(f"{src}: {len(mods)} modules, no import circles")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else __doc__)
