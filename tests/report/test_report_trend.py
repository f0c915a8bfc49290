"""Partial months and the trend: no change against a month the database holds only in part,
partial months labelled with their coverage, and the trend's figures per month (a project's
only its own)."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import intervals, job_row, usage_row
from helpers.reportkit import MONTH, page_parts, pdf_text

from yolocost import finance
from yolocost.report import render_reports, sections
from yolocost.report.trend import trend

HOUR = 3600
PRICE = Decimal("2.93")  # builders' default A100 price
CHANGE = re.compile(r"[+-]\d[\d,]*\.\d (%|pp)")  # how a change against last month reads


def hours(start: str, count: int, gpu: str, job: str | None, util: float = 80.0) -> list[dict]:
    return [usage_row(t, gpu, job, seconds=HOUR, util=util, index=int(gpu[-1]))
            for t in intervals(start, count, HOUR)]


def open_db(db):
    con = duckdb.connect(str(db.path), read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    return con


def collect(db, month: str, project: str | None) -> dict:
    con = open_db(db)
    try:
        c = db.config
        return sections.collect(con, month, project, timezone=c.timezone, grain_seconds=c.grain_seconds,
                                currency=c.currency)
    finally:
        con.close()


def render(db, tmp_path, month: str = MONTH) -> dict[str, str]:
    """The month's HTML reports, as the text a reader sees, by file stem."""
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, month, ["all"], ["html"])
    return {a.stem: page_parts(result.folder / f"{a.stem}.html")["text"] for a in result.audiences}


def section(text: str, name: str) -> str:
    found = re.search(rf'<section id="{name}">(.*?)</section>', text, re.S)
    assert found, name
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1)))


def cents(value: Decimal) -> str:
    return f"{value:,.2f}"


# --------------------------------------------------------------------------- against a partial month


@pytest.fixture
def partial_september(built_db):
    """September holds one day (10 Sep, 24 of its 720 hours); October is whole (744 hours)."""
    usage = hours("2026-09-10T00:00Z", 24, "GPU-0", "j1") + hours("2026-10-01T00:00Z", 744, "GPU-0", "j2")
    return built_db(usage, jobs=[job_row("j1", project="p1"), job_row("j2", project="p1")],
                    ingest={"grain_seconds": HOUR})


# 24 of 720 hours: 1.0 day of 30, 3.3 % (rounded to a whole percent)
SEPTEMBER_PARTIAL = "September 2026 is partial: 1.0 of 30 days (3 %)"


def test_headline_shows_no_change_against_a_partial_previous_month(partial_september, tmp_path):
    for project in (None, "p1"):
        head = collect(partial_september, MONTH, project)["headline"]
        assert head["previous"] is not None  # September has figures ...
        assert [c["change"] for c in head["cards"]] == [None] * len(head["cards"])  # ... but no change
        assert not any(c["worse"] for c in head["cards"])
        assert head["coverage"]["note"] == SEPTEMBER_PARTIAL
        assert head["coverage"]["previous"]["partial"] and not head["coverage"]["current"]["partial"]
    admin = collect(partial_september, MONTH, None)
    assert [p["change"] for p in admin["projects"]] == [None]

    pages = render(partial_september, tmp_path)
    assert set(pages) == {"admin", "project-p1"}
    for stem, text in pages.items():
        headline = section(text, "headline")
        assert SEPTEMBER_PARTIAL in headline, stem
        assert "2026-09 (partial: 1.0 of 30 days, 3 %)" in headline, stem
        assert not CHANGE.search(headline), (stem, CHANGE.search(headline))
        header = re.search(r'<header class="top">(.*?)</header>', text, re.S).group(1)
        assert "compared with 2026-09" in header and "partial: 1.0 of 30 days, 3 %" in header, stem
    projects = section(pages["admin"], "projects")
    assert SEPTEMBER_PARTIAL in projects and not CHANGE.search(projects)


