"""The driver against a real browser: the real SDK (anthropic 2.10), no model, no API key. Each test hands
`tool_use` blocks to the toolset's `tool_result()`, exactly as the tool runner would, and checks the effect on the
page itself (through a direct `POST /commands` of the server, not through the toolset) and the `browser_state`
block of every result.

Run by tests/tests/driver_python.rs, which starts the server and headless Chromium with the extension, serves
tests/fixtures/ and sets:
  BROWSER_OPERATOR_URL       the server, e.g. http://127.0.0.1:41234
  BROWSER_OPERATOR_TOKEN     its token
  BROWSER_OPERATOR_FIXTURES  where tests/fixtures/ is served, e.g. http://127.0.0.1:41235/
"""

from __future__ import annotations

import os
import re
import json
import time
import base64
import asyncio
import logging
import tempfile
import unittest
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote, urlsplit

import httpx2
from anthropic.tools.browser import BetaLocalFilePolicy
from anthropic.types.beta import BetaToolUseBlock

from browser_operator import BrowserOperatorToolset, AsyncBrowserOperatorToolset
from browser_operator import _phrases as phrases

logging.basicConfig(level=logging.WARNING, format="browser_operator: %(message)s")

try:
    SERVER = os.environ["BROWSER_OPERATOR_URL"]
    TOKEN = os.environ["BROWSER_OPERATOR_TOKEN"]
    FIXTURES = os.environ["BROWSER_OPERATOR_FIXTURES"].rstrip("/") + "/"
except KeyError as missing:  # not a skip: run by the Rust test, which sets them
    raise SystemExit(f"{missing} is not set: run this through `cargo test -p browser-operator-e2e --test driver_python`")

PAGE = FIXTURES + "toolset/index.html"
PAGE2 = FIXTURES + "toolset/page2.html"
OPTIONAL = ("file_upload", "read_console", "read_network", "javascript_exec")
ALL_ON = {member: {"enabled": True} for member in OPTIONAL}


def approve(context: Any) -> bool:
    return True


# --- helpers ----------------------------------------------------------------------------------------------------

uses = 0


def use(name: str, **input: Any) -> BetaToolUseBlock:
    global uses
    uses += 1
    return BetaToolUseBlock(type="tool_use", id=f"toolu_{uses:04d}", toolset_name="browser", name=name, input=input)


def texts(result: Dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content if block.get("type") == "text")


def block_of(result: Dict[str, Any]) -> Dict[str, Any]:
    found = [b for b in result["content"] if isinstance(b, dict) and b.get("type") == "browser_state"]
    assert len(found) == 1, f"one browser_state block expected: {result}"
    return found[0]


def image_size(data: bytes) -> Tuple[int, int]:
    if data.startswith(b"\x89PNG"):
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    i = 2
    while i + 9 < len(data):
        marker, length = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xC3:
            return int.from_bytes(data[i + 7 : i + 9], "big"), int.from_bytes(data[i + 5 : i + 7], "big")
        i += 2 + length
    raise AssertionError("not a PNG or JPEG")


