"""The PDF report: the charts drawn as vector SVG by matplotlib, printed with WeasyPrint.

No browser and no other program: `paper.py` draws each plotly figure of the HTML report again
with matplotlib, from the figure's own description, so the PDF's charts show the same data,
titles, axes and legend. The page is rendered with a placeholder where each chart goes;
`Printer` hands the page and its charts' descriptions to a worker process (WeasyPrint and
matplotlib are pure Python: one report per core), which draws the charts, puts them in as
SVG images and prints the page, written next to its target and renamed once complete. The
charts' texts are drawn as whole strings (`svgtext`), not letter by letter.

WeasyPrint reads only the first family of an SVG `font-family` list written with spaces
after the commas, so the SVG text is rewritten without them (the CJK font must be found for
Chinese names). WeasyPrint may fetch nothing but data: URLs.
"""

from __future__ import annotations

import base64
import concurrent.futures
import html
import os
import re
import time
from pathlib import Path
from typing import Iterator, Mapping

from markupsafe import Markup

from ..atomic import commit, discard, temporary_beside
from ..errors import YolocostError
from . import paper, svgtext

PRINT_WORKERS = 2  # WeasyPrint processes at most (never more than the machine's cores)
INSTALL_HINT = "pip install weasyprint matplotlib; apt-get install libpango-1.0-0 libpangoft2-1.0-0"


def check_weasyprint() -> None:
    """WeasyPrint (with Pango underneath) and matplotlib import, or one clean error."""
    try:
        import matplotlib  # noqa: F401
        import weasyprint  # noqa: F401
    except (ImportError, OSError) as exc:  # a Python package missing, or Pango underneath WeasyPrint
        raise YolocostError(
            f"the PDF reports need WeasyPrint, Pango and matplotlib ({str(exc).splitlines()[0]}): {INSTALL_HINT}"
        ) from None


# in a style (font-family: 'A', B; ...: entities such as &quot; allowed) or as an attribute
_FONT_FAMILY = re.compile(r"""(font-family\s*:\s*)((?:&[#\w]+;|[^;>"])*)|(font-family\s*=\s*")([^"]*)""")


# a text element as matplotlib writes it: its attributes, then its characters
_TEXT = re.compile(r"<text([^>]*)>([^<]*)</text>")
_NO_TURN = re.compile(r' transform="rotate\(-?0 [-\d.e]+ [-\d.e]+\)"')
# a tightened font-family list in a style: the first family kept
_FIRST_FAMILY = re.compile(r"(font-family\s*:\s*(?:'[^']*'|\"[^\"]*\"|&[#\w]+;[^;&]*&[#\w]+;|[^,;'\"]+)),[^;\"]*")


def fix_svg(svg: str) -> str:
    """The chart's SVG as WeasyPrint reads it best. Font-family lists lose the spaces after
    their commas: WeasyPrint reads the first family only otherwise (and would miss the CJK
    font for Chinese names). A text of ASCII characters alone names only the first family (the
    one matplotlib measured it in: no fallback fonts to look up), and the rotation by 0 degrees
    matplotlib writes on every text is left out."""
    def tighten(m: re.Match) -> str:
        prefix, families = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        return prefix + re.sub(r",\s+", ",", families)

    def plain(m: re.Match) -> str:
        attributes, content = _NO_TURN.sub("", m.group(1)), m.group(2)
        if html.unescape(content).isascii():
            attributes = _FIRST_FAMILY.sub(r"\1", attributes)
        return f"<text{attributes}>{content}</text>"

    return _TEXT.sub(plain, _FONT_FAMILY.sub(tighten, svg))


