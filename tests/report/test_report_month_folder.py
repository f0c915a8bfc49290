"""`yolocost report` writes the month folder whole: the reports, summary.html (every figure a sum
of the cent ledger, every amount with its currency), the finance CSV (the bytes `export finance`
writes) and index.html (every file of the folder, each project under its name, links that
resolve, the month's coverage and total); `--format` picks which; a failure part way leaves
the folder as it was."""

from __future__ import annotations

import calendar
import dataclasses
import datetime as dt
import html
import re
import shutil
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote
from zoneinfo import ZoneInfo

import duckdb
import pytest
from helpers.browser import open_page
from helpers.builders import job_row, usage_run, yolocost
from helpers.reportkit import MONTH, require_tools

from yolocost.errors import YolocostError
from yolocost.report import FORMATS, parse_formats, project_slugs, render_reports

OLD = "<p>an earlier run's file</p>\n"


def _run(args, cwd, timeout=300):
    return yolocost(*args, cwd=cwd, timeout=timeout)


@pytest.fixture
def workdir(sample_db, tmp_path):
    """A folder with the sample config (reports go to ./reports) pointing at the sample database."""
    shutil.copyfile(sample_db.raw_dir / "yolocost.toml", tmp_path / "yolocost.toml")
    return tmp_path, ["--db", str(sample_db.path)]


