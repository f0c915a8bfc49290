"""What `yolocost load` replaces: exactly what its files cover, or it stops and names the loss.

Each case starts from a copy of the sample month (48 GPUs, October 2026, Europe/Berlin)
loaded into a real DuckDB file, writes a Parquet folder cut from the sample's own
gpu_usage.parquet, runs the real CLI in a subprocess, and checks the exit status, the one
error line and the database: byte-identical after a refusal, exactly the expected rows after
a replacement.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from helpers.builders import assert_one_line_error, build_db, make_config, usage_run, write_raw, yolocost
from yolocost.errors import DataError
from yolocost.load import load_parquet_dir
from yolocost.resources import shipped_dir

SAMPLE_USAGE = shipped_dir("sample_data") / "gpu_usage.parquet"
TZ = "Europe/Berlin"


@pytest.fixture
def month(sample_db, tmp_path) -> Path:
    """A private copy of the loaded sample month; the config copied next to it."""
    db = tmp_path / "month.duckdb"
    shutil.copyfile(sample_db.path, db)
    shutil.copyfile(sample_db.raw_dir / "yolocost.toml", tmp_path / "yolocost.toml")
    return db


def run(db: Path, *args: str) -> subprocess.CompletedProcess:
    return yolocost("--config", str(db.parent / "yolocost.toml"), "--db", str(db), "load", *args, timeout=600)


def cut(folder: Path, select: str) -> Path:
    """A raw folder whose gpu_usage.parquet is `select` over the sample's rows (seen as `u`;
    local dates in Europe/Berlin)."""
    folder.mkdir()
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{TZ}'")
    con.execute(f"CREATE VIEW u AS SELECT * FROM read_parquet('{SAMPLE_USAGE}')")
    con.execute(f"COPY ({select}) TO '{folder / 'gpu_usage.parquet'}' (FORMAT parquet)")
    con.close()
    return folder


def value(db: Path, sql: str):
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute(f"SET TimeZone = '{TZ}'")
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def sample_value(sql: str):
    """`sql` over the sample's usage rows (the view `u`)."""
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{TZ}'")
    con.execute(f"CREATE VIEW u AS SELECT * FROM read_parquet('{SAMPLE_USAGE}')")
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


USAGE_SUMS = ("SELECT (count(*), sum(seconds_present), sum(seconds_busy), sum(energy_mj), count(DISTINCT gpu_uuid), "
              "count(DISTINCT job_id)) FROM gpu_usage")


OCTOBER_COST = "SELECT total_cost FROM mart_cluster_month WHERE month = '2026-10'"
TWO_DAYS = "SELECT * FROM u WHERE interval_start::DATE IN ('2026-10-02', '2026-10-29')"


def test_two_days_of_a_month_do_not_replace_the_days_between(month, tmp_path):
    """A folder holding only Oct 2 and Oct 29 used to replace all of Oct 2-29 (exit 0): its
    span has a 26-day hole where the database holds rows, so it is refused, naming them."""
    folder = cut(tmp_path / "gap", TWO_DAYS)
    between = sample_value("SELECT count(*) FROM u WHERE interval_start::DATE BETWEEN '2026-10-03' AND '2026-10-28'")
    before = digest(month)
    line = assert_one_line_error(run(month, str(folder)), "no row of any GPU from 2026-10-02T22:00Z to 2026-10-28T23:00Z",
                   f"the database holds {between:,} usage rows", "--window START END")
    assert "span 2026-10-01T22:00Z to 2026-10-29T23:00Z" in line
    assert digest(month) == before
    # the window said, without the flag: the loss is named (rows, GPU-hours, GPUs, hosts)
    hours = sample_value("SELECT sum(seconds_present) / 3600 FROM u "
                         "WHERE interval_start::DATE BETWEEN '2026-10-03' AND '2026-10-28'")
    assert_one_line_error(run(month, "--window", "2026-10-02", "2026-10-30", str(folder)),
            f"holds no rows for {between:,} stored usage row(s) ({float(hours):,.2f} GPU-hours) of 48 GPUs",
            "on 9 hosts (gpu-a100-01, gpu-a100-02, gpu-a100-03, ...)", "from 2026-10-02T22:00Z to 2026-10-28T23:00Z",
            "--allow-loss")
    assert digest(month) == before


