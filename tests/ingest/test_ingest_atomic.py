"""`yolocost ingest` is all or nothing: the fixture hour's numbers by hand, reruns that change
nothing, and SIGKILLs at several points that leave the previous state (and no stale lock)."""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import time
from decimal import Decimal

import pytest
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

# ---- the numbers of the fixture hour, by hand


def test_good_ingest_numbers_by_hand(good_db):
    """Rows of the 3-hour window: only the data hour holds samples.

    Interval i (0..11) starts at DATA_START + 300 s x i and holds samples k = 10i .. 10i+9
    (the first sample sits 7.413 s after the hour, one every 30 s), so every row is
    present 10 samples x 30 s = 300 s. The owner changes after 60 samples = 6 intervals.
    """
    step = h.ENERGY_STEP_MJ
    expected = []
    for i in range(12):  # twelve 5-minute intervals in the hour
        start = h.DATA_START + dt.timedelta(seconds=300 * i)
        first_half = i < 6
        # the counter's first sample (k = 0) has no earlier sample to difference: 9 deltas there
        energy = (10 - (i == 0)) * step
        power_energy = 10 * 100 * 30 * 1000  # 10 samples x 100 W x 30 s, in mJ = 30,000,000
        # GPU-aaa: pod ns/p1 at 90 % (> 70: busy) then nobody at 0 % (< 5: idle)
        expected.append((start, "t", "h1", "GPU-aaa", 0, h.MODEL, None, "ns/p1" if first_half else None,
                         Decimal(300), 90.0 if first_half else 0.0,
                         Decimal(300) if first_half else Decimal(0), Decimal(0) if first_half else Decimal(300),
                         30000.0 if first_half else 100.0, 100.0, energy, power_energy))
        # GPU-bbb: nobody, then job j2 (yolocost_job_info); 50 % is neither busy nor idle
        expected.append((start, "t", "h1", "GPU-bbb", 1, h.MODEL, None, None if first_half else "j2",
                         Decimal(300), 50.0, Decimal(0), Decimal(0), 20000.0, 100.0, energy, power_energy))
    assert h.query(good_db, "SELECT * FROM gpu_usage ORDER BY interval_start, gpu_uuid") == expected

    totals = h.query(good_db, """
        SELECT gpu_uuid, job_id, sum(seconds_present), sum(seconds_busy), sum(seconds_idle), sum(energy_mj)
        FROM gpu_usage GROUP BY ALL ORDER BY gpu_uuid, job_id NULLS LAST""")
    # 30 minutes = 60 samples x 30 s = 1800 s per owner; energy 59 (or 60) deltas x 3,000,000 mJ
    assert totals == [
        ("GPU-aaa", "ns/p1", 1800, 1800, 0, 59 * step),  # 177e6
        ("GPU-aaa", None, 1800, 0, 1800, 60 * step),  # 180e6
        ("GPU-bbb", "j2", 1800, 0, 0, 60 * step),  # 180e6
        ("GPU-bbb", None, 1800, 0, 0, 59 * step),  # 177e6
    ]

    jobs = h.query(good_db, "SELECT job_id, project, user_name, image_tag, image_digest, gpu_request, gpu_model, "
                            "start_time, end_time FROM jobs ORDER BY job_id")
    half = h.DATA_START + dt.timedelta(minutes=30)
    assert jobs == [
        # job-info without image_tag or image_digest: an empty tag (a tag-policy violation)
        ("j2", "proj", "bob", "", None, 1, h.MODEL, half, h.DATA_START + dt.timedelta(hours=1)),
        ("ns/p1", "alpha", "ann", h.IMAGE_TAG, h.IMAGE_DIGEST, 1, h.MODEL, h.DATA_START, half),
    ]

    cluster = h.query(good_db, "SELECT capacity_gpu_hours, attributed_gpu_hours, unallocated_gpu_hours, "
                               "density, capacity_cost, project_cost, unallocated_cost, energy_mj FROM mart_cluster_month")
    # capacity 2 GPUs x 1 h; attributed 2 x 30 min; density = busy 1800 s / held 3600 s;
    # cost at 2.00 per GPU-hour; energy 177e6 + 180e6 + 180e6 + 177e6 mJ
    assert [tuple(float(v) for v in r) for r in cluster] == [(2.0, 1.0, 1.0, 0.5, 4.0, 2.0, 2.0, 714e6)]


def test_window_ending_30_minutes_into_the_data(yc, prom, good_db, tmp_path):
    """The data start 30 minutes before the window ends: 60 samples, one every 30 s, are
    not a 60 s scrape. The rows are the first half hour of the full ingest."""
    db = tmp_path / "half.duckdb"
    result = yc.ingest(yc.config(prom.url), db, end=h.DATA_START + dt.timedelta(minutes=30))
    h.assert_ok(result)
    sql = "SELECT * FROM gpu_usage WHERE interval_start < '{}' ORDER BY ALL"
    assert h.query(db, sql.format(h.WINDOW_END)) == h.query(good_db, sql.format(h.DATA_START + dt.timedelta(minutes=30)))


# ---- rerunning the same window