def _sql(path: Path, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _words(fragment: str) -> str:
    """The text of a piece of markup, its whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _amount(text: str, currency: str | None = None) -> Decimal:
    if currency is not None:
        assert text.endswith(f" {currency}"), text
        text = text[:-len(currency) - 1]
    return Decimal(text.replace(",", ""))


# --------------------------------------------------------------------------- the folder


def test_report_writes_the_reports_summary_csv_and_index_into_the_month_folder(rendered, sample_db):
    projects = [r[0] for r in _sql(sample_db.path, "SELECT project FROM mart_project_month WHERE month = ? "
                                   "AND bucket = 'project'", [MONTH])]
    stems = ["admin"] + [f"project-{s}" for s in project_slugs(projects).values()]
    expected = {f"{s}.{x}" for s in stems for x in ("html", "pdf")} | {
        "summary.html", f"finance-{MONTH}.csv", "index.html"} | {f"{s}.csv" for s in stems[1:]}  # job tables
    present = {p.name for p in rendered.folder.iterdir()}
    assert present == expected and {p.name for p in rendered.result.files} == expected
    assert rendered.result.finance.path == rendered.folder / f"finance-{MONTH}.csv"


def test_format_html_writes_only_the_html_reports(workdir):
    folder, db = workdir
    result = _run([*db, "report", "--month", MONTH, "--format", "html"], folder)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in (folder / "reports" / MONTH).iterdir())
    assert names[0] == "admin.html" and len(names) == 13  # admin, and each project's report and job CSV
    assert all(re.fullmatch(r"admin\.html|project-[a-z0-9-]+\.(html|csv)", n) for n in names), names
    assert {n[:-4] for n in names if n.endswith(".csv")} == {n[:-5] for n in names[1:] if n.endswith(".html")}


def test_the_csv_report_writes_is_byte_identical_to_export_finance(rendered, workdir):
    folder, db = workdir
    exported = folder / "exported.csv"
    result = _run([*db, "export", "finance", "--month", MONTH, "-o", str(exported)], folder)
    assert result.returncode == 0, result.stderr
    written = (rendered.folder / f"finance-{MONTH}.csv").read_bytes()
    assert written == exported.read_bytes() and written.count(b"\r\n") > 100
    # and `--format csv` alone writes only the CSV, the same bytes
    result = _run([*db, "report", "--month", MONTH, "--format", "csv"], folder)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in (folder / "reports" / MONTH).iterdir()] == [f"finance-{MONTH}.csv"]
    assert (folder / "reports" / MONTH / f"finance-{MONTH}.csv").read_bytes() == written


def test_parse_formats():
    assert parse_formats("all") == list(FORMATS) == ["html", "pdf", "summary", "csv", "index"]
    assert parse_formats("index, CSV,html,csv") == ["html", "csv", "index"]  # FORMATS order, once each
    for bad in ("docx", "", "html,,x"):
        with pytest.raises(YolocostError, match="--format: "):
            parse_formats(bad)


# --------------------------------------------------------------------------- the summary


def test_summary_figures_are_ledger_sums_with_their_currency(rendered, sample_db):
    currency = rendered.config.currency
    total, gpu, energy, unallocated, unallocated_energy, unallocated_hours, idle, idle_hours, hours = _sql(
        sample_db.path, """
        SELECT sum(cost), sum(cost) FILTER (WHERE charge_kind = 'gpu'), sum(cost) FILTER (WHERE charge_kind = 'energy'),
               sum(cost) FILTER (WHERE bucket = 'unallocated'),
               sum(cost) FILTER (WHERE bucket = 'unallocated' AND charge_kind = 'energy'),
               sum(gpu_hours) FILTER (WHERE bucket = 'unallocated'),
               sum(idle_cost), sum(idle_gpu_hours), sum(gpu_hours)
        FROM ledger_charges WHERE month = ?""", [MONTH])[0]
    by_project = {p: (c, h, e) for p, c, h, e in _sql(sample_db.path, """
        SELECT project, sum(cost), sum(gpu_hours), sum(cost) FILTER (WHERE charge_kind = 'energy')
        FROM ledger_charges WHERE month = ? GROUP BY project""", [MONTH])}
    assert unallocated_energy > 0  # the unallocated figure below is GPU time and energy, as the admin report's

    page = (rendered.folder / "summary.html").read_text(encoding="utf-8")
    cards = {_words(k): _words(v) for v, k in re.findall(
        r'<div class="card"><div class="v">(.*?)</div><div class="k">(.*?)</div></div>', page, re.S)}
    card = {label.split(" (")[0]: (value, label) for label, value in cards.items()}
    assert _amount(card["total cost"][0], currency) == total
    assert f"GPU time {gpu:,.2f} {currency} + energy {energy:,.2f} {currency}" in card["total cost"][1]
    assert _amount(card["unallocated capacity"][0], currency) == unallocated
    admin = (rendered.folder / "admin.html").read_text(encoding="utf-8")
    assert f"{unallocated:,.2f}" in admin and f"{total:,.2f}" in admin  # the admin report's figures
    assert f"{unallocated_hours:,.1f} GPU-hours" in card["unallocated capacity"][1]
    assert _amount(card["idle waste"][0], currency) == idle
    assert f"{idle_hours:,.1f} GPU-hours" in card["idle waste"][1]
    assert _amount(card["capacity GPU-hours"][0]) == hours
    for label, value in cards.items():  # every amount carries its currency
        if "cost" in label or "waste" in label or "unallocated" in label:
            assert value.endswith(f" {currency}"), (label, value)

    head = re.search(r"<thead>(.*?)</thead>", page, re.S).group(1)
    columns = [_words(c) for c in re.findall(r"<th>(.*?)</th>", head, re.S)]
    money_columns = [i for i, c in enumerate(columns) if "cost" in c.lower()]
    assert len(money_columns) == 4 and all(columns[i].endswith(f"({currency})") for i in money_columns)
    body = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    rows = {html.unescape(cells[0]): cells for cells in (
        re.findall(r"<td>(.*?)</td>", r, re.S) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S))}
    assert set(rows) == set(by_project) and "视觉质检" in rows
    for project, (cost, gpu_hours, energy_cost) in by_project.items():
        cells = rows[project]
        assert _amount(cells[columns.index(f"Cost ({currency})")]) == cost, project
        assert _amount(cells[columns.index(f"Energy cost ({currency})")]) == energy_cost, project
        assert _amount(cells[columns.index("GPU-hours")]) == gpu_hours, project
    foot = re.findall(r"<td>(.*?)</td>", re.search(r"<tfoot>(.*?)</tfoot>", page, re.S).group(1), re.S)
    assert _amount(foot[-1]) == total and _amount(foot[columns.index("GPU-hours")]) == hours
    for i in money_columns + [columns.index("GPU-hours"), columns.index("Idle GPU-hours")]:
        column = sum((_amount(c[i]) for c in rows.values() if c[i]), Decimal(0))
        assert column == _amount(foot[i]), columns[i]  # the table adds up to its printed totals


# --------------------------------------------------------------------------- the index


def _index(folder: Path) -> tuple[str, dict[str, tuple[str, int]], dict[str, list[str]]]:
    """The index's text, its links {href: (row text, size in bytes)} and, per project row, its hrefs."""
    page = (folder / "index.html").read_text(encoding="utf-8").split("<body>", 1)[1]
    links = {}
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        found = re.findall(r'<a href="([^"]+)" title="[^"]+">[^<]+</a><span class="size" title="(\d+) bytes">', row)
        for href, size in found:
            links[href] = (_words(row), int(size))
        name = re.search(r'<span class="(?:project|slug)">(.*?)</span>', row, re.S)
        if name:
            rows[html.unescape(name.group(1))] = [h for h, _ in found]
    return _words(page), links, rows


def test_index_lists_every_file_under_its_project_name_with_links_that_resolve(rendered, sample_db):
    require_tools(chromium=True)
    folder = rendered.folder
    text, links, rows = _index(folder)
    present = {p.name: p.stat().st_size for p in folder.iterdir() if p.name != "index.html"}
    assert {unquote(h): size for h, (_, size) in links.items()} == present
    for href in links:
        assert (folder / unquote(href)).is_file()
    projects = [r[0] for r in _sql(sample_db.path, "SELECT project FROM mart_project_month WHERE month = ? "
                                   "AND bucket = 'project'", [MONTH])]
    slugs = project_slugs(projects)
    assert set(rows) == set(projects) and "视觉质检" in rows and slugs["视觉质检"] != "视觉质检"
    for project, hrefs in rows.items():
        assert hrefs == [f"project-{slugs[project]}.{x}" for x in ("html", "pdf", "csv")], project
    config = rendered.config
    assert f"Cluster {config.cluster}" in text and f"Currency {config.currency}" in text

    # the total: the ledger's sum, the cents the admin report prints
    total = _sql(sample_db.path, "SELECT sum(cost) FROM ledger_charges WHERE month = ?", [MONTH])[0][0]
    assert f"Total cost {total:,.2f} {config.currency}" in text
    assert f"{total:,.2f}" in (folder / "admin.html").read_text(encoding="utf-8")

    # coverage, from the raw rows of the month's local window: the sample holds the whole month
    tz = ZoneInfo(config.timezone)
    start, end = dt.datetime(2026, 10, 1, tzinfo=tz), dt.datetime(2026, 11, 1, tzinfo=tz)
    first, last, days = _sql(sample_db.path, """
        SELECT min(interval_start), max(interval_start), count(DISTINCT CAST(timezone(?, interval_start) AS DATE))
        FROM gpu_usage WHERE interval_start >= ? AND interval_start < ?""", [config.timezone, start, end])[0]
    last_end = last.astimezone(tz) + dt.timedelta(seconds=config.grain_seconds)
    assert (f"Data {first.astimezone(tz):%Y-%m-%d %H:%M} to {last_end:%Y-%m-%d %H:%M} ({config.timezone}), "
            f"{days} of 31 days with data") in text
    assert days == 31 and "partial" not in text

    # in a browser: nothing leaves the machine and every link is a file beside the index
    run = open_page(folder / "index.html", timeout=5, expressions={
        "links": "Array.from(document.links).map(a => a.href)"})
    assert run.outside_requests == [] and run.errors == [] and run.failed == []
    assert run.requests == [(folder / "index.html").resolve().as_uri()]
    assert sorted(run.values["links"]) == sorted((folder / unquote(h)).resolve().as_uri() for h in links)


def test_index_lists_files_of_earlier_runs_and_project_csvs_but_not_stale_reports(workdir, sample_db):
    folder, db = workdir
    month = folder / "reports" / MONTH
    month.mkdir(parents=True)
    cjk = project_slugs(["视觉质检"])["视觉质检"]
    earlier = {"admin.pdf": OLD, f"project-{cjk}.csv": "a,b\r\n1,2\r\n", "project-gone.html": OLD, "notes.txt": OLD}
    for name, content in earlier.items():
        (month / name).write_text(content, encoding="utf-8")
    result = _run([*db, "report", "--month", MONTH, "--format", "index"], folder)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in month.iterdir()) == sorted(["admin.pdf", f"project-{cjk}.csv", "notes.txt",
                                                              "index.html"])
    text, links, rows = _index(month)
    assert {h: size for h, (_, size) in links.items()} == {
        "admin.pdf": len(OLD), f"project-{cjk}.csv": len(earlier[f"project-{cjk}.csv"])}
    assert rows == {"视觉质检": [f"project-{cjk}.csv"]}
    assert "Admin report" in links["admin.pdf"][0]


