"""A project report's job table (HTML section, PDF appendix, project-<slug>.csv): every job of
the month, costs and GPU-hours that are the ledger's stored cents and tenths and add up to the
project's own-usage total, sortable in real Chromium, nothing of other projects."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil
import subprocess
from decimal import Decimal
from html.parser import HTMLParser

import duckdb
import pytest
from helpers.browser import open_page
from helpers.builders import job_row, result_row, usage_run, yolocost
from helpers.reportkit import MONTH, pdf_pages, pdf_text, require_tools

from yolocost.report import jobs as job_table_module
from yolocost.report import PROJECT_SECTIONS, render_reports

JOB_ID = re.compile(r"job-\d{6}")
APPENDIX = re.compile(r"^APPENDIX\s+Jobs$", re.M | re.I)  # the kicker and the heading


@pytest.fixture
def con(sample_db):
    c = duckdb.connect(str(sample_db.path), read_only=True)
    yield c
    c.close()


def _month_projects(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT DISTINCT project FROM mart_job_month WHERE month = ? AND "
                                      "bucket = 'project' ORDER BY project", [MONTH]).fetchall()]


def _own_usage(con, project: str) -> tuple[Decimal, Decimal]:
    """The project's own-usage cents and tenths of GPU-hours as the ledger stores them."""
    cost, hours = con.execute("""
        SELECT sum(cost), sum(gpu_hours) FROM ledger_charges
        WHERE month = ? AND bucket = 'project' AND project = ? AND allocation = 'usage'""",
                              [MONTH, project]).fetchone()
    return Decimal(cost), Decimal(hours)


def _ledger_jobs(con, project: str) -> dict[str, tuple[Decimal, Decimal]]:
    return {j: (Decimal(c), Decimal(h)) for j, c, h in con.execute("""
        SELECT job_id, cost, gpu_hours FROM ledger_job_month
        WHERE month = ? AND bucket = 'project' AND project = ?""", [MONTH, project]).fetchall()}


def _mart_job_ids(con, project: str) -> set[str]:
    return {r[0] for r in con.execute("SELECT job_id FROM mart_job_month WHERE month = ? AND bucket = 'project' "
                                      "AND project = ?", [MONTH, project]).fetchall()}


