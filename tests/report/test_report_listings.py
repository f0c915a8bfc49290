"""The admin report's long tables print as aligned text: the same cells as the HTML table.

WeasyPrint lays a table out cell by cell, and at 1,000 GPUs x 20 projects the admin report's
users (about 300 rows), hosts (about 200) and breaker stretches (about 100) were most of its
printing work. Above `listing.LONG` rows the PDF prints them as aligned monospaced lines
(yolocost/report/listing.py), with the cells the template's own filters wrote; up to that
many, and always in the HTML, they stay tables. Checked here on made-up rows, cell by cell.
"""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from helpers.pages import cells

from yolocost.report import listing
from yolocost.templating import environment

CONTEXT = {"month": "2026-10", "currency": "USD", "long_table": listing.LONG, "listed": listing.listed,
           "chart": lambda name: "", "has_chart": lambda name: False,
           "thresholds": {"breaker_min_hours": 2, "breaker_util_percent": 40, "breaker_loss_delta": 0.001}}


def users(n: int) -> list[dict]:
    return [{"user_name": f"user-{i:03}", "project": f"proj-{i % 7:02}", "bucket": "project", "jobs": i + 1,
             "gpu_hours": Decimal(i) * Decimal("12.345"), "density": i / (n + 1), "idle_gpu_hours": Decimal(i) / 4,
             "idle_cost": Decimal(i) * Decimal("0.37"), "cents": Decimal(i) * Decimal("101.01")} for i in range(n)]


def hosts(n: int) -> list[dict]:
    return [{"hostname": f"gpu-node-{i:03}", "gpu_model": "A100-SXM4-80GB", "gpus": 8, "capacity_gpu_hours": Decimal(5952),
             "unallocated_gpu_hours": Decimal(i) * Decimal("3.3"), "share": i / 1000, "cents": Decimal(i) * Decimal("9.68")}
            for i in range(n)]


def stretches(n: int) -> list[dict]:
    return [{"job_id": f"job-{i:04}", "user_name": f"user-{i % 9}", "project": f"proj-{i % 7:02}", "model_type": "yolov8m",
             "start": f"2026-10-{1 + i % 28:02} 04:00", "end": f"2026-10-{1 + i % 28:02} 07:00",
             "stretch_hours": Decimal(3), "gpu_hours": Decimal(3), "util_mean": 12.5, "loss_before": 0.41234,
             "loss_after": 0.41201, "loss_later": 0.3 if i % 5 == 0 else None, "improved_later": i % 5 == 0,
             "cents": Decimal(i) * Decimal("2.61")} for i in range(n)]


def render(section: str, report: dict, fmt: str, admin: bool = True) -> str:
    page = environment(None, "USD").get_template(f"sections/{section}.html")
    return page.render(**CONTEXT, r=report, fmt=fmt, audience={"admin": admin, "project": None if admin else "p"})


def printed_lines(text: str) -> list[str]:
    """The lines of every listing block: the header once, then the rows and the total (the
    rule left out), as printed."""
    blocks = [html.unescape(re.sub(r"</?span[^>]*>", "", b))  # a marked line stands in a span
              for b in re.findall(r'<pre class="listing"[^>]*>(.*?)</pre>', text, re.S)]
    lines = [line for i, b in enumerate(blocks) for j, line in enumerate(b.split("\n")) if i == 0 or j > 0]
    return [line for line in lines if line.strip() and not set(line.strip()) <= {"-"}]


def table_rows(text: str, after: str = "") -> list[list[str]]:
    """The first table after `after` as its rows of cells, empty ones kept."""
    text = text[text.index(after):] if after else text
    return cells(text[:text.index("</table>")])