def test_index_says_partial_for_part_of_a_month(built_db, tmp_path):
    # 2026-10-05 22:00 UTC (= 23:00 in Lisbon, UTC+1) for 3 hours: two local days
    db = built_db(usage_run("2026-10-05T22:00Z", 36, "GPU-0", "j1"), jobs=[job_row("j1", project="p")],
                  timezone="Europe/Lisbon")
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["all"], ["index"])
    assert [p.name for p in result.files] == ["index.html"]
    text, links, _ = _index(tmp_path / "out" / MONTH)
    assert links == {}
    assert f"Data 2026-10-05 23:00 to 2026-10-06 02:00 (Europe/Lisbon), 2 of {calendar.monthrange(2026, 10)[1]} " \
           "days with data · partial month" in text
    total = db.value("SELECT sum(cost) FROM ledger_charges WHERE month = ?", [MONTH])
    assert total == Decimal("8.79")  # 3 GPU-hours x 2.93 (by hand)
    assert f"Total cost 8.79 {config.currency}" in text


# --------------------------------------------------------------------------- failures


def test_a_failing_index_template_leaves_the_month_folder_as_it_was(workdir):
    folder, db = workdir
    month = folder / "reports" / MONTH
    month.mkdir(parents=True)
    for name in ("admin.html", "summary.html", f"finance-{MONTH}.csv", "index.html", "notes.txt"):
        (month / name).write_text(OLD, encoding="utf-8")
    before = {p.name: p.read_bytes() for p in month.iterdir()}
    mine = folder / "my-templates"
    mine.mkdir()
    (mine / "index.html").write_text("<!doctype html>\n<p>{{ month }}</p>\n<p>{{ 1/0 }}</p>\n", encoding="utf-8")
    result = _run([*db, "report", "--month", MONTH, "--format", "html,summary,csv,index", "--templates", str(mine)],
                  folder)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("yolocost: ")]
    assert errors == [f"error: {mine / 'index.html'}:3: ZeroDivisionError while rendering: division by zero"]
    assert "rendered summary.html" in result.stderr  # it failed part way, after the other files
    assert {p.name: p.read_bytes() for p in month.iterdir()} == before
    assert [p for p in folder.rglob("*") if ".tmp" in p.name] == []