def test_rerun_leaves_identical_tables_and_marts(yc, prom, tmp_path):
    db = tmp_path / "yc.duckdb"
    config = yc.config(prom.url)
    h.assert_ok(yc.ingest(config, db))
    first = h.snapshot(db, skip=("loads",))
    marts = h.mart_names(db)
    assert len(marts) >= 10 and all(first[m] is not None for m in marts)
    assert first["gpu_usage"] and first["jobs"] and first["mart_job"]

    h.assert_ok(yc.ingest(config, db))
    second = h.snapshot(db, skip=("loads",))
    for name in ["gpu_usage", "jobs", "training_progress", "job_results", "prices", "settings", *marts]:
        assert second[name] == first[name], name
    assert second == first

    # a window shifted by an hour still holds the whole data hour: replaced, not doubled
    h.assert_ok(yc.ingest(config, db, start=h.WINDOW_START + dt.timedelta(hours=1),
                          end=h.WINDOW_END + dt.timedelta(hours=1)))
    assert h.snapshot(db, skip=("loads",)) == first
    loads = h.query(db, "SELECT window_start, window_end, rows_usage FROM loads ORDER BY loaded_at")
    assert [r[2] for r in loads] == [24, 24, 24]
    assert loads[0][:2] == loads[1][:2] == (h.WINDOW_START, h.WINDOW_END)


# ---- SIGKILL mid-ingest


# (line on stderr to wait for, then seconds to wait before SIGKILL); None = from the start
KILL_POINTS = {
    "fetching": ("reading series of the window", 0.0),
    "write-begins": ("writing to the database", 0.0),
    "replacing": ("replacing", 0.0),
    "models": ("building models", 0.0),
    "models+0.1s": ("building models", 0.1),
    "models+0.15s": ("building models", 0.15),
    "models+0.2s": ("building models", 0.2),
    "start+0.6s": (None, 0.6),
}
# points with much work left before COMMIT (fetching, or rebuilding every model, takes
# hundreds of milliseconds): the kill lands before it, so the previous state must remain.
# The later points may land before or after COMMIT (or after the process ended): the state
# must then be the old one or the complete new one, nothing in between.
BEFORE_COMMIT = {"fetching", "write-begins", "replacing", "models"}


@pytest.fixture(scope="module")
def previous(prom, tmp_path_factory):
    """(database, its state, the complete new state): the database holds the window up to
    45 minutes into the data hour, ingested at 2.00; the new state is the whole window
    ingested on top at 3.00, so raw rows, jobs, prices, loads and marts all differ."""
    folder = tmp_path_factory.mktemp("previous")
    runner = h.Yolocost(folder)
    db = folder / "previous.duckdb"
    h.assert_ok(runner.ingest(runner.config(prom.url), db, end=h.DATA_START + dt.timedelta(minutes=45)))
    new = folder / "new.duckdb"
    shutil.copyfile(db, new)
    h.assert_ok(runner.ingest(runner.config(prom.url, price="3.00"), new))
    before, after = h.state(db), h.state(new)
    for name in ("gpu_usage", "jobs", "prices", "loads", "mart_cluster_month", "mart_job", "mart_project_month"):
        assert before[name] != after[name], name
    assert len(before["gpu_usage"]) == 18 and len(after["gpu_usage"]) == 24
    return db, before, after


def _distinct_loads(state: dict) -> dict:
    return {**state, "loads": sorted(set(state["loads"]))}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_mid_ingest_keeps_the_previous_state(point, previous, yc, prom, tmp_path):
    template, before, after = previous
    db = tmp_path / "yc.duckdb"
    shutil.copyfile(template, db)
    config = yc.config(prom.url, price="3.00")
    trigger, delay = KILL_POINTS[point]

    proc = yc.popen(config, db)
    try:
        seen = []
        if trigger is not None:
            for line in proc.stderr:
                seen.append(line)
                if trigger in line:
                    break
            else:
                pytest.fail(f"{trigger!r} never appeared on stderr:\n{''.join(seen)}")
        time.sleep(delay)
        alive = proc.poll() is None
    finally:
        h.kill_and_reap(proc)

    state = h.state(db)
    if point in BEFORE_COMMIT:
        assert alive and proc.returncode == -signal.SIGKILL, f"the run ended before the kill ({proc.returncode})"
        assert state == before
    else:
        assert state == before or state == after, "a killed ingest left a partial write"
        # the run may end on its own between the poll and the kill: then it wrote it all
        assert proc.returncode in (-signal.SIGKILL, 0)
        if proc.returncode == 0:
            assert state == after

    # the killed run's lock file stays behind, naming it, but blocks nothing (the flock went with it).
    # Every trigger line is said after the lock is taken; a kill timed from the start alone may
    # land (on a loaded machine) before the file is created or before the pid is written in it.
    lock = db.with_name(db.name + ".lock")
    text = lock.read_text() if lock.exists() else ""
    if trigger is not None or text:
        assert f"ingest, pid {proc.pid}" in text
    h.assert_ok(yc.ingest(config, db))
    assert _distinct_loads(h.state(db)) == _distinct_loads(after)
    # a scratch folder the killed run left (its chunks' rows) went with the next ingest
    assert not list(db.parent.glob(f".{db.name}.ingest-*"))
