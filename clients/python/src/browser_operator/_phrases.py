"""What the model reads when something fails: one fixed phrase per failure, never a URL or a file path.

The model's errors come from three places, and each is turned into text here, in one module:

- the connection to `browser-operator serve` (unreachable, wrong token, no browser, timeouts):
  a fixed phrase each;
- the extension's own error messages, which are written for agents and may quote the address or
  the file they are about: the failures a driver knows (a tab outside the group, an address the
  boundary or the URL policy refused, a load that failed, a dialog in the way, a member the
  extension is too old for) become fixed phrases, and anything else is passed on with every URL
  and path replaced by a placeholder and the protocol's tool names replaced by the SDK's members;
- the driver's own checks (a bad `tab_id`, an unreadable upload): fixed phrases.

The rule (the same expressions as the TypeScript driver's `scrub`): every `scheme://…` and every
`about:` / `data:` / `javascript:` / `blob:` / `mailto:` / `file:` / `view-source:` / `chrome:` /
`chrome-extension:` / `devtools:` / `tel:` address becomes "a URL"; every IPv4 address and every host
name with a letter TLD (with its port and path) "an address"; every path that starts a token (`/a`,
`~/a`, `./a`, `../a`) and every Windows drive path "a path" (paths are replaced before host names, so
`/home/me/notes.txt` is "a path", not "a path address"). An unrecognised message reads
"The browser could not run <member>: <detail>", the detail cut to `MAX_DETAIL` characters.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from anthropic.tools import ToolError
from anthropic.tools.browser import TabMissingError

MAX_DETAIL = 400
"""The most of an unrecognised extension message the model reads, after `UNRECOGNISED`'s opening."""

NO_SERVER = "The Browser Operator server is not reachable, so nothing was done in the browser."
BAD_TOKEN = "The Browser Operator server refused this application's token, so nothing was done in the browser."
NO_BROWSER = "No browser is connected to the Browser Operator server, so nothing was done."
WHICH_BROWSER = (
    "Several browsers are connected to the Browser Operator server and this application did not say "
    "which one to use, so nothing was done."
)
UNKNOWN_BROWSER = "The browser this application uses is not connected to the Browser Operator server, so nothing was done."
BUSY = "The Browser Operator server has too many commands waiting; try again in a moment."
TIMEOUT = (
    "The browser did not answer in time; the action may or may not have happened. "
    "Take a screenshot to see where the page is."
)
TOO_LARGE = "The request was too large for the Browser Operator server (upload fewer or smaller files)."
SERVER_FAILED = "The Browser Operator server could not run the command."
BAD_ANSWER = "The browser's answer could not be read."
UNRECOGNISED = "The browser could not run {member}: {detail}"

TAB_ID_FORM = "tab_id must be a tab id from the browser_state report (digits only)."
NOT_SUPPORTED = (
    "The connected browser's Browser Operator extension cannot do {member}: it is older than this driver. "
    "Update the extension."
)
POLICY_UNAVAILABLE = (
    "The connected browser cannot enforce this application's URL policy (its Browser Operator extension "
    "is too old), so no action is run."
)
ADDRESS_REFUSED = "This address cannot be opened: {rule}."
URL_POLICY_REFUSED = "The browser's URL policy refused this address; it is not on a host this application allows."
LOAD_FAILED = "The page could not be loaded ({reason})."
PAGE_OUTSIDE = (
    "The tab shows a page outside what the browser may read or act on (a browser, extension or local-file "
    "page). Navigate it to a web page, or close it."
)
DIALOG_OPEN = (
    "A JavaScript {kind} dialog opened on the page again as soon as the last one was answered, so nothing was "
    "done. Try again, or close the tab if the page keeps opening dialogs."
)
STALE_REF = "That element reference is unknown or no longer on the page. Call read_page or find for current refs."
DIALOG_UNKNOWN = (
    "The page does not respond: most likely a JavaScript dialog opened while the browser was not watching "
    "the tab, so nothing was done."
)

UPLOAD_UNREADABLE = "A file to upload could not be read."
UPLOAD_TOO_LARGE = "The files to upload are too large (at most {mb} MB in total)."
UPLOAD_NOTHING = "file_upload needs paths or document_ids."
UPLOAD_NO_DOCUMENTS = "This driver was not given a way to fetch staged documents, so document_ids cannot be uploaded."
UPLOAD_DOCUMENT_FAILED = "A staged document could not be fetched."
ZOOM_REGION = "zoom needs region as four numbers [x0, y0, x1, y1]."

NEW_TAB_UNREADABLE = "The browser opened a tab but did not say which one. Call list_tabs to see the tabs."

DOWNLOAD_FAILED = "the download failed"
"""`download_failed.error` when the browser gave no reason a driver knows."""

# --- scrubbing (the same expressions as clients/typescript/src/errors.ts) ---------------------------------------

_URL_RE = re.compile(
    r"""\b(?:[a-z][a-z0-9+.-]*://[^\s"'<>]*"""
    r"""|(?:about|data|javascript|blob|mailto|file|view-source|chrome|chrome-extension|devtools|tel):[^\s"'<>)\],;.][^\s"'<>]*)""",
    re.I,
)
_IP_RE = re.compile(r"""\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/[^\s"'<>]*)?""")
# A host with a dot and a letter TLD, as in `example.com/path` or `www.example.org:8080`.
_HOST_RE = re.compile(r"""\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(?::\d+)?(?:/[^\s"'<>]*)?""", re.I)
# Unix paths (`/a/b`, `~/a`, `./a`) that start a token, and Windows paths (`C:\a`).
_PATH_RE = re.compile(r"""(?<![\w.:/])(?:~|\.{1,2})?/[^\s"'<>/][^\s"'<>]*|\b[a-z]:\\[^\s"'<>]*""", re.I)

