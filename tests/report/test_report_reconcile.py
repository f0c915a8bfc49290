"""One set of cents: the sample month's reports (HTML and PDF), the finance CSV and the named
queries print the same cents for the same quantity, every table adds up to its total, and GPU
+ energy = cost in every row.

The documents are read as a finance controller would put them side by side: the HTML tables
parsed from the files, the PDF text from poppler, the CSV with the csv module, the queries
through the real CLI. Nothing is compared with the code's own intermediate values: each
figure is parsed from what a reader sees.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections import defaultdict
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers.reportkit import MONTH, pdf_text, require_tools

D = Decimal
NUMBER = re.compile(r"^-?[\d,]+(?:\.\d+)?$")


class Tables(HTMLParser):
    """Every <table> of a page with the id of the section it is in: header, body and foot rows
    as lists of cell texts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.section = None
        self._table = self._row = self._cell = None
        self._part = "tbody"

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.section = attrs.get("id")
        elif tag == "table":
            self._table = {"section": self.section, "thead": [], "tbody": [], "tfoot": []}
            self._part = "tbody"
        elif tag in ("thead", "tbody", "tfoot") and self._table is not None:
            self._part = tag
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table[self._part].append(self._row)
            self._row = None
        elif tag == "table" and self._table is not None:
            self.tables.append(self._table)
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(path: Path) -> list[dict]:
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<script.*?</script>", "", raw, flags=re.S)
    parser = Tables()
    parser.feed(raw)
    return parser.tables


def num(cell: str) -> Decimal | None:
    cell = cell.replace("\u2009", "").strip()
    return D(cell.replace(",", "")) if NUMBER.match(cell) else None


def heads(table: dict) -> list[str]:
    """The header cells without a currency suffix ('Cost (USD)' -> 'Cost')."""
    return [re.sub(r" \([A-Z]{3}\)$", "", h) for h in (table["thead"][0] if table["thead"] else [])]


def column(table: dict, header: str) -> int | None:
    head = heads(table)
    return head.index(header) if header in head else None


def section_tables(path: Path, section: str) -> list[dict]:
    return [t for t in tables(path) if t["section"] == section]


def cell(table: dict, label: str, header: str, part: str = "tbody") -> Decimal:
    """The number in the row whose first cell is `label`, under `header`."""
    col = column(table, header)
    for row in table[part]:
        if row and row[0] == label:
            return num(row[col])
    raise AssertionError(f"no row {label!r} in the {table['section']} table ({part})")


ADDITIVE = re.compile(r"(cost|Cost|GPU-hours|Spend|Billed|Share of unallocated capacity|Jobs)$")