def wait_until(check: Any, what: str, timeout: float = 20.0) -> Any:
    """Polls `check()` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Observer:
    """Reads the page directly through the server, beside the toolset (so a check does not rely on the driver)."""

    def __init__(self) -> None:
        self.http = httpx2.Client(base_url=SERVER, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)

    def command(self, tool: str, args: Dict[str, Any]) -> Dict[str, Any]:
        reply = self.http.post("/commands", json={"tool": tool, "args": args})
        reply.raise_for_status()
        return reply.json()

    def js(self, tab: str, code: str) -> Any:
        """`code`'s value in the tab. A dialog the policy is about to answer refuses a command while it is open:
        asked again then (bounded)."""
        deadline = time.monotonic() + 10
        while True:
            reply = self.command("javascript_tool", {"tabId": int(tab), "text": f"JSON.stringify({code})"})
            if "result" in reply:
                return json.loads("".join(b["text"] for b in reply["result"]["content"] if b["type"] == "text"))
            if "dialog is open" not in reply.get("error", "") or time.monotonic() > deadline:
                raise AssertionError(f"the page could not be read: {reply}")
            time.sleep(0.05)

    def close(self) -> None:
        self.http.close()


class Driven(unittest.TestCase):
    """One toolset for the class, as an application keeps one."""

    toolset: BrowserOperatorToolset
    page: Observer

    @classmethod
    def setUpClass(cls) -> None:
        # The token from $BROWSER_OPERATOR_TOKEN, as an application finds it.
        cls.toolset = BrowserOperatorToolset(SERVER, configs=ALL_ON, confirm=approve)
        cls.page = Observer()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.toolset.close()
        cls.page.close()

    def call(self, name: str, **input: Any) -> Dict[str, Any]:
        """A member call that must succeed; its state block must be valid."""
        result = self.toolset.tool_result(use(name, **input))
        self.assertFalse(result.get("is_error"), f"{name} {input} failed: {texts(result)}")
        self.assertEqual(result["toolset_name"], "browser")
        self.check_state(block_of(result))
        return result

    def fail_call(self, name: str, **input: Any) -> str:
        """A member call that must fail: its text, checked to name no URL and no path."""
        result = self.toolset.tool_result(use(name, **input))
        self.assertTrue(result.get("is_error"), f"{name} {input} should have failed: {result}")
        text = texts(result)
        self.assertNotRegex(text, r"https?://|file://|/tmp/|/home/|/root/|127\.0\.0\.1", text)
        return text

    def check_state(self, block: Dict[str, Any]) -> None:
        tabs = block["tabs"]
        ids = [t["tab_id"] for t in tabs]
        self.assertEqual(len(ids), len(set(ids)), block)
        if tabs:
            self.assertEqual(sum(1 for t in tabs if t.get("active")), 1, f"exactly one active tab: {block}")
        self.state = block

    @property
    def active(self) -> str:
        return next(t["tab_id"] for t in self.state["tabs"] if t.get("active"))

    def active_tab(self) -> Dict[str, Any]:
        return next(t for t in self.state["tabs"] if t.get("active"))

    def events(self, kind: Optional[str] = None, of: Optional[str] = None) -> List[Dict[str, Any]]:
        found = self.page.js(self.active, "window.events")
        return [e for e in found if (kind is None or e["type"] == kind) and (of is None or e["id"] == of)]

    def clear_events(self) -> None:
        self.page.js(self.active, "window.events.length = 0")

    def centre(self, selector: str) -> Dict[str, Any]:
        box = self.page.js(self.active, f"document.querySelector({json.dumps(selector)}).getBoundingClientRect()")
        return {"type": "coordinate", "x": round(box["x"] + box["width"] / 2), "y": round(box["y"] + box["height"] / 2)}

    def ref(self, query: str, name: str) -> str:
        found = texts(self.call("find", query=query))
        match = re.search(r"\[(ref_[0-9_]+)\][^\n]*" + re.escape(f'"{name}"'), found)
        self.assertIsNotNone(match, f"no ref for {name!r} in {found}")
        return match.group(1)  # type: ignore[union-attr]

    def open_fixture(self) -> None:
        self.call("navigate", url=PAGE)
        self.clear_events()


class Members(Driven):
    def test_01_navigate_opens_the_group_and_reports_the_page(self) -> None:
        result = self.call("navigate", url=PAGE)
        # Where it landed, the page's title and the main document's HTTP status, as the SDK renders them.
        self.assertEqual(texts(result).splitlines()[0], f"Navigated to {PAGE} — Toolset fixture (HTTP 200)")
        tab = self.active_tab()
        self.assertEqual((tab["url"], tab["title"]), (PAGE, "Toolset fixture"))
        self.assertEqual(self.page.js(self.active, "location.href"), PAGE)
        # A page that is not there loads (the server's 404 page) and says so; a redirect reports where it ended.
        missing = FIXTURES + "toolset/missing.html"
        line = texts(self.call("navigate", url=missing)).splitlines()[0]
        self.assertTrue(line.startswith(f"Navigated to {missing}") and line.endswith("(HTTP 404)"), line)
        redirect = FIXTURES + "__redirect?to=" + quote(PAGE2, safe="")
        line = texts(self.call("navigate", url=redirect)).splitlines()[0]
        self.assertTrue(line.startswith(f"Navigated to {PAGE2} — ") and line.endswith("(HTTP 200)"), line)
        # A history step has no status of its own to report.
        line = texts(self.call("navigate", url="back")).splitlines()[0]
        self.assertTrue(line.startswith(f"Navigated to {missing}") and "(HTTP" not in line, line)

    def test_02_screenshot_in_viewport_pixels_and_zoom_scaled_up(self) -> None:
        self.open_fixture()
        shot = self.call("screenshot")
        images = [b for b in shot["content"] if b.get("type") == "image"]
        self.assertEqual(len(images), 1, shot)
        width, height = image_size(base64.b64decode(images[0]["source"]["data"]))
        viewport = self.page.js(self.active, "[innerWidth, innerHeight]")
        self.assertEqual([width, height], viewport, "the screenshot is the viewport in CSS pixels (DPR 1)")
        zoom = self.call("zoom", region=[0, 0, 100, 50])
        image = next(b for b in zoom["content"] if b.get("type") == "image")
        zw, zh = image_size(base64.b64decode(image["source"]["data"]))
        self.assertGreater(zw, 100, "the region is scaled up")
        self.assertAlmostEqual(zw / zh, 2.0, delta=0.1)

    def test_03_clicks_of_every_button(self) -> None:
        self.open_fixture()
        target = self.centre("#target")
        self.assertEqual(texts(self.call("left_click", target=target, modifiers="shift")).splitlines()[0], "Clicked.")
        clicks = self.events("click", "target")
        self.assertEqual([(c["button"], c["detail"], c["shift"], c["trusted"]) for c in clicks], [(0, 1, True, True)])
        self.assertEqual((clicks[0]["x"], clicks[0]["y"]), (target["x"], target["y"]))

        self.call("right_click", target=target)
        self.assertEqual([e["button"] for e in self.events("contextmenu", "target")], [2])
        self.clear_events()
        self.call("middle_click", target=target)
        self.assertEqual([e["button"] for e in self.events("auxclick", "target")], [1])
        self.call("double_click", target=target)
        self.assertEqual(len(self.events("dblclick", "target")), 1)
        self.clear_events()
        self.call("triple_click", target=target)
        self.assertEqual([c["detail"] for c in self.events("click", "target")], [1, 2, 3])

        # By ref, from find.
        self.clear_events()
        ref = self.ref("Target button", "Target button")
        self.call("left_click", target={"type": "ref", "ref": ref})
        self.assertEqual(len(self.events("click", "target")), 1)

    def test_04_hover_drag_and_a_button_held_across_calls(self) -> None:
        self.open_fixture()
        self.call("hover", target=self.centre("#hover"))
        self.assertTrue(self.events("mouseover", "hover"))

        self.clear_events()
        self.call("left_click_drag", **{"from": {"type": "coordinate", "x": 30, "y": 80}}, target={"type": "coordinate", "x": 250, "y": 150})
        downs, ups = self.events("mousedown", "pad"), self.events("mouseup", "pad")
        self.assertEqual([(d["x"], d["y"]) for d in downs], [(30, 80)])
        self.assertEqual([(u["x"], u["y"]) for u in ups], [(250, 150)])
        self.assertTrue(any(m["buttons"] == 1 for m in self.events("mousemove", "pad")), "moves with the button down")

        self.clear_events()
        self.call("left_mouse_down", target={"type": "coordinate", "x": 40, "y": 90})
        self.call("mouse_move", target={"type": "coordinate", "x": 120, "y": 120})
        # Between the calls the button is still down.
        self.assertEqual(self.events("mouseup"), [])
        self.call("mouse_move", target={"type": "coordinate", "x": 200, "y": 140})
        self.call("left_mouse_up", target={"type": "coordinate", "x": 200, "y": 140})
        moves = self.events("mousemove", "pad")
        self.assertTrue(any((m["x"], m["y"], m["buttons"]) == (120, 120, 1) for m in moves), moves)
        self.assertTrue(any((m["x"], m["y"], m["buttons"]) == (200, 140, 1) for m in moves), moves)
        self.assertEqual([(e["x"], e["y"]) for e in self.events("mousedown", "pad")], [(40, 90)])
        self.assertEqual([(e["x"], e["y"], e["buttons"]) for e in self.events("mouseup", "pad")], [(200, 140, 0)])

    def test_05_typing_keys_and_a_held_key(self) -> None:
        self.open_fixture()
        self.call("left_click", target=self.centre("#text"))
        self.call("type", text="hello")
        self.assertEqual(self.page.js(self.active, "document.querySelector('#text').value"), "hello")
        self.assertEqual(texts(self.call("key", text="BackSpace", repeat=2)).splitlines()[0], "Pressed BackSpace.")
        self.assertEqual(self.page.js(self.active, "document.querySelector('#text').value"), "hel")
        self.call("key", text="ctrl+a")
        self.call("type", text="x")
        self.assertEqual(self.page.js(self.active, "document.querySelector('#text').value"), "x")

        self.clear_events()
        result = self.call("hold_key", text="shift", duration=0.5)
        self.assertEqual(texts(result).splitlines()[0], "Held shift for 0.5s.")
        downs = [e for e in self.events("keydown") if e["key"] == "Shift"]
        ups = [e for e in self.events("keyup") if e["key"] == "Shift"]
        self.assertTrue(downs and len(ups) == 1, (downs, ups))
        self.assertGreaterEqual(ups[0]["t"] - downs[0]["t"], 450, "held for the duration")

    def test_06_wait_scroll_and_scroll_to(self) -> None:
        self.open_fixture()
        self.assertEqual(texts(self.call("wait", duration=0.1)).splitlines()[0], "Waited 0.1s.")
        self.assertEqual(
            texts(self.call("scroll", scroll_direction="down", target={"type": "coordinate", "x": 400, "y": 300}, scroll_amount=3)).splitlines()[0],
            "Scrolled down.",
        )
        wait_until(lambda: self.page.js(self.active, "scrollY") > 0, "the page to scroll down")
        self.page.js(self.active, "scrollTo(0, 0)")
        ref = self.ref("far button", "The far button")
        self.assertEqual(texts(self.call("scroll_to", target={"type": "ref", "ref": ref})).splitlines()[0], f"Scrolled to {ref}.")
        place = self.page.js(self.active, "[document.querySelector('#far').getBoundingClientRect().top, innerHeight, scrollY]")
        self.assertTrue(0 <= place[0] < place[1], f"{ref} is in view: {place}")

    def test_07_form_input_and_reading_the_page(self) -> None:
        self.open_fixture()
        colour = self.ref("Colour", "Colour")
        self.assertEqual(texts(self.call("form_input", target={"type": "ref", "ref": colour}, value="green")).splitlines()[0], f"Set the value of {colour}.")
        self.assertEqual(self.page.js(self.active, "document.querySelector('#colour').value"), "green")
        agree = self.ref("I agree", "I agree")
        self.call("form_input", target={"type": "ref", "ref": agree}, value=True)
        self.assertIs(self.page.js(self.active, "document.querySelector('#agree').checked"), True)

        # Omitted filter: every element in the viewport, not what lies below it.
        tree = texts(self.call("read_page"))
        self.assertIn('"Target button"', tree)
        self.assertIn("records what happens", tree)
        self.assertNotIn("The far button", tree, "the far button is off the viewport")
        self.assertIn("The far button", texts(self.call("read_page", filter="all")), '"all" adds off-viewport elements')
        # Scrolled to the end: the far button is in view, the text at the top is not; what is fixed stays.
        self.page.js(self.active, "document.querySelector('#far').scrollIntoView({block: 'end'})")
        shown = texts(self.call("read_page"))
        self.assertIn("The far button", shown)
        self.assertNotIn("records what happens", shown)
        self.assertIn('"Target button"', shown)
        self.page.js(self.active, "scrollTo(0, 0)")
        interactive = texts(self.call("read_page", filter="interactive"))
        self.assertIn('"Target button"', interactive)
        self.assertNotIn("records what happens", interactive)
        sub = texts(self.call("read_page", ref=colour, depth=2))
        self.assertIn("Green", sub)
        self.assertNotIn("Target button", sub)
        self.assertIn("records what happens to it", texts(self.call("get_page_text")))

    def test_08_console_and_network_drain(self) -> None:
        self.open_fixture()
        wait_until(lambda: self.page.js(self.active, "window.fetched === true"), "the page's fetch")
        console = texts(self.call("read_console"))
        self.assertIn("toolset fixture loaded", console)
        self.assertNotIn("toolset fixture loaded", texts(self.call("read_console")), "reading drains")
        network = texts(self.call("read_network"))
        self.assertIn("data.json", network)
        self.assertNotIn("data.json", texts(self.call("read_network")), "reading drains")

    def test_09_javascript_exec(self) -> None:
        self.open_fixture()
        self.assertEqual(texts(self.call("javascript_exec", text="window.fromModel = 6 * 7; document.title")).splitlines()[0], "Toolset fixture")
        self.assertEqual(self.page.js(self.active, "window.fromModel"), 42)

    def test_10_tabs_history_and_reload(self) -> None:
        self.open_fixture()
        first = self.active
        opened = self.call("new_tab")
        block = block_of(opened)
        second = self.active
        self.assertNotEqual(second, first)
        self.assertEqual(sorted(t["tab_id"] for t in block["tabs"]), sorted([first, second]))
        self.assertIn({"type": "tab_opened", "tab_id": second}, block.get("state_changes", []))

        # Without tab_id, members act on the active tab: the new one.
        self.call("navigate", url=PAGE2)
        self.assertEqual(self.page.js(second, "location.href"), PAGE2)
        self.assertEqual(self.page.js(first, "location.href"), PAGE)

        listed = self.call("list_tabs")
        self.assertEqual([b["type"] for b in listed["content"]], ["browser_state"])
        self.assertEqual(self.active, second)

        self.call("switch_tab", tab_id=first)
        self.assertEqual(self.active, first)
        self.call("navigate", url=PAGE2)  # the active tab now: the first
        self.assertEqual(self.page.js(first, "location.href"), PAGE2)

        self.call("navigate", url="back")
        self.assertEqual(self.page.js(first, "location.href"), PAGE)
        self.call("navigate", url="forward")
        self.assertEqual(self.page.js(first, "location.href"), PAGE2)
        self.call("navigate", url="back")
        loads = self.page.js(first, "sessionStorage.loads")
        self.assertTrue(texts(self.call("navigate", url="Reload")).splitlines()[0].endswith("(HTTP 200)"))
        self.assertEqual(self.page.js(first, "location.href"), PAGE)
        self.assertEqual(int(self.page.js(first, "sessionStorage.loads")), int(loads) + 1)

        self.call("close_tab", tab_id=second)
        self.assertEqual([t["tab_id"] for t in self.state["tabs"]], [first])
        self.assertEqual(self.active, first)

    def test_11_dialog_dismissed_and_reported(self) -> None:
        self.open_fixture()
        try:
            result = self.call("left_click", target=self.centre("#ask"))
            # The click returns (no dialog hangs it); the dismissal reaches the model with this result or the next.
            lines = texts(result) + "\n" + texts(self.call("wait", duration=0.1))
            self.assertIn('A confirm dialog "Delete everything?" was dismissed.', lines)
            self.assertEqual(self.page.js(self.active, "document.body.dataset.confirmed"), "false")
            # A dialog that opens itself again (25 times): the browser answers the first ones and leaves one open
            # once it sees the loop; the driver answers that one at the next call. Each is reported once, and no
            # call hangs.
            lines = texts(self.call("left_click", target=self.centre("#nag")))
            for _ in range(40):
                # While the page reopens its dialog a call may fail (an error the model can act on, not a hang).
                asked = self.toolset.tool_result(use("javascript_exec", text="document.body.dataset.nagged || 'not yet'"))
                lines += "\n" + texts(asked)
                if not asked.get("is_error") and texts(asked).splitlines()[0] == "25":
                    break
                if asked.get("is_error"):
                    self.assertEqual(texts(asked).splitlines()[0], phrases.DIALOG_OPEN.format(kind="confirm"))
            lines += "\n" + texts(self.call("wait", duration=0.1))
            self.assertEqual(self.page.js(self.active, "document.body.dataset.nagged"), "25", lines)
            shown = len(re.findall(r'A confirm dialog "Are you sure\? \(\d+\)" was dismissed\.', lines))
            more = sum(int(n) for n in re.findall(r"(\d+) more dialogs were dismissed\.", lines))
            self.assertEqual(shown + more, 25, lines)
        finally:
            # A dialog the policy left open would block the tests after this one.
            self.page.command("handle_dialog", {"tabId": int(self.active), "accept": False})

    def test_12_download_reported(self) -> None:
        self.open_fixture()
        self.call("left_click", target=self.centre("#download"))
        seen: List[Dict[str, Any]] = list(self.state.get("state_changes", []))

        def completed() -> Any:
            if not any(c["type"] == "download_completed" for c in seen):
                seen.extend(block_of(self.call("wait", duration=0.2)).get("state_changes", []))
            return next((c for c in seen if c["type"] == "download_completed"), None)

        done = wait_until(completed, "the download to be reported", timeout=30)
        self.assertTrue(done["url"].endswith("/toolset/report.txt"), done)
        self.assertEqual(done.get("size_bytes"), 18)
        self.assertNotIn("path", done, "no file policy exposes paths")

        # A download that never finishes: reported as started, and the browser keeps serving.
        seen.clear()
        self.call("left_click", target=self.centre("#endless"))
        seen.extend(self.state.get("state_changes", []))

        def endless() -> Any:
            found = next((c for c in seen if c["type"] == "download_started" and c["url"].endswith("/__never-ends")), None)
            if found is None:
                seen.extend(block_of(self.call("wait", duration=0.2)).get("state_changes", []))
            return found

        wait_until(endless, "the endless download to be reported as started")
        self.assertFalse([c for c in seen if c["type"] == "download_completed" and c["url"].endswith("/__never-ends")])
        self.assertIn("records what happens", texts(self.call("get_page_text")))

    def test_13_errors_are_fixed_phrases(self) -> None:
        self.open_fixture()
        self.assertEqual(
            self.fail_call("screenshot", tab_id="987654"),
            "The tab this call was addressed to is not open; nothing was returned. Use list_tabs to see what is open.",
        )
        self.assertEqual(self.fail_call("screenshot", tab_id="seven"), phrases.TAB_ID_FORM)
        # A real tab outside the group (a person's own, which driver_python.rs opened): refused like a closed one,
        # by every kind of member; driver_python.rs checks afterwards that it still shows its page.
        outside = os.environ["BROWSER_OPERATOR_OUTSIDE_TAB"]
        missing = "The tab this call was addressed to is not open; nothing was returned. Use list_tabs to see what is open."
        for name, extra in (("navigate", {"url": PAGE2}), ("get_page_text", {}), ("left_click", {"target": {"type": "coordinate", "x": 5, "y": 5}}),
                            ("switch_tab", {}), ("close_tab", {})):
            self.assertEqual(self.fail_call(name, tab_id=outside, **extra), missing, name)
        self.assertNotIn(outside, [t["tab_id"] for t in self.state["tabs"]])
        refused = self.fail_call("navigate", url="file:///etc/passwd")
        self.assertTrue(refused.startswith("This address cannot be opened: file: URLs"), refused)
        self.assertEqual(self.fail_call("navigate", url="http://127.0.0.1:9/"), "The page could not be loaded (net::ERR_UNSAFE_PORT).")
        self.assertTrue(self.fail_call("left_click", target={"type": "ref", "ref": "ref_99999"}))
        self.assertTrue(self.fail_call("zoom", region=[0, 0, 10]))
        self.assertIn("at most 30", self.fail_call("wait", duration=31))
        # The browser is still serving.
        self.call("get_page_text")


class Idle(Driven):
    """A dialog that opens long after the last command. driver_python.rs sets the extension's idle period to
    IDLE_SECONDS: a tab that long unused is detached (and would not see a dialog), except while the policy answers
    dialogs, as the driver's does."""

    def test_a_dialog_on_an_idle_tab_is_answered_by_the_policy(self) -> None:
        idle = float(os.environ.get("BROWSER_OPERATOR_IDLE_SECONDS", "0"))
        self.assertGreater(idle, 0, "driver_python.rs sets a short idle period")
        # The page's timer opens an alert twice the idle period after the load; nothing is sent meanwhile.
        self.call("navigate", url=PAGE + f"?alert-after={int(idle * 2000)}")
        time.sleep(idle * 2 + 1)
        result = self.call("wait", duration=0.1)
        lines = texts(result)
        # Had the tab been detached, the alert would have blocked the page unseen: the call would find it only
        # by a timeout, without its kind or text.
        self.assertIn('An alert dialog "Idle alert" was dismissed.', lines, lines)
        self.assertEqual(self.page.js(self.active, "document.body.dataset.alerted"), "answered")


