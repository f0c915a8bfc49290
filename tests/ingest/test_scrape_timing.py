"""Scrape timing as live servers store it, backfilled so it is the same on every run.

Prometheus stamps a sample with the time its scrape started and snaps a late start back to
the schedule only within 2 ms. A target whose slot lies just before an interval boundary and
is scraped a few ms to a few s late puts two samples into one interval-aligned slot and none
into the previous one. Six GPUs, scraped every 15 s for 90 minutes, each at its own offset in
the interval (two each just before the boundary, interval - 3 ms; just after it, +2 ms; in the
middle), with lateness of 3 ms up to a fifth of the interval on 10 % (data set `late-10`) or
50 % (`late-50`) of the samples, and jitter. Each GPU is held by a pod, then by nobody, then
by another pod. The same OpenMetrics file is backfilled into a real Prometheus and imported
into a real VictoriaMetrics; each GPU must be billed exactly what the store holds: seconds =
samples x 15 s, busy (> 70 %) and idle (< 5 %) seconds and mean utilization by hand, energy
from the counter's deltas.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter

import pytest
from helpers.livescrape import (
    DCGM_FIELDS, ENERGY, FB, POWER, UTIL, Gpu, Pod, StoredSeries, bill_mismatches, dcgm_series, expected_usage,
    over_window, pod_attributes, run_ingest, stored_samples, totals, usage_rows, write_config,
)
from helpers.promserver import PrometheusServer, backfill, skip_or_fail_without_prometheus
from helpers.vmserver import VictoriaMetricsServer, fail_without_victoriametrics

UTC = dt.timezone.utc
INTERVAL, GRAIN = 15, 300
SAMPLES = 360  # 90 minutes per GPU
HELD_FIRST, FREE = 120, 80  # samples held by the first pod, then by nobody; the second pod holds the rest
LATE_MAX_MS = INTERVAL * 1000 // 5
UTILS = (0.0, 3.0, 5.0, 40.0, 70.0, 71.0, 95.0, 100.0)  # 5 is not idle, 70 not busy
HOUR = dt.datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
WINDOW = (int((HOUR - dt.timedelta(hours=26)).timestamp()), int((HOUR - dt.timedelta(hours=24)).timestamp()))
# (name, offset in the interval in ms, jitter in ms either way): the boundary slots keep their side
OFFSETS = (("before", INTERVAL * 1000 - 3, 1), ("after", 2, 1), ("middle", INTERVAL * 1000 // 2, 50))
DATASETS = {"late-10": 0.10, "late-50": 0.50}
STORES = ("prometheus", "victoriametrics")


def _gpu(i: int) -> Gpu:
    return Gpu(i, f"GPU-7e1e0000-0000-4000-8000-{i:012d}", f"00000000:{16 + i:02X}:00.0", "NVIDIA A100-SXM4-80GB",
               "timing-node", "hostname")


def _pod(name: str) -> Pod:
    return Pod("timing", name, "trainer", "", (), "", "", "")


def generate(late_share: float, seed: int) -> tuple[dict[str, list[StoredSeries]], dict[str, str]]:
    """The data set: per metric, the series with their samples (ms, value); and GPU names."""
    rng = random.Random(seed)
    out: dict[str, list[StoredSeries]] = {name: [] for name in DCGM_FIELDS}
    names = {}
    for i, (where, offset, jitter) in enumerate(OFFSETS * 2):
        gpu = _gpu(i)
        names[gpu.uuid] = f"gpu{i} ({where}, {late_share:.0%} late)"
        times = []
        for k in range(SAMPLES):
            late = rng.randint(3, LATE_MAX_MS) if rng.random() < late_share else 0
            times.append(WINDOW[0] * 1000 + k * INTERVAL * 1000 + offset + late + rng.randint(-jitter, jitter))
        energy, counter = 3_000_000_000 + 2 * rng.randint(0, 10**6), []
        for k in range(SAMPLES):
            if i == 3 and k == 200:  # a driver reload: the counter starts again
                energy = 2 * rng.randint(1, 5000)
            else:
                energy += 2 * rng.randint(50_000, 1_500_000)
            counter.append(energy)
        stretches = ((_pod(f"first-{i}"), range(HELD_FIRST)), (None, range(HELD_FIRST, HELD_FIRST + FREE)),
                     (_pod(f"second-{i}"), range(HELD_FIRST + FREE, SAMPLES)))
        utils = [rng.choice(UTILS) for _ in range(SAMPLES)]
        for owner, ks in stretches:
            for name in DCGM_FIELDS:
                value = {UTIL: lambda k: utils[k], FB: lambda k: 1000.0 * (k % 7),
                         POWER: lambda k: 200.0 + k % 50, ENERGY: lambda k: counter[k]}[name]
                labels = dict(dcgm_series(name, gpu, 0, pod_attributes(owner) if owner else None).labels)
                labels.update(instance="timing-node:9400", job="dcgm")
                out[name].append(StoredSeries(labels, [(times[k], float(value(k))) for k in ks]))
    return out, names


def openmetrics(data: dict[str, list[StoredSeries]]) -> str:
    """OpenMetrics for promtool (seconds with ms decimals; each series ascending; `# EOF`)."""
    lines = []
    for name, series in data.items():
        lines.append(f"# TYPE {name} gauge")
        for s in series:
            inner = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
            lines.extend(f"{name}{{{inner}}} {v:.17g} {t // 1000}.{t % 1000:03d}" for t, v in s.samples)
    return "\n".join(lines) + "\n# EOF\n"


def _key(data: dict[str, list[StoredSeries]]) -> dict:
    return {(name, tuple(sorted(s.labels.items()))): s.samples for name, series in data.items() for s in series}


@pytest.fixture(scope="module")
def billed(tmp_path_factory):
    """Each data set in both stores, read back raw and ingested: {(data set, store): result}."""
    skip_or_fail_without_prometheus()
    fail_without_victoriametrics()
    root = tmp_path_factory.mktemp("timing")
    out = {}
    for n, (dataset, late_share) in enumerate(DATASETS.items()):
        data, names = generate(late_share, seed=21 + n)
        om = root / f"{dataset}.om"
        om.write_text(openmetrics(data), encoding="utf-8")
        backfill(om, root / dataset / "prometheus")
        with PrometheusServer(root / dataset / "prometheus") as prom, \
                VictoriaMetricsServer(root / dataset / "vm" / "data") as vm:
            vm.import_openmetrics(om)
            for store, server in (("prometheus", prom), ("victoriametrics", vm)):
                raw = stored_samples(server.url, DCGM_FIELDS, WINDOW[1], WINDOW[1] - WINDOW[0] + 3600)
                db = root / dataset / f"{store}.duckdb"
                config = write_config(root / dataset, store, server.url, interval=INTERVAL, grain=GRAIN)
                out[(dataset, store)] = {"generated": data, "stored": raw, "names": names, "db": db,
                                         "ingest": run_ingest(config, db, WINDOW)}
    return out


CASES = [(d, s) for d in DATASETS for s in STORES]


@pytest.mark.parametrize("dataset,store", CASES)
def test_the_store_holds_the_adversarial_samples(billed, dataset, store):
    """What the store returns raw is the generated data, sample for sample; and the data are
    adversarial: GPUs whose slot lies just before the boundary have interval-aligned slots
    holding two samples (and slots holding none)."""
    case = billed[(dataset, store)]
    assert _key(case["stored"]) == _key(case["generated"]), f"{store} holds other samples than were written"
    for s in case["generated"][UTIL]:
        if s.labels["gpu"] in ("0", "3"):  # just before the boundary
            slots = Counter(t // (INTERVAL * 1000) for t, _ in s.samples)
            assert max(slots.values()) == 2, f"{dataset}: no slot of GPU {s.labels['gpu']} holds two samples"


def _bill(billed, dataset, store, fields, *, whole_window=False):
    case = billed[(dataset, store)]
    result = case["ingest"]
    assert result.returncode == 0 and "Traceback" not in result.stderr, (
        f"yolocost ingest of {dataset} on {store} exited {result.returncode}:\n{result.stderr[-3000:]}")
    expected = expected_usage(case["stored"], INTERVAL, GRAIN, WINDOW)
    got = usage_rows(case["db"])
    if whole_window:
        expected, got = over_window(expected, got, WINDOW[0])
    wrong = bill_mismatches(expected, got, fields, case["names"])
    where = "over the window" if whole_window else "per 5-minute interval"
    assert not wrong, (f"{dataset} on {store}: the bill {where} differs from the samples stored "
                       f"({totals(expected, got)}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("dataset,store", CASES)
def test_each_gpu_and_owner_billed_exactly(billed, dataset, store):
    """Per GPU x owner over the window (the start time shown): seconds = stored samples x 15 s,
    busy and idle seconds and energy by hand, every sample counted once wherever it sits."""
    _bill(billed, dataset, store, ("seconds", "busy", "idle", "energy"), whole_window=True)


@pytest.mark.parametrize("dataset,store", CASES)
def test_each_interval_billed_by_its_samples(billed, dataset, store):
    """Per GPU x owner x 5-minute interval: a sample belongs to the interval holding its
    timestamp; seconds = its samples x 15 s, busy and idle seconds and mean utilization from
    them. An interval whose first sample is a late one from the slot before holds 21 samples
    of a GPU (315 s) and its neighbour 19."""
    _bill(billed, dataset, store, ("seconds", "busy", "idle", "util"))


@pytest.mark.parametrize("dataset,store", CASES)
def test_energy_billed_exactly(billed, dataset, store):
    """Per GPU x owner x interval: the counter's deltas between stored samples, to the owner of
    the later sample (GPU 3's counter resets once)."""
    _bill(billed, dataset, store, ("energy",))