@pytest.fixture(scope="module")
def csv_rows(rendered, tmp_path_factory):
    from yolocost.finance import export_finance

    out = tmp_path_factory.mktemp("reconcile") / "finance.csv"
    export_finance(rendered.config, MONTH, out)
    with open(out, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def csv_sum(rows, **match) -> Decimal:
    return sum((D(r["BilledCost"]) for r in rows if all(r[k] == v for k, v in match.items())), D("0.00"))


def cards(path: Path) -> dict[str, Decimal]:
    """Headline card label -> value, from the HTML."""
    raw = path.read_text(encoding="utf-8")
    out = {}
    for value, label in re.findall(r'<div class="v">(.*?)</div>\s*<div class="k">(.*?)</div>', raw, re.S):
        label = re.sub(r"\s*\([A-Z]{3}\)$", "", html.unescape(re.sub("<.*?>", "", label)).strip())
        out[label] = num(html.unescape(re.sub("<.*?>", "", value)).replace("%", "").strip())
    return out


def test_every_table_adds_up_to_its_printed_total(rendered):
    """Each money, GPU-hour and job-count column of every table with a total row: the rows
    (including an 'other' row) add up to the total, to the cent and to the tenth."""
    checked = 0
    for stem in rendered.stems() + ["summary"]:
        for table in tables(rendered.file(stem, "html")):
            if not table["tfoot"] or not table["thead"]:
                continue
            head, foot = heads(table), table["tfoot"][0]
            for i, name in enumerate(head):
                if not ADDITIVE.search(name) or i >= len(foot) or num(foot[i]) is None:
                    continue
                parts = [num(r[i]) for r in table["tbody"] if i < len(r)]  # None: a blank cell
                total = sum((p for p in parts if p is not None), D(0))
                assert total == num(foot[i]), f"{stem}: {table['section']} column {name!r}"
                checked += 1
    assert checked > 50


def test_gpu_plus_energy_is_cost_in_every_row(rendered):
    checked = 0
    for stem in rendered.stems() + ["summary"]:
        for table in tables(rendered.file(stem, "html")):
            head = heads(table)
            gpu = [i for i, h in enumerate(head) if h in ("GPU cost", "Held GPU cost", "Unallocated GPU cost")]
            if "Energy cost" not in head or "Cost" not in head or not gpu:
                continue
            e, c = head.index("Energy cost"), head.index("Cost")
            for row in table["tbody"] + table["tfoot"]:
                parts = [num(row[i]) or D(0) for i in gpu] + [num(row[e]) or D(0)]
                assert sum(parts) == num(row[c]), f"{stem}: {table['section']} row {row[0]!r}"
                checked += 1
    assert checked > 20


def test_a_figure_has_the_same_cents_everywhere(rendered, csv_rows):
    """Project totals, idle costs, unallocated capacity and the month's total: the admin
    report's tables and cards, each project's report, and the finance CSV agree to the cent."""
    admin = rendered.file("admin", "html")
    (projects,) = section_tables(admin, "projects")
    admin_cards = cards(admin)
    total = cell(projects, "Total", "Cost", "tfoot")
    assert admin_cards["Total cost"] == total == csv_sum(csv_rows)
    (gpu_models,) = section_tables(admin, "gpu_models")
    assert cell(gpu_models, "Total", "Cost", "tfoot") == total
    unallocated = cell(projects, "(unallocated)", "Cost")
    assert admin_cards["Unallocated capacity"] == unallocated == csv_sum(csv_rows, SubAccountId="(unallocated)")
    un_tables = section_tables(admin, "unallocated")
    assert cell(un_tables[0], "Total", "Cost", "tfoot") == unallocated
    # the hosts (GPU time only) add up to the GPU cost of capacity nobody held
    assert cell(un_tables[1], "Total", "GPU cost", "tfoot") == cell(un_tables[0], "Total", "GPU cost", "tfoot")
    idle_groups = section_tables(admin, "idle_waste")[-1]
    assert admin_cards["Idle waste"] == cell(projects, "Total", "Idle cost", "tfoot") == cell(
        idle_groups, "Total", "Idle cost", "tfoot")
    # GPU models: admin table = CSV pivoted by GPU model
    for row in gpu_models["tbody"]:
        assert num(row[column(gpu_models, "Cost")]) == csv_sum(csv_rows, x_GpuModel=row[0]), row[0]

    # the summary: its cards and its project table, the same cents
    summary = rendered.file("summary", "html")
    values = [num(v.replace(" USD", "")) for v in re.findall(
        r'<div class="v">(.*?)</div>', html.unescape(summary.read_text(encoding="utf-8")))]
    assert total in values and unallocated in values and admin_cards["Idle waste"] in values
    (summary_projects,) = tables(summary)
    for row in summary_projects["tbody"]:
        assert num(row[column(summary_projects, "Cost")]) == cell(projects, row[0], "Cost"), row[0]
    assert cell(summary_projects, "Total", "Cost", "tfoot") == total

    audiences = {a.project: a for a in rendered.result.audiences if a.project is not None}
    for name, audience in audiences.items():
        page = rendered.file(audience.stem, "html")
        own = cell(projects, name, "Cost")
        idle = cell(projects, name, "Idle cost")
        project_cards = cards(page)
        assert project_cards["Project cost"] == own == csv_sum(csv_rows, SubAccountId=name), name
        assert project_cards["Idle waste"] == idle == cell(idle_groups, name, "Idle cost"), name
        (models,) = section_tables(page, "gpu_models")
        assert cell(models, "Total", "Cost", "tfoot") == own
        assert cell(models, "Total", "Idle cost", "tfoot") == idle
        for row in models["tbody"]:  # the CSV pivoted by project and GPU model
            assert num(row[column(models, "Cost")]) == csv_sum(csv_rows, SubAccountId=name, x_GpuModel=row[0])
        (users,) = section_tables(page, "users")
        assert cell(users, "Total", "Cost", "tfoot") == own
        # the admin's user rows of this project are the project report's user rows
        (admin_users,) = section_tables(admin, "users")
        mine = {r[0]: r[column(admin_users, "Cost")] for r in admin_users["tbody"] if r[1] == name}
        theirs = {r[0]: r[column(users, "Cost")] for r in users["tbody"]}
        assert mine == theirs, name


def test_the_daily_chart_is_the_csv_pivoted_by_day(rendered, csv_rows):
    """The admin's cost-per-day chart holds, per day and project, the CSV's cents."""
    raw = rendered.file("admin", "html").read_text(encoding="utf-8")
    (fig,) = [json.loads(f) for f in re.findall(r'<script type="application/json" data-chart="chart-daily">(.*?)</script>',
                                                raw, re.S)]
    by_day = defaultdict(lambda: D("0.00"))
    for r in csv_rows:
        by_day[r["x_ChargeDate"]] += D(r["BilledCost"])
    charted = defaultdict(lambda: D("0.00"))
    for trace in fig["data"]:
        for x, y in zip(trace["x"], trace["y"]):
            charted[str(x)[:10]] += D(str(y)).quantize(D("0.01"))
    assert dict(charted) == dict(by_day)


def test_the_pdfs_print_the_html_figures(rendered):
    """Each report's headline figures and project totals appear with the same cents in its PDF."""
    require_tools(poppler=True)
    for stem in rendered.stems():
        page = rendered.file(stem, "html")
        text = pdf_text(rendered.file(stem, "pdf"))
        raw = html.unescape(page.read_text(encoding="utf-8"))
        for value in re.findall(r'<div class="v">(.*?)</div>', raw):
            assert value.strip() in text, f"{stem}: headline {value!r} not in the PDF"
        for table in section_tables(page, "gpu_models") + section_tables(page, "projects"):
            for row in table["tbody"] + table["tfoot"]:
                for value in row[1:]:
                    if num(value) is not None and "." in value:
                        assert value in text, f"{stem}: {value!r} of {table['section']} not in the PDF"


def test_named_queries_print_the_report_cents(rendered, csv_rows, cli):
    """`yolocost query project_month_over_month` and `user_costs` give the reports' cents."""
    def query(name: str) -> list[dict]:
        # the config the month was built with: a query of a month checks it against the build
        out = cli("--config", str(rendered.config.source), "--db", str(rendered.config.database), "query", name,
                  "-p", f"month={MONTH}", "-f", "json", check=True, timeout=None)
        return json.loads(out.stdout)

    projects = {r["project"]: D(str(r["cost"])) for r in query("project_month_over_month")}
    for project, cost in projects.items():
        assert cost == csv_sum(csv_rows, SubAccountId=project), project
    admin = rendered.file("admin", "html")
    (users,) = section_tables(admin, "users")
    printed = {(r[0], r[1]): num(r[column(users, "Cost")]) for r in users["tbody"]}
    queried = {(r["user_name"] or "(no user)", r["project"]): D(str(r["cost"])) for r in query("user_costs")}
    assert printed == queried
