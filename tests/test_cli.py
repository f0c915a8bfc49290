"""The command line: help with examples, and bad input as one line on stderr with exit 2.

Each error case runs the real `yolocost` entry point in a subprocess, so a traceback
anywhere on the way would show up in stderr.
"""

import math
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.builders import assert_one_line_error, yolocost
from helpers.onegpu import CONFIG



def usage_frame(n: int = 12, model: str = "A100", util: float = 80.0) -> pd.DataFrame:
    start = pd.Timestamp("2026-10-01T00:00:00Z")
    return pd.DataFrame([{
        "interval_start": start + pd.Timedelta(minutes=5 * k), "cluster": "c", "hostname": "h1",
        "gpu_uuid": "GPU-0", "gpu_index": 0, "gpu_model": model, "mig_profile": None, "job_id": "job-1",
        "seconds_present": 300, "util_mean": util, "seconds_busy": 300, "seconds_idle": 0,
        "mem_peak_mib": 1000.0, "power_mean_w": 250.0, "energy_mj": 75_000_000,
    } for k in range(n)])


def write_raw(folder: Path, usage: pd.DataFrame) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    usage.to_parquet(folder / "gpu_usage.parquet", index=False)
    pd.DataFrame([{"job_id": "job-1", "project": "p", "user_name": "u"}]).to_parquet(folder / "jobs.parquet", index=False)
    return folder


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    return tmp_path


def test_every_command_has_help_with_an_example(workdir):
    commands = [[], ["demo"], ["load"], ["build"], ["query"], ["queries"], ["sample", "generate"], ["config", "check"]]
    for cmd in commands:
        result = yolocost(*cmd, "--help", cwd=workdir)
        assert result.returncode == 0, result.stderr
        assert "Example" in result.stdout, cmd


def test_load_then_query_round_trip(workdir):
    write_raw(workdir / "raw", usage_frame())
    result = yolocost("load", "raw", cwd=workdir)
    assert result.returncode == 0, result.stderr
    out = yolocost("query", "SELECT gpu_hours, cost FROM mart_project_month WHERE bucket = 'project'", "-f", "csv", cwd=workdir)
    assert out.stdout.splitlines() == ["gpu_hours,cost", "1.0,2.000000000"]


def test_unknown_config_key(workdir):
    (workdir / "yolocost.toml").write_text(CONFIG + "\n[labels]\nprojcet = 'team'\n")
    assert_one_line_error(yolocost("config", "check", cwd=workdir), "yolocost.toml", "labels.projcet", "unknown key")


def test_negative_price(workdir):
    (workdir / "yolocost.toml").write_text(CONFIG.replace('"2.00"', '"-2.00"'))
    write_raw(workdir / "raw", usage_frame())
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "prices[0].price_per_gpu_hour", "must not be negative")


def test_malformed_toml(workdir):
    (workdir / "yolocost.toml").write_text(CONFIG + "\n[cluster\n")
    assert_one_line_error(yolocost("query", "SELECT 1", cwd=workdir), "yolocost.toml", "not valid TOML")


def test_unpriced_gpu_model_stops_the_load_and_keeps_what_was_stored(workdir):
    write_raw(workdir / "ok", usage_frame())
    assert yolocost("load", "ok", cwd=workdir).returncode == 0
    before = duckdb.connect(str(workdir / "yc.duckdb"), read_only=True).execute(
        "SELECT count(*), sum(gpu_cost) FROM int_usage_priced").fetchall()

    later = usage_frame(model="H200")
    later["interval_start"] += pd.Timedelta(hours=1)
    write_raw(workdir / "bad", later)
    assert_one_line_error(yolocost("load", "bad", cwd=workdir), "no price for GPU model 'H200'", "[[prices]]")
    after = duckdb.connect(str(workdir / "yc.duckdb"), read_only=True).execute(
        "SELECT count(*), sum(gpu_cost) FROM int_usage_priced").fetchall()
    assert after == before


def test_nan_utilization(workdir):
    """A float NaN stored as such (pyarrow keeps it) and a NaN pandas stored as null."""
    usage = usage_frame()
    usage.loc[3, "util_mean"] = math.nan
    (workdir / "raw").mkdir()
    table = pa.Table.from_pandas(usage, preserve_index=False)
    util = pa.array(usage["util_mean"].to_numpy(), from_pandas=False)  # keeps NaN as a float NaN
    table = table.set_column(table.schema.get_field_index("util_mean"), "util_mean", util)
    pq.write_table(table, workdir / "raw" / "gpu_usage.parquet")
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "util_mean is NaN", "1 row(s)", "GPU-0")
    write_raw(workdir / "raw", usage)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "util_mean is missing (null/NaN)", "1 row(s)")
    assert not (workdir / "yc.duckdb").exists() or duckdb.connect(
        str(workdir / "yc.duckdb"), read_only=True).execute("SELECT count(*) FROM gpu_usage").fetchone() == (0,)


