"""The waste ranking of users (section user_waste): per user the GPU time held under the idle
threshold, its cost (the ledger's idle cents of the user's jobs), idle share, density and
jobs, ranked by idle cost; a project report ranks its own users only, and the idle cents add
up to the idle waste the report prints in its headline and user table."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import job_row, usage_run
from helpers.reportkit import MONTH
from helpers.pages import cells, collect, section

from yolocost.report import ADMIN_SECTIONS, PROJECT_SECTIONS, data, render_reports, sections, waste

PRICE = "2.00"  # per GPU-hour: an interval of 5 minutes costs 1/6


def _held(gpu, job, start, idle=0, busy=0):
    """`idle` intervals at 1 % utilization (idle: under 5 %), then `busy` at 80 % (busy: over 70 %)."""
    rows = usage_run(start, idle, gpu, job, util=1.0) if idle else []
    if busy:
        rows += usage_run(_after(start, idle), busy, gpu, job, util=80.0)
    return rows


def _after(start: str, intervals: int) -> str:
    t = dt.datetime.fromisoformat(start.replace("Z", "+00:00")) + dt.timedelta(minutes=5 * intervals)
    return t.strftime("%Y-%m-%dT%H:%MZ")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Users and what their jobs held (2.00 per GPU-hour, 12 intervals of 5 minutes = 1 h; an
    idle interval's cost 1/6 is all idle cost):

    carol  p1  c1: 24 idle                     2.0 h, idle 2.0 h = 4.00, density 0
    alice  p1  a1: 12 idle + 12 busy           2.0 h, idle 1.0 h = 2.00, density 1/2
    alice  p2  a2:  6 idle +  6 busy           1.0 h, idle 0.5 h = 1.00, density 1/2
    bob    p1  b1:  6 idle + 30 busy           3.0 h, idle 0.5 h = 1.00, density 30/36
    bob    p1  b2: 12 busy                     1.0 h, idle 0
    (unknown) unlabeled u1: 12 idle            1.0 h, idle 1.0 h = 2.00, density 0 (a job with no user label)
    dave   p2  d1: 12 busy                     1.0 h, idle 0
    """
    from helpers.builders import build_db

    day = "2026-10-05T00:00Z"
    usage = (_held("GPU-0", "c1", day, idle=24) + _held("GPU-1", "a1", day, idle=12, busy=12)
             + _held("GPU-2", "a2", day, idle=6, busy=6) + _held("GPU-3", "b1", day, idle=6, busy=30)
             + _held("GPU-4", "b2", day, busy=12) + _held("GPU-5", "u1", day, idle=12)
             + _held("GPU-6", "d1", day, busy=12))
    jobs = [job_row("c1", project="p1", user="carol"), job_row("a1", project="p1", user="alice"),
            job_row("a2", project="p2", user="alice"), job_row("b1", project="p1", user="bob"),
            job_row("b2", project="p1", user="bob"), job_row("u1", project=None, user=None),
            job_row("d1", project="p2", user="dave")]
    return build_db(tmp_path_factory.mktemp("waste"), usage, jobs=jobs, prices=[("A100", PRICE)])



def _row(r):
    return (r["rank"], r["user_name"], r["projects"], r["jobs"], r["gpu_hours"], r["idle_gpu_hours"],
            r["idle_cost"], r["idle_share"], None if r["density"] is None else round(r["density"], 6))


def test_the_admin_ranks_every_user_by_idle_cost_over_all_projects(db):
    w = collect(db, MONTH, None)["user_waste"]
    assert [_row(r) for r in w["rows"]] == [
        (1, "carol", "p1", 1, Decimal("2.0"), Decimal("2.0"), Decimal("4.00"), 1.0, 0.0),
        (2, "alice", "p1, p2", 2, Decimal("3.0"), Decimal("1.5"), Decimal("3.00"), 0.5, 0.5),
        (3, "(unknown)", "(unlabeled)", 1, Decimal("1.0"), Decimal("1.0"), Decimal("2.00"), 1.0, 0.0),
        (4, "bob", "p1", 2, Decimal("4.0"), Decimal("0.5"), Decimal("1.00"), 0.125, 0.875),  # 42 of 48 busy
        (5, "dave", "p2", 1, Decimal("1.0"), Decimal("0.0"), Decimal("0.00"), 0.0, 1.0),
    ]
    t = w["total"]
    assert (t["users"], t["jobs"], t["gpu_hours"], t["idle_gpu_hours"], t["idle_cost"]) == (
        5, 7, Decimal("11.0"), Decimal("5.0"), Decimal("10.00"))
    assert t["density"] == pytest.approx(72 / 132)  # busy intervals 12+6+30+12+12 of 24+24+12+36+12+12+12
    assert w["other"] is None and (w["users"], w["wasting"]) == (5, 4)


