"""`yolocost import-results` with a results.csv `time` no training writes: one line naming the
file, line and column, exit 2, and the database as it was.

`time` (seconds since the training started) dates every epoch of a folder without a run
record: a negative, NaN, infinite or absurd value dated epochs wrongly (or beyond what a
date holds) and was accepted with exit 0. Real CLI in a subprocess, real DuckDB file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb
import pytest
from helpers.builders import yolocost

HEADER = "epoch,time,train/box_loss,metrics/mAP50(B),metrics/mAP50-95(B)"
GOOD = ("1,10.5,1.9,0.15,0.05", "2,21.0,1.7,0.41,0.21")


def _folder(path: Path, rows) -> Path:
    path.mkdir(parents=True)
    (path / "results.csv").write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def _import(tmp_path: Path, *folders: Path) -> subprocess.CompletedProcess:
    config = tmp_path / "yolocost.toml"
    config.write_text(f'[database]\npath = "{tmp_path / "db.duckdb"}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "YOLOCOST_CONFIG"}
    return yolocost("--config", str(config), "import-results", *map(str, folders), timeout=120, env=env, cwd=tmp_path)


def _contents(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                for t in ("training_progress", "job_results", "jobs", "loads")}
    finally:
        con.close()


@pytest.mark.parametrize("cell", ["-5", "-0.001", "nan", "NaN", "inf", "-inf", "1e300", "400000000"])
def test_a_time_no_training_has_is_refused(tmp_path, cell):
    assert _import(tmp_path, _folder(tmp_path / "first", GOOD)).returncode == 0
    db = tmp_path / "db.duckdb"
    before = _contents(db)
    bad = _folder(tmp_path / "run2", (GOOD[0], f"2,{cell},1.7,0.41,0.21"))
    result = _import(tmp_path, tmp_path / "first", bad)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (f"error: {bad / 'results.csv'}: line 3, column time: {cell!r} is not a number of seconds "
                         "from 0 to 316,224,000 (the seconds since the training started)"), result.stderr
    assert [line for line in lines if line.startswith("error")] == [lines[-1]]
    assert _contents(db) == before


def test_an_empty_time_with_no_run_record_still_says_which_epoch(tmp_path):
    bad = _folder(tmp_path / "run", (GOOD[0], "2,,1.7,0.41,0.21"))
    result = _import(tmp_path, bad)
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1] == (
        f"error: {bad}: epoch 2 has no time in results.csv and no run record"), result.stderr


def test_zero_and_ordinary_times_are_kept(tmp_path):
    folder = _folder(tmp_path / "run", ("1,0,1.9,0.15,0.05", "2,3600,1.7,0.41,0.21"))
    result = _import(tmp_path, folder)
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True)
    ends = con.execute("SELECT DISTINCT epoch, epoch_ms(ts) FROM training_progress ORDER BY 1").fetchall()
    con.close()
    # epoch 2 ended when results.csv was last written; epoch 1 an hour (3600 - 0 s) before
    last = int(os.stat(folder / "results.csv").st_mtime * 1000)
    assert [e for e, _ in ends] == [1, 2]
    assert abs(ends[1][1] - last) <= 1 and abs(ends[0][1] - (last - 3_600_000)) <= 1