def test_headline_shows_no_change_when_the_report_month_is_partial(built_db, tmp_path):
    """October whole, November one day: November's report compares nothing with October."""
    usage = hours("2026-10-01T00:00Z", 744, "GPU-0", "j1") + hours("2026-11-02T00:00Z", 36, "GPU-0", "j2")
    db = built_db(usage, jobs=[job_row("j1"), job_row("j2")], ingest={"grain_seconds": HOUR})
    head = collect(db, "2026-11", None)["headline"]
    # 36 of 720 hours: 1.5 days of 30, 5 %
    assert head["coverage"]["note"] == "November 2026 is partial: 1.5 of 30 days (5 %)"
    assert all(c["change"] is None for c in head["cards"])
    text = render(db, tmp_path, "2026-11")["admin"]
    assert "GPU chargeback 2026-11 <span class=\"partial\">(partial: 1.5 of 30 days, 5 %)</span>" in text
    assert not CHANGE.search(section(text, "headline"))


@pytest.fixture
def whole_months(built_db):
    """September and October whole: p1 holds GPU-0 all of both (720 and 744 hours), p2 holds
    GPU-1 for 100 hours of October."""
    usage = (hours("2026-09-01T00:00Z", 720, "GPU-0", "j1") + hours("2026-10-01T00:00Z", 744, "GPU-0", "j2")
             + hours("2026-10-05T00:00Z", 100, "GPU-1", "j3"))
    jobs = [job_row("j1", project="p1"), job_row("j2", project="p1"), job_row("j3", project="p2", user="bob")]
    return built_db(usage, jobs=jobs, ingest={"grain_seconds": HOUR})


def test_headline_shows_the_change_against_a_whole_previous_month(whole_months, tmp_path):
    admin = collect(whole_months, MONTH, None)
    cards = {c["key"]: c for c in admin["headline"]["cards"]}
    assert admin["headline"]["coverage"]["note"] == ""
    # every hour of both months is priced 2.93: 844 against 720 GPU-hours
    assert cards["total_cents"]["value"] == 844 * PRICE and cards["total_cents"]["previous"] == 720 * PRICE
    total_change = f"{(844 / 720 - 1) * 100:+.1f} %"
    assert total_change == "+17.2 %"
    assert cards["total_cents"]["change"] == total_change and cards["total_cents"]["worse"]
    assert cards["attributed_gpu_hours"]["change"] == total_change
    assert cards["density"]["change"] == "+0.0 pp"  # busy all the time in both months
    changes = {p["project"]: p["change"] for p in admin["projects"]}
    assert changes == {"p1": f"{(744 / 720 - 1) * 100:+.1f} %", "p2": None}  # p2 had no September

    p1 = {c["key"]: c for c in collect(whole_months, MONTH, "p1")["headline"]["cards"]}
    assert p1["total_cents"]["change"] == "+3.3 %" == f"{(744 / 720 - 1) * 100:+.1f} %"

    pages = render(whole_months, tmp_path)
    headline = section(pages["admin"], "headline")
    assert "+17.2 %" in headline and "partial" not in headline
    assert "+3.3 %" in section(pages["admin"], "projects")
    assert "+3.3 %" in section(pages["project-p1"], "headline")


# --------------------------------------------------------------------------- the trend


def three_months_usage() -> tuple[list[dict], list[dict]]:
    """August and September whole, October two days; two projects, idle, unlabeled and
    unallocated time. Figures per month, by hand:

    August: p1 744 h busy on GPU-0; p2 100 h idle on GPU-1, which nobody holds for its other 644 h.
    September: p1 720 h busy on GPU-0; an unlabeled job 30 h at 50 % on GPU-1.
    October (1-2 Oct, 48 of 744 h): p2 48 h busy on GPU-0; p1 10 h idle on GPU-1."""
    usage = (hours("2026-08-01T00:00Z", 744, "GPU-0", "a1") + hours("2026-08-03T00:00Z", 100, "GPU-1", "a2", util=2.0)
             + hours("2026-08-01T00:00Z", 48, "GPU-1", None) + hours("2026-08-07T04:00Z", 596, "GPU-1", None)
             + hours("2026-09-01T00:00Z", 720, "GPU-0", "s1") + hours("2026-09-02T00:00Z", 30, "GPU-1", "s2", util=50.0)
             + hours("2026-10-01T00:00Z", 48, "GPU-0", "o1") + hours("2026-10-01T00:00Z", 10, "GPU-1", "o2", util=2.0))
    jobs = [job_row("a1", project="p1"), job_row("a2", project="p2", user="bob"), job_row("s1", project="p1"),
            job_row("s2", project=None, user="carol"), job_row("o1", project="p2", user="bob"),
            job_row("o2", project="p1")]
    return usage, jobs


