"""The page layout of the reports: what poppler reads from every PDF of the sample month (word
boxes per page) and what the figures say about their axes.

A heading is never left at the foot of a page without what it introduces, a table split over
pages never leaves only its totals on a page, the headline cards sit in one row, and every
chart axis that shows money names the currency."""

from __future__ import annotations

import dataclasses
import html
import math
import re
import subprocess
from pathlib import Path

import duckdb
import pytest
from helpers.reportkit import MONTH, pdf_pages, pdf_text, require_tools

from yolocost.money import Currency
from yolocost.report import ADMIN_SECTIONS, PROJECT_SECTIONS, charts, data
from yolocost.report import sections as report_sections

# --------------------------------------------------------------------------- reading the PDF


@dataclasses.dataclass
class Line:
    """A line of text as poppler sees it: its box (points, y down) and its words."""

    x0: float
    y0: float
    x1: float
    y1: float
    words: list[str]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclasses.dataclass
class Block:
    """A block of text (a table cell, a paragraph, a card's label): its lines."""

    lines: list[Line]

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)

    @property
    def y0(self) -> float:
        return min(line.y0 for line in self.lines)

    @property
    def x0(self) -> float:
        return min(line.x0 for line in self.lines)


_BOX = r'xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)"'


def pdf_blocks(path: Path) -> list[list[Block]]:
    """Every page of the PDF as its text blocks (`pdftotext -bbox-layout`)."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", "-bbox-layout", str(path), "-"],
                         capture_output=True, text=True, check=True).stdout
    pages = []
    for page in re.findall(r"<page .*?</page>", out, re.S):
        blocks = []
        for block in re.findall(r"<block [^>]*>(.*?)</block>", page, re.S):
            lines = []
            for m in re.finditer(rf"<line {_BOX}>(.*?)</line>", block, re.S):
                words = [html.unescape(w) for w in re.findall(r"<word [^>]*>([^<]*)</word>", m.group(5))]
                lines.append(Line(*map(float, m.groups()[:4]), words))
            if lines:
                blocks.append(Block(lines))
        pages.append(blocks)
    return pages


def squeeze(text: str) -> str:
    """Text without any whitespace: how a paragraph compares whatever its line breaks."""
    return re.sub(r"\s+", "", text)


FOOTER = re.compile(r"page\d+of\d+$")

# --------------------------------------------------------------------------- reading the HTML


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


@dataclasses.dataclass
class Heading:
    section: str
    text: str
    intro: list[str]  # the paragraphs between the heading and what it introduces


_START = re.compile(r"<(h[1-6]|p|figure|table|div|ol|ul)\b[^>]*>", re.S)


def _blocks(fragment: str) -> list[tuple[str, str]]:
    """The blocks of a section in page order, by their opening tags (wrappers included, so a
    heading inside a wrapper is found too): (tag, text) for headings and paragraphs, (tag, "")
    for anything else."""
    found = []
    for m in _START.finditer(fragment):
        tag = m.group(1)
        if tag.startswith("h") or tag == "p":
            end = fragment.index(f"</{tag}>", m.end())
            found.append((tag, _text(fragment[m.end():end])))
        else:
            found.append((tag, ""))
    return found


def headings(page_html: str, sections) -> list[Heading]:
    """The headings (h2, h3) of each section, in page order, with their intro paragraphs: the
    paragraphs right after a heading, but for the last of them when nothing but a heading or
    the section's end follows (then that paragraph is what the heading introduces)."""
    found = []
    for section_id, _title in sections:
        m = re.search(rf'<section id="{section_id}">(.*?)</section>', page_html, re.S)
        assert m, f"section {section_id} missing from the HTML"
        blocks = _blocks(m.group(1))
        for i, (tag, text) in enumerate(blocks):
            if tag not in ("h2", "h3"):
                continue
            j = i + 1
            while j < len(blocks) and blocks[j][0] == "p":
                j += 1
            intro = [t for _, t in blocks[i + 1:j]]
            if j == len(blocks) or blocks[j][0].startswith("h"):
                intro = intro[:-1]
            found.append(Heading(section_id, text, intro))
    return found


