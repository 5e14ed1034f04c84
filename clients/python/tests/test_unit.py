"""The driver without a browser: the real SDK's `tool_result()` over a scripted server (httpx2's MockTransport),
for what a real browser cannot be made to do on demand (a lost server, an old extension, a wrong token) and for
the rules that are pure logic (the error phrases, the state mapping, the token's lookup). The browser itself is
driven in test_toolset.py."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import unittest
from pathlib import Path
from typing import Any, Callable, Dict, List

import httpx2
from anthropic.tools import ToolsetConfigError
from anthropic.types.beta import BetaToolUseBlock

from browser_operator import BrowserOperatorToolset, AsyncBrowserOperatorToolset
from browser_operator import _phrases as phrases
from browser_operator._wire import resolve_token, token_file

logging.getLogger("browser_operator").setLevel(logging.ERROR)  # the expected warnings of failed reports

OPTIONAL = ("file_upload", "read_console", "read_network", "javascript_exec")


def use(name: str, **input: Any) -> BetaToolUseBlock:
    return BetaToolUseBlock(type="tool_use", id=f"toolu_{name}", toolset_name="browser", name=name, input=input)


def text(result: Dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content if block.get("type") == "text")


def state_block(result: Dict[str, Any]) -> Dict[str, Any]:
    return next(block for block in result["content"] if block.get("type") == "browser_state")


class FakeServer:
    """`POST /commands` answered by a function of (tool, args); every request recorded."""

    def __init__(self, answer: Callable[[str, Dict[str, Any]], Any]) -> None:
        self.answer = answer
        self.calls: List[Dict[str, Any]] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        sent = json.loads(request.content)
        self.calls.append(sent)
        assert request.headers["authorization"] == "Bearer secret", request.headers
        reply = self.answer(sent["tool"], sent.get("args") or {})
        if isinstance(reply, httpx2.Response):
            return reply
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str) and reply.startswith("ERR:"):
            return httpx2.Response(200, json={"commandId": "c", "error": reply[4:]})
        content = reply if isinstance(reply, list) else [{"type": "text", "text": reply}]
        return httpx2.Response(200, json={"commandId": "c", "result": {"content": content}})

    def tools(self) -> List[str]:
        return [call["tool"] for call in self.calls]


def state(tabs: List[Dict[str, Any]], changes: List[Dict[str, Any]] = ()) -> str:  # type: ignore[assignment]
    return json.dumps({"tabs": tabs, "changes": list(changes), "dropped": 0})


TAB7 = {"tabId": 7, "title": "Seven", "url": "https://seven.test/", "active": True}


def toolset(server: FakeServer, **options: Any) -> BrowserOperatorToolset:
    t = BrowserOperatorToolset(
        "http://server.test",
        token="secret",
        configs={m: {"enabled": True} for m in OPTIONAL},
        confirm=lambda context: True,
        **options,
    )
    t._wire.http = httpx2.Client(base_url="http://server.test", headers=t._wire.http.headers, transport=httpx2.MockTransport(server.handle))
    return t


class Members(unittest.TestCase):
    def test_every_member_is_served(self) -> None:
        t = BrowserOperatorToolset(token="secret", configs={m: {"enabled": True} for m in OPTIONAL}, confirm=lambda c: True)
        configs = t.to_dict().get("configs") or {}
        self.assertFalse([m for m, c in configs.items() if (c or {}).get("enabled") is False], configs)
        a = AsyncBrowserOperatorToolset(token="secret")
        self.assertFalse([m for m, c in (a.to_dict().get("configs") or {}).items() if (c or {}).get("enabled") is False])

    def test_policy_first_then_the_active_tab_then_the_state(self) -> None:
        server = FakeServer(lambda tool, args: {
            "set_policy": "{}",
            "browser_state": state([TAB7]),
            "computer": "Clicked at (3, 4)",
        }[tool])
        t = toolset(server, allowed_hosts=["example.com"])
        result = t.tool_result(use("left_click", target={"type": "coordinate", "x": 3, "y": 4}, modifiers="shift"))
        self.assertNotIn("is_error", result, result)
        self.assertEqual(server.tools(), ["set_policy", "browser_state", "computer", "browser_state"])
        self.assertEqual(
            server.calls[0]["args"],
            {"allowedHosts": ["example.com"], "blockedHosts": [], "dialogs": "dismiss", "downloadPaths": False},
        )
        self.assertEqual(
            server.calls[2]["args"],
            {"action": "left_click", "coordinate": [3, 4], "modifiers": "shift", "tabId": 7},
        )
        self.assertEqual(text(result).splitlines()[0], "Clicked.")
        self.assertEqual(
            state_block(result)["tabs"], [{"tab_id": "7", "title": "Seven", "url": "https://seven.test/", "active": True}]
        )
        # The next call: no policy, no peek.
        server.calls.clear()
        t.tool_result(use("left_click", target={"type": "ref", "ref": "ref_3"}))
        self.assertEqual(server.tools(), ["computer", "browser_state"])
        self.assertEqual(server.calls[0]["args"], {"action": "left_click", "ref": "ref_3", "tabId": 7})

    def test_a_policy_the_browser_lost_is_sent_again_before_the_next_action(self) -> None:
        # The browser restarted between two calls: its report's marker is null, and the driver sends its policy
        # again at once, before the next member acts.
        marker = ["0123456789abcdef"]

        def answer(tool: str, args: Dict[str, Any]) -> Any:
            if tool == "set_policy":
                marker[0] = "0123456789abcdef"
                return "{}"
            if tool == "browser_state":
                return json.dumps({"tabs": [TAB7], "changes": [], "dropped": 0, "policy": marker[0]})
            return "Clicked at (3, 4)"

        server = FakeServer(answer)
        t = toolset(server, allowed_hosts=["example.com"])
        click = use("left_click", target={"type": "coordinate", "x": 3, "y": 4})
        self.assertNotIn("is_error", t.tool_result(click))
        self.assertEqual(server.tools(), ["set_policy", "browser_state", "computer", "browser_state"])
        server.calls.clear()
        self.assertNotIn("is_error", t.tool_result(click))
        self.assertEqual(server.tools(), ["computer", "browser_state"])
        marker[0] = None  # the browser restarted
        server.calls.clear()
        self.assertNotIn("is_error", t.tool_result(click))
        self.assertEqual(server.tools(), ["computer", "browser_state", "set_policy"])
        self.assertEqual(server.calls[2]["args"]["allowedHosts"], ["example.com"])
        server.calls.clear()
        self.assertNotIn("is_error", t.tool_result(click))
        self.assertEqual(server.tools(), ["computer", "browser_state"])
        # An extension without the marker says nothing of it: nothing is sent again.
        server2 = FakeServer(lambda tool, args: {"set_policy": "{}", "browser_state": state([TAB7]), "computer": "Clicked"}[tool])
        t2 = toolset(server2)
        t2.tool_result(click)
        t2.tool_result(click)
        self.assertEqual(server2.tools().count("set_policy"), 1)

    def test_an_empty_group_gets_its_first_tab(self) -> None:
        created = []

        def answer(tool: str, args: Dict[str, Any]) -> Any:
            if tool == "browser_state":
                return state([TAB7] if created else [])
            if tool == "tabs_context_mcp":
                created.append(args)
                return json.dumps({"availableTabs": [{"tabId": 7, "title": "", "url": ""}], "tabGroupId": 1})
            return {"set_policy": "{}", "get_page_text": "Title: x"}[tool]

        server = FakeServer(answer)
        result = toolset(server).tool_result(use("get_page_text"))
        self.assertNotIn("is_error", result, result)
        self.assertEqual(created, [{"createIfEmpty": True}])
        self.assertEqual(server.calls[4]["args"], {"tabId": 7})

    def test_changes_become_the_sdk_s_and_a_peek_loses_none(self) -> None:
        reports = [
            state([{**TAB7, "active": False}, {"tabId": 8, "title": "", "url": "", "active": True}], [
                {"type": "tab_opened", "tabId": 8},
                {"type": "download_started", "downloadId": "1", "url": "https://seven.test/a.txt", "fileName": "a.txt"},
            ]),
            state([{**TAB7, "active": False}, {"tabId": 8, "title": "", "url": "", "active": True}], [
                {"type": "download_completed", "downloadId": "1", "url": "https://seven.test/a.txt", "sizeBytes": 5, "path": "/home/u/a.txt"},
                {"type": "dialog_dismissed", "tabId": 8, "kind": "confirm", "message": "Sure?", "accepted": False},
                {"type": "navigation_refused", "tabId": 8, "url": "https://blocked.test/"},
                {"type": "download_failed", "downloadId": "2", "url": "https://seven.test/b", "error": "NETWORK_FAILED"},
                {"type": "something_new"},
            ]),
        ]
        server = FakeServer(lambda tool, args: reports.pop(0) if tool == "browser_state" else "Typed")
        result = toolset(server).tool_result(use("type", text="hi"))  # the peek drains the first report
        self.assertNotIn("is_error", result, result)
        block = state_block(result)
        self.assertEqual([t["active"] for t in block["tabs"]], [False, True])
        self.assertEqual(server.calls[2]["args"]["tabId"], 8)
        self.assertEqual(
            block["state_changes"],
            [
                {"type": "tab_opened", "tab_id": "8"},
                # one entry per download: the latest; no path without a file policy that shows it
                {"type": "download_completed", "download_id": "1", "url": "https://seven.test/a.txt", "size_bytes": 5},
                {"type": "download_failed", "download_id": "2", "url": "https://seven.test/b", "error": "network failed"},
            ],
        )
        lines = text(result)
        self.assertIn("A navigation was refused.", lines)
        self.assertIn('A confirm dialog "Sure?" was dismissed.', lines)

    def test_one_active_tab_whatever_the_browser_says(self) -> None:
        two = [{**TAB7}, {"tabId": 8, "title": "", "url": "", "active": True}]
        server = FakeServer(lambda tool, args: state(two) if tool == "browser_state" else "{}")
        result = toolset(server).tool_result(use("list_tabs"))
        self.assertEqual([t["active"] for t in state_block(result)["tabs"]], [True, False])

    def test_a_dialog_left_open_is_answered_reported_and_the_call_sent_again(self) -> None:
        blocked = ['ERR:A JavaScript confirm dialog is open on tab 7: "Sure?". Answer it with handle_dialog first.']

        def answer(tool: str, args: Dict[str, Any]) -> Any:
            if tool == "computer":
                return blocked.pop() if blocked else "Clicked"
            return {"set_policy": "{}", "browser_state": state([TAB7]), "handle_dialog": "Dismissed"}[tool]

        server = FakeServer(answer)
        result = toolset(server).tool_result(use("left_click", target={"type": "coordinate", "x": 1, "y": 2}))
        self.assertNotIn("is_error", result, result)
        self.assertEqual(server.tools(), ["set_policy", "browser_state", "computer", "handle_dialog", "computer", "browser_state"])
        self.assertEqual(server.calls[3]["args"], {"tabId": 7, "accept": False})
        self.assertIn('A confirm dialog "Sure?" was dismissed.', text(result))

    def test_navigate_reads_the_status_and_the_title(self) -> None:
        answers = {
            "https://seven.test/gone": "Navigated to https://seven.test/gone\nHTTP status: 404\nTitle: Not here",
            "back": "Navigated to https://seven.test/",
        }
        server = FakeServer(lambda tool, args: state([TAB7]) if tool != "navigate" else answers[args["url"]])
        t = toolset(server)
        self.assertEqual(text(t.tool_result(use("navigate", url="https://seven.test/gone"))).splitlines()[0],
                         "Navigated to https://seven.test/gone — Not here (HTTP 404)")
        # A history step: no status, no title line.
        self.assertEqual(text(t.tool_result(use("navigate", url="back"))).splitlines()[0], "Navigated to https://seven.test/")

    def test_read_page_filters(self) -> None:
        server = FakeServer(lambda tool, args: state([TAB7]) if tool == "browser_state" else "tree")
        t = toolset(server)
        for given, sent in ((None, "visible"), ("interactive", "interactive"), ("all", "all")):
            server.calls.clear()
            extra = {} if given is None else {"filter": given}
            t.tool_result(use("read_page", depth=3, ref="ref_2", **extra))
            page = next(c for c in server.calls if c["tool"] == "read_page")
            self.assertEqual(page["args"], {"filter": sent, "depth": 3, "ref_id": "ref_2", "tabId": 7})

    def test_file_upload_sends_the_files_bytes(self) -> None:
        from anthropic.tools.browser import BetaLocalFilePolicy

        with tempfile.TemporaryDirectory() as root:
            Path(root, "notes.txt").write_text("hello")
            server = FakeServer(lambda tool, args: state([TAB7]) if tool == "browser_state" else "Uploaded")
            t = toolset(server, file_policy=BetaLocalFilePolicy(upload_roots=[root]))
            result = t.tool_result(use("file_upload", target={"type": "ref", "ref": "ref_5"}, paths=[f"{root}/notes.txt"]))
            self.assertNotIn("is_error", result, result)
            upload = next(c for c in server.calls if c["tool"] == "file_upload")["args"]
            self.assertEqual(upload, {"ref": "ref_5", "files": [{"name": "notes.txt", "data": "aGVsbG8=", "mimeType": "text/plain"}], "tabId": 7})
            # Outside the roots: the SDK refuses, nothing is sent.
            server.calls.clear()
            refused = t.tool_result(use("file_upload", target={"type": "ref", "ref": "ref_5"}, paths=["/etc/passwd"]))
            self.assertTrue(refused.get("is_error"))
            self.assertNotIn("file_upload", server.tools())
            self.assertNotIn("/etc", text(refused))


class Errors(unittest.TestCase):
    def check(self, answer: Callable[[str, Dict[str, Any]], Any], member: str, expected: str, **input: Any) -> None:
        server = FakeServer(answer)
        result = toolset(server).tool_result(use(member, **input))
        self.assertTrue(result.get("is_error"), result)
        self.assertEqual(text(result), expected)

    def test_connection_failures_are_fixed_phrases(self) -> None:
        for reply, phrase in (
            (httpx2.ConnectError("refused http://127.0.0.1:8787"), phrases.NO_SERVER),
            (httpx2.Response(401, json={"error": "Missing or wrong bearer token"}), phrases.BAD_TOKEN),
            (httpx2.Response(503, json={"error": "No browser is connected. Load the extension…"}), phrases.NO_BROWSER),
            (httpx2.Response(409, json={"error": "Several browsers are connected; say which one"}), phrases.WHICH_BROWSER),
            (httpx2.Response(504, json={"error": "The browser did not answer within 130 s"}), phrases.TIMEOUT),
            (httpx2.ReadTimeout("slow"), phrases.TIMEOUT),
        ):
            self.check(lambda tool, args, reply=reply: reply, "screenshot", phrase)

    def test_extension_errors_lose_urls_and_paths(self) -> None:
        def failing(message: str) -> Callable[[str, Dict[str, Any]], Any]:
            return lambda tool, args: state([TAB7]) if tool == "browser_state" else ("{}" if tool == "set_policy" else "ERR:" + message)

        cases = [
            ("Tab 99 does not exist. Valid tab ids: 7. Call tabs_context_mcp to list them.", "left_click",
             "The tab this call was addressed to is not open; nothing was returned. Use list_tabs to see what is open."),
            ("Cannot navigate to javascript:alert(1). Refused: javascript: URLs are not navigations (to run code in a page, use javascript_tool). Navigate to an http(s) URL instead.",
             "navigate", "This address cannot be opened: javascript: URLs are not navigations (to run code in a page, use javascript_exec)."),
            ("Navigation to https://nowhere.invalid/x failed: net::ERR_NAME_NOT_RESOLVED", "navigate",
             "The page could not be loaded (net::ERR_NAME_NOT_RESOLVED)."),
            ("Unknown tool: switch_tab", "switch_tab", phrases.NOT_SUPPORTED.format(member="switch_tab")),
            ('Invalid argument `action`: must be one of "screenshot", "left_click", got "middle_click".', "middle_click",
             phrases.NOT_SUPPORTED.format(member="middle_click")),
            ('A JavaScript confirm dialog is open on tab 7: "Leave https://x.test/?". Answer it with handle_dialog first.', "left_click",
             phrases.DIALOG_OPEN.format(kind="confirm")),  # after the driver's answer, another opened
            ("Tab 7 shows chrome://settings/, which no tool may read or act on. Refused: chrome: pages are the browser's own.", "read_page",
             phrases.PAGE_OUTSIDE),
            ("TypeError: x is not a function at https://site.test/app.js:3:9 reading /home/me/secret.txt", "javascript_exec",
             "The browser could not run javascript_exec: TypeError: x is not a function at a URL reading a path"),
            ("Unknown ref ref_9 for tab 7: call read_page or find to get current refs.", "left_click", phrases.STALE_REF),
            ("Navigation to https://a.test/ was refused by the URL policy (host a.test is not allowed)", "navigate",
             phrases.URL_POLICY_REFUSED),
        ]
        for message, member, expected in cases:
            with self.subTest(message=message):
                self.check(failing(message), member, expected, **minimal_input(member))

    def test_a_policy_the_browser_cannot_enforce_refuses_every_call(self) -> None:
        server = FakeServer(lambda tool, args: "ERR:Unknown tool: set_policy" if tool == "set_policy" else state([TAB7]))
        result = toolset(server, allowed_hosts=["example.com"]).tool_result(use("navigate", url="example.com"))
        self.assertTrue(result.get("is_error"))
        self.assertEqual(text(result), phrases.POLICY_UNAVAILABLE)
        self.assertNotIn("navigate", server.tools())

    def test_a_bad_tab_id_is_refused_before_anything_is_sent(self) -> None:
        server = FakeServer(lambda tool, args: state([TAB7]) if tool == "browser_state" else "{}")
        result = toolset(server).tool_result(use("screenshot", tab_id="../7"))
        self.assertTrue(result.get("is_error"))
        self.assertEqual(text(result), phrases.TAB_ID_FORM)
        self.assertNotIn("computer", server.tools())

    def test_the_scrub_rule(self) -> None:
        for given, expected in (
            ("see https://a.test/x?y=1 and //cdn.test/lib.js", "see a URL and //an address"),
            ("about:blank data:text/html,hi blob:https://a.test/1", "a URL a URL a URL"),
            ("open /etc/passwd or ~/notes.txt or C:\\Users\\me\\a.txt", "open a path or a path or a path"),
            ("at 10.0.0.7:8080/admin or intranet.corp.example/x", "at an address or an address"),
            ("text/plain and/or ctrl+a at (3, 4) 1/2", "text/plain and/or ctrl+a at (3, 4) 1/2"),
            ("Invalid argument `duration`: must be at most 30, got 31.", "Invalid argument `duration`: must be at most 30, got 31."),
        ):
            self.assertEqual(phrases.scrub(given), expected)


def minimal_input(member: str) -> Dict[str, Any]:
    return {
        "navigate": {"url": "example.com"},
        "left_click": {"target": {"type": "coordinate", "x": 1, "y": 1}},
        "middle_click": {"target": {"type": "coordinate", "x": 1, "y": 1}},
        "switch_tab": {"tab_id": "7"},
        "javascript_exec": {"text": "x()"},
    }.get(member, {})


class Token(unittest.TestCase):
    def test_argument_then_environment_then_the_server_s_file(self) -> None:
        with tempfile.TemporaryDirectory() as home:
            env = {"HOME": home}
            with self.assertRaises(ToolsetConfigError) as missing:
                resolve_token(None, env)
            self.assertIn("browser-operator serve", str(missing.exception))
            path = token_file(env)
            self.assertEqual(path, Path(home, ".config", "browser-operator", "token"))
            os.makedirs(path.parent)
            path.write_text("from-file\n")
            self.assertEqual(resolve_token(None, env), "from-file")
            self.assertEqual(resolve_token(None, {**env, "BROWSER_OPERATOR_TOKEN": "from-env"}), "from-env")
            self.assertEqual(resolve_token("given", {**env, "BROWSER_OPERATOR_TOKEN": "from-env"}), "given")
            self.assertEqual(token_file({"BROWSER_OPERATOR_CONFIG_DIR": "/cfg", "HOME": home}), Path("/cfg/token"))
            with self.assertRaises(ToolsetConfigError):
                resolve_token("two words", env)

    def test_options_are_checked_at_construction(self) -> None:
        for bad in ({"dialogs": "ask"}, {"allowed_hosts": "example.com"}, {"url": "ws://127.0.0.1:8787/ws"}, {"timeout": 0}):
            with self.subTest(bad=bad), self.assertRaises(ToolsetConfigError):
                BrowserOperatorToolset(token="secret", **bad)


if __name__ == "__main__":
    unittest.main()