@pytest.fixture
def three_months(built_db):
    usage, jobs = three_months_usage()
    return built_db(usage, jobs=jobs, ingest={"grain_seconds": HOUR})


# month: (GPU-hours held, busy hours, idle hours, unallocated hours)
CLUSTER = {"2026-08": (844, 744, 100, 644), "2026-09": (750, 720, 0, 0), "2026-10": (58, 48, 10, 0)}
PROJECTS = {  # project: month: (GPU-hours, busy hours, idle hours)
    "p1": {"2026-08": (744, 744, 0), "2026-09": (720, 720, 0), "2026-10": (10, 0, 10)},
    "p2": {"2026-08": (100, 0, 100), "2026-10": (48, 48, 0)},
}


def test_admin_trend_is_each_months_figures(three_months):
    report = collect(three_months, MONTH, None)
    rows = report["trend"]["rows"]
    assert [r["month"] for r in rows] == ["2026-08", "2026-09", "2026-10"]
    for r in rows:
        held, busy, idle, unallocated = CLUSTER[r["month"]]
        assert r["cents"] == (held + unallocated) * PRICE, r["month"]  # every hour present is paid
        assert r["gpu_hours"] == held and r["density"] == pytest.approx(busy / held)
        assert r["idle_cost"] == idle * PRICE
    assert [r["partial"] for r in rows] == [False, False, True]
    assert rows[2]["coverage"] == pytest.approx(48 / 744) and rows[2]["note"] == "partial: 2.0 of 31 days, 6 %"
    con = open_db(three_months)
    try:  # the cost is the figure the headline and the finance CSV print
        assert [r["cents"] for r in rows] == [finance.total_cents(con, r["month"]) for r in rows]
    finally:
        con.close()
    cards = {c["key"]: c["value"] for c in report["headline"]["cards"]}
    assert (rows[-1]["cents"], rows[-1]["gpu_hours"], rows[-1]["idle_cost"]) == (
        cards["total_cents"], cards["attributed_gpu_hours"], cards["idle_cost"])


def test_project_trend_is_the_projects_own(three_months, tmp_path):
    for project, months in PROJECTS.items():
        report = collect(three_months, MONTH, project)
        rows = report["trend"]["rows"]
        cards = {c["key"]: c["value"] for c in report["headline"]["cards"]}
        assert (rows[-1]["cents"], rows[-1]["gpu_hours"]) == (cards["total_cents"], cards["gpu_hours"])
        assert [r["month"] for r in rows] == ["2026-08", "2026-09", "2026-10"]
        for r in rows:
            held, busy, idle = months.get(r["month"], (0, 0, 0))
            assert r["held"] == (r["month"] in months)
            assert r["cents"] == held * PRICE and r["gpu_hours"] == held, (project, r)
            assert r["idle_cost"] == idle * PRICE
            assert r["density"] == (pytest.approx(busy / held) if held else None)
    pages = render(three_months, tmp_path)
    p2 = section(pages["project-p2"], "trend")
    assert cents(100 * PRICE) in p2 and cents(48 * PRICE) in p2
    others = [744 * PRICE, 720 * PRICE, 10 * PRICE] + [(h + u) * PRICE for h, _, _, u in CLUSTER.values()]
    for value in others:  # p1's and the cluster's money
        assert cents(value) not in pages["project-p2"], value
    assert "744.0" not in p2 and "720.0" not in p2  # p1's GPU-hours
    admin = section(pages["admin"], "trend")
    assert all(cents((h + u) * PRICE) in admin for h, _, _, u in CLUSTER.values())
    assert "partial: 2.0 of 31 days, 6 %" in admin