# The protocol's tool names, as the SDK's members call them.
_TOOL_NAMES = (
    (re.compile(r"\btabs_context_mcp\b(?: with createIfEmpty: true)?"), "list_tabs"),
    (re.compile(r"\btabs_create_mcp\b"), "new_tab"),
    (re.compile(r"\btabs_close_mcp\b"), "close_tab"),
    (re.compile(r"\bjavascript_tool\b"), "javascript_exec"),
    (re.compile(r"\bread_console_messages\b"), "read_console"),
    (re.compile(r"\bread_network_requests\b"), "read_network"),
    (re.compile(r"`ref_id`|\bref_id\b"), "ref"),
)
# Advice about a tool the SDK has no member for.
_NO_MEMBER_ADVICE = re.compile(r"\s*\(?[^.()]*\bhandle_dialog\b[^.()]*[.)]?")


def scrub(text: str) -> str:
    """`text` with every URL, host name, IP address and file path replaced by a placeholder, and the protocol's tool
    names made the SDK's members."""
    text = _URL_RE.sub("a URL", text)
    text = _IP_RE.sub("an address", text)
    # Paths before host names: a file name such as secret.txt reads as a host, and would leave "a path address".
    text = _PATH_RE.sub("a path", text)
    text = _HOST_RE.sub("an address", text)
    for pattern, name in _TOOL_NAMES:
        text = pattern.sub(name, text)
    return _NO_MEMBER_ADVICE.sub("", text)


# --- the extension's failures a driver knows --------------------------------------------------------------------

_UNKNOWN_TOOL = re.compile(r"^Unknown tool: ")
_UNSUPPORTED_ACTION = re.compile(
    r"^Invalid argument `action`: (?:must be one of .*|\S+ is not supported)"
    r"|^Invalid argument `url`:.*\breload\b"
    r"|^Invalid argument `(?:files|paths)`"
)
_TAB_MISSING = re.compile(r"^Tab \S+ (?:does not exist|is not in the automation tab group)")
_ADDRESS_REFUSED = re.compile(r"^Cannot (?:navigate|go (?:back|forward)) to .*?Refused: (?P<rule>.+?)\.(?: [A-Z].*)?$", re.S)
_URL_POLICY = re.compile(r"URL policy", re.I)
_LOAD_FAILED = re.compile(r"^Navigation to .* failed: (?P<reason>net::[A-Z_]+|[A-Za-z ]+)\s*$", re.S)
_PAGE_OUTSIDE = re.compile(r"^Tab \d+ shows .*which no tool may read or act on", re.S)
_DIALOG = re.compile(r"A JavaScript (?P<kind>[a-z]+) dialog (?:is open|opened)")
_STALE_REF = re.compile(r"^(?:Unknown|Stale) ref ")
_DIALOG_UNKNOWN = re.compile(r"^Tab \d+ does not respond: most likely a JavaScript dialog")


def is_tab_missing(message: str) -> bool:
    """Whether the extension's `message` says the tab is not (or no longer) in the automation group."""
    return bool(_TAB_MISSING.match(message.strip()))


_BLOCKING_DIALOG = re.compile(
    r'A JavaScript (?P<kind>[a-z]+) dialog is open on tab \d+: "(?P<message>.*)"(?: \(default answer ".*"\))?\. '
    r"Answer it with handle_dialog",
    re.S,
)


def blocking_dialog(message: str) -> Optional[Tuple[str, str]]:
    """`(kind, text)` of the dialog the extension's `message` says is open and in the way (`("dialog", "")` for one
    whose text Chrome did not report), else `None`."""
    first = message.strip()
    if _DIALOG_UNKNOWN.match(first):
        return ("dialog", "")
    found = _BLOCKING_DIALOG.search(first)
    return (found.group("kind"), found.group("message")) if found else None


def extension_error(message: str, member: str) -> ToolError:
    """The refusal the model reads for the extension's error `message` on a call of `member`."""
    first = message.strip()
    if _TAB_MISSING.match(first):
        return TabMissingError()
    return ToolError(_extension_phrase(first, member))


def _extension_phrase(first: str, member: str) -> str:
    if _UNKNOWN_TOOL.match(first) or _UNSUPPORTED_ACTION.match(first):
        return NOT_SUPPORTED.format(member=member)
    if _URL_POLICY.search(first):
        return URL_POLICY_REFUSED
    refused = _ADDRESS_REFUSED.match(first)
    if refused:
        return ADDRESS_REFUSED.format(rule=scrub(refused.group("rule")).strip())
    if _PAGE_OUTSIDE.match(first):
        return PAGE_OUTSIDE
    if _STALE_REF.match(first):
        return STALE_REF
    failed = _LOAD_FAILED.match(first)
    if failed:
        return LOAD_FAILED.format(reason=failed.group("reason").strip())
    if _DIALOG_UNKNOWN.match(first):
        return DIALOG_UNKNOWN
    dialog = _DIALOG.search(first)
    if dialog and ("handle_dialog" in first):
        return DIALOG_OPEN.format(kind=dialog.group("kind"))
    detail = scrub(" ".join(first.split())).strip()
    if len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL] + "…"
    return UNRECOGNISED.format(member=member, detail=detail or "no reason given")


_CHROME_INTERRUPT = re.compile(r"^[A-Z][A-Z_]+$")


def download_error(error: object) -> str:
    """`download_failed.error` as the model reads it: Chrome's interrupt reason (`NETWORK_FAILED`, `USER_CANCELED`)
    in words, else a fixed phrase."""
    if isinstance(error, str) and _CHROME_INTERRUPT.match(error):
        return error.lower().replace("_", " ")
    return DOWNLOAD_FAILED
