"""Each member as a plan: the commands it sends to the extension and what it makes of the answers.

A plan is a generator. It yields a `Command` (or a `Local` step: work on this machine, such as reading a file to
upload), receives the command's content (or the step's value), and returns the member's result. A failure is thrown
into it (`CommandFailed`, `ServerError`), so a plan that can recover does so where it waits. The synchronous and
asynchronous toolsets drive the same plans (`_toolset.py`), so the two cannot drift apart.

`Core` holds what outlives a call: the tabs and the active tab of the last `browser_state` report, changes a peek
drained before the SDK asked for its report, and whether the browser-side policy was sent.
"""

from __future__ import annotations

import re
import json
import base64
import logging
import mimetypes
import os
from typing import Any, Dict, List, Callable, Optional, Generator, Sequence
from dataclasses import dataclass, field

from anthropic.tools import ToolError
from anthropic.tools.browser import (
    TabMissingError,
    BetaBrowserState,
    BetaDialogDismissed,
    BetaScreenshotResult,
    BetaNavigationRefused,
    BetaBrowserNavigateResult,
)
from anthropic.types.beta import (
    BetaBrowserKeyInput,
    BetaBrowserFindInput,
    BetaBrowserTypeInput,
    BetaBrowserWaitInput,
    BetaBrowserZoomInput,
    BetaBrowserHoverInput,
    BetaBrowserScrollInput,
    BetaBrowserHoldKeyInput,
    BetaBrowserCloseTabInput,
    BetaBrowserNavigateInput,
    BetaBrowserReadPageInput,
    BetaBrowserScrollToInput,
    BetaBrowserFormInputInput,
    BetaBrowserMouseMoveInput,
    BetaBrowserSwitchTabInput,
    BetaBrowserFileUploadInput,
    BetaBrowserScreenshotInput,
    BetaBrowserGetPageTextInput,
    BetaBrowserLeftMouseUpInput,
    BetaBrowserReadConsoleInput,
    BetaBrowserReadNetworkInput,
    BetaBrowserLeftClickDragInput,
    BetaBrowserLeftMouseDownInput,
    BetaBrowserStateTabEntryParam,
    BetaBrowserJavascriptExecInput,
)

from . import _phrases as phrases
from ._wire import Command, Content, ServerError, CommandFailed

log = logging.getLogger("browser_operator")

MAX_TEXT = 100_000
"""The most text a reading member (get_page_text, read_console, …) returns: the SDK sends it uncut."""

MAX_UPLOAD_BYTES = 16 << 20
"""The most file bytes one `file_upload` sends (before base64): the command carries them."""

DIALOG_POLICIES = ("dismiss", "accept")


@dataclass(frozen=True)
class UploadFile:
    """A file for `file_upload`, as a `documents` resolver returns it for a staged document id."""

    name: str
    data: bytes
    mime_type: Optional[str] = None


@dataclass(frozen=True)
class Local:
    """Work a plan needs done on this machine (reading files): the async toolset runs it off the event loop."""

    run: Callable[[], Any]


Step = Any  # Command | Local
Plan = Generator[Step, Any, Any]


@dataclass
class Options:
    """The driver's own options: the policy the browser enforces, and how uploads reach it."""

    allowed_hosts: Optional[List[str]] = None
    blocked_hosts: List[str] = field(default_factory=list)
    dialogs: str = "dismiss"
    download_paths: bool = False
    browser_shares_files: bool = False
    documents: Optional[Callable[[str], UploadFile]] = None

    @property
    def policy(self) -> Dict[str, Any]:
        """The `set_policy` arguments."""
        return {
            "allowedHosts": self.allowed_hosts,
            "blockedHosts": self.blocked_hosts,
            "dialogs": self.dialogs,
            "downloadPaths": self.download_paths,
        }

    @property
    def restricts_hosts(self) -> bool:
        return self.allowed_hosts is not None or bool(self.blocked_hosts)


# --- reading answers --------------------------------------------------------------------------------------------


def text_of(content: Content) -> str:
    return "\n".join(block["text"] for block in content if block.get("type") == "text" and isinstance(block.get("text"), str))