def test_allow_loss_replaces_the_window_as_a_whole(month, tmp_path):
    """With --window and --allow-loss the days between are deleted: the database then holds
    exactly the sample without Oct 3-28, and October's cost is that of a fresh load of those rows."""
    folder = cut(tmp_path / "gap", TWO_DAYS)
    result = run(month, "--window", "2026-10-02", "2026-10-30", "--allow-loss", str(folder))
    assert result.returncode == 0, result.stderr
    assert "warning: --allow-loss: deleting" in result.stderr
    expected = cut(tmp_path / "expected", "SELECT * FROM u WHERE interval_start::DATE NOT BETWEEN "
                                          "'2026-10-03' AND '2026-10-28'")
    rows = sample_value("SELECT count(*) FROM u WHERE interval_start::DATE NOT BETWEEN '2026-10-03' AND '2026-10-28'")
    assert value(month, "SELECT count(*) FROM gpu_usage") == rows
    assert value(month, "SELECT count(*) FROM gpu_usage WHERE interval_start::DATE BETWEEN '2026-10-03' "
                        "AND '2026-10-28'") == 0
    fresh = tmp_path / "fresh.duckdb"
    loaded = run(fresh, str(expected))
    assert loaded.returncode == 0, loaded.stderr
    assert value(month, USAGE_SUMS) == value(fresh, USAGE_SUMS)
    assert value(month, OCTOBER_COST) == value(fresh, OCTOBER_COST) < value(month, "SELECT 70956.98")


def test_one_gpu_shifted_ten_years_is_refused(month, tmp_path):
    """One GPU's rows 10 years ahead used to widen the window to 2036 and delete 303,077 rows:
    rows in the future are refused."""
    first = sample_value("SELECT min(gpu_uuid) FROM u")
    n = sample_value(f"SELECT count(*) FROM u WHERE gpu_uuid = '{first}'")
    shift = "to_seconds(3650 * 86400)"  # ten years of days (a calendar shift would fold DST hours)
    folder = cut(tmp_path / "shift", f"SELECT * REPLACE (CASE WHEN gpu_uuid = '{first}' THEN interval_start "
                                     f"+ {shift} ELSE interval_start END AS interval_start) FROM u")
    earliest = sample_value(f"SELECT min(interval_start) FROM u WHERE gpu_uuid = '{first}'") + dt.timedelta(days=3650)
    earliest = earliest.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    before = digest(month)
    assert_one_line_error(run(month, str(folder)), f"{n:,} usage row(s) in the future", f"the first at {earliest}", first)
    assert_one_line_error(run(month, "--allow-loss", str(folder)), "in the future")
    assert digest(month) == before


def test_rows_of_another_cluster_are_refused(month, tmp_path):
    """Rows whose cluster is not the config's [cluster] name: refused, naming value and count."""
    n = sample_value("SELECT count(*) FROM u WHERE hostname = 'gpu-a100-01'")
    folder = cut(tmp_path / "other", "SELECT * REPLACE (CASE WHEN hostname = 'gpu-a100-01' THEN 'other' "
                                     "ELSE cluster END AS cluster) FROM u")
    before = digest(month)
    assert_one_line_error(run(month, str(folder)), f"{n:,} usage row(s) of cluster 'other'", "'demo-cluster'")
    assert digest(month) == before


def test_bad_rows_are_named_before_any_loss(month, tmp_path):
    """A day shifted off the grain by a minute holds none of the stored GPU-intervals: the
    error names the misalignment, not a loss."""
    folder = cut(tmp_path / "skew", "SELECT * REPLACE (interval_start + INTERVAL 1 MINUTE AS interval_start) "
                                    "FROM u WHERE interval_start::DATE = '2026-10-10'")
    before = digest(month)
    assert_one_line_error(run(month, str(folder)), "interval_start not on the 300 s grain")
    assert digest(month) == before


def test_rerun_and_a_day_that_covers_what_it_replaces_need_no_flag(month, tmp_path):
    """Loading the sample again changes no figure; a folder of one whole day of every GPU
    (new utilization) replaces exactly that day."""
    cost = value(month, OCTOBER_COST)
    again = run(month, str(SAMPLE_USAGE.parent))
    assert again.returncode == 0, again.stderr
    assert value(month, OCTOBER_COST) == cost
    assert value(month, "SELECT count(*) FROM gpu_usage") == sample_value("SELECT count(*) FROM u")
    folder = cut(tmp_path / "day", "SELECT * REPLACE (1.0 AS util_mean, 0 AS seconds_busy, "
                                   "seconds_present AS seconds_idle) FROM u WHERE interval_start::DATE = '2026-10-10'")
    day = sample_value("SELECT count(*) FROM u WHERE interval_start::DATE = '2026-10-10'")
    result = run(month, str(folder))
    assert result.returncode == 0, result.stderr
    assert value(month, "SELECT count(*) FROM gpu_usage WHERE util_mean = 1.0 "
                        "AND interval_start::DATE = '2026-10-10'") == day
    assert value(month, "SELECT count(*) FROM gpu_usage") == sample_value("SELECT count(*) FROM u")
    other_days = ("SELECT (count(*), sum(seconds_busy), sum(seconds_idle)) FROM {} "
                  "WHERE interval_start::DATE <> '2026-10-10'")
    assert value(month, other_days.format("gpu_usage")) == sample_value(other_days.format("u"))
    assert value(month, "SELECT sum(seconds_idle) FROM gpu_usage WHERE interval_start::DATE = '2026-10-10'") == \
        sample_value("SELECT sum(seconds_present) FROM u WHERE interval_start::DATE = '2026-10-10'")


