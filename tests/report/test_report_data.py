"""The section data against the marts: printed cents add up, project data is the project's."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pytest
from helpers.reportkit import MONTH

from yolocost import finance
from yolocost.errors import YolocostError
from yolocost.report import data, sections


@pytest.fixture(scope="module")
def con(sample_db):
    connection = duckdb.connect(str(sample_db.path), read_only=True)
    connection.execute("SET TimeZone = 'UTC'")
    yield connection
    connection.close()


def _collect(con, config, project):
    return sections.collect(con, MONTH, project, timezone=config.timezone, grain_seconds=config.grain_seconds,
                            currency=config.currency)


def test_admin_cents_are_the_finance_csv_cents_and_add_up(con, sample_db):
    report = _collect(con, sample_db.config, None)
    totals = finance.project_totals_cents(con, MONTH)
    assert {p["project"]: p["cents"] for p in report["projects"]} == totals
    total = report["headline"]["current"]["total_cents"]
    assert total == finance.total_cents(con, MONTH) == sum(totals.values())
    # users of each project add up to that project's printed total
    for project, cents in totals.items():
        users = [u["cents"] for u in report["users"] if u["project"] == project]
        if project != "(unallocated)":
            assert sum(users) == cents, project
    assert sum(g["cents"] for g in report["gpu_models"]) == total
    held = total - totals["(unallocated)"]
    assert report["image_tags"]["cents"] == held  # tags cover held time, to the cent
    assert report["unallocated"]["cents"] == totals["(unallocated)"]
    assert sum(r["cost"] for r in report["daily"]["rows"]) == total  # the days' stacks are the month


def test_project_data_is_the_projects_own(con, sample_db):
    totals = finance.project_totals_cents(con, MONTH)
    for project in data.month_projects(con, MONTH):
        report = _collect(con, sample_db.config, project)
        assert report["headline"]["current"]["total_cents"] == totals[project]
        assert sum(u["cents"] for u in report["users"]) == totals[project]
        assert sum(g["cents"] for g in report["gpu_models"]) == totals[project]
        assert {u["project"] for u in report["users"]} == {project}
        jobs = {r[0] for r in con.execute(
            "SELECT job_id FROM mart_job_month WHERE month = ? AND project = ? AND bucket = 'project'",
            [MONTH, project]).fetchall()}
        assert {j["job_id"] for j in report["idle_waste"]["jobs"]} <= jobs
        assert {j["job_id"] for j in report["tag_violations"]["jobs"]} <= jobs
        assert {b["job_id"] for b in report["breakers"]["rows"]} <= jobs
        assert sum(b["jobs"] for b in report["density"]["bins"]) == len(jobs)
        assert "projects" not in report and "unallocated" not in report


def test_project_leaderboard_is_the_marts_aggregate_over_its_jobs(con, sample_db):
    """The board is mart_leaderboard's aggregate with the ledger's money: each run's cents
    (every month it ran in) instead of its exact cost, within a cent per month of it."""
    config = sample_db.config
    everyone = data.leaderboard(con, MONTH, None, config.timezone, config.grain_seconds)
    mart = data.rows(con, "SELECT * FROM mart_leaderboard WHERE month = ?", [MONTH])
    key = lambda r: (r["model_type"] or "", r["image_tag"] or "")  # noqa: E731
    assert len(everyone) == len(mart) > 10
    for a, b in zip(sorted(everyone, key=key), sorted(mart, key=key)):
        assert a["runs"] == b["runs"] and a["mean_map50"] == pytest.approx(b["mean_map50"])
        assert abs(a["mean_cost_per_run"] - b["mean_cost_per_run"]) <= Decimal("0.02")
        assert a["cost_per_map50_point"] == pytest.approx(float(a["mean_cost_per_run"]) / (a["mean_map50"] * 100))
        assert a["mean_training_hours"] == pytest.approx(b["mean_training_hours"])
    runs = sum(r["runs"] for p in data.month_projects(con, MONTH)
               for r in data.leaderboard(con, MONTH, p, config.timezone, config.grain_seconds))
    assert 0 < runs <= sum(r["runs"] for r in mart)  # the rest are unlabeled jobs' runs


def test_actions_name_the_three_jobs_with_the_most_idle_waste(con, sample_db):
    report = _collect(con, sample_db.config, None)
    top = con.execute("SELECT job_id FROM mart_job_month WHERE month = ? ORDER BY idle_cost DESC, job_id LIMIT 3",
                      [MONTH]).fetchall()
    idle = next(a for a in report["actions"] if a["section"] == "idle_waste")
    assert "idle waste" in idle["title"]
    for (job,) in top:
        assert job in idle["detail"]
    assert any("Pause stalled runs" in a["title"] for a in report["actions"])
    # retagging saves nothing: a policy note apart from the ranked actions, never a saving
    assert not any("Retag images" in a["title"] for a in report["actions"])
    assert any("Retag images" in n["title"] for n in report["policy_notes"])


def test_month_helpers():
    assert data.previous_month("2026-01") == "2025-12" and data.previous_month("2026-10") == "2026-09"
    with pytest.raises(YolocostError):
        data.check_month("2026-1")


def test_a_project_has_one_colour_in_every_admin_chart(con, sample_db):
    from yolocost.report import charts

    report = _collect(con, sample_db.config, None)
    figures = sections.figures(report, sample_db.config.currency, None)
    by_chart = {}
    bars = figures["projects"].data[0]
    by_chart["projects"] = dict(zip(bars.y, bars.marker.color))
    by_chart["daily"] = {trace.name: trace.marker.color for trace in figures["daily"].data}
    bars = figures["users"].data[0]
    by_chart["users"] = {label.split(" · ", 1)[1]: color for label, color in zip(bars.y, bars.marker.color)}
    projects = {p["project"] for p in report["projects"] if p["bucket"] == "project"}
    assert len(projects) >= 5
    for project in projects:
        seen = {name: colors[charts.esc(project)] for name, colors in by_chart.items() if charts.esc(project) in colors}
        assert len(seen) == 3 and len(set(seen.values())) == 1, (project, seen)
    # and different projects get different colours
    assert len({by_chart["projects"][charts.esc(p)] for p in projects}) == len(projects)