def test_the_rest_row_keeps_the_table_adding_up(db):
    con = duckdb.connect(str(db.path), read_only=True)
    try:
        w = waste.user_waste(con, MONTH, None, top=2)
    finally:
        con.close()
    assert [r["user_name"] for r in w["rows"]] == ["carol", "alice"]
    o = w["other"]
    assert (o["users"], o["jobs"], o["gpu_hours"], o["idle_gpu_hours"], o["idle_cost"]) == (
        3, 4, Decimal("6.0"), Decimal("1.5"), Decimal("3.00"))
    assert sum(r["idle_cost"] for r in w["rows"]) + o["idle_cost"] == w["total"]["idle_cost"] == Decimal("10.00")


def test_a_project_ranks_its_own_users_only(db):
    p1 = collect(db, MONTH, "p1")["user_waste"]
    assert [_row(r) for r in p1["rows"]] == [
        (1, "carol", "p1", 1, Decimal("2.0"), Decimal("2.0"), Decimal("4.00"), 1.0, 0.0),
        (2, "alice", "p1", 1, Decimal("2.0"), Decimal("1.0"), Decimal("2.00"), 0.5, 0.5),
        (3, "bob", "p1", 2, Decimal("4.0"), Decimal("0.5"), Decimal("1.00"), 0.125, 0.875),
    ]
    assert p1["total"]["idle_cost"] == Decimal("7.00")
    p2 = collect(db, MONTH, "p2")["user_waste"]
    assert [_row(r) for r in p2["rows"]] == [
        (1, "alice", "p2", 1, Decimal("1.0"), Decimal("0.5"), Decimal("1.00"), 0.5, 0.5),
        (2, "dave", "p2", 1, Decimal("1.0"), Decimal("0.0"), Decimal("0.00"), 0.0, 1.0),
    ]


@pytest.mark.parametrize("project", [None, "p1", "p2"])
def test_the_idle_cents_are_the_idle_waste_printed_elsewhere(db, project):
    report = collect(db, MONTH, project)
    total = report["user_waste"]["total"]["idle_cost"]
    assert total == report["headline"]["current"]["idle_cost"]  # the headline's idle-waste card
    assert total == sum(u["idle_cost"] for u in report["users"])  # the user table's idle cost column
    assert total == sum(g["idle_cents"] for g in report["idle_waste"]["groups"])
    assert report["user_waste"]["total"]["idle_gpu_hours"] == report["headline"]["current"]["idle_gpu_hours"]




def test_the_section_is_in_both_reports_and_its_total_is_the_headline_figure(db, tmp_path):
    assert ("user_waste", "Waste ranking of users") in ADMIN_SECTIONS and "user_waste" in dict(PROJECT_SECTIONS)
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["admin", "project:p1"], ["html"])
    admin, p1 = (p.read_text(encoding="utf-8") for p in result.files if p.suffix == ".html")
    rows = cells(section(admin, "user_waste"))
    assert rows[0] == ["Rank", "User", "Projects", "Jobs", "GPU-hours", "Idle GPU-hours", "Idle share", "Density",
                       "Idle cost"]
    assert rows[1] == ["1", "carol", "p1", "1", "2.0", "2.0", "100.0 %", "0.0 %", "4.00"]
    assert rows[2] == ["2", "alice", "p1, p2", "2", "3.0", "1.5", "50.0 %", "50.0 %", "3.00"]
    assert rows[-1] == ["", "Total", "", "7", "11.0", "5.0", "45.5 %", "54.5 %", "10.00"]
    card = re.search(r'card-idle_cost">\s*<div class="v">([^<]+)</div>', admin).group(1)
    assert card == rows[-1][-1] == "10.00"

    rows = cells(section(p1, "user_waste"))
    assert [r[1] for r in rows[1:-1]] == ["carol", "alice", "bob"] and "Projects" not in rows[0]
    assert rows[-1][-1] == "7.00" == re.search(r'card-idle_cost">\s*<div class="v">([^<]+)</div>', p1).group(1)
    assert "dave" not in p1 and "p2" not in section(p1, "user_waste")


def test_the_sample_months_rankings_add_up_to_the_headline(sample_db):
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        config = sample_db.config
        for project in [None, *data.month_projects(con, MONTH)]:
            report = sections.collect(con, MONTH, project, timezone=config.timezone,
                                      grain_seconds=config.grain_seconds, currency=config.currency)
            w = report["user_waste"]
            shown = w["rows"] + ([w["other"]] if w["other"] else [])
            assert sum(r["idle_cost"] for r in shown) == w["total"]["idle_cost"] == \
                report["headline"]["current"]["idle_cost"], project
            costs = [r["idle_cost"] for r in w["rows"]]
            assert costs == sorted(costs, reverse=True) and [r["rank"] for r in w["rows"]] == list(
                range(1, len(costs) + 1)), project
            if project is not None:
                own = {r[0] or "(no user)" for r in con.execute(
                    "SELECT DISTINCT user_name FROM mart_job_month WHERE month = ? AND project = ? "
                    "AND bucket = 'project'", [MONTH, project]).fetchall()}
                assert {r["user_name"] for r in w["rows"]} <= own and w["total"]["users"] == len(own), project
                assert {r["projects"] for r in w["rows"]} == {project}
    finally:
        con.close()