def test_window_of_a_partial_file(month, tmp_path):
    """One host's rows of Oct 10 with --window Oct 10: without the flag the other hosts' GPUs
    of that day are named as lost; with it the day holds exactly that host's rows and no
    other day changes. Rows outside --window are refused."""
    folder = cut(tmp_path / "host", "SELECT * FROM u WHERE interval_start::DATE = '2026-10-10' "
                                    "AND hostname = 'gpu-a100-01'")
    host_rows = sample_value("SELECT count(*) FROM u WHERE interval_start::DATE = '2026-10-10' "
                             "AND hostname = 'gpu-a100-01'")
    others = sample_value("SELECT count(*) FROM u WHERE interval_start::DATE = '2026-10-10' "
                          "AND hostname <> 'gpu-a100-01'")
    other_gpus = sample_value("SELECT count(DISTINCT gpu_uuid) FROM u WHERE hostname <> 'gpu-a100-01'")
    before = digest(month)
    assert_one_line_error(run(month, "--window", "2026-10-10", "2026-10-11", str(folder)),
            f"holds no rows for {others:,} stored usage row(s)", f"of {other_gpus} GPUs", "on 8 hosts (gpu-a100-02,",
            "from 2026-10-09T22:00Z to 2026-10-10T22:00Z")
    assert_one_line_error(run(month, "--window", "2026-10-10T12:00", "2026-10-11", "--allow-loss", str(folder)),
            "usage row(s) outside the window 2026-10-10T10:00Z to 2026-10-10T22:00Z")
    assert_one_line_error(run(month, "--window", "2026-10-11", "2026-10-10", str(folder)), "--window is empty")
    assert_one_line_error(run(month, "--window", "2026-10-10T00:01", "2026-10-11", str(folder)), "on the 300 s grain")
    assert_one_line_error(run(month, "--window", "yesterday", "2026-10-11", str(folder)), "--window START must be an ISO date")
    assert digest(month) == before
    result = run(month, "--window", "2026-10-10", "2026-10-11", "--allow-loss", str(folder))
    assert result.returncode == 0, result.stderr
    assert value(month, "SELECT count(*) FROM gpu_usage WHERE interval_start::DATE = '2026-10-10'") == host_rows
    assert value(month, "SELECT count(*) FROM gpu_usage WHERE interval_start::DATE = '2026-10-10' "
                        "AND hostname <> 'gpu-a100-01'") == 0
    assert value(month, "SELECT count(*) FROM gpu_usage") == sample_value("SELECT count(*) FROM u") - others


def test_a_database_holds_one_cluster(tmp_path):
    """The marts do not tell clusters apart, so c2's rows (loaded with c2's config) into c1's
    database would be billed with c1's under one name: refused, the database unchanged; and so
    is a renamed [cluster] name, whose rows would be counted beside the old name's."""
    c1 = build_db(tmp_path / "c1", usage_run("2026-03-02T00:00Z", 12, "g1", "j1"))
    before = c1.query("SELECT * FROM gpu_usage ORDER BY ALL")
    c2 = make_config(tmp_path, cluster={"name": "c2"}).with_database(c1.path)
    with pytest.raises(DataError, match="holds 12 usage row\\(s\\) of cluster 'c1', but the config's "
                                        "\\[cluster\\] name is 'c2'; a database holds one cluster"):
        load_parquet_dir(c2, write_raw(tmp_path / "c2", usage_run("2026-03-02T00:00Z", 12, "g2", "j2", cluster="c2")))
    with pytest.raises(DataError, match="of cluster 'c1'"):  # the same hours, the same GPU, a new name
        load_parquet_dir(c2, write_raw(tmp_path / "renamed", usage_run("2026-03-02T00:00Z", 12, "g1", "j1",
                                                                        cluster="c2")))
    assert c1.query("SELECT * FROM gpu_usage ORDER BY ALL") == before
