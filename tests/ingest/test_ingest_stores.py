"""How the ingest learns what the metric store does: measured on the data, never read from a version.

The fixture hour of helpers/hourcluster.py, imported into a real VictoriaMetrics with every sample on a
multiple of 30 s (as a scrape without jitter stores them). VictoriaMetrics answers
`/api/v1/status/buildinfo` with nothing and bounds ranges like Prometheus 3 (left-open); an
ingest that took closed ranges for granted read nothing from it and wrote a zero bill with
exit 0. Also: a configured scrape interval the data contradict, and a window whose series
hold no samples to measure on.
"""

from __future__ import annotations

import datetime as dt

import pytest
from helpers.vmserver import VictoriaMetricsServer, exposition_line, fail_without_victoriametrics

from yolocost.config import load_config
from yolocost.errors import DataError
from yolocost.ingest import ingest
from yolocost.storeprobe import StoreProbe

from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner


def _aligned(om_text: str, offset: float) -> str:
    """The fixture's OpenMetrics as exposition lines with every sample OFFSET earlier, on the
    30 s grid, in milliseconds."""
    out = []
    for line in om_text.splitlines(keepends=True):
        converted = exposition_line(line)
        if converted is not None:
            head, _, ms = converted.rstrip("\n").rpartition(" ")
            out.append(f"{head} {int(ms) - round(offset * 1000)}\n")
    return "".join(out)


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    """VictoriaMetrics holding the fixture hour (with job j2's training progress), samples on the grid."""
    fail_without_victoriametrics()
    with VictoriaMetricsServer(tmp_path_factory.mktemp("vm") / "data") as server:
        server.import_text(_aligned(h.openmetrics(**h.VARIANTS["scraped_twice"]), h.OFFSET))
        server.flush()
        yield server


def test_victoriametrics_bills_exactly(vm, yc, tmp_path):
    """Two GPUs for one hour at 2.00 per GPU-hour: 4.00, half of it pod p1's (30 minutes of
    GPU-aaa) and job j2's (30 minutes of GPU-bbb), 10 samples of 30 s in every interval."""
    db = tmp_path / "vm.duckdb"
    result = yc.ingest(yc.config(vm.url), db)
    h.assert_ok(result)
    cluster = h.query(db, "SELECT capacity_gpu_hours, attributed_gpu_hours, unallocated_gpu_hours, density, "
                          "capacity_cost, project_cost, unallocated_cost, energy_mj FROM mart_cluster_month")
    # energy: 119 deltas of 3,000,000 mJ per GPU (the first sample has no previous one)
    assert [tuple(float(v) for v in r) for r in cluster] == [(2.0, 1.0, 1.0, 0.5, 4.0, 2.0, 2.0, 714e6)]
    assert "a Prometheus-compatible store at" in result.stderr  # buildinfo says nothing
    assert "range selectors left-open (measured), samples every 30 s" in result.stderr
    per_interval = h.query(db, "SELECT DISTINCT seconds_present FROM gpu_usage")
    assert [float(s) for (s,) in per_interval] == [300.0]
    jobs = h.query(db, "SELECT job_id, gpu_seconds, gpu_cost FROM mart_job ORDER BY 1")
    assert [(j, float(s), float(c)) for j, s, c in jobs] == [("j2", 1800.0, 1.0), ("ns/p1", 1800.0, 1.0)]
    epochs = h.query(db, "SELECT count(DISTINCT epoch) FROM training_progress WHERE job_id = 'j2'")
    assert epochs == [(len(h.EPOCHS),)]


def test_a_store_answering_otherwise_than_measured_stops_the_ingest(vm, yc, tmp_path, monkeypatch):
    """Were the probe wrong (closed ranges taken on a left-open store, as the version-string
    logic did), the scrape steps of the grain queries find none of the samples the raw series hold,
    and the ingest stops instead of writing a zero bill. A real store cannot make the probe
    wrong, so the probe's answers are replaced here, in-process."""
    monkeypatch.setattr(StoreProbe, "_range_left_open", lambda self, raw: False)
    monkeypatch.setattr(StoreProbe, "_subquery_left_open", lambda self: False)
    config = load_config(yc.config(vm.url)).with_database(tmp_path / "never.duckdb")
    with pytest.raises(DataError) as caught:
        ingest(config, h.WINDOW_START, h.WINDOW_END)
    message = str(caught.value)
    assert f"{vm.url} answers the grain queries otherwise than its ranges were measured" in message
    # 10 samples a 300 s interval; counted with the same wrong bounds, the one on the interval's
    # start is missed, but 9 against 0 scrape steps still shows the grain queries lost them
    assert "holds 9 raw samples in the 300 s from" in message and "only 0 of its scrape steps" in message
    assert not (tmp_path / "never.duckdb").exists()


def test_scrape_interval_configured_60_data_30(yc, prior_db, prom):
    """Configured 60 s, scraped every 30 s: each 60 s step would count one of two samples and
    seconds and cost would shift with where the samples fall: refused, naming both."""
    config = yc.config(prom.url, prometheus="scrape_interval_seconds = 60")
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db)
    h.assert_one_line_error(result, f"the GPU series at {prom.url} hold a sample every 30 s",
                            "scrape_interval_seconds = 60")


def test_prometheus_2_measured_closed(yc, tmp_path, prom):
    result = yc.ingest(yc.config(prom.url), tmp_path / "p.duckdb")
    h.assert_ok(result)
    assert "Prometheus 2." in result.stderr and "range selectors closed (measured), samples every 30 s" in result.stderr


def test_no_samples_to_measure_on_is_said(yc, tmp_path, vm):
    """An hour next to the data hour on the same UTC day: VictoriaMetrics' series API still
    lists the hour's series (it answers per day), but none holds a sample there. The probe
    says so in one line, and the subquery's answer (left-open) stands in."""
    start = h.DATA_START + dt.timedelta(hours=1)
    if start.date() != h.DATA_START.date():  # the data hour ends its day: take the hour before it
        start = h.DATA_START - dt.timedelta(hours=1)
    result = yc.ingest(yc.config(vm.url), tmp_path / "late.duckdb", start=start, end=start + dt.timedelta(hours=1))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "could not measure" in line]
    assert lines == [f"yolocost: could not measure how {vm.url} bounds ranges: none of the probed GPU series "
                     "holds samples in the window; judged from a subquery"], result.stderr
    assert "range selectors left-open (not measured on samples: see above)" in result.stderr
