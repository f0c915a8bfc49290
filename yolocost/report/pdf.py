"""The PDF report: the plotly figures as vector SVG, printed with WeasyPrint.

The figures go through kaleido 1.x, which drives a headless Chromium (Debian's `chromium`).
One browser serves the whole run: `SvgExporter` opens a `kaleido.Kaleido(n=TABS,
mathjax=False)` on an event loop of its own and every call waits with a timeout, so a
browser that does not start or answer ends the run with one line instead of hanging.
(MathJax stays off: kaleido would load it from a CDN, and behind a firewall that waits
forever. `kaleido.start_sync_server` would do the same job, but its calls block on a queue
with no timeout, for ever if the browser fails to start.) The plotly.js kaleido loads is the
one shipped with plotly.py, from a local file. A report's figures go to the browser in one
batch, drawn by its tabs side by side.

WeasyPrint reads only the first family of an SVG `font-family` list written with spaces
after the commas, so the SVG text is rewritten without them (the CJK font must be found for
Chinese names). WeasyPrint may fetch nothing but data: URLs. `Printer` prints the reports in
worker processes (WeasyPrint is pure Python: one report per core), each written next to its
target and renamed once complete.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

import plotly.graph_objects as go
from markupsafe import Markup

from ..errors import YolocostError
from .charts import WIDTH

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "install it with `apt-get install chromium` (Debian/Ubuntu), or render --format html"
QUIET_LOGGERS = ("choreographer", "kaleido", "logistro", "browser_proc")
START_TIMEOUT = 60.0  # s: Chromium start-up
EXPORT_TIMEOUT = 30.0  # s: one figure
TABS = 2  # Chromium tabs drawing figures at once
RELOAD_EVERY = 50  # figures a tab draws between two reloads
PRINT_WORKERS = 2  # WeasyPrint processes at most (never more than the machine's cores)


def find_chromium() -> str:
    """The Chromium binary kaleido will drive, or a clean error saying how to install it."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise YolocostError(f"the PDF reports need Chromium for their charts and none is on PATH: {INSTALL_HINT}")


def check_weasyprint() -> None:
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as exc:  # the Python package missing, or Pango underneath it
        raise YolocostError(
            f"the PDF reports need WeasyPrint and Pango ({str(exc).splitlines()[0]}): "
            "pip install weasyprint; apt-get install libpango-1.0-0 libpangoft2-1.0-0"
        ) from None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _kaleido_class():
    """kaleido.Kaleido, but a tab is reloaded every RELOAD_EVERY figures instead of after each.

    A reload parses all of plotly.js again (about 0.15 s, three times the drawing of a chart).
    Each figure is drawn into an element of its own that plotly purges afterwards, so its SVG
    does not depend on what the tab drew before (the same elements and attributes; only the
    attribute order and plotly's random ids differ); the periodic reload bounds whatever a
    long run could leave behind."""
    import kaleido

    class Kaleido(kaleido.Kaleido):
        async def _return_kaleido_tab(self, tab) -> None:
            drawn = getattr(tab, "_yolocost_drawn", 0) + 1
            if drawn >= RELOAD_EVERY:
                await tab.reload()
                drawn = 0
            tab._yolocost_drawn = drawn
            await self.tabs_ready.put(tab)

    return Kaleido


