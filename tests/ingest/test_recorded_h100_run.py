"""A bench run recorded on an NVIDIA H100, replayed into a real Prometheus and billed.

`benchmarks/gpu_check.py` ran `yolocost bench run --device 0 --gpu-sampler` on one H100 80GB
HBM3 (driver 580.159.04): yolov8n on the synthetic dataset, 104 epochs in 190 s, and scraped
its endpoint every 5 s as a Prometheus would (recorded/h100-yolov8n-scrapes.jsonl.xz: each
scrape's text with the wall-clock time it was taken). Here the scrapes are backfilled at those
times with promtool into a real Prometheus, and imported into a real VictoriaMetrics, each
ingested at a 60-s grain, and every stored row is checked against the bill computed by hand
from the samples that store kept.

What it holds that generated data does not: NVML's own readings (power swinging between 100
and 294 W from one scrape to the next, an energy counter that grows by what the power says, a
small model that keeps an H100 at 0-70 % and never busy), the labels as NVML names them
(`modelName` "NVIDIA H100 80GB HBM3", the node's hostname), scrapes 5 s apart taken 137 to
227 ms after each 5-s step (none crosses a step or a grain boundary: the late-scrape cases are
tests/ingest/test_scrape_timing.py's), and a GPU released before its endpoint stopped (the
last three scrapes, during `--linger`, carry no job info: unallocated time). The recording's
memory readings are NVML's first call's: the driver's reserve (about 480 MiB) included.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import lzma
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import pytest
from helpers.livescrape import (
    ENERGY, FB, POWER, UTIL, Bill, Key, bill_mismatches, query, run_ingest, stored_samples, totals, usage_rows,
    write_config,
)
from helpers.promserver import PrometheusServer, backfill, skip_or_fail_without_prometheus
from helpers.vmserver import VictoriaMetricsServer, fail_without_victoriametrics

pytest.importorskip("prometheus_client")  # the bench extra's, as in tests/bench

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from yolocost.synth.openmetrics import label_text  # noqa: E402

RECORDED = Path(__file__).parent / "recorded"
JOB, GPU = "h100-yolov8n", "GPU-4a68c820-de1a-f87d-7df6-a364b1e5a40e"
INTERVAL, GRAIN = 5, 60  # the recording's scrape interval; the smallest grain the config allows
JOB_INFO = "yolocost_job_info"


def scrapes() -> list[tuple[float, str]]:
    """(time taken, exposition text) of each recorded scrape, in order."""
    with lzma.open(RECORDED / "h100-yolov8n-scrapes.jsonl.xz", "rt", encoding="utf-8") as f:
        return [(row["t"], row["text"]) for row in map(json.loads, f)]


def openmetrics(recorded: list[tuple[float, str]]) -> str:
    """The scrapes as one OpenMetrics file for promtool: each family once, its series one
    after another, each sample stamped with the time its scrape was taken."""
    families: dict[str, dict[tuple, list[tuple[float, float]]]] = {}
    for t, text in recorded:
        for family in text_string_to_metric_families(text):
            series = families.setdefault(family.name, {})
            for s in family.samples:
                series.setdefault(tuple(sorted(s.labels.items())), []).append((t, s.value))
    lines = []
    for name, series in families.items():
        lines.append(f"# TYPE {name} gauge")
        for labels, samples in series.items():
            lines += [f"{name}{{{label_text(labels)}}} {v!r} {t:.3f}" for t, v in samples]
    return "\n".join(lines) + "\n# EOF\n"


@contextlib.contextmanager
def _store(name: str, root: Path, om: Path) -> Iterator[PrometheusServer | VictoriaMetricsServer]:
    """A running store holding the recording: Prometheus backfilled by promtool, or
    VictoriaMetrics (whose ranges leave out their start) fed over its import API."""
    if name == "prometheus":
        skip_or_fail_without_prometheus()
        backfill(om, root / "prom")
        with PrometheusServer(root / "prom") as prom:
            yield prom
        return
    fail_without_victoriametrics()
    with VictoriaMetricsServer(root / "vm" / "data") as vm:
        vm.import_openmetrics(om)
        yield vm


@pytest.fixture(scope="module", params=["prometheus", "victoria-metrics"])
def replayed(request, tmp_path_factory):
    """The recording in a real store, ingested: (stored samples, database, window)."""
    root = tmp_path_factory.mktemp(f"h100-{request.param}")
    recorded = scrapes()
    om = root / "h100.om"
    om.write_text(openmetrics(recorded), encoding="utf-8")
    window = (int(recorded[0][0]) // GRAIN * GRAIN, (int(recorded[-1][0]) // GRAIN + 1) * GRAIN)
    with _store(request.param, root, om) as store:
        stored = stored_samples(store.url, (UTIL, FB, POWER, ENERGY, JOB_INFO), at=window[1] - 0.001,
                                seconds=window[1] - window[0])
        db = root / "h100.duckdb"
        result = run_ingest(write_config(root, "h100", store.url, interval=INTERVAL, grain=GRAIN), db, window)
    assert result.returncode == 0, result.stderr[-3000:]
    return stored, db, window


def by_hand(stored, window) -> dict[Key, Bill]:
    """One GPU's bill per owner x grain interval: each utilization sample is 5 s of the job whose
    job-info sample came with it (the same scrape), else unallocated; busy above 70 %, idle
    below 5 %; energy the counter's delta from the previous sample, given to the later one's owner."""
    claimed = {t for s in stored[JOB_INFO] if s.labels["UUID"] == GPU for t, _ in s.samples}
    lo, hi = window[0] * 1000, window[1] * 1000
    out: dict[Key, Bill] = defaultdict(Bill)

    def key(t: int) -> Key:
        return (GPU, JOB if t in claimed else None, t // (GRAIN * 1000) * GRAIN)

    (util,) = stored[UTIL]
    for t, v in util.samples:
        if lo <= t < hi:
            bill = out[key(t)]
            bill.seconds += INTERVAL
            bill.samples += 1
            bill.util_weighted += INTERVAL * Fraction(v)
            bill.busy += INTERVAL if v > 70 else 0
            bill.idle += INTERVAL if v < 5 else 0
    (counter,) = stored[ENERGY]
    for (_, before), (t, value) in zip(counter.samples, counter.samples[1:]):
        if lo <= t < hi:
            out[key(t)].energy += Fraction(value - before if value >= before else value)
    return dict(out)


def test_the_recording_is_what_it_says():
    recorded = scrapes()
    assert len(recorded) == 41
    steps = [b - a for (a, _), (b, _) in zip(recorded, recorded[1:])]
    assert 4.9 < min(steps) and max(steps) < 5.1
    with_job = [JOB_INFO + "{" in text for _, text in recorded]
    assert with_job == [True] * 38 + [False] * 3  # released during --linger
    record = json.loads((RECORDED / "h100-yolov8n-run.json").read_text())
    assert record["gpus"][0]["uuid"] == GPU and record["gpus"][0]["model"] == "NVIDIA H100 80GB HBM3"
    assert (record["status"], len(record["epoch_end_times"]), record["results"]["map50"]) == ("finished", 104, 0.995)


def test_every_stored_row_is_the_bill_by_hand(replayed):
    stored, db, window = replayed
    expected, got = by_hand(stored, window), usage_rows(db)
    mismatches = bill_mismatches(expected, got, ("seconds", "busy", "idle", "util", "energy"))
    assert not mismatches, totals(expected, got) + "\n" + "\n".join(mismatches)
    # the figures the test is about, so a change of the recording shows here too
    job = [b for (g, owner, _), b in expected.items() if owner == JOB]
    free = [b for (g, owner, _), b in expected.items() if owner is None]
    assert sum(b.seconds for b in job) == 38 * INTERVAL and sum(b.seconds for b in free) == 3 * INTERVAL
    assert sum(b.busy for b in job) == 0  # a nano model never kept the H100 above 70 %
    assert sum(b.energy for b in job) + sum(b.energy for b in free) == 51_600_219 - 9_140_520


def test_peak_memory_and_power_are_nvmls(replayed):
    stored, db, _ = replayed
    rows = query(db, f"SELECT job_id, max(mem_peak_mib) AS peak, max(power_mean_w) AS power, "
                     f"any_value(gpu_model) AS model, any_value(hostname) AS host FROM gpu_usage "
                     f"WHERE gpu_uuid = '{GPU}' GROUP BY job_id ORDER BY job_id NULLS LAST")
    (fb,), (power,) = stored[FB], stored[POWER]
    job_fb = max(v for t, v in fb.samples if t < 1795830900_000)
    assert rows[0]["job_id"] == JOB and rows[0]["peak"] == job_fb == 10198.8125
    assert rows[0]["model"] == "NVIDIA H100 80GB HBM3" and rows[0]["host"] == "vm"
    assert rows[1]["job_id"] is None and rows[1]["peak"] == 1580.8125  # after the run: the reserve and what was left
    assert max(v for _, v in power.samples) == pytest.approx(293.875)


def test_training_and_result_as_the_run_recorded(replayed):
    _, db, _ = replayed
    record = json.loads((RECORDED / "h100-yolov8n-run.json").read_text())
    epochs = query(db, f"SELECT epoch, min(ts) AS ts FROM training_progress WHERE job_id = '{JOB}' "
                       "GROUP BY epoch ORDER BY epoch")
    assert [r["epoch"] for r in epochs] == list(range(1, 105))
    ended = {int(k): dt.datetime.fromisoformat(v) for k, v in record["epoch_end_times"].items()}
    assert all(abs((r["ts"] - ended[r["epoch"]]).total_seconds()) < 0.001 for r in epochs)
    (result,) = query(db, f"SELECT map50, map50_95, best_epoch FROM job_results WHERE job_id = '{JOB}'")
    assert (result["map50"], result["best_epoch"]) == (0.995, 104)
    (job,) = query(db, f"SELECT project, user_name, model_type, image_tag FROM jobs WHERE job_id = '{JOB}'")
    assert job == {"project": "vision", "user_name": "alice", "model_type": "yolov8n",
                   "image_tag": "train-yolov8-nano-cu130"}