def heading_problems(pdf: Path, heads: list[Heading]) -> list[str]:
    """Headings of `heads` that the PDF leaves without what they introduce on their page: after
    the heading line, the page must show the intro paragraphs and something more (the table,
    chart, list or cards) before its footer. Headings are found in page order, as lines of
    heading size (taller than table, chart and body text) that read exactly as the heading."""
    pages = pdf_blocks(pdf)
    problems = []
    cursor = (0, -1.0)
    for head in heads:
        where = None
        for p in range(cursor[0], len(pages)):
            lines = sorted((ln for b in pages[p] for ln in b.lines), key=lambda ln: (ln.y0, ln.x0))
            for ln in lines:
                if (p, ln.y0) > cursor and ln.text == head.text and 15.5 < ln.height < 21 and ln.x1 - ln.x0 > ln.height:
                    where = (p, ln)
                    break
            if where:
                break
        if where is None:
            problems.append(f"{head.section}: heading {head.text!r} not found after page {cursor[0] + 1}")
            continue
        p, line = where
        cursor = (p, line.y0)
        below = sorted((ln for b in pages[p] for ln in b.lines if ln.y0 > line.y1 - 1), key=lambda ln: (ln.y0, ln.x0))
        rest = FOOTER.sub("", squeeze(" ".join(ln.text for ln in below)))
        for intro in map(squeeze, head.intro):
            if not rest.startswith(intro):
                problems.append(f"{head.section}: page {p + 1} ends inside the intro of {head.text!r}")
                break
            rest = rest[len(intro):]
        else:
            if not rest:
                problems.append(f"{head.section}: {head.text!r} is the last thing on page {p + 1}")
    return problems


def lonely_totals(pdf: Path) -> list[str]:
    """Pages on which a table goes on with nothing but its totals: the first line of the page
    that starts with "Total" has above it (under the running head and a repeated header) no
    row of figures but bucket rows such as "(unallocated)"."""
    problems = []
    for page in range(1, pdf_pages(pdf) + 1):
        lines = [ln.strip() for ln in pdf_text(pdf, page, layout=True).splitlines() if ln.strip()]
        total = next((i for i, ln in enumerate(lines) if ln.startswith("Total")), None)
        if total is None:
            continue
        rows = [ln for ln in lines[:total] if re.search(r"\d\.\d", ln) and not ln.startswith("(")]
        if not rows:
            problems.append(f"page {page}: {' | '.join(lines[:total + 1])}")
    return problems


def card_labels(page_html: str) -> list[str]:
    return [_text(k) for k in re.findall(r'<div class="k">(.*?)</div>', page_html, re.S)]


def card_rows(pdf: Path, labels: list[str]) -> list[tuple[str, float, float]]:
    """(label, top, left) of each headline card's label on page 1 (a label is a text block; the
    topmost block of that text: a table further down the page may use the same words)."""
    found: dict[str, tuple[str, float, float]] = {}
    for block in pdf_blocks(pdf)[0]:
        if block.text in labels and (block.text not in found or block.y0 < found[block.text][1]):
            found[block.text] = (block.text, round(block.y0, 1), round(block.x0, 1))
    return list(found.values())


# --------------------------------------------------------------------------- the PDFs


def _audiences(rendered):
    return [(a.stem, ADMIN_SECTIONS if a.project is None else PROJECT_SECTIONS) for a in rendered.result.audiences]


def test_no_heading_is_left_without_what_it_introduces(rendered):
    require_tools(poppler=True)
    checked = 0
    for stem, sections in _audiences(rendered):
        heads = headings(rendered.file(stem, "html").read_text(encoding="utf-8"), sections)
        assert {"headline", "daily", "idle_waste", "tag_violations"} <= {h.section for h in heads}, stem
        assert heading_problems(rendered.file(stem, "pdf"), heads) == [], stem
        checked += len(heads)
    assert checked > 7 * 12


