"""A load killed (SIGKILL) at any point leaves the database as it was, or as the complete load
left it: never a partial write. The sample month is loaded over a copy of itself with other
energy readings, with another price, so that raw tables, prices, models and the load log all
differ between the two states.

A load that DuckDB itself ends with an error (it has crashed in the write transaction now and
then: benchmarks/duckdb_stress.py) must leave the previous state too, so such a run is checked
the same way instead of being counted as a kill that landed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from helpers.builders import cli_argv

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"

# (stderr line to wait for, seconds to wait after it before SIGKILL)
KILL_POINTS = {
    "reading": ("reading gpu_usage.parquet", 0.0),
    "replacing": ("replacing", 0.0),
    "models": ("building models", 0.0),
    "models+0.3s": ("building models", 0.3),
}
# rebuilding every model of the sample month takes well over a second: a kill at these
# points lands before COMMIT; the later ones may land before or after it
BEFORE_COMMIT = {"reading", "replacing", "models"}


def state(path: Path) -> dict:
    """Row count and an order-independent hash of the rows of every table; the load log and
    the month build log without their wall-clock columns."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [name for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main' ORDER BY 1"
        ).fetchall()]
        out = {name: con.execute(f"SELECT count(*), sum(hash(t)::HUGEINT) FROM {name} AS t").fetchone()
               for name in tables if name not in ("loads", "month_builds")}
        out["month_builds"] = con.execute("SELECT month, fingerprint, usage_rows FROM month_builds ORDER BY ALL").fetchall()
        out["loads"] = con.execute("SELECT source, window_start, window_end, rows_usage FROM loads ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


def config(folder: Path, a100_price: str) -> Path:
    """The sample month's config with the late A100 price changed."""
    text = (SAMPLE / "yolocost.toml").read_text(encoding="utf-8")
    assert 'price_per_gpu_hour = "2.61"' in text
    path = folder / f"yolocost-{a100_price}.toml"
    path.write_text(text.replace('price_per_gpu_hour = "2.61"', f'price_per_gpu_hour = "{a100_price}"'), encoding="utf-8")
    return path


def other_energy(folder: Path) -> Path:
    """The sample month's raw files, every energy reading 1 kJ higher (energy_mj is in millijoules)."""
    folder.mkdir()
    for name in ("jobs", "training_progress", "job_results"):
        shutil.copyfile(SAMPLE / f"{name}.parquet", folder / f"{name}.parquet")
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * REPLACE (energy_mj + 1000000 AS energy_mj) FROM read_parquet('{SAMPLE / 'gpu_usage.parquet'}')) "
                f"TO '{folder / 'gpu_usage.parquet'}' (FORMAT parquet)")
    con.close()
    return folder


def load_args(config_path: Path, db: Path, data: Path = SAMPLE) -> list[str]:
    return ["--config", str(config_path), "--db", str(db), "load", str(data)]


@pytest.fixture(scope="module")
def previous(tmp_path_factory, cli):
    """(database holding the sample month, its state, the state after the reload, reload config)."""
    folder = tmp_path_factory.mktemp("previous")
    db, new = folder / "previous.duckdb", folder / "new.duckdb"
    cli(*load_args(config(folder, "2.61"), db, other_energy(folder / "data")), check=True, text=False, timeout=300)
    shutil.copyfile(db, new)
    reload = config(folder, "2.71")
    cli(*load_args(reload, new), check=True, text=False, timeout=300)
    before, after = state(db), state(new)
    for name in ("gpu_usage", "prices", "loads", "int_usage_priced", "mart_cluster_month", "mart_job"):
        assert before[name] != after[name], name
    assert before["gpu_usage"][0] == after["gpu_usage"][0] == 456_697
    return db, before, after, reload


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_mid_load_keeps_the_previous_state(point, previous, tmp_path, cli):
    template, before, after, reload = previous
    db = tmp_path / "yc.duckdb"
    shutil.copyfile(template, db)
    trigger, delay = KILL_POINTS[point]

    # Popen, not the cli fixture: the load is SIGKILLed while it runs
    proc = subprocess.Popen(cli_argv(*load_args(reload, db)), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    try:
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if trigger in line:
                break
        else:
            pytest.fail(f"{trigger!r} never appeared on stderr:\n{''.join(seen)}")
        time.sleep(delay)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        rest = proc.communicate(timeout=60)[1]

    now = state(db)  # the file opens, and holds one whole state
    if proc.returncode == -signal.SIGKILL:
        if point in BEFORE_COMMIT:
            assert now == before
        else:
            assert now in (before, after), "a killed load left a partial write"
    elif proc.returncode == 0:  # ended on its own before the kill: it wrote it all
        assert point not in BEFORE_COMMIT, "the load ended before the kill"
        assert now == after
    else:  # DuckDB ended the load with an error of its own
        assert "error:" in rest, rest
        assert now == before, "a failed load left a partial write"

    # and the next load over it completes
    cli(*load_args(reload, db), check=True, text=False, timeout=300)
    assert state(db) == after