class SvgExporter:
    """One headless Chromium (through kaleido) turning plotly figures into SVG.

        with SvgExporter(find_chromium()) as export:
            svgs = export.svgs([fig1, fig2])
    """

    def __init__(self, chromium: str, *, start_timeout: float = START_TIMEOUT, timeout: float = EXPORT_TIMEOUT,
                 tabs: int = TABS):
        self.chromium = chromium
        self.start_timeout = start_timeout
        self.timeout = timeout
        self.tabs = max(1, tabs)
        self.exported = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._kaleido = None
        self._browser = None  # the Kaleido (a choreographer Browser) as soon as it exists

    def __enter__(self) -> "SvgExporter":
        # kaleido and choreographer log warnings (and the browser's stderr) through `logging`;
        # the run reports problems itself, in one line, so they stay quiet meanwhile
        self._log_levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL + 10)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="yolocost-kaleido", daemon=True)
        self._thread.start()
        try:
            self._kaleido = self._wait(self._open(), self.start_timeout, f"starting Chromium ({self.chromium})")
        except BaseException:
            self._kill_browser()
            self._stop_loop()
            self._restore_logging()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._kaleido is not None:
                self._wait(self._kaleido.close(), 15.0, "stopping Chromium")
        except YolocostError:
            self._kill_browser()  # it did not close in time: no browser outlives the run
        finally:
            self._kaleido = None
            self._stop_loop()
            self._restore_logging()

    def _restore_logging(self) -> None:
        for name, level in getattr(self, "_log_levels", {}).items():
            logging.getLogger(name).setLevel(level)

    async def _open(self):
        k = _kaleido_class()(n=self.tabs, mathjax=False, path=self.chromium, timeout=self.timeout)
        self._browser = k
        await k.open()
        return k

    def _kill_browser(self) -> None:
        """Kill the browser process (and its session: Chromium runs helpers) if it still runs."""
        proc = getattr(self._browser, "subprocess", None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # choreographer starts it in a session of its own
        except (OSError, AttributeError):
            proc.kill()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    @staticmethod
    async def _cancel_others() -> None:
        """Cancel what is left on the loop (kaleido's and choreographer's background tasks)."""
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _stop_loop(self) -> None:
        if self._loop is not None:
            if self._loop.is_running():
                try:
                    asyncio.run_coroutine_threadsafe(self._cancel_others(), self._loop).result(5)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(5)
            if not self._loop.is_running():
                self._loop.close()
        self._loop = self._thread = None

    @staticmethod
    async def _guarded(coro):
        """The coroutine's result or exception as a value, so that a task cancelled on a
        timeout leaves no 'exception was never retrieved' behind."""
        try:
            return True, await coro
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            return False, exc

    def _wait(self, coro, timeout: float, what: str):
        future = asyncio.run_coroutine_threadsafe(self._guarded(coro), self._loop)
        try:
            ok, value = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise YolocostError(f"{what} timed out after {timeout:.0f} s") from None
        if ok:
            return value
        if isinstance(value, YolocostError):
            raise value
        raise YolocostError(f"{what} failed: {_first_line(value)}") from None

    def svg(self, fig: go.Figure, width: int = WIDTH) -> str:
        """The figure as SVG text, fonts fixed for WeasyPrint."""
        return self.svgs([fig], width)[0]

    def svgs(self, figures: Sequence[go.Figure], width: int = WIDTH) -> list[str]:
        """The figures as SVG text, in order, fonts fixed for WeasyPrint: one batch, which the
        browser's tabs draw side by side (kaleido times each figure out on its own)."""
        if not figures:
            return []

        async def batch():
            return await asyncio.gather(*(
                self._kaleido.calc_fig(fig, opts={"format": "svg", "width": width, "height": int(fig.layout.height or 360)})
                for fig in figures))

        rounds = -(-len(figures) // self.tabs)
        what = "exporting a chart to SVG" if len(figures) == 1 else f"exporting {len(figures)} charts to SVG"
        found = self._wait(batch(), self.timeout * rounds + 5, what)
        self.exported += len(found)
        return [fix_svg(d.decode("utf-8") if isinstance(d, bytes) else str(d)) for d in found]


# in a style (font-family: 'A', B; ...: entities such as &quot; allowed) or as an attribute
_FONT_FAMILY = re.compile(r"""(font-family\s*:\s*)((?:&[#\w]+;|[^;>"])*)|(font-family\s*=\s*")([^"]*)""")


def fix_svg(svg: str) -> str:
    """Drop the spaces after commas in font-family lists: WeasyPrint reads the first family
    only otherwise (and would miss the CJK font for Chinese names)."""
    def tighten(m: re.Match) -> str:
        prefix, families = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return prefix + re.sub(r",\s+", ",", families)

    return _FONT_FAMILY.sub(tighten, svg)


def chart_markup(svg: str) -> Markup:
    """The SVG as an image (a data: URL): WeasyPrint draws it as vectors and its text as text,
    without running the page's CSS over every SVG element."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return Markup(f'<img class="svg" alt="" src="data:image/svg+xml;base64,{data}">')


def write_pdf(html: str, out: Path) -> Path:
    """Print the page with WeasyPrint; it may fetch nothing but data: URLs."""
    import weasyprint

    fetcher = weasyprint.URLFetcher(allowed_protocols=["data"]) if hasattr(weasyprint, "URLFetcher") else None
    document = weasyprint.HTML(string=html, url_fetcher=fetcher) if fetcher else weasyprint.HTML(string=html)
    document.write_pdf(str(out))
    return out


def _print(html: str, out: Path) -> float:
    """write_pdf in a worker: the seconds it took."""
    started = time.monotonic()
    write_pdf(html, out)
    return time.monotonic() - started


def _warm_up() -> None:
    """A worker's first job: import WeasyPrint and load the fonts once, while Chromium starts."""
    import weasyprint

    weasyprint.HTML(string='<p style="font-family: \'Noto Sans\'">warm 热身</p>').render()


class Printer:
    """Prints pages to PDF in worker processes, each into `.<name>.tmp` renamed when complete.

        with Printer(workers=2) as printer:
            printer.submit(html, folder / "admin.pdf")
            for path in printer.done(wait=True):
                ...

    Workers are spawned (not forked: the parent runs threads, the browser's event loop among
    them); with one worker the pages are printed in this process, one after the other.
    `seconds` adds up the time each page took to print."""

    def __init__(self, workers: int = PRINT_WORKERS):
        self.workers = max(1, min(workers, os.cpu_count() or 1))
        self.seconds = 0.0
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._pending: list[tuple[Path, Path, concurrent.futures.Future | None]] = []

    def __enter__(self) -> "Printer":
        if self.workers > 1:
            import multiprocessing

            self._pool = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            for _ in range(self.workers):
                self._pool.submit(_warm_up)
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        for out, tmp, _ in self._pending:
            tmp.unlink(missing_ok=True)
        self._pending.clear()

    def submit(self, html: str, out: Path) -> None:
        tmp = out.with_name(f".{out.name}.tmp")
        if self._pool is None:
            self.seconds += _print(html, tmp)
            self._pending.append((out, tmp, None))
        else:
            self._pending.append((out, tmp, self._pool.submit(_print, html, tmp)))

    def done(self, wait: bool = False) -> Iterator[Path]:
        """The PDFs finished so far (all of them with `wait`), in the order submitted."""
        while self._pending:
            out, tmp, future = self._pending[0]
            if future is not None:
                if not wait and not future.done():
                    return
                try:
                    self.seconds += future.result()
                except concurrent.futures.BrokenExecutor:
                    raise YolocostError("printing a PDF failed: a WeasyPrint worker process died") from None
            self._pending.pop(0)
            os.replace(tmp, out)
            yield out
