"""The ingest loads neither pyarrow nor pandas: together they were 74 MiB of its 400 MiB peak on
the benchmark week (pyarrow imports pandas on its first array), so the rows go from numpy
arrays straight into DuckDB (BENCHMARKS.md, "Ingest from Prometheus")."""

from __future__ import annotations

import subprocess
import sys

from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner


def test_ingest_loads_neither_pyarrow_nor_pandas(prom, yc, tmp_path):
    db = tmp_path / "yc.duckdb"
    cli_args = yc.cli_args(yc.config(prom.url), db)
    probe = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('loaded:', [m for m in ('pyarrow', 'pandas') if m in sys.modules], "
        "file=sys.stderr))\n"
        f"sys.argv = ['yolocost', *{cli_args!r}]\n"
        "runpy.run_module('yolocost', run_name='__main__', alter_sys=True)\n"
    )
    # python -c, not the cli fixture: the probe reports which modules the run imported
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=yc._env(None),
                            capture_output=True, text=True, timeout=120)
    h.assert_ok(result)
    assert h.query(db, "SELECT count(*) FROM gpu_usage") == [(24,)]  # it did ingest the fixture hour
    assert "loaded: []" in result.stderr, result.stderr