def test_no_page_holds_only_the_totals_of_a_table(rendered):
    require_tools(poppler=True)
    for stem, _ in _audiences(rendered):
        assert lonely_totals(rendered.file(stem, "pdf")) == [], stem


def test_the_project_table_total_keeps_company(rendered):
    """The admin project table runs over a page; the page of its Total also shows projects."""
    require_tools(poppler=True)
    pdf = rendered.file("admin", "pdf")
    names = [a.project for a in rendered.result.audiences[1:]]
    for page in range(1, pdf_pages(pdf) + 1):
        lines = pdf_text(pdf, page, layout=True).splitlines()
        if any(re.match(r"\s*\(unallocated\)\s+0\s+0\s", ln) for ln in lines):  # the project table's row
            table = lines[:next(i for i, ln in enumerate(lines) if ln.strip().startswith("Total"))]
            assert any(ln.strip().startswith(name[:8]) for ln in table for name in names), page
            break
    else:
        pytest.fail("the project table's (unallocated) row was not found")


def test_the_headline_cards_sit_in_one_row(rendered):
    require_tools(poppler=True)
    for stem, _ in _audiences(rendered):
        labels = card_labels(rendered.file(stem, "html").read_text(encoding="utf-8"))
        assert len(labels) == (5 if stem == "admin" else 4), stem
        found = card_rows(rendered.file(stem, "pdf"), labels)
        assert sorted(label for label, _, _ in found) == sorted(labels), stem
        assert len({top for _, top, _ in found}) == 1, (stem, found)  # one row
        lefts = [left for _, _, left in found]
        assert lefts == sorted(lefts) and len(set(lefts)) == len(lefts), (stem, found)  # side by side, in order


def test_the_leaderboard_says_what_bubble_size_means_in_html_and_which_rows_print(rendered):
    """The HTML page explains its hover-only bubble chart; the PDF has no bubble chart but the
    ranked one, and prints the best and the worst 10 of a longer board, saying how many lie
    between (the sample month: 168 configurations, 51 to 56 per project)."""
    require_tools(poppler=True)
    for stem in ("admin", rendered.stems()[1]):
        page = rendered.file(stem, "html").read_text(encoding="utf-8")
        shown = " ".join(_text(re.sub(r"<script\b.*?</script>", "", page, flags=re.S)).split())  # not the figure data
        printed = " ".join(pdf_text(rendered.file(stem, "pdf")).split())
        assert re.search(r"bubble size[^.]*number of runs", shown, re.I), stem
        assert not re.search(r"bubble size", printed, re.I), stem
        found = re.search(r"… (\d+) configurations ranked #11 to #(\d+)", printed)
        assert found and int(found.group(2)) - 10 == int(found.group(1)), stem
        assert re.search(r"best and the worst 10 of \d+ configurations", printed), stem


# --------------------------------------------------------------------------- the figures


@pytest.fixture(scope="module")
def figures(sample_db):
    """Every audience's figures of the sample month, as sections.figures makes them for both formats."""
    config = sample_db.config
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        projects = data.month_projects(con, MONTH)
        out = {}
        for project in [None, *projects]:
            report = report_sections.collect(con, MONTH, project, timezone=config.timezone,
                                             grain_seconds=config.grain_seconds, currency=config.currency)
            out[project] = (report, report_sections.figures(report, config.currency, project))
        return config.currency, out
    finally:
        con.close()


def money_axes(fig, currency: str) -> set[str]:
    """The axes ("x", "y") whose values a trace's hover text shows as money in `currency`:
    the axis value itself, or a customdata column that holds the axis value rounded to the
    currency's minor unit (a log axis places each point at its exact cost), for an axis whose
    value the hover does not show itself (the value chart's mAP50 is `%{y:.3f}`)."""
    half = float(Currency(currency).quantum) / 2
    found = set()
    for trace in fig.data:
        template = trace.hovertemplate or ""
        for axis in ("x", "y"):
            if re.search(rf"%\{{{axis}[^}}]*\}} {re.escape(currency)}", template):
                found.add(axis)
        for column in re.findall(rf"%\{{customdata\[(\d+)\][^}}]*\}} {re.escape(currency)}", template):
            shown = [row[int(column)] for row in trace.customdata]
            for axis in ("x", "y"):
                values = getattr(trace, axis)
                if f"%{{{axis}" in template or not shown:
                    continue
                if values is not None and len(values) == len(shown) and all(
                        isinstance(s, float) and isinstance(v, float) and abs(s - v) <= half + 1e-9
                        for s, v in zip(shown, values)):
                    found.add(axis)
    return found