def test_index_escapes_a_project_name_that_is_markup(built_db, tmp_path):
    hostile = '<script>alert(1)</script>'
    db = built_db(usage_run("2026-10-01T00:00Z", 12, "GPU-0", "j1"), jobs=[job_row("j1", project=hostile)])
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    render_reports(config, MONTH, ["all"], ["html", "index"])
    folder = tmp_path / "out" / MONTH
    raw = (folder / "index.html").read_text(encoding="utf-8")
    assert hostile not in raw and html.escape(hostile, quote=False) in raw
    _, links, rows = _index(folder)
    stem = f"project-{project_slugs([hostile])[hostile]}"
    assert rows == {hostile: [f"{stem}.html", f"{stem}.csv"]} and set(links) == {"admin.html", f"{stem}.html",
                                                                              f"{stem}.csv"}


def test_summary_shows_the_unallocated_share_of_each_project_and_still_adds_up(built_db, tmp_path):
    """[allocation] unallocated = "proportional": 3 unallocated GPU-hours at 2.93 (8.79) go to the
    projects that held the model that day by their GPU-hours, a 2 h : b 1 h (by hand)."""
    from yolocost.summary import write_summary

    usage = (usage_run("2026-10-01T00:00Z", 24, "GPU-0", "ja") + usage_run("2026-10-01T00:00Z", 12, "GPU-1", "jb")
             + usage_run("2026-10-01T00:00Z", 36, "GPU-2", None))
    db = built_db(usage, jobs=[job_row("ja", project="a"), job_row("jb", project="b")],
                  allocation={"unallocated": "proportional"})
    page = write_summary(db.config, MONTH, tmp_path / "s.html").read_text(encoding="utf-8")
    currency = db.config.currency
    head = re.search(r"<thead>(.*?)</thead>", page, re.S).group(1)
    columns = [_words(c) for c in re.findall(r"<th>(.*?)</th>", head, re.S)]
    share = columns.index(f"of which unallocated share ({currency})")
    body = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    rows = {cells[0]: cells for cells in (
        re.findall(r"<td>(.*?)</td>", r, re.S) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S))}
    assert set(rows) == {"a", "b"}
    assert (_amount(rows["a"][-1]), _amount(rows["a"][share])) == (Decimal("11.72"), Decimal("5.86"))
    assert (_amount(rows["b"][-1]), _amount(rows["b"][share])) == (Decimal("5.86"), Decimal("2.93"))
    foot = re.findall(r"<td>(.*?)</td>", re.search(r"<tfoot>(.*?)</tfoot>", page, re.S).group(1), re.S)
    assert (_amount(foot[-1]), _amount(foot[share])) == (Decimal("17.58"), Decimal("8.79"))
    cards = dict((_words(k).split(" (")[0], _words(v)) for v, k in re.findall(
        r'<div class="card"><div class="v">(.*?)</div><div class="k">(.*?)</div></div>', page, re.S))
    # the card is the capacity nobody held, as the admin report's: all of it, though charged to a and b
    assert cards["total cost"] == f"17.58 {currency}" and cards["unallocated capacity"] == f"8.79 {currency}"
