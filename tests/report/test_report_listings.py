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
    blocks = [html.unescape(b) for b in re.findall(r'<pre class="listing"[^>]*>(.*?)</pre>', text, re.S)]
    lines = [line for i, b in enumerate(blocks) for j, line in enumerate(b.split("\n")) if i == 0 or j > 0]
    return [line for line in lines if line.strip() and not set(line.strip()) <= {"-"}]


def table_rows(text: str, after: str = "") -> list[list[str]]:
    """The first table after `after` as its rows of cells, empty ones kept."""
    text = text[text.index(after):] if after else text
    return cells(text[:text.index("</table>")])


def lines_of(table: list[list[str]], text_columns: int) -> list[str]:
    """The rows as a listing prints them, worked out from the HTML table's cells alone (the
    test's cells are ASCII): each column as wide as its widest cell, the first `text_columns`
    left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(c.ljust(w) if i < text_columns else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()
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
    table = [[c.replace(" → ", " -> ") for c in row] for row in table_rows(shown, after)]  # the listing's ASCII arrow
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