def names_currency(axis, currency: str) -> bool:
    title = axis.title.text or ""
    return currency in title or currency in (axis.tickprefix or "") or currency in (axis.ticksuffix or "")


def test_every_money_axis_names_the_currency(figures):
    currency, by_audience = figures
    seen = set()
    for project, (_, figs) in by_audience.items():
        for name, fig in figs.items():
            for axis in money_axes(fig, currency):
                layout_axis = fig.layout.xaxis if axis == "x" else fig.layout.yaxis
                assert names_currency(layout_axis, currency), (project, name, axis, layout_axis.title.text)
                seen.add(name)
    assert seen == {"daily", "projects", "users", "gpu_models", "image_tags", "idle_waste", "leaderboard", "leaderboard_rank", "breakers",
                    "tag_violations", "trend"}


def test_the_leaderboard_axis_ticks_are_readable_values_and_bubble_size_is_explained(figures):
    currency, by_audience = figures
    for project, (report, figs) in by_audience.items():
        fig = figs["leaderboard"]
        assert re.search(r"bubble size[^.]*runs", fig.layout.title.text, re.I), project
        x = fig.layout.xaxis
        costs = [float(r["mean_cost_per_run"]) for r in report["leaderboard"] if r["mean_map50"] is not None]
        if x.type == "log":
            # explicit ticks, never plotly's minor "2 3 4 ... 9" labels of a log axis
            assert x.tickmode == "array" and len(x.tickvals) >= 2, project
            for value, text in zip(x.tickvals, x.ticktext):
                mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
                assert round(mantissa, 6) in (1, 1.5, 2, 3, 5, 7), (project, value)
                assert float(text.replace(",", "")) == pytest.approx(value), (project, value, text)
            low, high = (10 ** v for v in x.range)
            assert low <= min(costs) and max(costs) <= high, project  # every point inside the axis
            assert all(low <= v <= high for v in x.tickvals), project
        else:
            assert max(costs) / min(costs) < 3 or min(costs) <= 0, project


def test_the_first_day_label_keeps_clear_of_the_y_axis(figures):
    """The daily chart's x labels sit under the days (noon), not on the axis corner where the
    y axis writes its 0."""
    _, by_audience = figures
    for project, (report, figs) in by_audience.items():
        x = figs["daily"].layout.xaxis
        start = report["daily"]["first_day"]
        assert str(x.range[0]).startswith(start), project
        assert str(x.tick0) > str(x.range[0]) or x.ticklabelmode == "period", (project, x.tick0, x.range)


@pytest.mark.parametrize("values, ticks", [
    ([5.0, 20.0], ["5", "7", "10", "15", "20"]),  # a short span: 1-1.5-2-3-5-7
    ([2.3, 900.0], ["5", "10", "20", "50", "100", "200", "500", "1,000"]),  # 1-2-5
    ([0.05, 0.4], ["0.05", "0.07", "0.1", "0.15", "0.2", "0.3"]),
    ([0.01, 50_000.0], ["0.01", "0.1", "1", "10", "100", "1,000", "10,000"]),  # decades only
])
def test_log_ticks_are_round_values_inside_the_range(values, ticks):
    span, tickvals, ticktext = charts.log_ticks(values)
    assert ticktext == ticks
    assert tickvals == [float(t.replace(",", "")) for t in ticks]
    assert 10 ** span[0] < min(values) and max(values) < 10 ** span[1]