def test_duplicate_rows(workdir):
    usage = usage_frame()
    write_raw(workdir / "raw", pd.concat([usage, usage.iloc[[5]]]))
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "duplicate rows for GPU GPU-0", "job-1")


def test_query_is_read_only_unless_asked(workdir):
    write_raw(workdir / "raw", usage_frame())
    assert yolocost("load", "raw", cwd=workdir).returncode == 0
    assert_one_line_error(yolocost("query", "DELETE FROM jobs", cwd=workdir), "read-only", "--write")
    assert yolocost("query", "DELETE FROM jobs", "--write", cwd=workdir).returncode == 0


def test_query_without_a_database(workdir):
    assert_one_line_error(yolocost("query", "SELECT 1", cwd=workdir), "database not found")


def test_unknown_named_query(workdir):
    assert_one_line_error(yolocost("query", "no_such_query", cwd=workdir), "unknown query 'no_such_query'")


def test_sample_generate_reproduces_the_bundled_month(tmp_path):
    import json

    from yolocost.resources import shipped_dir

    result = yolocost("sample", "generate", "--out", "gen", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sample = shipped_dir("sample_data")
    for name in ("gpu_usage", "jobs", "training_progress", "job_results"):
        assert pd.read_parquet(tmp_path / "gen" / f"{name}.parquet").equals(pd.read_parquet(sample / f"{name}.parquet")), name
    assert json.loads((tmp_path / "gen" / "ground_truth.json").read_text()) == json.loads(
        (sample / "ground_truth.json").read_text())


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("mig_profile", "MIG-3g.40gb", "mig_profile not a MIG profile"),
        ("energy_mj", math.nan, "energy_mj holds 1 value(s) that are not a valid BIGINT"),
        ("gpu_index", "first", "gpu_index holds 1 value(s) that are not a valid INTEGER"),
    ],
)
def test_values_that_would_silently_vanish_are_refused(workdir, column, value, message):
    usage = usage_frame()
    usage[column] = usage[column].map(lambda v: None if v is None else str(v)) if isinstance(value, str) \
        else usage[column].astype(object)
    usage.loc[4, column] = value
    (workdir / "raw").mkdir()
    table = pa.Table.from_pandas(usage, preserve_index=False)
    if isinstance(value, float):  # keep the NaN a float NaN in a float column
        table = table.set_column(table.schema.get_field_index(column), column,
                                 pa.array(usage[column].astype(float).to_numpy(), from_pandas=False))
    pq.write_table(table, workdir / "raw" / "gpu_usage.parquet")
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), message)


@pytest.mark.parametrize("values, kind", [
    ([b"\xff\xfebad"], "BLOB"), ([1.5], "DOUBLE"), ([["p", "q"]], "VARCHAR[]"), ([True], "BOOLEAN"),
])
def test_a_text_column_of_another_type_is_refused_naming_it(workdir, values, kind):
    """A BLOB project loaded as the text `\\xFF\\xFEbad`; a float or a list would load as its
    printed form. Whole numbers (ids) and an all-null column still load."""
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame({"job_id": ["job-1"], "project": values}).to_parquet(workdir / "raw" / "jobs.parquet", index=False)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "jobs.parquet: project is a",
                          f"project is a {kind} column; it must hold text")
    assert not (workdir / "yc.duckdb").exists() or duckdb.connect(str(workdir / "yc.duckdb")).execute(
        "SELECT count(*) FROM jobs").fetchone() == (0,)


def test_whole_numbers_and_nulls_in_text_columns_still_load(workdir):
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame({"job_id": ["job-1"], "project": [7], "user_name": [None]}).to_parquet(
        workdir / "raw" / "jobs.parquet", index=False)
    loaded = yolocost("load", "raw", cwd=workdir)
    assert loaded.returncode == 0, loaded.stderr
    con = duckdb.connect(str(workdir / "yc.duckdb"), read_only=True)
    assert con.execute("SELECT project, user_name FROM jobs").fetchall() == [("7", None)]
    con.close()


