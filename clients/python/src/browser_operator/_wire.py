"""The connection to `browser-operator serve`: its URL and token, and one command over `POST /commands`.

A command is `{"tool", "args", "target"?}`; the server answers `{"commandId", "result": {"content": [...]}}` or
`{"commandId", "error": "..."}` once the browser has run it, or an HTTP error of its own (no browser, wrong token,
its wait bound). Those HTTP failures become `ServerError` with a fixed phrase; the browser's own error becomes
`CommandFailed` with the extension's message, which the toolset turns into the model's phrase.
"""

from __future__ import annotations

import os
import json
from typing import Any, Dict, List, Mapping, Optional
from pathlib import Path
from dataclasses import dataclass

import httpx2
from anthropic.tools import ToolsetConfigError

from . import _phrases as phrases

__all__ = ["Command", "CommandFailed", "ServerError", "SyncWire", "AsyncWire", "resolve_token", "token_file"]

DEFAULT_URL = "http://127.0.0.1:8787"
TOKEN_ENV = "BROWSER_OPERATOR_TOKEN"
CONFIG_DIR_ENV = "BROWSER_OPERATOR_CONFIG_DIR"

COMMAND_WAIT_S = 150.0
"""How long a command may take: the server's own bound (130 s: the extension's 120 s plus delivery) and a margin, so
the server, not this client, says when a browser did not answer."""

Content = List[Dict[str, Any]]


@dataclass(frozen=True)
class Command:
    """One tool call for the browser."""

    tool: str
    args: Mapping[str, Any]


class CommandFailed(Exception):
    """The browser ran the command and answered with an error (the extension's message, not yet for the model)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ServerError(Exception):
    """The command did not get a browser's answer: `phrase` is what the model reads. `reconnect` is true when the
    browser may have connected again since (no browser, no server), so the browser-side policy must be sent
    again."""

    def __init__(self, phrase: str, *, reconnect: bool = False) -> None:
        super().__init__(phrase)
        self.phrase = phrase
        self.reconnect = reconnect


def token_file(env: Mapping[str, str] = os.environ) -> Optional[Path]:
    """Where `browser-operator serve` keeps its token: `$BROWSER_OPERATOR_CONFIG_DIR/token`, else
    `$XDG_CONFIG_HOME/browser-operator/token`, else `~/.config/browser-operator/token` (`None` without a home)."""
    config = env.get(CONFIG_DIR_ENV)
    if config:
        return Path(config) / "token"
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "browser-operator" / "token"
    home = env.get("HOME")
    if home and os.path.isabs(home):
        return Path(home) / ".config" / "browser-operator" / "token"
    return None


def resolve_token(token: Optional[str], env: Mapping[str, str] = os.environ) -> str:
    """`token`, else `$BROWSER_OPERATOR_TOKEN`, else the server's token file: the order the server itself reads them."""
    if token is None:
        token = env.get(TOKEN_ENV) or None
    if token is None:
        path = token_file(env)
        if path is None:
            raise ToolsetConfigError(f"no token: pass token=, set {TOKEN_ENV}, or set HOME so the token file is found")
        try:
            token = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ToolsetConfigError(
                f"no token: pass token=, set {TOKEN_ENV}, or start `browser-operator serve` once (it writes {path})"
            ) from None
        except OSError as exc:
            raise ToolsetConfigError(f"the token file {path} cannot be read: {exc.strerror}") from None
    token = token.strip()
    if not token or any(c.isspace() or ord(c) < 32 for c in token):
        raise ToolsetConfigError("the token is empty or contains spaces or control characters")
    return token


def check_url(url: str) -> str:
    """The server's base URL, as `http(s)://host:port` (a trailing slash dropped)."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ToolsetConfigError(
            "url must be the server's http(s) address, e.g. http://127.0.0.1:8787 (not the ws:// URL the extension uses)"
        )
    return url.rstrip("/")


def body(command: Command, target: Optional[str]) -> Dict[str, Any]:
    request: Dict[str, Any] = {"tool": command.tool, "args": dict(command.args)}
    if target is not None:
        request["target"] = target
    return request


def answer(response: httpx2.Response) -> Content:
    """The content of the browser's answer, or the failure it is."""
    status = response.status_code
    if status == 200:
        try:
            reply = response.json()
        except (ValueError, json.JSONDecodeError):
            raise ServerError(phrases.BAD_ANSWER) from None
        if isinstance(reply, dict) and isinstance(reply.get("error"), str):
            raise CommandFailed(reply["error"])
        content = reply.get("result", {}).get("content") if isinstance(reply, dict) else None
        if not isinstance(content, list):
            raise ServerError(phrases.BAD_ANSWER)
        return [block for block in content if isinstance(block, dict)]
    if status == 401:
        raise ServerError(phrases.BAD_TOKEN)
    if status == 503:
        message = _server_message(response)
        if "too many" in message.lower():
            raise ServerError(phrases.BUSY)
        raise ServerError(phrases.NO_BROWSER, reconnect=True)
    if status == 409:
        message = _server_message(response).lower()
        raise ServerError(phrases.UNKNOWN_BROWSER if "no browser" in message or "not connected" in message else phrases.WHICH_BROWSER)
    if status == 504:
        raise ServerError(phrases.TIMEOUT)
    if status == 413:
        raise ServerError(phrases.TOO_LARGE)
    raise ServerError(phrases.SERVER_FAILED)


def _server_message(response: httpx2.Response) -> str:
    try:
        message = response.json().get("error", "")
    except Exception:
        return ""
    return message if isinstance(message, str) else ""


def _failure(exc: httpx2.HTTPError) -> ServerError:
    if isinstance(exc, httpx2.TimeoutException) and not isinstance(exc, (httpx2.ConnectTimeout, httpx2.PoolTimeout)):
        return ServerError(phrases.TIMEOUT)
    return ServerError(phrases.NO_SERVER, reconnect=True)


def _headers(token: str) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": "browser-operator-python"}


def _timeout(seconds: float) -> httpx2.Timeout:
    return httpx2.Timeout(seconds, connect=min(10.0, seconds))


class SyncWire:
    """Commands over one kept-alive HTTP connection, one at a time."""

    def __init__(self, url: str, token: str, target: Optional[str], timeout: float) -> None:
        self.target = target
        self.http = httpx2.Client(base_url=url, headers=_headers(token), timeout=_timeout(timeout))

    def run(self, command: Command) -> Content:
        try:
            response = self.http.post("/commands", json=body(command, self.target))
        except httpx2.HTTPError as exc:
            raise _failure(exc) from None
        return answer(response)

    def close(self) -> None:
        self.http.close()


class AsyncWire:
    """`SyncWire` for an event loop."""

    def __init__(self, url: str, token: str, target: Optional[str], timeout: float) -> None:
        self.target = target
        self.http = httpx2.AsyncClient(base_url=url, headers=_headers(token), timeout=_timeout(timeout))

    async def run(self, command: Command) -> Content:
        try:
            response = await self.http.post("/commands", json=body(command, self.target))
        except httpx2.HTTPError as exc:
            raise _failure(exc) from None
        return answer(response)

    async def close(self) -> None:
        await self.http.aclose()