def test_project_trend_bills_its_share_of_unallocated_capacity_apart(built_db, tmp_path):
    """[allocation] unallocated = "proportional": GPU-1's 644 unallocated August hours go to the
    projects that held an A100 that day by their hours; p2 held one on 3-7 August only, and on
    7 August (4 of its hours against p1's 24) GPU-1 was unallocated for 20 hours: p2's share
    is 20 x 4/28 h = 20/7 h, 8.37 at 2.93 (to within a cent: the ledger rounds over days)."""
    usage, jobs = three_months_usage()
    db = built_db(usage, jobs=jobs, ingest={"grain_seconds": HOUR}, allocation={"unallocated": "proportional"})
    admin = {r["month"]: r for r in collect(db, MONTH, None)["trend"]["rows"]}
    trends = {p: collect(db, MONTH, p)["trend"] for p in ("p1", "p2")}
    assert trends["p1"]["shared"] and trends["p2"]["shared"]
    p2 = {r["month"]: r for r in trends["p2"]["rows"]}
    assert p2["2026-08"]["cents"] == 100 * PRICE  # own use apart from the share
    assert abs(p2["2026-08"]["billed_cents"] - 100 * PRICE - Decimal(20) / 7 * PRICE) <= Decimal("0.01")
    for month, total in admin.items():  # the projects' bills and the unlabeled job add up to the month
        unlabeled = 30 * PRICE if month == "2026-09" else 0
        billed = sum(next(r for r in t["rows"] if r["month"] == month)["billed_cents"] for t in trends.values())
        assert billed + unlabeled == total["cents"], month
    text = section(render(db, tmp_path)["project-p2"], "trend")
    assert "Billed" in text and cents(p2["2026-08"]["billed_cents"]) in text


def test_trend_reaches_back_twelve_months_with_data(built_db):
    """Fourteen months with a day each: October's trend is it and the 11 before it."""
    usage = []
    for year, month in [(2025, m) for m in range(9, 13)] + [(2026, m) for m in range(1, 11)]:
        usage += hours(f"{year}-{month:02d}-03T00:00Z", 2, "GPU-0", "j1")
    db = built_db(usage, jobs=[job_row("j1")], ingest={"grain_seconds": HOUR})
    con = open_db(db)
    try:
        rows = trend(con, MONTH, None)["rows"]
    finally:
        con.close()
    assert [r["month"] for r in rows] == ["2025-11", "2025-12"] + [f"2026-{m:02d}" for m in range(1, 11)]
    assert all(r["partial"] and r["cents"] == 2 * PRICE for r in rows)


def test_trend_chart_has_the_months_and_the_currency(three_months):
    report = collect(three_months, MONTH, None)
    fig = sections.figures(report, three_months.config.currency, None)["trend"]
    bars = fig.data[0]
    assert list(bars.x) == ["2026-08", "2026-09", "2026-10"]
    assert list(bars.y) == [float((h + u) * PRICE) for h, _, _, u in CLUSTER.values()]
    assert three_months.config.currency in fig.layout.yaxis.title.text
    assert list(bars.text) == ["", "", "partial, 6 %"]
    line = fig.data[1]  # whole months only: the partial month's point stands apart
    assert list(line.y) == [844.0, 750.0, None] and list(fig.data[2].y) == [58.0]


# --------------------------------------------------------------------------- the sample month


def test_sample_september_is_partial_and_not_compared(sample_db, rendered):
    con = open_db(sample_db)
    try:  # the sample's September, from the raw rows: hours held in local September
        held = con.execute("""
            SELECT count(DISTINCT interval_start) * any_value(s.grain_seconds) / 3600
            FROM gpu_usage CROSS JOIN settings AS s
            WHERE strftime(timezone(s.timezone, interval_start), '%Y-%m') = '2026-09'""").fetchone()[0]
    finally:
        con.close()
    assert held == 24  # one day of 30
    note = "September 2026 is partial: 1.0 of 30 days (3 %)"
    for audience in rendered.result.audiences:
        text = page_parts(rendered.file(audience.stem, "html"))["text"]
        headline = section(text, "headline")
        assert note in headline and not CHANGE.search(headline), audience.stem
        assert "partial: 1.0 of 30 days, 3 %" in section(text, "trend"), audience.stem
    admin_pdf = pdf_text(rendered.file("admin", "pdf"))
    assert "Trend" in admin_pdf and "partial: 1.0 of 30 days, 3 %" in admin_pdf and "+2873.2 %" not in admin_pdf
