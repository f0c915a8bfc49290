"""`yolocost monthly` against a real Prometheus: ingest, reports and CSV; rerun; lock."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from helpers.builders import sample_config, yolocost

from yolocost import db
from yolocost.config import parse_config
from yolocost.monthly import last_full_month


@pytest.mark.parametrize("now, month", [
    ("2026-11-01T05:00:00+00:00", "2026-10"),  # 06:00 in Berlin on the 1st: October is over
    ("2026-10-31T23:30:00+00:00", "2026-10"),  # already 1 November in Berlin (UTC+1)
    ("2026-10-31T22:30:00+00:00", "2026-09"),  # still 31 October in Berlin
    ("2026-01-15T12:00:00+00:00", "2025-12"),  # across the year
])
def test_previous_month_is_cut_in_the_configured_time_zone(now, month):
    config = parse_config({"cluster": {"timezone": "Europe/Berlin"}})
    assert last_full_month(config, dt.datetime.fromisoformat(now)) == month


@pytest.fixture(scope="module")
def setup(prom_sample, tmp_path_factory):
    root = tmp_path_factory.mktemp("monthly")
    return root, sample_config(prom_sample, root)


def _monthly(config, *extra):
    return yolocost("--config", str(config), "monthly", "--month", "2026-10", "--format", "html,summary,csv,index",
                    *extra, timeout=600)


def test_monthly_twice_gives_identical_files(setup):
    root, config = setup
    first = _monthly(config)
    assert first.returncode == 0, first.stderr
    folder = root / "reports" / "2026-10"
    csv = folder / "finance-2026-10.csv"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert csv.name in before and "admin.html" in before and any(n.startswith("project-") for n in before)
    assert "summary.html" in before and "index.html" in before and not any(n.endswith(".pdf") for n in before)
    second = _monthly(config)
    assert second.returncode == 0, second.stderr
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert after[csv.name] == before[csv.name]  # byte-identical CSV
    assert after.keys() == before.keys()
    # the same figures, the same pages: only the "generated <time>" stamp may differ
    stamp = re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    for name in before:
        if name.endswith(".html"):
            a, b = stamp.sub(b"", after[name]), stamp.sub(b"", before[name])
            at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
            assert a == b, (name, at, b[at - 200:at + 60] if at else None, a[at - 200:at + 60] if at else None)
    # the CSV's total is the one the run printed, and equals the database's month total
    total = first.stdout.rsplit("(total ", 1)[1].split(" ")[0]
    con = db.connect(root / "yolocost.duckdb", read_only=True)
    try:
        exact = con.execute("SELECT total_cost FROM mart_cluster_month WHERE month = '2026-10'").fetchone()[0]
    finally:
        con.close()
    assert total == str(exact.quantize(type(exact)("0.01")))


def test_second_run_is_refused_while_one_holds_the_lock(setup):
    root, config = setup
    with db.exclusive(root / "yolocost.duckdb", "monthly 2026-10"):
        result = _monthly(config)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "holds yolocost.duckdb.lock" in lines[0] and "monthly 2026-10" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_failure_exits_non_zero_with_one_line(setup, tmp_path):
    root, config = setup
    broken = tmp_path / "broken.toml"
    text = config.read_text(encoding="utf-8")
    start = text.index('url = "http://127.0.0.1:')
    line = text[start:text.index("\n", start)]
    broken.write_text(text.replace(line, 'url = "http://127.0.0.1:1"\nretries = 0'), encoding="utf-8")
    result = yolocost("--config", str(broken), "--db", str(tmp_path / "x.duckdb"), "monthly", "--month", "2026-10",
                      timeout=600)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot reach Prometheus")