def lines_of(table: list[list[str]], text_columns: int) -> list[str]:
    """The rows as a listing prints them, worked out from the HTML table's cells: each column
    as wide as its widest cell (in the font's columns, `listing.width`, checked against Pango
    below), the first `text_columns` left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(listing.width(row[i]) for row in table) for i in range(len(table[0]))]

    def fill(cell: str, width: int) -> str:
        return " " * (width - listing.width(cell))

    return ["  ".join(c + fill(c, w) if i < text_columns else fill(c, w) + c for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in table]


CASES = {
    "users": (lambda n: {"users": users(n)}, ""),
    "breakers": (lambda n: {"breakers": {"rows": stretches(n), "cents": Decimal("99.99"), "net_cents": Decimal("88.88"),
                                         "gpu_hours": Decimal(3 * n), "net_gpu_hours": Decimal(3), "false_stops": 1}}, ""),
    "unallocated": (lambda n: {"unallocated": {"hosts": hosts(n), "gpu_models": [], "gpu_hours": Decimal(1), "cents": Decimal(1),
                                               "shared_cents": None, "gpu_cents": Decimal("123.45")}}, "By host"),
}


TEXT_COLUMNS = {"users": 2, "breakers": 6, "unallocated": 2}  # in the admin report; one fewer for a project


@pytest.mark.parametrize("name, admin", [(n, a) for n in CASES for a in (True, False) if a or n != "unallocated"])
def test_a_long_table_prints_the_html_tables_cells_as_lines(name, admin):
    report, after = CASES[name]
    long = report(listing.LONG + 1)
    printed, shown = render(name, long, "pdf", admin), render(name, long, "html", admin)
    assert "<table" not in printed[printed.index(after):] if after else "<tbody" not in printed
    table = table_rows(shown, after)
    assert len(table) == listing.LONG + 3 and len({len(row) for row in table}) == 1  # header, rows, total
    assert printed_lines(printed) == lines_of(table, TEXT_COLUMNS[name] - (0 if admin else 1))


@pytest.mark.parametrize("name", CASES)
def test_a_short_table_stays_a_table_in_the_pdf(name):
    report, after = CASES[name]
    printed = render(name, report(listing.LONG), "pdf")
    assert '<pre class="listing"' not in printed
    assert table_rows(printed, after) == table_rows(render(name, report(listing.LONG), "html"), after)


def test_a_none_cell_prints_empty_and_a_short_row_is_refused():
    printed = listing.listed(["Job", "Project", "Cost"], [["j1", None, "2.00"], ["j2", "p", "10.00"]], None, 2)
    # columns 3, 7 and 5 wide (the headers are the widest cells), two spaces apart
    assert printed["blocks"] == [["j1             2.00", "j2   p        10.00"]]
    with pytest.raises(ValueError, match="header's 3 cells"):
        listing.listed(["Job", "Project", "Cost"], [["j1", "2.00"]], None, 2)


NAMES = ["alice.meyer", "张伟", "Жанна.Петрова", "Ωmega-team", "josé.garcía", "Zoë Ærø", "ordinary", "Zoe\u0308"]


def _line_widths(lines: list[str], size_pt: float = 7.0) -> list[float]:
    """Each line's width (CSS px) as WeasyPrint (Pango) sets it in the listing's font."""
    from weasyprint import HTML
    from weasyprint.formatting_structure.boxes import LineBox

    body = "\n".join(html.escape(line) for line in lines)
    page = HTML(string=f'<pre style="font-family: \'{listing.FONT}\'; font-size: {size_pt}pt; margin: 0">{body}</pre>'
                ).render().pages[0]
    widths: list[float] = []

    def walk(box) -> None:  # in document order
        if isinstance(box, LineBox):
            widths.append(sum(child.width for child in box.children))
        for child in getattr(box, "children", ()):
            walk(child)

    walk(page._page_box)
    return widths


@pytest.mark.skipif(listing._font() is None, reason="needs the listing font (fonts-noto-cjk)")
@pytest.mark.parametrize("text_columns", [1, 2])
def test_columns_line_up_in_the_font_for_cyrillic_greek_accented_and_cjk_names(text_columns):
    """The listing font is monospaced for ASCII only (Ж is 1.8 columns, é 1.1, 中 2): a cell is
    padded by the width Pango really sets it at, counted from where the line really ends, so
    a right-aligned figure column ends within half a column of where the ASCII header's ends,
    even after two text columns drawn a fraction wider than they count (Жора 5.4, Щука 5.2)."""
    projects = ["Щука", "视觉质检", "proj-1", "Ωmega", "Zoë", "proj-2", "Ærø", "proj-3", "Фёкла"]
    rows = [(name, *([projects[i]] if text_columns == 2 else []), f"{i * 1234.5:,.2f}")
            for i, name in enumerate(["Жора", *NAMES])]
    header = ("User", *(["Project"] if text_columns == 2 else []), "Cost")
    out = listing.aligned(header, rows, ("Total", *([""] if text_columns == 2 else []), "9,999.99"), frozenset({"Cost"}))
    lines = [out["header"], *out["blocks"][0], out["total"]]
    size = 7.0
    widths = _line_widths(lines, size)
    assert len(widths) == len(lines)
    column = size / 2 * 4 / 3  # half an em, in CSS px (the unit of WeasyPrint's boxes)
    assert all(abs(w - widths[0]) <= column / 2 + 0.01 for w in widths), list(zip(lines, widths))


def test_a_combining_mark_takes_no_column():
    """"Zoë" written with a combining diaeresis (e + U+0308) takes the columns "Zoe" does,
    in a listing and in a terminal table alike."""
    from yolocost.tables import display_width

    assert display_width("Zoe\u0308") == display_width("Zoë") == 3 and display_width("a\u200bb") == 2
    assert listing.width("Zoe\u0308") == listing.width("Zoe")


def test_the_muted_rows_stay_muted_in_the_listing():
    """A user row that is no project's (the unlabeled jobs' bucket) is muted in the HTML
    table (tr.bucket) and in the PDF listing (its line in a span of class bucket)."""
    rows = users(listing.LONG + 1)
    for i in (3, 17):
        rows[i] = {**rows[i], "bucket": "unlabeled", "user_name": f"(unlabeled) {i}"}
    shown, printed = render("users", {"users": rows}, "html"), render("users", {"users": rows}, "pdf")
    muted_rows = re.findall(r'<tr class="bucket"><td class="l">([^<]*)</td>', shown)
    muted_lines = re.findall(r'<span class="bucket">([^<]*)</span>', printed)
    assert [html.unescape(name) for name in muted_rows] == ["(unlabeled) 3", "(unlabeled) 17"]
    assert [line.split("  ")[0].strip() for line in muted_lines] == ["(unlabeled) 3", "(unlabeled) 17"]
    assert len(printed_lines(printed)) == len(rows) + 2  # the header, every row once, the total