def bounded(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… (cut at {MAX_TEXT} characters)"


def first_json(text: str) -> Any:
    """The JSON object on the first line of `text` that holds one (tabs_context_mcp, browser_state)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ServerError(phrases.BAD_ANSWER)


def tab_entry(raw: Any) -> Optional[BetaBrowserStateTabEntryParam]:
    if not isinstance(raw, dict) or not isinstance(raw.get("tabId"), int):
        return None
    title, url = raw.get("title"), raw.get("url")
    return {
        "tab_id": str(raw["tabId"]),
        "title": title if isinstance(title, str) else "",
        "url": url if isinstance(url, str) else "",
        "active": raw.get("active") is True,
    }


def one_active(tabs: List[BetaBrowserStateTabEntryParam], fallback: Optional[str]) -> List[BetaBrowserStateTabEntryParam]:
    """`tabs` with exactly one active when any is open (the API's rule): the extension's mark, else `fallback`, else
    the first tab."""
    active = [tab["tab_id"] for tab in tabs if tab.get("active")]
    if len(active) == 1 or not tabs:
        return tabs
    keep = active[0] if active else (fallback if any(t["tab_id"] == fallback for t in tabs) else tabs[0]["tab_id"])
    log.warning("the browser reported %d active tabs; reporting tab %s as the active one", len(active), keep)
    return [{**tab, "active": tab["tab_id"] == keep} for tab in tabs]


def change_of(raw: Any) -> Any:
    """One of the extension's changes as the SDK's state change, or `None` for a kind it does not know."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind == "tab_opened" and isinstance(raw.get("tabId"), int):
        return {"type": "tab_opened", "tab_id": str(raw["tabId"])}
    if kind in ("download_started", "download_completed", "download_failed"):
        download_id, url = raw.get("downloadId"), raw.get("url")
        if not isinstance(download_id, (str, int)):
            return None
        change: Dict[str, Any] = {"type": kind, "download_id": str(download_id), "url": url if isinstance(url, str) else ""}
        if kind == "download_completed":
            if isinstance(raw.get("sizeBytes"), int):
                change["size_bytes"] = raw["sizeBytes"]
            if isinstance(raw.get("path"), str):
                change["path"] = raw["path"]  # the SDK shows it only where the file policy exposes it
        if kind == "download_failed":
            change["error"] = phrases.download_error(raw.get("error"))
        return change
    if kind == "dialog_dismissed":
        message = raw.get("message")
        return BetaDialogDismissed(kind=str(raw.get("kind") or "dialog"), message=message if isinstance(message, str) else "")
    if kind == "navigation_refused":
        return BetaNavigationRefused()
    return None


def target_args(target: Any) -> Dict[str, Any]:
    """A click target as the computer tool takes it: `coordinate` or `ref`."""
    if getattr(target, "type", None) == "ref":
        return {"ref": target.ref}
    return {"coordinate": [target.x, target.y]}


def coordinate(target: Any) -> List[int]:
    return [target.x, target.y]


READ_PAGE_FILTER = {None: "visible", "all": "all", "interactive": "interactive"}
"""The SDK's `filter` on our read_page: omitted (every visible element) is ours "visible" (what lies in the viewport);
"interactive" and "all" (off-viewport elements too) are ours."""


def navigation_of(text: str) -> BetaBrowserNavigateResult:
    """Our navigate's answer: `Navigated to <url>` (the tab's URL after redirects), then `HTTP status: <n>` for a
    load of an http(s) document and `Title: <title>` when the page has one, each on its own line."""
    landed = re.search(r"^Navigated to (\S*)", text, re.M)
    status = re.search(r"^HTTP status: ([0-9]{3})$", text, re.M)
    title = re.search(r"^Title: (.+)$", text, re.M)
    return BetaBrowserNavigateResult(
        url=landed.group(1) if landed else "",
        status=int(status.group(1)) if status else None,
        title=title.group(1) if title else None,
    )


# --- the plans --------------------------------------------------------------------------------------------------


class Core:
    """The members' plans and what they share across calls."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.tabs: List[BetaBrowserStateTabEntryParam] = []
        self.active: Optional[str] = None
        self.held: List[Any] = []
        """Changes a peek at the state drained, for the next report the SDK asks for."""
        self.policy_sent = False

    # -- shared steps

    def command(self, tool: str, args: Dict[str, Any]) -> Plan:
        """One command; a lost connection means the policy is sent again before the next."""
        try:
            content = yield Command(tool, args)
        except ServerError as exc:
            if exc.reconnect:
                self.policy_sent = False
            raise
        return content

    def ensure_policy(self) -> Plan:
        """The browser-side policy, sent before the first action (and again after the connection was lost)."""
        if self.policy_sent:
            return
        try:
            yield from self.command("set_policy", self.options.policy)
        except CommandFailed as exc:
            if not exc.message.startswith("Unknown tool"):
                raise
            if self.options.restricts_hosts:
                raise ToolError(phrases.POLICY_UNAVAILABLE) from None
            log.warning("the extension has no set_policy: dialogs wait for an answer and downloads are not reported")
        self.policy_sent = True

    def read_state(self) -> Plan:
        """`browser_state`: the tabs (remembered, with the active one) and the changes it drained."""
        content = yield from self.command("browser_state", {})
        doc = first_json(text_of(content))
        if not isinstance(doc, dict):
            raise ServerError(phrases.BAD_ANSWER)
        tabs = [entry for entry in map(tab_entry, doc.get("tabs") or []) if entry is not None]
        self.tabs = one_active(tabs, self.active)
        self.active = next((tab["tab_id"] for tab in self.tabs if tab.get("active")), None)
        changes = [change for change in map(change_of, doc.get("changes") or []) if change is not None]
        if doc.get("dropped"):
            log.warning("the browser dropped %s state changes before this report", doc.get("dropped"))
        if "policy" in doc and doc["policy"] is None and self.policy_sent:
            # The browser restarted and lost the policy (it lives in its session storage): it holds again before
            # anything else acts.
            log.warning("the browser holds no policy (it restarted?): sending it again")
            self.policy_sent = False
            yield from self.ensure_policy()
        return changes

    def peek(self) -> Plan:
        """The state now, inside a member: its changes are held for the SDK's report."""
        self.held.extend((yield from self.read_state()))

    def report(self) -> Plan:
        """`_browser_state`: never raises (a failure would stop the run). On failure the last known tabs are reported,
        and the browser keeps its changes for the next report."""
        try:
            changes = yield from self.read_state()
        except (ServerError, CommandFailed, ToolError) as exc:
            log.warning("browser_state failed (%s); reporting the last known tabs", exc)
            changes = []
        changes, self.held = [*self.held, *changes], []
        return BetaBrowserState(tabs=list(self.tabs), state_changes=changes)

    def tab(self, tab_id: Optional[str]) -> Plan:
        """The tab a call acts on: the one it names, else the active tab (the group's first tab is created when the
        group is empty)."""
        if tab_id:
            if not re.fullmatch(r"[0-9]{1,10}", tab_id):
                raise ToolError(phrases.TAB_ID_FORM)
            return int(tab_id)
        if self.active is None:
            yield from self.peek()
        if self.active is None:
            content = yield from self.command("tabs_context_mcp", {"createIfEmpty": True})
            tabs = first_json(text_of(content)).get("availableTabs") or []
            if not tabs or not isinstance(tabs[0].get("tabId"), int):
                raise TabMissingError()
            yield from self.peek()
            if self.active is None:
                self.active = str(tabs[0]["tabId"])
        return int(self.active)

    def on_tab(self, tab_id: Optional[str], tool: str, args: Dict[str, Any]) -> Plan:
        """The policy, the tab, then one command on it, sent once more after either of two failures a driver can
        mend: a dialog the browser left open (it answers a page's dialogs itself, but leaves one open when the page
        keeps reopening them, and no member answers it), which the driver answers as its `dialogs` policy says and
        reports; and, when the call named no tab, the active tab of the last report gone meanwhile (a person closed
        it), so the command goes to the tab active now."""
        yield from self.ensure_policy()
        tab = yield from self.tab(tab_id)
        try:
            return (yield from self.command(tool, {**args, "tabId": tab}))
        except CommandFailed as exc:
            failed = exc
        dialog = phrases.blocking_dialog(failed.message)
        if dialog is not None:
            if not (yield from self.answer_dialog(tab, *dialog)):
                raise failed
        elif not tab_id and phrases.is_tab_missing(failed.message):
            yield from self.peek()
            if self.active is None or int(self.active) == tab:
                raise failed
            tab = int(self.active)
        else:
            raise failed
        return (yield from self.command(tool, {**args, "tabId": tab}))

    def answer_dialog(self, tab: int, kind: str, message: str) -> Plan:
        """Answers the dialog open on `tab` (accepted only under `dialogs="accept"` and when its text is known), and
        holds its report for the next state. Whether it was answered."""
        accept = self.options.dialogs == "accept" and kind != "dialog"
        try:
            yield from self.command("handle_dialog", {"tabId": tab, "accept": accept})
        except CommandFailed:
            return False
        self.held.append(BetaDialogDismissed(kind=kind, message=message))
        return True

    def computer(self, tab_id: Optional[str], action: str, **args: Any) -> Plan:
        return (yield from self.on_tab(tab_id, "computer", {"action": action, **args}))

    # -- members

    def navigate(self, input: BetaBrowserNavigateInput) -> Plan:
        content = yield from self.on_tab(input.tab_id, "navigate", {"url": input.url})
        return navigation_of(text_of(content))

    def screenshot(self, input: BetaBrowserScreenshotInput) -> Plan:
        content = yield from self.computer(input.tab_id, "screenshot")
        return image_of(content)

    def zoom(self, input: BetaBrowserZoomInput) -> Plan:
        if len(input.region) != 4:
            raise ToolError(phrases.ZOOM_REGION)
        content = yield from self.computer(input.tab_id, "zoom", region=list(input.region))
        return image_of(content)

    def click(self, action: str, input: Any) -> Plan:
        args = target_args(input.target)
        if getattr(input, "modifiers", None):
            args["modifiers"] = input.modifiers
        yield from self.computer(input.tab_id, action, **args)

    def hover(self, input: BetaBrowserHoverInput) -> Plan:
        yield from self.computer(input.tab_id, "hover", **target_args(input.target))

    def left_click_drag(self, input: BetaBrowserLeftClickDragInput) -> Plan:
        yield from self.computer(
            input.tab_id, "left_click_drag", start_coordinate=coordinate(input.from_), coordinate=coordinate(input.target)
        )

    def pointer(
        self, action: str, input: BetaBrowserLeftMouseDownInput | BetaBrowserLeftMouseUpInput | BetaBrowserMouseMoveInput
    ) -> Plan:
        yield from self.computer(input.tab_id, action, coordinate=coordinate(input.target))

    def scroll(self, input: BetaBrowserScrollInput) -> Plan:
        args: Dict[str, Any] = {"coordinate": coordinate(input.target), "scroll_direction": input.scroll_direction}
        if input.scroll_amount is not None:
            args["scroll_amount"] = input.scroll_amount
        yield from self.computer(input.tab_id, "scroll", **args)

    def scroll_to(self, input: BetaBrowserScrollToInput) -> Plan:
        yield from self.computer(input.tab_id, "scroll_to", ref=input.target.ref)

    def type(self, input: BetaBrowserTypeInput) -> Plan:
        yield from self.computer(input.tab_id, "type", text=input.text)

    def key(self, input: BetaBrowserKeyInput) -> Plan:
        args: Dict[str, Any] = {"text": input.text}
        if input.repeat is not None:
            args["repeat"] = input.repeat
        yield from self.computer(input.tab_id, "key", **args)

    def hold_key(self, input: BetaBrowserHoldKeyInput) -> Plan:
        yield from self.computer(input.tab_id, "hold_key", text=input.text, duration=input.duration)

    def wait(self, input: BetaBrowserWaitInput) -> Plan:
        yield from self.computer(input.tab_id, "wait", duration=input.duration)

    def form_input(self, input: BetaBrowserFormInputInput) -> Plan:
        yield from self.on_tab(input.tab_id, "form_input", {"ref": input.target.ref, "value": input.value})

    def read_page(self, input: BetaBrowserReadPageInput) -> Plan:
        args: Dict[str, Any] = {"filter": READ_PAGE_FILTER.get(input.filter, "visible")}
        if input.depth is not None:
            args["depth"] = input.depth
        if input.ref:
            args["ref_id"] = input.ref
        return bounded(text_of((yield from self.on_tab(input.tab_id, "read_page", args))))

    def find(self, input: BetaBrowserFindInput) -> Plan:
        return bounded(text_of((yield from self.on_tab(input.tab_id, "find", {"query": input.query}))))

    def get_page_text(self, input: BetaBrowserGetPageTextInput) -> Plan:
        return bounded(text_of((yield from self.on_tab(input.tab_id, "get_page_text", {}))))

    def read_console(self, input: BetaBrowserReadConsoleInput) -> Plan:
        return bounded(text_of((yield from self.on_tab(input.tab_id, "read_console_messages", {"clear": True}))))

    def read_network(self, input: BetaBrowserReadNetworkInput) -> Plan:
        return bounded(text_of((yield from self.on_tab(input.tab_id, "read_network_requests", {"clear": True}))))

    def javascript_exec(self, input: BetaBrowserJavascriptExecInput) -> Plan:
        args = {"action": "javascript_exec", "text": input.text}
        return bounded(text_of((yield from self.on_tab(input.tab_id, "javascript_tool", args))))

    def file_upload(self, input: BetaBrowserFileUploadInput) -> Plan:
        paths, documents = list(input.paths or []), list(input.document_ids or [])
        if not paths and not documents:
            raise ToolError(phrases.UPLOAD_NOTHING)
        args: Dict[str, Any] = {"ref": input.target.ref}
        files: List[Dict[str, Any]] = []
        if paths and self.options.browser_shares_files:
            args["paths"] = paths  # already resolved by the SDK's file policy, on a filesystem the browser shares
        elif paths:
            files.extend((yield Local(lambda: read_files(paths))))
        if documents:
            resolver = self.options.documents
            if resolver is None:
                raise ToolError(phrases.UPLOAD_NO_DOCUMENTS)
            files.extend((yield Local(lambda: fetch_documents(resolver, documents))))
        if files:
            args["files"] = files
        yield from self.on_tab(input.tab_id, "file_upload", args)

    def new_tab(self) -> Plan:
        yield from self.ensure_policy()
        content = yield from self.command("tabs_create_mcp", {})
        text = text_of(content)
        match = re.search(r"Tab ID: (\d+)", text)
        if not match:
            raise ToolError(phrases.NEW_TAB_UNREADABLE)
        tab_id = match.group(1)
        self.active = tab_id
        listed = first_json(text[match.end() :]).get("availableTabs") or []
        for entry in map(tab_entry, listed):
            if entry is not None and entry["tab_id"] == tab_id:
                return {**entry, "active": True}
        return {"tab_id": tab_id, "title": "", "url": "", "active": True}

    def list_tabs(self) -> Plan:
        content = yield from self.command("tabs_context_mcp", {})
        text = text_of(content)
        if not text.lstrip().startswith("{"):
            return []  # no automation group yet
        listed = first_json(text).get("availableTabs") or []
        return one_active([entry for entry in map(tab_entry, listed) if entry is not None], self.active)

    def switch_tab(self, input: BetaBrowserSwitchTabInput) -> Plan:
        yield from self.ensure_policy()
        tab = yield from self.tab(input.tab_id)
        yield from self.command("switch_tab", {"tabId": tab})
        self.active = str(tab)
        known = next((entry for entry in self.tabs if entry["tab_id"] == str(tab)), None)
        base = known if known is not None else {"tab_id": str(tab), "title": "", "url": ""}
        return {**base, "active": True}

    def close_tab(self, input: BetaBrowserCloseTabInput) -> Plan:
        tab = yield from self.tab(input.tab_id)
        yield from self.command("tabs_close_mcp", {"tabId": tab})
        if self.active == str(tab):
            self.active = None


def image_of(content: Content) -> BetaScreenshotResult:
    for block in content:
        if block.get("type") == "image" and isinstance(block.get("data"), str):
            mime = block.get("mimeType")
            media_type = mime if mime in ("image/png", "image/jpeg", "image/gif", "image/webp") else "image/png"
            return BetaScreenshotResult(data=block["data"], media_type=media_type)
    raise ServerError(phrases.BAD_ANSWER)


def read_files(paths: Sequence[str]) -> List[Dict[str, Any]]:
    """The files the SDK's file policy admitted, as the command carries them. The messages name no path."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            raise ToolError(phrases.UPLOAD_UNREADABLE) from None
    if total > MAX_UPLOAD_BYTES:
        raise ToolError(phrases.UPLOAD_TOO_LARGE.format(mb=MAX_UPLOAD_BYTES >> 20))
    files, read = [], 0
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_UPLOAD_BYTES + 1 - read)
        except OSError:
            raise ToolError(phrases.UPLOAD_UNREADABLE) from None
        read += len(data)
        if read > MAX_UPLOAD_BYTES:  # a file grew since it was measured
            raise ToolError(phrases.UPLOAD_TOO_LARGE.format(mb=MAX_UPLOAD_BYTES >> 20))
        files.append(upload_entry(os.path.basename(path), data, None))
    return files


def fetch_documents(resolver: Callable[[str], UploadFile], ids: Sequence[str]) -> List[Dict[str, Any]]:
    files, total = [], 0
    for document_id in ids:
        try:
            document = resolver(document_id)
        except ToolError:
            raise
        except Exception:
            log.exception("the documents resolver failed")
            raise ToolError(phrases.UPLOAD_DOCUMENT_FAILED) from None
        if not isinstance(document, UploadFile):
            raise ToolError(phrases.UPLOAD_DOCUMENT_FAILED)
        total += len(document.data)
        if total > MAX_UPLOAD_BYTES:
            raise ToolError(phrases.UPLOAD_TOO_LARGE.format(mb=MAX_UPLOAD_BYTES >> 20))
        files.append(upload_entry(document.name, document.data, document.mime_type))
    return files


def upload_entry(name: str, data: bytes, mime_type: Optional[str]) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"name": name, "data": base64.b64encode(data).decode("ascii")}
    mime = mime_type or mimetypes.guess_type(name)[0]
    if mime:
        entry["mimeType"] = mime
    return entry