class _JobsTable(HTMLParser):
    """The cells of the table in <section id="jobs">: header texts, body rows, footer row."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.section = 0
        self.part = None
        self.cell = None
        self.head: list[str] = []
        self.body: list[list[str]] = []
        self.foot: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.section = self.section + 1 if (self.section or attrs.get("id") == "jobs") else 0
        if not self.section:
            return
        if tag in ("thead", "tbody", "tfoot"):
            self.part = tag
        elif tag == "tr" and self.part == "tbody":
            self.body.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "section" and self.section:
            self.section -= 1
        if not self.section:
            return
        if tag in ("td", "th") and self.cell is not None:
            text = "".join(self.cell).strip()
            {"thead": self.head, "tfoot": self.foot}.get(self.part, self.body[-1] if self.body else []).append(text)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def _html_table(path) -> _JobsTable:
    parser = _JobsTable()
    parser.feed(path.read_text(encoding="utf-8"))
    assert parser.head and parser.body, path
    return parser


def _amount(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def _read_csv(path) -> list[dict[str, str]]:
    raw = path.read_bytes()
    text = raw.decode("utf-8")  # UTF-8, no BOM
    assert not text.startswith("\ufeff")
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _audiences(rendered) -> dict[str, str]:
    return {a.project: a.stem for a in rendered.result.audiences if a.project is not None}


def test_every_project_lists_every_job_with_the_ledgers_cents(rendered, con):
    stems = _audiences(rendered)
    projects = _month_projects(con)
    assert sorted(stems) == projects and len(projects) == 6
    for project in projects:
        total, hours = _own_usage(con, project)
        ledger = _ledger_jobs(con, project)
        expected_ids = _mart_job_ids(con, project)
        assert set(ledger) == expected_ids and len(expected_ids) > 20

        table = _html_table(rendered.file(stems[project], "html"))
        col = {name: i for i, name in enumerate(table.head)}
        assert {"Job", "User", "Model", "GPU model", "Image tag", "Start", "End", "GPU-hours", "Density",
                "Idle cost", "Cost", "mAP50", "mAP50-95"} <= set(col)
        ids = [r[col["Job"]] for r in table.body]
        assert sorted(ids) == sorted(expected_ids), project  # every job once, no other project's
        costs = {r[col["Job"]]: _amount(r[col["Cost"]]) for r in table.body}
        assert all(costs[j] == ledger[j][0] for j in ids), project
        assert sum(costs.values()) == total, project
        assert sum(_amount(r[col["GPU-hours"]]) for r in table.body) == hours, project
        assert _amount(table.foot[-3]) == total and _amount(table.foot[-6]) == hours, (project, table.foot)

        rows = _read_csv(rendered.file(stems[project], "csv"))
        assert len(rows) == len(expected_ids), project
        assert [r["job_id"] for r in rows] == ids  # the same rows in the same order
        assert all(re.fullmatch(r"\d+\.\d\d", r["cost"]) and re.fullmatch(r"\d+\.\d\d", r["idle_cost"])
                   for r in rows)
        assert all(Decimal(r["cost"]) == ledger[r["job_id"]][0] for r in rows), project
        assert all(Decimal(r["gpu_hours"]) == ledger[r["job_id"]][1] for r in rows), project
        assert sum(Decimal(r["cost"]) for r in rows) == total, project
        assert sum(Decimal(r["gpu_hours"]) for r in rows) == hours, project
        assert {r["currency"] for r in rows} == {"USD"}


def test_job_details_come_from_the_marts_in_local_time(rendered, con):
    project = "drone-survey"
    stem = _audiences(rendered)[project]
    marts = {r[0]: r[1:] for r in con.execute("""
        SELECT m.job_id, m.user_name, m.model_type, m.gpu_models, m.image_tag, m.density, j.map50, j.map50_95,
               strftime(timezone('Europe/Berlin', j.start_time), '%Y-%m-%dT%H:%M:%S'),
               strftime(timezone('Europe/Berlin', j.end_time), '%Y-%m-%dT%H:%M:%S')
        FROM mart_job_month AS m JOIN mart_job AS j USING (job_id)
        WHERE m.month = ? AND m.project = ? AND m.bucket = 'project'""", [MONTH, project]).fetchall()}
    rows = _read_csv(rendered.file(stem, "csv"))
    for r in rows:
        user, model, gpus, tag, density, map50, map50_95, start, end = marts[r["job_id"]]
        assert (r["user"], r["model_type"], r["gpu_models"], r["image_tag"]) == (user, model, gpus, tag)
        assert abs(float(r["density"]) - density) < 5e-7 and 0 < density <= 1
        assert abs(float(r["map50"]) - map50) < 5e-7 and abs(float(r["map50_95"]) - map50_95) < 5e-7
        assert r["start"][:19] == start and (r["end"][:19] or None) == end
        assert r["start"][19:] in ("+01:00", "+02:00")  # Berlin's offset on that day
    # the table is ordered by cost, most expensive first
    costs = [Decimal(r["cost"]) for r in rows]
    assert costs == sorted(costs, reverse=True)


def test_the_csv_is_rfc4180_and_the_same_bytes_for_the_same_database(rendered, con, sample_db):
    config = sample_db.config
    for project, stem in _audiences(rendered).items():
        raw = rendered.file(stem, "csv").read_bytes()
        assert raw.count(b"\r\n") == len(_mart_job_ids(con, project)) + 1 and b"\n" not in raw.replace(b"\r\n", b"")
        again = job_table_module.to_csv(job_table_module.job_table(con, MONTH, project, config.timezone,
                                                                   config.currency))
        assert again.encode("utf-8") == raw, project


def test_the_admin_report_has_no_job_table(rendered):
    assert 'id="jobs"' not in rendered.file("admin", "html").read_text(encoding="utf-8")
    assert not rendered.file("admin", "csv").exists()
    assert not APPENDIX.search(pdf_text(rendered.file("admin", "pdf")))


def test_the_pdf_ends_with_the_job_appendix_on_landscape_pages(rendered, con):
    require_tools(chromium=False, poppler=True)
    for project, stem in _audiences(rendered).items():
        path = rendered.file(stem, "pdf")
        pages = [pdf_text(path, p) for p in range(1, pdf_pages(path) + 1)]
        starts = [i for i, text in enumerate(pages) if APPENDIX.search(text)]
        assert len(starts) == 1, project
        first = starts[0]
        before = "".join(pages[:first]).lower()
        assert all(title.lower() in before for _, title in PROJECT_SECTIONS[:-1]), project  # after every other section
        assert not JOB_ID.search(pages[first][:APPENDIX.search(pages[first]).start()])  # it starts a page
        appendix = pages[first:]
        assert set(JOB_ID.findall("".join(appendix))) == _mart_job_ids(con, project), project
        # the header repeats on every page the table spans; the total row closes it
        assert all("mAP50-95" in text and "Cost" in text for text in appendix if JOB_ID.search(text)), project
        # the PDF prints the list as aligned text: read it with its layout, line by line
        laid_out = "".join(pdf_text(path, p, layout=True) for p in range(first + 1, len(pages) + 1))
        assert re.search(rf"^\s*Total\s+{len(_mart_job_ids(con, project))} jobs\s", laid_out, re.M), project
        assert re.search(r"^\s*-{40,}\s*$", laid_out, re.M), project  # the rule is a line of its own
        info = subprocess.run(["pdfinfo", "-f", "1", "-l", str(len(pages)), str(path)], capture_output=True,
                              text=True, check=True).stdout
        sizes = [tuple(map(float, m)) for m in re.findall(r"size:\s+([\d.]+) x ([\d.]+) pts", info)]
        assert all(w > h for w, h in sizes[first:]) and all(w < h for w, h in sizes[:first]), project


SORT_PROBE = """(function () {
  var t = document.querySelector('#jobs table.sortable');
  var heads = t.tHead.rows[0].cells;
  function idx(name) {
    for (var i = 0; i < heads.length; i++) { if (heads[i].textContent.trim() === name) { return i; } }
    return -1;
  }
  function col(i) { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[i].textContent.trim(); }); }
  var out = {initial: col(idx('Job'))};
  [['GPU-hours', 'hours_up'], ['GPU-hours', 'hours_down'], ['Job', 'jobs_up'], ['mAP50', 'map_up'],
   ['mAP50', 'map_down'], ['Cost', 'cost_up']].forEach(function (step) {
    var i = idx(step[0]);
    heads[i].click();
    out[step[1]] = col(i);
    out[step[1] + '_aria'] = heads[i].getAttribute('aria-sort');
  });
  out.foot = t.tFoot.rows[0].cells[0].textContent.trim();
  out.rows = t.tBodies[0].rows.length;
  return JSON.stringify(out);
})()"""


def _numbers(cells: list[str]) -> list[float]:
    return [float(c.replace(",", "")) for c in cells if c]


def test_clicking_a_header_sorts_the_table_in_chromium(rendered, con):
    require_tools(chromium=True)
    project = "medical-imaging"  # has jobs still running at the month's end: no mAP yet
    path = rendered.file(_audiences(rendered)[project], "html")
    run = open_page(path, expressions={"sort": SORT_PROBE})
    assert run.errors == [] and run.outside_requests == []
    v = json.loads(run.values["sort"])
    n = len(_mart_job_ids(con, project))
    assert v["rows"] == n and v["foot"] == "Total"

    up, down = _numbers(v["hours_up"]), _numbers(v["hours_down"])
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(up) == n
    assert sorted(v["hours_up"]) != v["hours_up"]  # text order would differ: the sort is numeric
    assert (v["hours_up_aria"], v["hours_down_aria"]) == ("ascending", "descending")

    assert v["jobs_up"] == sorted(v["jobs_up"]) and v["jobs_up"] != v["initial"]

    missing = sum(1 for c in v["map_up"] if c == "")
    assert missing >= 1  # jobs without a final validation: empty cells stay last both ways
    assert v["map_up"][n - missing:] == [""] * missing and v["map_down"][n - missing:] == [""] * missing
    assert _numbers(v["map_up"]) == sorted(_numbers(v["map_up"]))
    assert _numbers(v["map_down"]) == sorted(_numbers(v["map_down"]), reverse=True)

    # the table arrives sorted by cost, most expensive first; one click turns it round
    assert v["cost_up_aria"] == "ascending" and _numbers(v["cost_up"]) == sorted(_numbers(v["cost_up"]))


def test_csv_cells_are_neutralized_and_money_has_the_currencys_minor_unit(built_db, tmp_path):
    """Three jobs of 1/12 h at 100 JPY/h: 25 yen in all, 8.33 each exactly, so whole yen 9 + 8 + 8
    (largest remainder); labels that a spreadsheet would run as formulas stay text."""
    require_tools(chromium=True)
    usage = (usage_run("2026-10-01T00:00Z", 1, "GPU-0", "=1+1")
             + usage_run("2026-10-01T00:00Z", 1, "GPU-1", "j,\"2\"")
             + usage_run("2026-10-01T00:00Z", 1, "GPU-2", "j3"))
    jobs = [job_row("=1+1", project="p1", user="=HYPERLINK(\"http://x\")", model_type="@SUM(A1)",
                    image_tag="+cmd", end="2026-10-01T00:05Z"),
            job_row("j,\"2\"", project="p1", user="-2", end="2026-10-01T00:05Z"),
            job_row("j3", project="p1", user="bob", end="2026-10-01T00:05Z")]
    db = built_db(usage, jobs=jobs, results=[result_row("j3", 0.5, 0.25)], prices=[("A100", "100")],
                  cluster={"currency": "JPY"})
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["project:p1"], ["html"])
    stem = result.audiences[0].stem
    rows = _read_csv(result.folder / f"{stem}.csv")
    by_id = {r["job_id"]: r for r in rows}
    assert sorted(by_id) == ["'=1+1", "j,\"2\"", "j3"]  # the comma and quotes survive the round trip
    first = by_id["'=1+1"]
    assert (first["user"], first["model_type"], first["image_tag"]) == ("'=HYPERLINK(\"http://x\")", "'@SUM(A1)",
                                                                       "'+cmd")
    assert by_id["j,\"2\""]["user"] == "'-2"
    assert sorted(r["cost"] for r in rows) == ["8", "8", "9"] and {r["currency"] for r in rows} == {"JPY"}
    assert by_id["j3"]["map50"] == "0.500000" and by_id["j3"]["map50_95"] == "0.250000"
    assert by_id["'=1+1"]["map50"] == ""
    c = duckdb.connect(str(db.path), read_only=True)
    try:
        total = c.execute("SELECT sum(cost) FROM ledger_charges WHERE project = 'p1' AND bucket = 'project' "
                          "AND allocation = 'usage'").fetchone()[0]
    finally:
        c.close()
    assert Decimal(total) == 25 == sum(Decimal(r["cost"]) for r in rows)
    table = _html_table(result.folder / f"{stem}.html")
    assert sorted(r[0] for r in table.body) == ["=1+1", "j,\"2\"", "j3"]  # the page shows the labels as they are
    assert _amount(table.foot[-3]) == 25


def _run(args, cwd):
    return yolocost(*args, cwd=cwd, timeout=300)


def test_stale_project_csvs_are_removed_and_the_months_kept(sample_db, tmp_path):
    shutil.copyfile(sample_db.raw_dir / "yolocost.toml", tmp_path / "yolocost.toml")
    month = tmp_path / "reports" / MONTH
    month.mkdir(parents=True)
    old = b"job_id\r\nold\r\n"
    names = ("project-gone.csv", "project-drone-survey.csv", "notes.csv", "project-gone.csv.bak")
    for name in names:
        (month / name).write_bytes(old)
    result = _run(["--db", str(sample_db.path), "report", "--month", MONTH, "--audience", "admin",
                   "--format", "html"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (month / "project-gone.csv").exists()
    assert (f"removed stale report {month / 'project-gone.csv'} (no project of that name held a GPU in {MONTH})"
            in result.stderr)
    for name in names[1:]:  # a current project's CSV (not rendered this run) and the user's files stay
        assert (month / name).read_bytes() == old


def test_unallocated_capacity_shared_to_a_project_is_no_jobs_cost(built_db, tmp_path):
    """Under [allocation] unallocated = "proportional" the project also carries the idle GPU's
    hour (2.93): the jobs still add up to the project's own use (2 h x 2.93 = 5.86), and the
    share is stated beside the table."""
    usage = (usage_run("2026-10-01T00:00Z", 12, "GPU-0", "a") + usage_run("2026-10-01T01:00Z", 12, "GPU-0", "b")
             + usage_run("2026-10-01T00:00Z", 12, "GPU-1", None))
    jobs = [job_row("a", project="p1", end="2026-10-01T01:00Z"), job_row("b", project="p1", end="2026-10-01T02:00Z")]
    db = built_db(usage, jobs=jobs, allocation={"unallocated": "proportional"})
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["project:p1"], ["html"])
    stem = result.audiences[0].stem
    rows = _read_csv(result.folder / f"{stem}.csv")
    assert sorted(r["cost"] for r in rows) == ["2.93", "2.93"]
    page = (result.folder / f"{stem}.html").read_text(encoding="utf-8")
    assert "The project also carries 2.93 USD of unallocated capacity" in page
    assert _amount(_html_table(result.folder / f"{stem}.html").foot[-3]) == Decimal("5.86")
