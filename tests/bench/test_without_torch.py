"""The core install works without the bench extra: torch and Ultralytics are imported only
inside the functions that train. Each check runs the real CLI in a Python where importing
any module of the bench extra (torch, torchvision, ultralytics, matplotlib, pynvml,
prometheus_client) fails, as on a machine without them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.builders import CLI_WITHOUT_BENCH

BLOCK = CLI_WITHOUT_BENCH + textwrap.dedent("""
    try:
        main()
    finally:
        leaked = [m for m in ("torch", "ultralytics", "matplotlib") if m in sys.modules]
        assert not leaked, leaked
""")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # python -c, not the cli fixture: the CLI runs where importing the bench extra fails
    return subprocess.run([sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("args", [("--help",), ("bench", "--help"), ("bench", "run", "--help"),
                                  ("bench", "matrix", "--help"), ("import-results", "--help"), ("queries",)])
def test_commands_work_without_torch(args):
    result = _cli(*args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_import_results_needs_no_torch(tmp_path):
    run = tmp_path / "train"
    run.mkdir()
    (run / "results.csv").write_text("epoch,time,train/box_loss,metrics/mAP50(B),metrics/mAP50-95(B)\n"
                                     "1,5.0,1.5,0.30,0.12\n")
    (tmp_path / "yolocost.toml").write_text(f'[database]\npath = "{tmp_path / "db.duckdb"}"\n')
    result = _cli("import-results", str(run), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "imported 1 run(s)" in result.stdout


def test_bench_run_without_the_extra_says_what_to_install_and_writes_nothing(tmp_path):
    out = tmp_path / "bench-runs"
    result = _cli("bench", "run", "--job-id", "j", "--out", str(out), "--metrics-port", "0", "--epochs", "1",
                  "--imgsz", "32", "--images", "2", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: the benchmark runner needs the bench extra: pip install 'yolocost[bench]' (not installed: torch, "
        "torchvision, ultralytics, matplotlib, prometheus_client, pynvml)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no run folder, no dataset, no cache


def test_bench_matrix_without_the_extra_writes_nothing(tmp_path):
    matrix = tmp_path / "m.toml"
    matrix.write_text('[defaults]\nout = "bench-runs"\nmetrics_port = 0\nepochs = 1\nimgsz = 32\nimages = 2\n'
                      'device = "cpu"\n\n[[run]]\nmodel = "yolov8n.yaml"\n')
    result = _cli("bench", "matrix", str(matrix), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: the benchmark runner needs the bench extra")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.toml"]