class Uploads(Driven):
    def test_file_upload_of_a_file_the_policy_admits(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "notes.txt"), "w") as f:
                f.write("meeting at noon")
            with BrowserOperatorToolset(SERVER, TOKEN, configs=ALL_ON, confirm=approve, file_policy=BetaLocalFilePolicy(upload_roots=[root])) as upload:
                self.toolset, saved = upload, self.toolset
                try:
                    self.open_fixture()
                    field = self.ref("Attachment", "Attachment")
                    self.assertEqual(texts(self.call("file_upload", target={"type": "ref", "ref": field}, paths=[os.path.join(root, "notes.txt")])).splitlines()[0], "Uploaded.")
                    files = wait_until(lambda: self.page.js(self.active, "window.files"), "the page to read the file")
                    self.assertEqual(files, [{"name": "notes.txt", "type": "text/plain", "size": 15, "text": "meeting at noon"}])
                    # A path outside the roots never reaches the browser; the refusal names no path.
                    self.fail_call("file_upload", target={"type": "ref", "ref": field}, paths=["/etc/hostname"])
                finally:
                    self.toolset = saved


class Policy(Driven):
    """The browser-side URL policy: 127.0.0.1 allowed, so localhost (the same fixture server) is refused."""

    def test_refused_directly_by_redirect_and_by_script(self) -> None:
        port = urlsplit(FIXTURES).port
        elsewhere = f"http://localhost:{port}/toolset/page2.html"
        with BrowserOperatorToolset(SERVER, TOKEN, allowed_hosts=["127.0.0.1"]) as strict:
            self.toolset, saved = strict, self.toolset
            try:
                self.open_fixture()
                self.assertEqual(self.fail_call("navigate", url=elsewhere).splitlines()[0], phrases.URL_POLICY_REFUSED)
                self.assertEqual(self.page.js(self.active, "location.href"), PAGE)

                # A redirect from an allowed page: refused on the way. The tab then shows the refused address
                # (Chrome's blocked page), which no member but navigate may act on.
                redirect = FIXTURES + "__redirect?to=" + quote(elsewhere, safe="")
                refused = self.fail_call("navigate", url=redirect)
                self.assertEqual(refused.splitlines()[0], phrases.URL_POLICY_REFUSED)
                self.assertIn("A navigation was refused.", refused)
                self.assertEqual(self.fail_call("get_page_text").splitlines()[0], phrases.URL_POLICY_REFUSED)

                self.open_fixture()
                self.page.js(self.active, f"document.body.dataset.away = {json.dumps(elsewhere)}")
                lines = texts(self.call("left_click", target=self.centre("#away")))
                # The refusal is reported with the call that saw it, or with a later one: polled,
                # bounded (a call on the tab may itself be refused: it shows the refused address).
                deadline = time.monotonic() + 10
                while "A navigation was refused." not in lines and time.monotonic() < deadline:
                    lines += "\n" + texts(self.toolset.tool_result(use("wait", duration=0.2)))
                self.assertIn("A navigation was refused.", lines)
                # The tab shows the refused address, not the page: Chrome's blocked page, which nothing reads.
                self.assertEqual(self.fail_call("get_page_text").splitlines()[0], phrases.URL_POLICY_REFUSED)
                self.call("navigate", url=PAGE)  # navigate still works from there
            finally:
                self.toolset = saved
        # A policy that refuses every host: an error, and the extension keeps serving.
        with BrowserOperatorToolset(SERVER, TOKEN, allowed_hosts=[]) as none:
            result = none.tool_result(use("navigate", url=PAGE2))
            self.assertTrue(result.get("is_error"))
            self.assertEqual(texts(result).splitlines()[0], phrases.URL_POLICY_REFUSED)
        # Back to every host for what follows.
        with BrowserOperatorToolset(SERVER, TOKEN) as open_again:
            self.assertFalse(open_again.tool_result(use("navigate", url=PAGE2)).get("is_error"))


class Async(unittest.TestCase):
    def test_the_async_toolset_drives_the_same_members(self) -> None:
        async def run() -> None:
            async with AsyncBrowserOperatorToolset(SERVER, TOKEN, configs=ALL_ON, confirm=approve) as browser:
                result = await browser.tool_result(use("navigate", url=PAGE))
                self.assertFalse(result.get("is_error"), result)
                state = block_of(result)
                active = next(t for t in state["tabs"] if t.get("active"))
                self.assertEqual(active["url"], PAGE)
                shot = await browser.tool_result(use("screenshot"))
                self.assertEqual([b["type"] for b in shot["content"]], ["image", "browser_state"])
                text = await browser.tool_result(use("javascript_exec", text="document.title"))
                self.assertEqual(texts(text).splitlines()[0], "Toolset fixture")
                missing = await browser.tool_result(use("close_tab", tab_id="987654"))
                self.assertTrue(missing.get("is_error"))

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