def chart_markup(svg: str) -> Markup:
    """The SVG as an image (a data: URL): WeasyPrint draws it as vectors and its text as text,
    without running the page's CSS over every SVG element."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return Markup(f'<img class="svg" alt="" src="data:image/svg+xml;base64,{data}">')


def chart_slot(name: str) -> Markup:
    """Where the chart `name` goes in a rendered page (a comment: autoescaped text from the
    data can never read as one); `with_charts` puts the drawn chart there."""
    return Markup(f"<!--yolocost-chart:{name}-->")


_SLOT = re.compile(r"<!--yolocost-chart:([\w-]+)-->")


def with_charts(html: str, charts: Mapping[str, dict]) -> str:
    """The page with each chart slot replaced by its chart drawn as SVG (paper.svg)."""
    drawn: dict[str, Markup] = {}

    def chart(m: re.Match) -> str:
        name = m.group(1)
        if name not in drawn:
            drawn[name] = chart_markup(svgtext.prepare(fix_svg(paper.svg(charts[name]))))
        return drawn[name]

    return _SLOT.sub(chart, html)


def write_pdf(html: str, out: Path) -> Path:
    """Print the page with WeasyPrint; it may fetch nothing but data: URLs."""
    import weasyprint

    fetcher = weasyprint.URLFetcher(allowed_protocols=["data"]) if hasattr(weasyprint, "URLFetcher") else None
    document = weasyprint.HTML(string=html, url_fetcher=fetcher) if fetcher else weasyprint.HTML(string=html)
    document.write_pdf(str(out))
    return out


def _print(html: str, out: Path, charts: Mapping[str, dict]) -> tuple[float, float]:
    """In a worker: draw the page's charts, then print it; the seconds each took."""
    started = time.monotonic()
    page = with_charts(html, charts)
    drawn = time.monotonic()
    write_pdf(page, out)
    return drawn - started, time.monotonic() - drawn


def _warm_up() -> None:
    """A worker's first job: import WeasyPrint and matplotlib and load their fonts once."""
    import weasyprint

    weasyprint.HTML(string='<p style="font-family: \'Noto Sans\'">warm 热身</p>').render()
    paper.svg({"data": [{"type": "bar", "x": ["热身"], "y": [1]}], "layout": {"title": {"text": "warm"}}})


class Printer:
    """Prints pages to PDF in worker processes, each into `.<name>.tmp` renamed when complete.

        with Printer(workers=2) as printer:
            printer.submit(html, folder / "admin.pdf", charts)
            for path in printer.done(wait=True):
                ...

    Workers are spawned (not forked: a forked DuckDB or thread pool is not safe to use); with
    one worker the pages are printed in this process, one after the other. `seconds` adds
    up the time each page took to print, `chart_seconds` the time its charts took to draw."""

    def __init__(self, workers: int = PRINT_WORKERS):
        self.workers = max(1, min(workers, os.cpu_count() or 1))
        self.seconds = 0.0
        self.chart_seconds = 0.0
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
        self.close()

    def close(self) -> None:
        """Stop the workers (a page being printed is finished first) and remove what a page
        not handed over by `done` left behind."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for out, tmp, _ in self._pending:
            discard(tmp)
        self._pending.clear()

    def submit(self, html: str, out: Path, charts: Mapping[str, dict] | None = None) -> None:
        """Print the page to `out`, its chart slots filled with `charts` (name: description)."""
        tmp = temporary_beside(out)
        charts = dict(charts or {})
        if self._pool is None:
            self._count(_print(html, tmp, charts))
            self._pending.append((out, tmp, None))
        else:
            self._pending.append((out, tmp, self._pool.submit(_print, html, tmp, charts)))

    def _count(self, seconds: tuple[float, float]) -> None:
        self.chart_seconds += seconds[0]
        self.seconds += seconds[1]

    def done(self, wait: bool = False) -> Iterator[Path]:
        """The PDFs finished so far (all of them with `wait`), in the order submitted."""
        while self._pending:
            out, tmp, future = self._pending[0]
            if future is not None:
                if not wait and not future.done():
                    return
                try:
                    self._count(future.result())
                except concurrent.futures.BrokenExecutor:
                    raise YolocostError("printing a PDF failed: a WeasyPrint worker process died") from None
            self._pending.pop(0)
            commit(tmp, out)
            yield out
