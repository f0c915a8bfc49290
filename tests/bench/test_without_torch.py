"""The core install works without the bench extra: torch and Ultralytics are imported only
inside the functions that train. Each check runs the real CLI in a Python where importing
torch, torchvision, ultralytics or pynvml fails, as on a machine without them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from builders import CLI_WITHOUT_BENCH

BLOCK = CLI_WITHOUT_BENCH + textwrap.dedent("""
    try:
        main()
    finally:
        leaked = [m for m in ("torch", "ultralytics") if m in sys.modules]
        assert not leaked, leaked
""")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
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


def test_bench_run_without_torch_says_what_to_install(tmp_path):
    result = _cli("bench", "run", "--job-id", "j", "--out", str(tmp_path), "--metrics-port", "0", "--epochs", "1",
                  "--imgsz", "32", "--images", "2", "--device", "cpu")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: the benchmark runner needs the bench extra")
