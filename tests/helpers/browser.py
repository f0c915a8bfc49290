"""Open a page in real headless Chromium over the DevTools protocol and report what happened.

Uses choreographer (the CDP client kaleido brings) to drive Debian's `chromium` through a
pipe. Every request the page makes is recorded (Network.requestWillBeSent); a proxy that
points at a closed local port keeps anything that would leave the machine from leaving it.
Console messages, uncaught exceptions and JavaScript dialogs (alert) are recorded too.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


@dataclass
class PageRun:
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    exceptions: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    charts: int | None = None
    charts_drawn: int | None = None
    charts_error: str | None = None
    svg_count: int = 0
    values: dict = field(default_factory=dict)

    @property
    def outside_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(LOCAL_SCHEMES)]

    @property
    def errors(self) -> list[str]:
        return [t for level, t in self.console if level in ("error", "assert")] + self.exceptions


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


async def _visit(browser, page: Path, screenshot: Path | None, expressions: dict[str, str], timeout: float,
                 width: int) -> PageRun:
    run = PageRun()
    tab = await browser.create_tab("about:blank")
    await tab.send_command("Emulation.setDeviceMetricsOverride", params={
        "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    async def on_request(e):
        run.requests.append(e["params"]["request"]["url"])

    async def on_console(e):
        p = e["params"]
        text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
        run.console.append((p.get("type", ""), text))

    async def on_log(e):
        entry = e["params"]["entry"]
        run.console.append((entry.get("level", ""), f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"))

    async def on_exception(e):
        details = e["params"]["exceptionDetails"]
        run.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))

    async def on_dialog(e):
        run.dialogs.append(e["params"].get("message", ""))
        await tab.send_command("Page.handleJavaScriptDialog", params={"accept": True})

    async def on_failed(e):
        run.failed.append(e["params"].get("errorText", ""))

    tab.subscribe("Network.requestWillBeSent", on_request)
    tab.subscribe("Network.loadingFailed", on_failed)
    tab.subscribe("Runtime.consoleAPICalled", on_console)
    tab.subscribe("Runtime.exceptionThrown", on_exception)
    tab.subscribe("Log.entryAdded", on_log)
    tab.subscribe("Page.javascriptDialogOpening", on_dialog)
    for domain in ("Network", "Runtime", "Log", "Page"):
        await tab.send_command(f"{domain}.enable")
    loaded = tab.subscribe_once("Page.loadEventFired")
    await tab.send_command("Page.navigate", params={"url": page.resolve().as_uri()})
    await asyncio.wait_for(loaded, timeout)

    async def evaluate(expression: str):
        response = await tab.send_command("Runtime.evaluate", params={"expression": expression, "returnByValue": True})
        return response["result"]["result"].get("value")

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    charts = drawn = error = None
    while loop.time() < deadline:
        charts, drawn, error = json.loads(await evaluate(
            "JSON.stringify([document.body.getAttribute('data-charts'),"
            "document.body.getAttribute('data-charts-drawn'), document.body.getAttribute('data-charts-error')])"))
        if drawn is not None or error is not None:
            break
        await asyncio.sleep(0.2)
    run.charts = None if charts is None else int(charts)
    run.charts_drawn = None if drawn is None else int(drawn)
    run.charts_error = error
    # plotly draws a chart as a .svg-container holding its .main-svg layers
    run.svg_count = await evaluate("document.querySelectorAll('.plot .svg-container .main-svg').length ? "
                                   "document.querySelectorAll('.plot .svg-container').length : 0")
    for name, expression in expressions.items():
        run.values[name] = await evaluate(expression)
    if screenshot is not None:
        w, h = json.loads(await evaluate(
            "JSON.stringify([document.documentElement.scrollWidth, document.documentElement.scrollHeight])"))
        shot = await tab.send_command("Page.captureScreenshot", params={
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": w, "height": min(h, 20000), "scale": 1}})
        screenshot.write_bytes(base64.b64decode(shot["result"]["data"]))
    await asyncio.sleep(0.3)  # let late console messages arrive
    await browser.close_tab(tab.target_id)
    return run


async def _run_all(visits, timeout: float, width: int) -> list[PageRun]:
    from choreographer import Browser

    runs = []
    # a proxy on a closed local port: nothing the page asks for can leave the machine
    async with Browser(path=chromium_path(), headless=True, proxy_server="http://127.0.0.1:9") as browser:
        for page, screenshot, expressions in visits:
            runs.append(await _visit(browser, Path(page), screenshot, expressions or {}, timeout, width))
    return runs


def open_pages(visits: list[tuple[Path, Path | None, dict[str, str] | None]], timeout: float = 60,
               width: int = 1280) -> list[PageRun]:
    """Load each (page, screenshot or None, {name: JS expression}) in one headless Chromium,
    waiting until the page's charts have drawn; the expressions are evaluated afterwards."""
    return asyncio.run(asyncio.wait_for(_run_all(visits, timeout, width), timeout * len(visits) + 30))


def open_page(page: Path, screenshot: Path | None = None, expressions: dict[str, str] | None = None,
              timeout: float = 60, width: int = 1280) -> PageRun:
    return open_pages([(page, screenshot, expressions)], timeout, width)[0]
