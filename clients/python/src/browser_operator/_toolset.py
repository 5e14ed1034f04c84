"""The two toolsets: `BrowserOperatorToolset` (for `Anthropic`) and `AsyncBrowserOperatorToolset` (for
`AsyncAnthropic`), the SDK's abstract browser toolsets served by `browser-operator serve` and the extension.

Every member runs its plan (`_plans.py`): the SDK has already run its `url_policy`, `file_policy` and `confirm`
before a member is called, and calls `_browser_state` after each call, failed and refused ones included.
"""

from __future__ import annotations

from typing import Any, List, Callable, Optional, Sequence

import anyio.to_thread
from anthropic.tools import ToolError, ToolsetConfigError
from anthropic.tools.browser import (
    BetaBrowserState,
    BetaScreenshotResult,
    BetaToolsetCallContext,
    BetaBrowserNavigateResult,
    BetaAbstractBrowserToolset20260801,
    BetaAsyncAbstractBrowserToolset20260801,
)
from anthropic.types.beta import (
    BetaBrowserKeyInput,
    BetaBrowserFindInput,
    BetaBrowserTypeInput,
    BetaBrowserWaitInput,
    BetaBrowserZoomInput,
    BetaBrowserHoverInput,
    BetaBrowserNewTabInput,
    BetaBrowserScrollInput,
    BetaBrowserHoldKeyInput,
    BetaBrowserCloseTabInput,
    BetaBrowserListTabsInput,
    BetaBrowserNavigateInput,
    BetaBrowserReadPageInput,
    BetaBrowserScrollToInput,
    BetaBrowserFormInputInput,
    BetaBrowserLeftClickInput,
    BetaBrowserMouseMoveInput,
    BetaBrowserSwitchTabInput,
    BetaBrowserFileUploadInput,
    BetaBrowserRightClickInput,
    BetaBrowserScreenshotInput,
    BetaBrowserDoubleClickInput,
    BetaBrowserGetPageTextInput,
    BetaBrowserLeftMouseUpInput,
    BetaBrowserMiddleClickInput,
    BetaBrowserReadConsoleInput,
    BetaBrowserReadNetworkInput,
    BetaBrowserTripleClickInput,
    BetaBrowserLeftClickDragInput,
    BetaBrowserLeftMouseDownInput,
    BetaBrowserStateTabEntryParam,
    BetaBrowserJavascriptExecInput,
)

from . import _phrases as phrases
from ._wire import DEFAULT_URL, COMMAND_WAIT_S, AsyncWire, SyncWire, ServerError, CommandFailed, check_url, resolve_token
from ._plans import DIALOG_POLICIES, Core, Plan, Local, Options, UploadFile

__all__ = ["BrowserOperatorToolset", "AsyncBrowserOperatorToolset"]

Context = BetaToolsetCallContext


def driver_options(
    *,
    allowed_hosts: Optional[Sequence[str]],
    blocked_hosts: Sequence[str],
    dialogs: str,
    download_paths: Optional[bool],
    browser_shares_files: bool,
    documents: Optional[Callable[[str], UploadFile]],
    file_policy: object,
) -> Options:
    def hosts(name: str, value: Sequence[str]) -> List[str]:
        if isinstance(value, (str, bytes)) or not all(isinstance(h, str) and h.strip() for h in value):
            raise ToolsetConfigError(f"{name} must be a list of host names, e.g. [\"example.com\"]")
        return [h.strip() for h in value]

    if dialogs not in DIALOG_POLICIES:
        raise ToolsetConfigError(
            f"dialogs must be one of {DIALOG_POLICIES!r}: no member answers a dialog, so the browser must"
        )
    if download_paths is None:
        # Asked of the browser only where the SDK's file policy may show them.
        download_paths = getattr(file_policy, "expose_download_paths", False) is True
    return Options(
        allowed_hosts=None if allowed_hosts is None else hosts("allowed_hosts", allowed_hosts),
        blocked_hosts=hosts("blocked_hosts", blocked_hosts),
        dialogs=dialogs,
        download_paths=download_paths is True,
        browser_shares_files=browser_shares_files is True,
        documents=documents,
    )


