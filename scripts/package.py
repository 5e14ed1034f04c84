#!/usr/bin/env python3
"""The files of the Chrome Web Store zip, derived from what the extension loads, not a hand list.

Starts from manifest.json (background service worker, content scripts, web-accessible resources,
the options and popup pages, icons), then follows what each file loads: an HTML page's
<script src>, <link href> and <img src> (and links to other extension pages), a JavaScript
module's static and dynamic imports, `new URL("...", import.meta.url)` (how the worker and
the sandbox load their wasm) and `chrome.runtime.getURL("...")` (the watchdog's offscreen page), and a CSS file's url(...). Every path must exist inside the
extension folder, or the package fails naming the file that refers to it.

  python3 scripts/package.py list [ROOT]        the files, one a line (relative to ROOT)
  python3 scripts/package.py zip ZIP [ROOT]     the zip, with the manifest's "key" dropped
                                                (the store assigns the extension's id)
"""

import json
import re
import sys
import zipfile
from pathlib import Path, PurePosixPath

# import x from "./a.js"; export * from "./a.js"; import "./a.js"; import("./a.js")
JS_IMPORT = re.compile(
    r"""(?:\bimport\s*(?:[\w$*{}\s,]+\s*from\s*)?|\bexport\s*[\w$*{}\s,]*\s*from\s*|\bimport\s*\(\s*)["']([^"']+)["']"""
)
# chrome.runtime.getURL("extension/watchdog.html"): a path from the extension's root.
RUNTIME_URL = re.compile(r"""\bchrome\.runtime\.getURL\(\s*["']([^"']+)["']\s*\)""")
JS_URL = re.compile(r"""new\s+URL\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url\s*\)""")
HTML_REF = re.compile(r"""<(?:script|img|link|a|iframe|source)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.I)
CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+)["']?\s*\)""")


class PackageError(Exception):
    pass


def local(ref: str) -> bool:
    """A reference to a file of the extension (not a URL, an anchor or data)."""
    return not re.match(r"^[a-z][a-z0-9+.-]*:", ref, re.I) and not ref.startswith(("#", "//"))


def resolve(root: Path, base: PurePosixPath, ref: str, referrer: str) -> PurePosixPath:
    ref = ref.split("#", 1)[0].split("?", 1)[0]
    path = PurePosixPath(ref[1:]) if ref.startswith("/") else base.parent / ref
    parts = []
    for p in path.parts:
        if p == "..":
            if not parts:
                raise PackageError(f"{referrer} refers to {ref}, outside the extension")
            parts.pop()
        elif p != ".":
            parts.append(p)
    rel = PurePosixPath(*parts)
    if not (root / rel).is_file():
        raise PackageError(f"{referrer} refers to {ref} ({rel}), which does not exist (run ./build.sh build?)")
    return rel


def manifest_entries(m: dict) -> list:
    out = []
    bg = m.get("background", {})
    if "service_worker" in bg:
        out.append(bg["service_worker"])
    out += bg.get("scripts", [])
    for cs in m.get("content_scripts", []):
        out += cs.get("js", []) + cs.get("css", [])
    for war in m.get("web_accessible_resources", []):
        out += war.get("resources", []) if isinstance(war, dict) else [war]
    for key in ("options_page", "devtools_page"):
        if key in m:
            out.append(m[key])
    if "options_ui" in m:
        out.append(m["options_ui"]["page"])
    for key in ("action", "browser_action", "page_action"):
        a = m.get(key, {})
        if "default_popup" in a:
            out.append(a["default_popup"])
        icon = a.get("default_icon")
        out += list(icon.values()) if isinstance(icon, dict) else ([icon] if icon else [])
    out += list(m.get("icons", {}).values())
    sp = m.get("side_panel", {})
    if "default_path" in sp:
        out.append(sp["default_path"])
    return out


def refs(root: Path, rel: PurePosixPath) -> list:
    text = (root / rel).read_text(errors="replace") if rel.suffix in (".js", ".mjs", ".html", ".htm", ".css") else ""
    if rel.suffix in (".js", ".mjs"):
        # Comments can name paths that are not loaded.
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        code = re.sub(r"(^|[^:\"'])//[^\n]*", r"\1", code)
        return JS_IMPORT.findall(code) + JS_URL.findall(code) + ["/" + r.lstrip("/") for r in RUNTIME_URL.findall(code)]
    if rel.suffix in (".html", ".htm"):
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        return HTML_REF.findall(text)
    if rel.suffix == ".css":
        return CSS_URL.findall(text)
    return []


def files(root: Path) -> list:
    manifest = json.loads((root / "manifest.json").read_text())
    seen = {}
    todo = []
    for entry in manifest_entries(manifest):
        if any(c in entry for c in "*?["):
            matches = sorted(p for p in root.glob(entry) if p.is_file())
            if not matches:
                raise PackageError(f"manifest.json lists {entry}, which matches no file")
            todo += [(PurePosixPath(p.relative_to(root).as_posix()), "manifest.json") for p in matches]
        else:
            todo.append((resolve(root, PurePosixPath("manifest.json"), entry, "manifest.json"), "manifest.json"))
    while todo:
        rel, why = todo.pop()
        if rel in seen:
            continue
        seen[rel] = why
        for ref in refs(root, rel):
            if local(ref):
                todo.append((resolve(root, rel, ref, str(rel)), str(rel)))
    return sorted(str(p) for p in seen)


def write_zip(root: Path, out: Path) -> list:
    names = files(root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest.pop("key", None)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        for name in names:
            z.write(root / name, name)
    tmp.replace(out)
    return names


def main(argv: list) -> int:
    if len(argv) < 2 or argv[1] not in ("list", "zip"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[1] == "list":
            root = Path(argv[2] if len(argv) > 2 else ".").resolve()
            print("\n".join(files(root)))
        else:
            if len(argv) < 3:
                print(__doc__, file=sys.stderr)
                return 2
            root = Path(argv[3] if len(argv) > 3 else ".").resolve()
            names = write_zip(root, Path(argv[2]))
            print(f"{len(names) + 1} files: manifest.json {' '.join(names)}", file=sys.stderr)
    except PackageError as e:
        print(f"package: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
