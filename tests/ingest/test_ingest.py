"""`yolocost ingest` from a real Prometheus and a real VictoriaMetrics against the generator's ground truth.

The synthetic Prometheus sample (3 days, 15 GPUs/MIG instances in every attribution mode:
Kubernetes with labels honored, exported_*, old names and copied pod labels, Slurm
hpc_job, yolocost_job_info only; a MIG GPU, a shared GPU, a retried pod, a counter reset,
scrape gaps and an exporter outage) is backfilled into Prometheus and imported into
VictoriaMetrics once per session, and every test runs against both stores. The ingest runs
through the real CLI; the truth is the generator's expected raw tables, computed sample by
sample without any ingest code and loaded with `yolocost load` into a second database. Both
databases build the same marts, which are compared figure by figure. Shorter windows of the
same cluster cross what the 3-day sample does not: the A100 price change, the DST day and
the end of the month.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from helpers.builders import sample_config, yolocost
from helpers.hourcluster import query


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "error::UserWarning"}
    return yolocost(*args, env=env, timeout=600)


STORES = ("prometheus", "victoriametrics")


@pytest.fixture(scope="module", params=STORES)
def dbs(request, tmp_path_factory):
    """(ingested, truth): two DuckDB files for the sample window, the sample itself and the config."""
    served = request.getfixturevalue("prom_sample" if request.param == "prometheus" else "vm_sample")
    sample = served[0]
    root = tmp_path_factory.mktemp(f"ingest-truth-{request.param}")
    config = sample_config(served, root)
    ingested, truth = root / "ingested.duckdb", root / "truth.duckdb"
    sc = sample.scenario
    result = _run("--config", str(config), "--db", str(ingested), "ingest", "--start", sc["start_utc"],
                  "--end", sc["end_utc"])
    assert result.returncode == 0, result.stderr
    assert "fetched" in result.stderr and "Traceback" not in result.stderr  # progress went to stderr
    assert "usage rows" in result.stdout
    loaded = _run("--config", str(config), "--db", str(truth), "load", str(sample.out_dir))
    assert loaded.returncode == 0, loaded.stderr
    return ingested, truth, sample, config


def _both(dbs, sql: str) -> tuple[dict, dict]:
    ingested, truth = dbs[0], dbs[1]
    as_dict = lambda rows: {r[0]: r[1:] for r in rows}  # noqa: E731
    return as_dict(query(ingested, sql)), as_dict(query(truth, sql))


def test_every_attribution_mode_and_special_case_is_in_the_window(dbs):
    sample = dbs[2]
    modes = {h["mode"] for h in sample.scenario["hosts"]}
    assert modes == {"k8s", "k8s_exported", "k8s_old", "k8s_copied", "slurm", "job_info"}
    jobs_by_mode = {}
    for job_id, job in sample.scenario["jobs"].items():
        jobs_by_mode.setdefault(job["mode"], set()).add(job_id)
    held = {r[0] for r in query(dbs[0], "SELECT DISTINCT job_id FROM gpu_usage WHERE job_id IS NOT NULL")}
    for mode, ids in jobs_by_mode.items():
        assert ids & held, f"no job of mode {mode} was attributed"
    assert query(dbs[0], "SELECT count(*) FROM gpu_usage WHERE mig_profile = '3g.40gb'")[0][0] > 0
    # a shared GPU: some GPU-interval with two owners whose seconds add up to at most 300
    shared = query(dbs[0], """
        SELECT count(*) FROM (SELECT gpu_uuid, interval_start, count(job_id) AS owners, sum(seconds_present) AS s
                              FROM gpu_usage GROUP BY ALL) WHERE owners >= 2""")[0][0]
    assert shared > 0


def test_raw_rows_equal_the_truth(dbs):
    _assert_raw_rows_equal(dbs[0], dbs[1], dbs[2].usage_rows)


def _assert_raw_rows_equal(ingested: Path, truth: Path, rows: int) -> None:
    """Every GPU x owner x interval row: seconds, busy, idle exact; energy and memory exact;
    utilization and power to rounding."""
    sql = """SELECT interval_start, gpu_uuid, coalesce(job_id, '-'), hostname, gpu_index, gpu_model, mig_profile,
                    seconds_present, seconds_busy, seconds_idle, round(util_mean, 6), mem_peak_mib,
                    power_mean_w, energy_mj
             FROM gpu_usage ORDER BY 1, 2, 3"""
    got, want = query(ingested, sql), query(truth, sql)
    assert len(got) == len(want) == rows
    for g, w in zip(got, want):
        assert g[:12] == w[:12], (g, w)
        assert abs(g[12] - w[12]) <= 0.0011, (g, w)  # power mean, rounded to 3 decimals on both sides
        assert g[13] == w[13], (g, w)


def test_gpu_hours_and_cost_per_job_exact(dbs):
    got, want = _both(dbs, "SELECT job_id, gpu_seconds, gpu_cost, energy_cost, project, user_name "
                           "FROM mart_job ORDER BY 1")
    assert got.keys() == want.keys() and len(got) >= 20
    assert got == want


def test_project_month_figures(dbs):
    """GPU-hours and cost exact; density within 1 percentage point; energy within 1 %."""
    sql = """SELECT month || '|' || coalesce(project, bucket), gpu_seconds, gpu_cost, density, energy_kwh, cost
             FROM mart_project_month ORDER BY 1"""
    got, want = _both(dbs, sql)
    assert got.keys() == want.keys()
    assert any("(unallocated)" in k for k in got) and any("(unlabeled)" in k for k in got)
    for key in want:
        g, w = got[key], want[key]
        assert g[0] == w[0], key  # GPU-seconds exact to the microsecond
        assert g[1] == w[1], key  # cost exact to 1e-9
        if w[2] is not None:
            assert abs(g[2] - w[2]) <= 0.01, key
        assert abs(g[3] - w[3]) <= 0.01 * w[3], key
        assert g[4] == w[4], key


def test_conservation_exact(dbs):
    """Projects + unlabeled + unallocated = capacity x price, to the last decimal; and capacity
    x price recomputed here from the GPU-seconds of each model (the window lies after the
    A100 price change of 15 October, so one price per model applies)."""
    prices = {"NVIDIA A100-SXM4-80GB": Decimal("2.61"), "NVIDIA A10G": Decimal("0.98"),
              "Tesla V100-SXM2-32GB": Decimal("1.46")}
    for path in dbs[:2]:
        rows = query(path, """
            SELECT c.month, c.capacity_cost,
                   (SELECT sum(p.gpu_cost) FROM mart_project_month AS p WHERE p.month = c.month)
            FROM mart_cluster_month AS c ORDER BY 1""")
        assert rows
        for month, capacity_cost, parts in rows:
            assert parts == capacity_cost, month
        by_model = query(path, "SELECT gpu_model, sum(gpu_seconds) FROM stg_gpu_usage GROUP BY 1")
        expected = sum(seconds * prices[model] / 3600 for model, seconds in by_model)
        total = sum(r[1] for r in rows)
        assert abs(total - expected) <= Decimal("1e-9") * 2 * len(by_model), (total, expected)
    # and the capacity is the generator's: every GPU's samples, minus gaps and outages
    got = query(dbs[0], "SELECT sum(seconds_present) FROM gpu_usage")[0][0]
    assert got == query(dbs[1], "SELECT sum(seconds_present) FROM gpu_usage")[0][0]


def test_cost_recomputed_by_hand_for_one_job(dbs):
    """One Kubernetes job: GPU-seconds x price per GPU-hour, summed over the price periods."""
    job = query(dbs[0], """
        SELECT j.job_id FROM mart_job AS j JOIN jobs USING (job_id)
        WHERE jobs.gpu_model = 'NVIDIA A10G' ORDER BY gpu_seconds DESC LIMIT 1""")[0][0]
    seconds = query(dbs[0], f"SELECT sum(seconds_present) FROM gpu_usage WHERE job_id = '{job}'")[0][0]
    cost = query(dbs[0], f"SELECT gpu_cost FROM mart_job WHERE job_id = '{job}'")[0][0]
    expected = seconds * Decimal("0.98") / 3600  # the A10G price of the sample config, unchanged all month
    assert abs(cost - expected) < Decimal("1e-6"), (job, cost, expected)


def test_job_labels_and_training(dbs):
    sql_jobs = ("SELECT job_id, project, user_name, model_type, image_tag, image_digest, gpu_request, gpu_model "
                "FROM jobs ORDER BY 1")
    got, want = _both(dbs, sql_jobs)
    assert got == want
    assert any(p and "视觉" in p for p, *_ in got.values())  # a Chinese project name crossed Prometheus
    got, want = _both(dbs, "SELECT job_id || '|' || epoch || '|' || metric, value, ts FROM training_progress ORDER BY 1")
    assert got == want and len(got) > 1000
    got, want = _both(dbs, "SELECT job_id, map50, map50_95, best_epoch FROM job_results ORDER BY 1")
    assert got == want and got
    got, want = _both(dbs, "SELECT job_id, cost_per_map50_point, cost_per_map50_95_point FROM mart_job "
                           "WHERE cost_per_map50_point IS NOT NULL ORDER BY 1")
    assert got == want and got


def test_energy_within_one_percent_of_power_cross_check(dbs):
    """The counter-based energy and power x time agree per GPU model within 1 %."""
    for model, counter, power in query(dbs[0], """
            SELECT gpu_model, sum(energy_mj), sum(energy_power_mj) FROM gpu_usage GROUP BY 1"""):
        assert abs(counter - power) <= 0.01 * power, model


def test_rows_stored_in_order_and_scratch_removed(dbs):
    """The 3-day window is fetched in 24-hour chunks, each set aside in its own file as it
    completes (in whatever order the answers come): the rows are stored in the raw table's
    order all the same (interval, GPU, owner with nobody first), and the scratch files go."""
    ingested, _, sample, _ = dbs
    stored = query(ingested, "SELECT interval_start, gpu_uuid, job_id FROM gpu_usage")
    days = {r[0].date() for r in stored}
    assert len(days) >= 3
    assert stored == sorted(stored, key=lambda r: (r[0], r[1], r[2] is not None, r[2] or ""))
    assert not list(ingested.parent.glob(f".{ingested.name}.ingest-*"))


def test_rerun_is_idempotent(dbs, tmp_path):
    """Ingesting the same window again into the same database leaves every mart identical."""
    ingested, _, sample, config = dbs
    copy = tmp_path / "again.duckdb"
    copy.write_bytes(ingested.read_bytes())
    marts = [r[0] for r in query(copy, "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'mart_%'")]
    before = {m: query(copy, f"SELECT * FROM {m} ORDER BY ALL") for m in marts}
    sc = sample.scenario
    result = _run("--config", str(config), "--db", str(copy), "-q", "ingest", "--start", sc["start_utc"],
                  "--end", sc["end_utc"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # -q: nothing on stderr
    after = {m: query(copy, f"SELECT * FROM {m} ORDER BY ALL") for m in marts}
    assert len(marts) >= 10 and after == before


# ---- shorter windows: what the 3-day sample does not cross


@pytest.mark.parametrize("window", ["price-change", "dst-day", "month-end"])
@pytest.mark.parametrize("store", STORES)
def test_window_bills_exactly(store, window, window_samples, request, tmp_path):
    """The A100 price change (15 Oct), the 25-hour DST day (25 Oct) and October into November,
    each ingested from both stores: raw rows, job and project-month bills equal the truth."""
    server = request.getfixturevalue("prom_windows" if store == "prometheus" else "vm_windows")
    sample = window_samples[window]
    config = sample_config((sample, server), tmp_path)
    ingested, truth = tmp_path / "ingested.duckdb", tmp_path / "truth.duckdb"
    sc = sample.scenario
    result = _run("--config", str(config), "--db", str(ingested), "ingest", "--start", sc["start_utc"],
                  "--end", sc["end_utc"])
    assert result.returncode == 0, result.stderr
    assert "range selectors left-open (measured)" in result.stderr if store == "victoriametrics" else \
        "range selectors closed (measured)" in result.stderr  # Prometheus 2.x
    loaded = _run("--config", str(config), "--db", str(truth), "load", str(sample.out_dir))
    assert loaded.returncode == 0, loaded.stderr
    pair = (ingested, truth)
    _assert_raw_rows_equal(ingested, truth, sample.usage_rows)
    got, want = _both(pair, "SELECT job_id, gpu_seconds, gpu_cost, energy_cost FROM mart_job ORDER BY 1")
    assert got == want and got
    got, want = _both(pair, "SELECT month || '|' || coalesce(project, bucket), gpu_seconds, gpu_cost, cost "
                            "FROM mart_project_month ORDER BY 1")
    assert got == want and got
    months = query(ingested, "SELECT month, capacity_cost FROM mart_cluster_month ORDER BY 1")
    intervals = query(ingested, "SELECT count(DISTINCT interval_start) FROM gpu_usage")[0][0]
    if window == "month-end":
        assert [m for m, _ in months] == ["2026-10", "2026-11"]
    if window == "dst-day":  # 25 hours of 5-minute intervals, every one held by some GPU
        assert (sc["end"] - sc["start"], intervals) == (25 * 3600, 300)
    if window == "price-change":  # GPU-seconds x the price in effect, by hand, on each side of the change
        change = dt.datetime(2026, 10, 14, 22, tzinfo=dt.timezone.utc)  # 15 Oct 00:00 in Berlin
        prices = {"NVIDIA A10G": (Decimal("0.98"),) * 2, "NVIDIA A100-SXM4-80GB": (Decimal("2.93"), Decimal("2.61"))}
        by_side = query(ingested, f"""SELECT gpu_model, interval_start >= '{change.isoformat()}', sum(gpu_seconds)
                                     FROM stg_gpu_usage GROUP BY ALL""")  # (MIG instances: their share)
        assert {(m, after) for m, after, _ in by_side} >= {("NVIDIA A100-SXM4-80GB", False),
                                                          ("NVIDIA A100-SXM4-80GB", True)}
        expected = sum(seconds * prices[m][after] / 3600 for m, after, seconds in by_side)
        assert abs(sum(c for _, c in months) - expected) <= Decimal("1e-9") * len(by_side)
