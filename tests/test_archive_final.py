"""Archived means final: nothing a load or an ingest brings changes a document of an archived
month, and prune archives no month the database holds only in part.

July and August 2026 (helpers.months' months: 16 GPUs at the 300 s grain), July archived. A month's
documents read its by-month marts and ledger rows, and, for the whole-job figures (start and
end, mAP, cost per mAP point, the value leaderboard), the month's rows of mart_job_by_month,
which an archived month keeps as it was archived while the open months follow new data.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest
from helpers.builders import (epoch_rows, intervals, job_row, make_config, result_row, usage_row, write_raw,
                      yolocost)
from helpers.months import GENERATED, NOW, _config, documents, named_queries

from yolocost import load, months, queries

UTC = dt.timezone.utc
JULY, AUGUST = "2026-07", "2026-08"
CROSSING_JOB = "2026-07-g3-w4"  # holds GPUs 12-14 to the end of July; carried on into August on GPU 15 below


@pytest.fixture
def archived(two_months, tmp_path):
    """The two months with July archived (retention 30 days, as of Sep 10)."""
    shutil.copyfile(two_months.database, tmp_path / "yolocost.duckdb")
    cfg = _config(tmp_path)
    assert [m.month for m in months.prune_database(cfg, now=NOW).months] == [JULY]
    return cfg


def rows(cfg, sql: str, params=()) -> list[tuple]:
    con = duckdb.connect(str(cfg.database), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def most_expensive(cfg, month: str) -> list[dict]:
    query = next(q for q in queries.available() if q.name == "most_expensive_jobs")
    columns, found = queries.run(cfg.database, query, {"month": month, "limit": "100"})
    return [dict(zip(columns, r)) for r in found]


def light_documents(cfg, month: str, folder: Path) -> dict[str, bytes]:
    """The month's HTML reports, summary, index and CSVs (no PDF), by file name, with the minute
    each was generated at masked (as helpers.months' `documents`: two renders may straddle one)."""
    from yolocost.report import render_reports

    out = dataclasses.replace(cfg, report_dir=folder)
    result = render_reports(out, month, ["all"], ["html", "summary", "csv", "index"])
    return {p.name: GENERATED.sub(b"generated (time)", p.read_bytes()) for p in sorted(result.folder.iterdir())}


def test_a_load_of_an_archived_months_job_labels_and_results_changes_none_of_its_documents(archived, tmp_path):
    """The reproduction: an empty gpu_usage.parquet with a jobs and a job_results row for a
    job billed in the archived month (project `hijacked`, map50 0.99) loads, and the month's
    most expensive jobs, reports and CSVs stay as they were; the raw rows are replaced."""
    before = most_expensive(archived, JULY)
    job = before[0]
    assert job["project"] != "hijacked" and job["map50"] is not None and job["map50"] != 0.99
    docs = light_documents(archived, JULY, tmp_path / "before")
    assert any(name.startswith("project-") and name.endswith(".csv") for name in docs)

    folder = write_raw(tmp_path / "hijack", [], jobs=[job_row(job["job_id"], project="hijacked", user="mallory")],
                       results=[result_row(job["job_id"], 0.99, 0.9, 3)])
    result = load.load_parquet_dir(archived, folder)
    assert (result.usage_rows, result.jobs, result.window_start) == (0, 1, None)

    assert rows(archived, "SELECT project FROM jobs WHERE job_id = ?", [job["job_id"]]) == [("hijacked",)]
    assert rows(archived, "SELECT map50 FROM job_results WHERE job_id = ?", [job["job_id"]]) == [(0.99,)]
    after = most_expensive(archived, JULY)
    assert after == before and after[0]["map50"] == job["map50"]
    assert light_documents(archived, JULY, tmp_path / "after") == docs
    load.rebuild_database(archived)  # a plain build later: still the archived view
    assert most_expensive(archived, JULY) == before


def _carried_on(cfg, folder: Path) -> Path:
    """August 1, 00:00-06:00 UTC as the store holds it, with GPU 15 (free then) held by
    CROSSING_JOB: an ingest of a job that ran on from the archived July into August."""
    folder.mkdir()
    con = duckdb.connect(str(cfg.database), read_only=True)
    try:
        con.execute(f"""COPY (SELECT * EXCLUDE (energy_power_mj) REPLACE (
                              CASE WHEN gpu_uuid = 'GPU-15' THEN '{CROSSING_JOB}' ELSE job_id END AS job_id)
                          FROM gpu_usage WHERE interval_start >= '2026-08-01 00:00:00+00'
                            AND interval_start < '2026-08-01 06:00:00+00' ORDER BY ALL)
                        TO '{folder / "gpu_usage.parquet"}' (FORMAT parquet)""")
        assert con.execute("SELECT count(*) FROM gpu_usage WHERE gpu_uuid = 'GPU-15' AND job_id IS NULL AND "
                           "interval_start >= '2026-08-01' AND interval_start < '2026-08-01 06:00:00+00'"
                           ).fetchone()[0] == 72
    finally:
        con.close()
    return folder


def test_every_document_of_an_archived_month_stays_the_same_through_loads_and_a_job_that_runs_on(
        archived, tmp_path):
    docs = documents(archived, JULY, tmp_path / "before")
    answers = named_queries(archived, JULY)
    assert [r for r in answers["most_expensive_jobs"] if r[0] == CROSSING_JOB][0][1:2] == ("p0",)

    # labels, progress and results of July jobs, with no usage rows
    assert answers["most_expensive_jobs"] and answers["cost_per_map_leaderboard"]
    victim = answers["most_expensive_jobs"][0][0]
    write_raw(tmp_path / "labels", [], jobs=[job_row(victim, project="hijacked"), job_row(CROSSING_JOB, project="x")],
              progress=epoch_rows(victim, 1, "2026-07-20T00:00Z", map50=0.99),
              results=[result_row(victim, 0.99, 0.9, 1)])
    load.load_parquet_dir(archived, tmp_path / "labels")
    # the job runs on into August: usage rows there, its labels, progress and final validation
    folder = _carried_on(archived, tmp_path / "carried")
    end = dt.datetime(2026, 8, 1, 6, tzinfo=UTC)
    write_raw(folder / "side", [], jobs=[job_row(CROSSING_JOB, project="moved", end=end)],
              progress=epoch_rows(CROSSING_JOB, 1, "2026-08-01T05:00Z", map50=0.88),
              results=[result_row(CROSSING_JOB, 0.88, 0.6, 1)])
    for name in ("jobs", "training_progress", "job_results"):
        shutil.move(folder / "side" / f"{name}.parquet", folder / f"{name}.parquet")
    shutil.rmtree(folder / "side")
    loaded = load.load_parquet_dir(archived, folder)
    assert loaded.usage_rows == 16 * 72 and loaded.window_start == dt.datetime(2026, 8, 1, tzinfo=UTC)

    # July, archived, shows what it was archived with: every document and query the same
    assert named_queries(archived, JULY) == answers
    assert documents(archived, JULY, tmp_path / "after") == docs
    load.rebuild_database(archived)
    assert documents(archived, JULY, tmp_path / "rebuilt") == docs
    # August, open, shows the new data: the job's August row, its new project, end and mAP
    august = rows(archived, "SELECT project, map50, end_time, held, ended FROM mart_job_by_month "
                            "WHERE month = ? AND job_id = ?", [AUGUST, CROSSING_JOB])
    assert august == [("moved", 0.88, end, True, True)]
    assert rows(archived, "SELECT project, gpu_hours FROM mart_job_month WHERE month = ? AND job_id = ?",
                [AUGUST, CROSSING_JOB]) == [("moved", 6.0)]
    assert rows(archived, "SELECT project, map50 FROM mart_job_by_month WHERE month = ? AND job_id = ?",
                [JULY, CROSSING_JOB]) == [("p0", 0.3 + 3 / 100)]  # as month_rows gives it


# --------------------------------------------------------------------------- partial months


KEPT = ("2026-09: partial, it holds 288 of its 8,640 grain intervals (3.3 %); archived, the rest could never be "
        "loaded: load the rest first, or prune with --include-partial")  # one day of 30, 288 intervals each


def _partial_db(tmp_path: Path):
    """September 2026 (UTC) held for its last day only; retention 20 days."""
    cfg = make_config(tmp_path, ingest={"retention_days": 20})
    write_raw(tmp_path / "raw", [usage_row(t, "g1", "j1") for t in intervals("2026-09-30T00:00Z", 288)],
              jobs=[job_row("j1", project="p1")])
    load.load_parquet_dir(cfg, tmp_path / "raw")
    return cfg


def test_prune_keeps_a_partial_month_and_says_why_unless_told_to_archive_it(tmp_path):
    cfg = _partial_db(tmp_path)
    assert rows(cfg, "SELECT intervals, month_intervals, partial FROM mart_month_coverage") == [(288, 8640, True)]
    now = dt.datetime(2026, 11, 1, tzinfo=UTC)  # September ended 31 days before: older than the retention
    kept = months.prune_database(cfg, now=now)
    assert kept.months == [] and kept.skipped == []
    assert kept.partial == [KEPT]
    assert rows(cfg, "SELECT count(*) FROM gpu_usage") == [(288,)]
    assert rows(cfg, "SELECT count(*) FROM month_builds WHERE archived_at IS NOT NULL") == [(0,)]

    done = months.prune_database(cfg, now=now, include_partial=True)
    assert [m.month for m in done.months] == ["2026-09"] and done.partial == []
    assert done.months[0].rows["gpu_usage"] == 288
    assert rows(cfg, "SELECT count(*) FROM gpu_usage") == [(0,)]


def test_the_cli_says_which_partial_month_it_keeps(tmp_path):
    cfg = _partial_db(tmp_path)
    toml = tmp_path / "yolocost.toml"
    toml.write_text(f'[cluster]\nname = "{cfg.cluster}"\ntimezone = "UTC"\n[database]\npath = "{cfg.database}"\n'
                    '[ingest]\nretention_days = 20\n[[prices]]\ngpu_model = "A100"\nprice_per_gpu_hour = "2.93"\n',
                    encoding="utf-8")
    helped = yolocost("prune", "--help", cwd=tmp_path)
    assert "--include-partial" in helped.stdout and "only in part" in helped.stdout
    kept = yolocost("--config", str(toml), "prune", "--as-of", "2026-11-01", cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert kept.stdout.splitlines() == [f"kept {KEPT}"]
    assert rows(cfg, "SELECT count(*) FROM gpu_usage") == [(288,)]
    dry = yolocost("--config", str(toml), "prune", "--as-of", "2026-11-01", "--include-partial", "--dry-run",
                   cwd=tmp_path)
    assert dry.returncode == 0 and dry.stdout.splitlines() == [
        "2026-09: would remove 288 usage rows (int_usage_priced 288, int_usage_gpu_day 1, int_job_intervals 288)"], \
        dry.stdout + dry.stderr
    done = yolocost("--config", str(toml), "prune", "--as-of", "2026-11-01", "--include-partial", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("2026-09: removed 288 usage rows"), done.stderr
    assert rows(cfg, "SELECT count(*) FROM gpu_usage") == [(0,)]


def test_monthly_keeps_the_partial_month_it_ingested_and_says_so(prom_sample, tmp_path):
    """The 3-day sample of October 2026 in a real Prometheus; retention 1 day, so October is
    old enough to archive, but the run keeps it (it holds 3 of its days) and says so."""
    from helpers.builders import sample_config

    config = sample_config(prom_sample, tmp_path)
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("[ingest]\n", "[ingest]\nretention_days = 1\n", 1), encoding="utf-8")
    run = yolocost("--config", str(config), "monthly", "--month", "2026-10", "--format", "csv", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    con = duckdb.connect(str(tmp_path / "yolocost.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM month_builds WHERE archived_at IS NOT NULL").fetchone()[0] == 0
        held, total = con.execute("SELECT intervals, month_intervals FROM mart_month_coverage "
                                  "WHERE month = '2026-10'").fetchone()
    finally:
        con.close()
    sample = prom_sample[0]
    # the sample's three days, every interval held, and the one its series linger into (a
    # backfill writes no stale markers: the 5-minute lookback)
    assert held == (sample.end - sample.start) // 300 + 1 == 3 * 288 + 1
    # October 2026 in the sample's time zone: 31 days, and an hour more where summer time ends then
    tz = ZoneInfo(_timezone(config))
    first, following = dt.datetime(2026, 10, 1, tzinfo=tz), dt.datetime(2026, 11, 1, tzinfo=tz)
    assert total == int((following.astimezone(UTC) - first.astimezone(UTC)).total_seconds()) // 300
    assert total in (31 * 288, 31 * 288 + 12)
    said = (f"yolocost: kept the usage rows of 2026-10: partial, it holds {held:,} of its {total:,} grain intervals "
            f"({100 * held / total:.1f} %); archived, the rest could never be loaded: load the rest first, or prune "
            "with --include-partial")
    assert said in run.stderr.splitlines(), run.stderr
    assert "archived" not in run.stdout and "usage rows ingested" in run.stdout


def _timezone(config: Path) -> str:
    import tomllib

    return tomllib.loads(config.read_text(encoding="utf-8"))["cluster"]["timezone"]