def model_error(exc: Exception, member: str) -> ToolError:
    """A failure out of a plan as the refusal the model reads."""
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, ServerError):
        return ToolError(exc.phrase)
    if isinstance(exc, CommandFailed):
        return phrases.extension_error(exc.message, member)
    raise exc


_OPTIONS_DOC = """
    Args:
        url: The server's HTTP address (`browser-operator serve` listens on http://127.0.0.1:8787 by default).
        token: The server's token; default `$BROWSER_OPERATOR_TOKEN`, then the server's token file
            (`$BROWSER_OPERATOR_CONFIG_DIR/token`, else `~/.config/browser-operator/token`).
        target: Which connected browser to drive, when several are (the target it connected with).
        allowed_hosts: Hosts the browser may load pages from (`example.com`: it and its subdomains;
            `*.example.com`: subdomains only). Enforced in the browser for every navigation (the model's, a
            redirect, a link, a page's script), before its request leaves. `None`: every web host. `[]`: none.
        blocked_hosts: Hosts the browser refuses, in the same form.
        dialogs: `"dismiss"` (default) or `"accept"`: how the browser answers a page's JavaScript dialog at once
            (no member answers one); each is reported to the model.
        download_paths: Whether the browser reports a finished download's path (the SDK's `file_policy` still
            decides whether the model sees it). Default: what the file policy's `expose_download_paths` says.
        browser_shares_files: `file_upload` sends the paths the file policy admitted for the browser to read,
            instead of the files' bytes; only for a browser on this machine's filesystem.
        documents: `(document_id) -> UploadFile`, the bytes of a staged document the file policy admitted.
        timeout: Seconds a command may take before the model is told the browser did not answer.
        **options: The SDK's own: `configs`, `confirm`, `url_policy`, `file_policy`, `tool_configs`.
"""


class _Setup:
    """What both toolsets do at construction."""

    _core: Core

    def _setup(self, url: str, token: Optional[str], target: Optional[str], timeout: float, **ours: Any) -> Any:
        self._core = Core(driver_options(**ours))
        if target is not None and (not isinstance(target, str) or not target.strip()):
            raise ToolsetConfigError("target must be a non-empty string")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ToolsetConfigError("timeout must be a positive number of seconds")
        return check_url(url), resolve_token(token), target, float(timeout)


