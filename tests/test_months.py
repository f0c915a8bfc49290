"""Months built one at a time, and retention: a pruned month keeps every figure, month N's
build neither reads nor changes month N-2, and only changed months are rebuilt.

Three months (July to September 2026, UTC) of 16 GPUs at the 300 s grain, ~143k usage rows a
month (more than a DuckDB row group, so that what a build scans can be told apart by month),
loaded month by month with the real loader into a real DuckDB file. One job crosses the
August/September boundary.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import CROSSING, MONTH_GPUS as GPUS, Profiled, archive, assert_one_line_error, yolocost
from helpers.months import MONTHS, NOW, PRICES, _config, documents, named_queries

from yolocost import db, load, months
from yolocost.errors import YolocostError

UTC = dt.timezone.utc


@pytest.fixture
def loaded(two_months, tmp_path):
    shutil.copyfile(two_months.database, tmp_path / "yolocost.duckdb")
    return _config(tmp_path)


def count(cfg, sql: str) -> int:
    con = duckdb.connect(str(cfg.database), read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def test_a_pruned_month_keeps_every_figure_and_the_next_stays_rebuildable(loaded, raw_months, tmp_path):
    before_docs = documents(loaded, "2026-07", tmp_path / "before")
    before_queries = named_queries(loaded, "2026-07")
    before_archive = archive(loaded, "2026-07")
    august = archive(loaded, "2026-08")
    july_rows = count(loaded, "SELECT count(*) FROM gpu_usage WHERE interval_start < '2026-08-01'")
    assert july_rows == GPUS * 31 * 288 and any(n.endswith(".csv") for n in before_docs)

    dry = months.prune_database(loaded, now=NOW, dry_run=True)
    assert [m.month for m in dry.months] == ["2026-07"] and dry.months[0].rows["gpu_usage"] == july_rows
    assert count(loaded, "SELECT count(*) FROM gpu_usage WHERE interval_start < '2026-08-01'") == july_rows

    result = months.prune_database(loaded, now=NOW)
    assert [m.month for m in result.months] == ["2026-07"]
    for table in months.PRUNED:  # the usage rows and the tables of their size are gone
        column = "interval_start < '2026-08-01'" if table == "gpu_usage" else "month = '2026-07'"
        assert count(loaded, f"SELECT count(*) FROM {table} WHERE {column}") == 0, table
    assert count(loaded, "SELECT count(*) FROM gpu_usage") == GPUS * 31 * 288  # August's stay

    assert archive(loaded, "2026-07") == before_archive
    assert documents(loaded, "2026-07", tmp_path / "after") == before_docs
    assert named_queries(loaded, "2026-07") == before_queries

    plan = load.rebuild_database(loaded)  # a plain build keeps the archived month
    assert plan.months == ["2026-08"] and plan.archived == ["2026-07"]
    assert documents(loaded, "2026-07", tmp_path / "rebuilt") == before_docs
    assert archive(loaded, "2026-08") == august  # rebuilt from its raw rows: the same figures

    with pytest.raises(YolocostError, match="2026-07 is archived"):
        load.rebuild_database(loaded, "2026-07")
    with pytest.raises(YolocostError, match="2026-07 is archived"):  # a load cannot replace it either
        load.load_parquet_dir(loaded, raw_months["2026-07"])
    moved = _config(loaded.database.parent, timezone="Europe/Berlin")  # its months could not be cut again
    with pytest.raises(YolocostError, match="timezone is 'Europe/Berlin', but the database holds archived months"):
        load.rebuild_database(moved)
    assert archive(loaded, "2026-07") == before_archive


def test_a_month_build_reads_and_changes_only_its_own_month(loaded, raw_months):
    july = archive(loaded, "2026-07")
    rows = {m: GPUS * n * 288 for m, n in zip(MONTHS, (31, 31, 30))}
    with db.writing(loaded.database) as con:
        staged = load._load(con, loaded, raw_months["2026-09"], lambda _: None)
        con.execute("COMMIT")  # September's rows stored as a load stores them, its models not yet built
        con.execute("BEGIN TRANSACTION")
        month_build = Profiled(con)
        plan = load.rebuild(month_build, loaded, load.touched(loaded, staged.window_start, staged.window_end))
        con.execute("ROLLBACK")
        con.execute("BEGIN TRANSACTION")
        full_build = Profiled(con)
        load.rebuild(full_build, loaded, None)  # every month: the profile does see a full read
        con.execute("ROLLBACK")
        con.execute("BEGIN TRANSACTION")
    assert plan.months == ["2026-09"]
    assert full_build.scans and min(full_build.scans) >= sum(rows.values())
    # each scan reads September's rows, and at most one row group (122,880 rows) of August's
    # beside them: never July's 142,848
    assert month_build.scans and all(rows["2026-09"] <= n < rows["2026-09"] + 122_880 for n in month_build.scans), \
        month_build.scans

    load.load_parquet_dir(loaded, raw_months["2026-09"])  # the same month through the CLI's path
    assert archive(loaded, "2026-07") == july
    # the job that crossed the boundary: its months add up to its total
    con = duckdb.connect(str(loaded.database), read_only=True)
    job = con.execute(f"SELECT gpu_seconds, cost, months FROM mart_job WHERE job_id = '{CROSSING}'").fetchone()
    parts = con.execute(f"SELECT sum(gpu_seconds), sum(cost), count(*) FROM mart_job_month WHERE job_id = '{CROSSING}'"
                        ).fetchone()
    con.close()
    assert job == parts and job[2] == 2 and job[0] == 3 * 86400


def test_a_price_change_rebuilds_only_the_months_it_touches(loaded):
    july, august = archive(loaded, "2026-07"), archive(loaded, "2026-08")
    changed = _config(loaded.database.parent, prices=PRICES + [("A100", "2026-08-15", "3.50")])
    plan = load.rebuild_database(changed, None)
    assert plan.months == ["2026-07", "2026-08"]  # a plain build rebuilds every month it can
    assert archive(changed, "2026-07") == july and archive(changed, "2026-08") != august
    # a later load of August alone: July's fingerprint still matches, so July is not rebuilt
    with db.writing(changed.database) as con:
        assert months.plan(con, changed, ["2026-08"]).months == ["2026-08"]
        assert months.plan(con, loaded, []).months == ["2026-08"]  # the old prices: August is stale, July not
    # the new A100 price is charged from Aug 15 on
    con = duckdb.connect(str(changed.database), read_only=True)
    prices = con.execute("SELECT DISTINCT unit_price FROM ledger_charges WHERE month = '2026-08' "
                         "AND gpu_model = 'A100' AND charge_kind = 'gpu' ORDER BY 1").fetchall()
    con.close()
    assert [p[0] for p in prices] == [Decimal("2.93"), Decimal("3.50")]


def test_prune_refuses_a_month_built_with_other_prices(loaded):
    changed = _config(loaded.database.parent, prices=[("A100", "3.10"), ("V100", "1.10")])
    with pytest.raises(YolocostError, match="cannot prune 2026-07: it was built with other settings, prices"):
        months.prune_database(changed, now=NOW)
    assert count(loaded, "SELECT count(*) FROM gpu_usage WHERE interval_start < '2026-08-01'") > 0
    kept = months.prune_database(changed, now=NOW, strict=False)  # the monthly run keeps it and says why
    assert kept.months == [] and kept.skipped[0].startswith("2026-07: it was built with other settings")


def test_the_cli_prunes_and_refuses_an_archived_month(loaded, tmp_path):
    toml = tmp_path / "yolocost.toml"
    toml.write_text(f'[cluster]\nname = "c1"\ntimezone = "UTC"\n[database]\npath = "{loaded.database}"\n'
                    '[ingest]\nretention_days = 30\n[[prices]]\ngpu_model = "A100"\nprice_per_gpu_hour = "2.93"\n'
                    '[[prices]]\ngpu_model = "V100"\nprice_per_gpu_hour = "1.10"\n[[energy_prices]]\n'
                    'price_per_kwh = "0.25"\n', encoding="utf-8")
    rows = count(loaded, "SELECT count(*) FROM gpu_usage")
    as_of = yolocost("--config", str(toml), "prune", "--dry-run", "--as-of", "2026-09-10", cwd=tmp_path)
    # by hand: GPU-days x owners (15 GPUs held and free each day, GPU 15 free all July); job x
    # interval (four jobs a day, one per group of four GPUs, 18 h of 12 intervals)
    gpu_days, job_intervals = 15 * 31 * 2 + 31, 4 * 18 * 12 * 31
    assert as_of.returncode == 0 and as_of.stdout.splitlines() == [
        f"2026-07: would remove {GPUS * 31 * 288:,} usage rows (int_usage_priced {GPUS * 31 * 288:,}, "
        f"int_usage_gpu_day {gpu_days:,}, int_job_intervals {job_intervals:,})"], as_of.stdout + as_of.stderr
    future = yolocost("--config", str(toml), "prune", "--as-of", "2999-01-01", cwd=tmp_path)
    assert_one_line_error(future, "--as-of 2999-01-01 is in the future")
    dry = yolocost("--config", str(toml), "prune", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "2026-07: would remove 142,848 usage rows" in dry.stdout and "2026-08: would remove" in dry.stdout
    assert count(loaded, "SELECT count(*) FROM gpu_usage") == rows
    done = yolocost("--config", str(toml), "prune", cwd=tmp_path)
    assert done.returncode == 0 and "2026-08: removed 142,848 usage rows" in done.stdout, done.stderr
    assert count(loaded, "SELECT count(*) FROM gpu_usage") == 0
    again = yolocost("--config", str(toml), "build", "--month", "2026-08", cwd=tmp_path)
    assert_one_line_error(again, "2026-08 is archived (its usage rows were pruned on")
    plain = yolocost("--config", str(toml), "build", cwd=tmp_path)
    assert plain.returncode == 0 and "kept 2 archived month(s)" in plain.stdout, plain.stderr
    none = yolocost("--config", str(toml), "build", "--month", "2026-10", cwd=tmp_path)
    assert_one_line_error(none, "the database holds no usage rows for 2026-10")


def test_an_ingest_into_an_archived_month_is_refused_before_anything_is_fetched(loaded):
    """The archive check comes before the fetch (which takes many minutes at a large fleet):
    a server that cannot even be reached is never asked, and the refusal names the month."""
    from yolocost.ingest import ingest

    months.prune_database(loaded, now=NOW)
    nowhere = dataclasses.replace(loaded, prometheus=dataclasses.replace(loaded.prometheus, url="http://127.0.0.1:9",
                                                                           retries=0))
    start = dt.datetime(2026, 7, 31, 12, tzinfo=UTC)
    with pytest.raises(YolocostError, match=r"^the window: 2026-07 is archived \(its usage rows were pruned on"):
        ingest(nowhere, start, start + dt.timedelta(days=2), now=NOW)
    with pytest.raises(YolocostError, match="cannot reach Prometheus at http://127.0.0.1:9"):  # August is open
        ingest(nowhere, dt.datetime(2026, 8, 12, tzinfo=UTC), dt.datetime(2026, 8, 13, tzinfo=UTC), now=NOW)