def test_job_results_must_be_fractions(workdir):
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame([{"job_id": "job-1", "map50": 62.17, "map50_95": 0.4, "best_epoch": 3}]).to_parquet(
        workdir / "raw" / "job_results.parquet", index=False)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "job job-1", "between 0 and 1")


def test_reserved_bucket_names_are_refused_as_project_labels(workdir):
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame([{"job_id": "job-1", "project": "(unallocated)", "user_name": "u"}]).to_parquet(
        workdir / "raw" / "jobs.parquet", index=False)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "reserved bucket name")


def test_a_misspelt_column_is_refused_not_loaded_as_nulls(workdir):
    """`projekt` would leave every job's project NULL: all spend silently unlabeled."""
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame([{"job_id": "job-1", "projekt": "p", "user_name": "u"}]).to_parquet(
        workdir / "raw" / "jobs.parquet", index=False)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "jobs.parquet: unknown column(s) projekt",
                          "a jobs file has job_id, cluster, project")
    stored = yolocost("query", "-f", "csv", "SELECT count(*) AS n FROM jobs", cwd=workdir)
    assert stored.returncode == 2 or stored.stdout.splitlines()[1] == "0"  # no database, or nothing loaded


def test_read_only_query_cannot_touch_other_files(workdir):
    write_raw(workdir / "raw", usage_frame())
    assert yolocost("load", "raw", cwd=workdir).returncode == 0
    result = yolocost("query", "COPY (SELECT 42) TO 'leak.csv'", cwd=workdir)
    assert result.returncode == 2 and not (workdir / "leak.csv").exists()
    result = yolocost("query", "SELECT * FROM read_csv('yolocost.toml')", cwd=workdir)
    assert result.returncode == 2


@pytest.mark.parametrize("sql", ["SET memory_limit = '100GB'", "-- lift it\nRESET memory_limit",
                                 "-- lift it\nPRAGMA memory_limit = '100GB'",
                                 "SET GLOBAL memory_limit = '100GB'", "SET lock_configuration = false",
                                 "SET threads = 64", "SET memory_limit = '100GB'; SELECT 1"])
def test_a_read_only_query_cannot_lift_its_memory_limit(workdir, sql):
    """The configured [database] memory_limit holds for the whole query: DuckDB's settings
    are locked once the connection is set up."""
    write_raw(workdir / "raw", usage_frame())
    assert yolocost("load", "raw", cwd=workdir).returncode == 0
    assert_one_line_error(yolocost("query", sql, cwd=workdir), "the configuration has been locked",
                          "runs under the configured settings")
    shown = yolocost("query", "SELECT current_setting('memory_limit') AS m, current_setting('TimeZone') AS z",
                     "-f", "csv", cwd=workdir)
    assert shown.returncode == 0 and shown.stdout == "m,z\n2.7 GiB,UTC\n", shown.stderr  # 3GB, the default


def test_month_parameter_is_checked_and_negative_numbers_stay_numbers_in_csv(workdir):
    write_raw(workdir / "raw", usage_frame())
    assert yolocost("load", "raw", cwd=workdir).returncode == 0
    assert_one_line_error(yolocost("query", "top_idle_wasters", "-p", "month=oct", cwd=workdir),
                          "month: 'oct' is not a valid MONTH")
    out = yolocost("query", "project_month_over_month", "-p", "month=2026-11", "-f", "csv", cwd=workdir)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()
    assert rows[0].startswith("project,previous_cost,cost,change")
    assert any(",-" in r for r in rows[1:]) and "'-" not in out.stdout


def test_duplicate_job_rows(workdir):
    write_raw(workdir / "raw", usage_frame())
    pd.DataFrame([{"job_id": "job-1", "project": "p"}, {"job_id": "job-1", "project": "q"}]).to_parquet(
        workdir / "raw" / "jobs.parquet", index=False)
    assert_one_line_error(yolocost("load", "raw", cwd=workdir), "jobs.parquet", "duplicate rows for job job-1")


def test_build_reprices_stored_usage_after_a_config_change(workdir):
    write_raw(workdir / "raw", usage_frame())
    assert yolocost("load", "raw", cwd=workdir).returncode == 0
    (workdir / "yolocost.toml").write_text(CONFIG.replace('"2.00"', '"3.25"'))
    result = yolocost("build", cwd=workdir)
    assert result.returncode == 0, result.stderr
    out = yolocost("query", "SELECT capacity_cost FROM mart_cluster_month", "-f", "csv", cwd=workdir)
    assert out.stdout.splitlines() == ["capacity_cost", "3.250000000"]  # 1 GPU-hour at the new price
