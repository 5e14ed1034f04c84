"""A left_click through the driver beside the same click sent directly, median of N rounds (default 50).

Through the driver: a hand-built `left_click` tool_use through the SDK's `tool_result()`, which runs the SDK's
pipeline, the `computer` command and the `browser_state` report, to the tool_result block with its browser_state.
Directly: `POST /commands` with `computer {action: "left_click"}`, on a kept-alive connection like the driver's.
The two alternate, on the same tab and point. Also timed alone: `browser_state`, the second command of every
driver call, and the SDK's pipeline with the driver over a scripted server that answers at once (their own cost).

Run it with the server, a connected browser and the fixtures (tests/src/bin/bench_driver_python.rs does all of it:
`cargo run --release -p browser-operator-e2e --bin bench_driver_python [N]`), or by hand with
BROWSER_OPERATOR_URL, BROWSER_OPERATOR_TOKEN and BROWSER_OPERATOR_FIXTURES set.
"""

from __future__ import annotations

import os
import sys
import json
import time
import statistics

import httpx2
from anthropic.types.beta import BetaToolUseBlock

from browser_operator import BrowserOperatorToolset

SERVER = os.environ["BROWSER_OPERATOR_URL"]
TOKEN = os.environ["BROWSER_OPERATOR_TOKEN"]
PAGE = os.environ["BROWSER_OPERATOR_FIXTURES"].rstrip("/") + "/toolset/index.html"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def use(name: str, **input: object) -> BetaToolUseBlock:
    return BetaToolUseBlock(type="tool_use", id=f"toolu_{time.monotonic_ns()}", toolset_name="browser", name=name, input=input)


def main() -> None:
    direct = httpx2.Client(base_url=SERVER, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)

    def command(tool: str, args: dict) -> dict:
        reply = direct.post("/commands", json={"tool": tool, "args": args}).json()
        assert "result" in reply, reply
        return reply

    with BrowserOperatorToolset(SERVER, TOKEN) as browser:
        opened = browser.tool_result(use("navigate", url=PAGE))
        assert not opened.get("is_error"), opened
        state = next(b for b in opened["content"] if b.get("type") == "browser_state")
        tab = int(next(t["tab_id"] for t in state["tabs"] if t.get("active")))
        x, y = 80, 30  # the fixture's #target button
        click = use("left_click", target={"type": "coordinate", "x": x, "y": y})
        args = {"action": "left_click", "tabId": tab, "coordinate": [x, y]}

        for _ in range(5):  # warm: the debugger attached, connections open
            browser.tool_result(click)
            command("computer", args)

        through, plain, report = [], [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            result = browser.tool_result(click)
            through.append(time.perf_counter() - start)
            assert not result.get("is_error") and result["content"][-1]["type"] == "browser_state", result

            start = time.perf_counter()
            command("computer", args)
            plain.append(time.perf_counter() - start)

            start = time.perf_counter()
            command("browser_state", {})
            report.append(time.perf_counter() - start)

        clicks = command("javascript_tool", {"tabId": tab, "text": "window.events.filter((e) => e.type === 'click').length"})
        counted = int(clicks["result"]["content"][0]["text"])
        assert counted >= 2 * (ROUNDS + 5), counted
    direct.close()

    # The driver and the SDK alone: the same call over a scripted server that answers at once.
    canned = {
        "computer": {"commandId": "c", "result": {"content": [{"type": "text", "text": "Clicked at (80, 30)"}]}},
        "browser_state": {"commandId": "c", "result": {"content": [{"type": "text", "text": json.dumps(
            {"tabs": [{"tabId": tab, "title": "Toolset fixture", "url": PAGE, "active": True}], "changes": [], "dropped": 0})}]}},
        "set_policy": {"commandId": "c", "result": {"content": [{"type": "text", "text": "{}"}]}},
    }
    scripted = httpx2.MockTransport(lambda request: httpx2.Response(200, json=canned[json.loads(request.content)["tool"]]))
    alone = []
    with BrowserOperatorToolset(SERVER, TOKEN) as offline:
        offline._wire.http = httpx2.Client(base_url=SERVER, transport=scripted)
        for _ in range(5 + ROUNDS):
            start = time.perf_counter()
            assert not offline.tool_result(click).get("is_error")
            alone.append(time.perf_counter() - start)
        alone = alone[5:]

    ms = lambda values: round(statistics.median(values) * 1000, 2)  # noqa: E731
    p90 = lambda values: round(sorted(values)[int(len(values) * 0.9)] * 1000, 2)  # noqa: E731
    print(f"left_click round trip, {ROUNDS} rounds each, ms (median / p90):")
    print(f"  through the driver (tool_use -> tool_result with browser_state): {ms(through)} / {p90(through)}")
    print(f"  direct POST /commands computer left_click:                       {ms(plain)} / {p90(plain)}")
    print(f"  direct POST /commands browser_state (the driver's second command): {ms(report)} / {p90(report)}")
    print(f"  the SDK and the driver alone (a scripted server answering at once): {ms(alone)} / {p90(alone)}")
    print(json.dumps({"rounds": ROUNDS, "driver_ms": ms(through), "direct_ms": ms(plain), "browser_state_ms": ms(report), "sdk_and_driver_ms": ms(alone)}))


if __name__ == "__main__":
    main()