class BrowserOperatorToolset(_Setup, BetaAbstractBrowserToolset20260801):
    """Claude's browser toolset (`browser_toolset_20260801`) in the user's own Chrome, through Browser Operator.

    Pass it in `tools` of `client.beta.messages.tool_runner(...)` (or answer each browser `tool_use` with
    `tool_result(tool_use)`). It serves every member; `file_upload`, `read_console`, `read_network` and
    `javascript_exec` stay off unless `configs` enables them (and `javascript_exec` and `file_upload` need a
    `confirm`). Close it (or use `with`) when done.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: Optional[str] = None,
        target: Optional[str] = None,
        *,
        allowed_hosts: Optional[Sequence[str]] = None,
        blocked_hosts: Sequence[str] = (),
        dialogs: str = "dismiss",
        download_paths: Optional[bool] = None,
        browser_shares_files: bool = False,
        documents: Optional[Callable[[str], UploadFile]] = None,
        timeout: float = COMMAND_WAIT_S,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        wire = self._setup(
            url,
            token,
            target,
            timeout,
            allowed_hosts=allowed_hosts,
            blocked_hosts=blocked_hosts,
            dialogs=dialogs,
            download_paths=download_paths,
            browser_shares_files=browser_shares_files,
            documents=documents,
            file_policy=options.get("file_policy"),
        )
        self._wire = SyncWire(*wire)

    __init__.__doc__ = "A toolset that drives the browser connected to `browser-operator serve` at `url`.\n" + _OPTIONS_DOC

    def _run(self, member: str, plan: Plan) -> Any:
        try:
            step = next(plan)
            while True:
                try:
                    value = step.run() if isinstance(step, Local) else self._wire.run(step)
                except Exception as exc:
                    step = plan.throw(exc)
                else:
                    step = plan.send(value)
        except StopIteration as done:
            return done.value
        except Exception as exc:
            raise model_error(exc, member) from None

    def close(self) -> None:
        super().close()  # first: it waits for the calls in flight
        self._wire.close()

    def _browser_state(self, context: Context) -> BetaBrowserState:
        return self._run("browser_state", self._core.report())

    def navigate(self, context: Context, input: BetaBrowserNavigateInput) -> BetaBrowserNavigateResult:
        return self._run("navigate", self._core.navigate(input))

    def screenshot(self, context: Context, input: BetaBrowserScreenshotInput) -> BetaScreenshotResult:
        return self._run("screenshot", self._core.screenshot(input))

    def zoom(self, context: Context, input: BetaBrowserZoomInput) -> BetaScreenshotResult:
        return self._run("zoom", self._core.zoom(input))

    def left_click(self, context: Context, input: BetaBrowserLeftClickInput) -> None:
        return self._run("left_click", self._core.click("left_click", input))

    def right_click(self, context: Context, input: BetaBrowserRightClickInput) -> None:
        return self._run("right_click", self._core.click("right_click", input))

    def middle_click(self, context: Context, input: BetaBrowserMiddleClickInput) -> None:
        return self._run("middle_click", self._core.click("middle_click", input))

    def double_click(self, context: Context, input: BetaBrowserDoubleClickInput) -> None:
        return self._run("double_click", self._core.click("double_click", input))

    def triple_click(self, context: Context, input: BetaBrowserTripleClickInput) -> None:
        return self._run("triple_click", self._core.click("triple_click", input))

    def hover(self, context: Context, input: BetaBrowserHoverInput) -> None:
        return self._run("hover", self._core.hover(input))

    def left_click_drag(self, context: Context, input: BetaBrowserLeftClickDragInput) -> None:
        return self._run("left_click_drag", self._core.left_click_drag(input))

    def left_mouse_down(self, context: Context, input: BetaBrowserLeftMouseDownInput) -> None:
        return self._run("left_mouse_down", self._core.pointer("left_mouse_down", input))

    def left_mouse_up(self, context: Context, input: BetaBrowserLeftMouseUpInput) -> None:
        return self._run("left_mouse_up", self._core.pointer("left_mouse_up", input))

    def mouse_move(self, context: Context, input: BetaBrowserMouseMoveInput) -> None:
        return self._run("mouse_move", self._core.pointer("mouse_move", input))

    def scroll(self, context: Context, input: BetaBrowserScrollInput) -> None:
        return self._run("scroll", self._core.scroll(input))

    def scroll_to(self, context: Context, input: BetaBrowserScrollToInput) -> None:
        return self._run("scroll_to", self._core.scroll_to(input))

    def type(self, context: Context, input: BetaBrowserTypeInput) -> None:
        return self._run("type", self._core.type(input))

    def key(self, context: Context, input: BetaBrowserKeyInput) -> None:
        return self._run("key", self._core.key(input))

    def hold_key(self, context: Context, input: BetaBrowserHoldKeyInput) -> None:
        return self._run("hold_key", self._core.hold_key(input))

    def wait(self, context: Context, input: BetaBrowserWaitInput) -> None:
        return self._run("wait", self._core.wait(input))

    def form_input(self, context: Context, input: BetaBrowserFormInputInput) -> None:
        return self._run("form_input", self._core.form_input(input))

    def read_page(self, context: Context, input: BetaBrowserReadPageInput) -> str:
        return self._run("read_page", self._core.read_page(input))

    def find(self, context: Context, input: BetaBrowserFindInput) -> str:
        return self._run("find", self._core.find(input))

    def get_page_text(self, context: Context, input: BetaBrowserGetPageTextInput) -> str:
        return self._run("get_page_text", self._core.get_page_text(input))

    def read_console(self, context: Context, input: BetaBrowserReadConsoleInput) -> str:
        return self._run("read_console", self._core.read_console(input))

    def read_network(self, context: Context, input: BetaBrowserReadNetworkInput) -> str:
        return self._run("read_network", self._core.read_network(input))

    def javascript_exec(self, context: Context, input: BetaBrowserJavascriptExecInput) -> str:
        return self._run("javascript_exec", self._core.javascript_exec(input))

    def file_upload(self, context: Context, input: BetaBrowserFileUploadInput) -> None:
        return self._run("file_upload", self._core.file_upload(input))

    def new_tab(self, context: Context, input: BetaBrowserNewTabInput) -> BetaBrowserStateTabEntryParam:
        return self._run("new_tab", self._core.new_tab())

    def list_tabs(self, context: Context, input: BetaBrowserListTabsInput) -> List[BetaBrowserStateTabEntryParam]:
        return self._run("list_tabs", self._core.list_tabs())

    def switch_tab(self, context: Context, input: BetaBrowserSwitchTabInput) -> BetaBrowserStateTabEntryParam:
        return self._run("switch_tab", self._core.switch_tab(input))

    def close_tab(self, context: Context, input: BetaBrowserCloseTabInput) -> None:
        return self._run("close_tab", self._core.close_tab(input))


class AsyncBrowserOperatorToolset(_Setup, BetaAsyncAbstractBrowserToolset20260801):
    """`BrowserOperatorToolset` for `AsyncAnthropic`: the same members, awaited. Close it with `await close()` (or
    `async with`)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: Optional[str] = None,
        target: Optional[str] = None,
        *,
        allowed_hosts: Optional[Sequence[str]] = None,
        blocked_hosts: Sequence[str] = (),
        dialogs: str = "dismiss",
        download_paths: Optional[bool] = None,
        browser_shares_files: bool = False,
        documents: Optional[Callable[[str], UploadFile]] = None,
        timeout: float = COMMAND_WAIT_S,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        wire = self._setup(
            url,
            token,
            target,
            timeout,
            allowed_hosts=allowed_hosts,
            blocked_hosts=blocked_hosts,
            dialogs=dialogs,
            download_paths=download_paths,
            browser_shares_files=browser_shares_files,
            documents=documents,
            file_policy=options.get("file_policy"),
        )
        self._wire = AsyncWire(*wire)

    __init__.__doc__ = BrowserOperatorToolset.__init__.__doc__

    async def _run(self, member: str, plan: Plan) -> Any:
        try:
            step = next(plan)
            while True:
                try:
                    if isinstance(step, Local):
                        value = await anyio.to_thread.run_sync(step.run)
                    else:
                        value = await self._wire.run(step)
                except Exception as exc:
                    step = plan.throw(exc)
                else:
                    step = plan.send(value)
        except StopIteration as done:
            return done.value
        except Exception as exc:
            raise model_error(exc, member) from None

    async def close(self) -> None:
        await super().close()
        await self._wire.close()

    async def _browser_state(self, context: Context) -> BetaBrowserState:
        return await self._run("browser_state", self._core.report())

    async def navigate(self, context: Context, input: BetaBrowserNavigateInput) -> BetaBrowserNavigateResult:
        return await self._run("navigate", self._core.navigate(input))

    async def screenshot(self, context: Context, input: BetaBrowserScreenshotInput) -> BetaScreenshotResult:
        return await self._run("screenshot", self._core.screenshot(input))

    async def zoom(self, context: Context, input: BetaBrowserZoomInput) -> BetaScreenshotResult:
        return await self._run("zoom", self._core.zoom(input))

    async def left_click(self, context: Context, input: BetaBrowserLeftClickInput) -> None:
        return await self._run("left_click", self._core.click("left_click", input))

    async def right_click(self, context: Context, input: BetaBrowserRightClickInput) -> None:
        return await self._run("right_click", self._core.click("right_click", input))

    async def middle_click(self, context: Context, input: BetaBrowserMiddleClickInput) -> None:
        return await self._run("middle_click", self._core.click("middle_click", input))

    async def double_click(self, context: Context, input: BetaBrowserDoubleClickInput) -> None:
        return await self._run("double_click", self._core.click("double_click", input))

    async def triple_click(self, context: Context, input: BetaBrowserTripleClickInput) -> None:
        return await self._run("triple_click", self._core.click("triple_click", input))

    async def hover(self, context: Context, input: BetaBrowserHoverInput) -> None:
        return await self._run("hover", self._core.hover(input))

    async def left_click_drag(self, context: Context, input: BetaBrowserLeftClickDragInput) -> None:
        return await self._run("left_click_drag", self._core.left_click_drag(input))

    async def left_mouse_down(self, context: Context, input: BetaBrowserLeftMouseDownInput) -> None:
        return await self._run("left_mouse_down", self._core.pointer("left_mouse_down", input))

    async def left_mouse_up(self, context: Context, input: BetaBrowserLeftMouseUpInput) -> None:
        return await self._run("left_mouse_up", self._core.pointer("left_mouse_up", input))

    async def mouse_move(self, context: Context, input: BetaBrowserMouseMoveInput) -> None:
        return await self._run("mouse_move", self._core.pointer("mouse_move", input))

    async def scroll(self, context: Context, input: BetaBrowserScrollInput) -> None:
        return await self._run("scroll", self._core.scroll(input))

    async def scroll_to(self, context: Context, input: BetaBrowserScrollToInput) -> None:
        return await self._run("scroll_to", self._core.scroll_to(input))

    async def type(self, context: Context, input: BetaBrowserTypeInput) -> None:
        return await self._run("type", self._core.type(input))

    async def key(self, context: Context, input: BetaBrowserKeyInput) -> None:
        return await self._run("key", self._core.key(input))

    async def hold_key(self, context: Context, input: BetaBrowserHoldKeyInput) -> None:
        return await self._run("hold_key", self._core.hold_key(input))

    async def wait(self, context: Context, input: BetaBrowserWaitInput) -> None:
        return await self._run("wait", self._core.wait(input))

    async def form_input(self, context: Context, input: BetaBrowserFormInputInput) -> None:
        return await self._run("form_input", self._core.form_input(input))

    async def read_page(self, context: Context, input: BetaBrowserReadPageInput) -> str:
        return await self._run("read_page", self._core.read_page(input))

    async def find(self, context: Context, input: BetaBrowserFindInput) -> str:
        return await self._run("find", self._core.find(input))

    async def get_page_text(self, context: Context, input: BetaBrowserGetPageTextInput) -> str:
        return await self._run("get_page_text", self._core.get_page_text(input))

    async def read_console(self, context: Context, input: BetaBrowserReadConsoleInput) -> str:
        return await self._run("read_console", self._core.read_console(input))

    async def read_network(self, context: Context, input: BetaBrowserReadNetworkInput) -> str:
        return await self._run("read_network", self._core.read_network(input))

    async def javascript_exec(self, context: Context, input: BetaBrowserJavascriptExecInput) -> str:
        return await self._run("javascript_exec", self._core.javascript_exec(input))

    async def file_upload(self, context: Context, input: BetaBrowserFileUploadInput) -> None:
        return await self._run("file_upload", self._core.file_upload(input))

    async def new_tab(self, context: Context, input: BetaBrowserNewTabInput) -> BetaBrowserStateTabEntryParam:
        return await self._run("new_tab", self._core.new_tab())

    async def list_tabs(
        self, context: Context, input: BetaBrowserListTabsInput
    ) -> List[BetaBrowserStateTabEntryParam]:
        return await self._run("list_tabs", self._core.list_tabs())

    async def switch_tab(self, context: Context, input: BetaBrowserSwitchTabInput) -> BetaBrowserStateTabEntryParam:
        return await self._run("switch_tab", self._core.switch_tab(input))

    async def close_tab(self, context: Context, input: BetaBrowserCloseTabInput) -> None:
        return await self._run("close_tab", self._core.close_tab(input))
