"""The bill from a live scrape: a real Prometheus and a real VictoriaMetrics scrape the scripted
exporters of helpers/livescrape.py every second, and `yolocost ingest` of each store must bill what
that store kept, sample by sample.

Backfilled data hold one sample exactly every interval and no staleness markers; a live
scrape does neither. Prometheus stamps each sample with the time its scrape started (late by a
few ms now and then, so two samples can share an interval-aligned slot), VictoriaMetrics with
the time it was due, and both write staleness markers when a target fails or a series goes
away. The expected bill is computed here by hand from the samples each store returns raw
(seconds = samples x interval, shared by the owners of a sample; busy above 70 %, idle below
5 %; energy: counter deltas, a drop being a reset, to the owner of the later sample), and
those samples are checked against the exporters' own log of what they served.

The scrape phase (about two minutes, both stores at once) runs once for the module.
"""

from __future__ import annotations

import math
import time

import pytest
from helpers.livescrape import (
    DCGM_FIELDS, ENERGY, GPU_A0, GPU_A1, GPU_A2, GPU_B0, PODS, UTIL, LiveCluster, Stored, bill_mismatches,
    expected_usage, query, run_ingest, stored_samples, totals, usage_rows, wait_for_scrapes, write_config,
)
from helpers.promserver import PrometheusServer, skip_or_fail_without_prometheus
from helpers.vmserver import VictoriaMetricsServer, fail_without_victoriametrics

INTERVAL, GRAIN = 1, 60  # seconds: the scrape interval of both stores, the ingest's grain
SETTLE = 3.0  # seconds after the script's end before anything is read (the last scrapes land)
STORES = ("prometheus", "victoriametrics")
NODE_A = (GPU_A0.uuid, GPU_A1.uuid, GPU_A2.uuid)
NAMES = {GPU_A0.uuid: "live-a/gpu0", GPU_A1.uuid: "live-a/gpu1", GPU_A2.uuid: "live-a/gpu2",
         GPU_B0.uuid: "live-b/gpu0 (shared)"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """Both stores scrape the cluster for its script, then each is ingested into its own database.
    VictoriaMetrics gets -search.latencyOffset=1s so that, as on Prometheus, samples are
    queryable a second after they are scraped (the default hides the last 30 s)."""
    skip_or_fail_without_prometheus()
    fail_without_victoriametrics()
    root = tmp_path_factory.mktemp("live")
    cluster = LiveCluster()
    stores: dict[str, Stored] = {}
    with cluster.serving():
        scrapes = cluster.scrape_configs(INTERVAL)
        vm_config = root / "vm-scrape.yml"
        vm_config.write_text("scrape_configs:\n" + scrapes, encoding="utf-8")
        vm_flags = (f"-promscrape.config={vm_config}", "-search.latencyOffset=1s")
        with PrometheusServer(root / "prometheus", scrape_configs=scrapes) as prom, \
                VictoriaMetricsServer(root / "vm" / "data", extra_flags=vm_flags) as vm:
            servers = {"prometheus": prom, "victoriametrics": vm}
            for server in servers.values():
                wait_for_scrapes(server.url, len(cluster.exporters))
            cluster.begin(time.time(), GRAIN)
            time.sleep(max(0.0, cluster.end + SETTLE - time.time()))
            vm.flush()
            reach = math.ceil(cluster.end - cluster.origin) + 60  # every sample since the exporters started
            for store, server in servers.items():
                stored = Stored(store, server.url, stored_samples(server.url, DCGM_FIELDS, cluster.end, reach))
                stored.db = root / f"{store}.duckdb"
                stored.ingest = run_ingest(write_config(root, store, server.url, interval=INTERVAL, grain=GRAIN),
                                           stored.db, cluster.window)
                stores[store] = stored
    return cluster, stores


def _ingested(live, store: str) -> Stored:
    stored = live[1][store]
    result = stored.ingest
    assert result.returncode == 0 and "Traceback" not in result.stderr, (
        f"yolocost ingest of the live {store} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return stored


def _expected(live, store: str, gpus):
    cluster, stores = live
    return expected_usage(stores[store].samples, INTERVAL, GRAIN, cluster.window, gpus)


@pytest.mark.parametrize("store", STORES)
def test_the_script_played_out(live, store):
    """The stores hold every event of the script, so the bill tests below are not vacuous:
    GPU 0 of live-a held by train-a, nobody and train-b in turn, GPU 1 appearing and GPU 2
    vanishing, live-a's outage answered 503, nothing reaching live-b while it restarted, and
    the energy counter of live-b's GPU dropping after it."""
    cluster, stores = live
    samples = stores[store].samples
    lo, hi = cluster.window[0] * 1000, cluster.window[1] * 1000

    def owners(uuid):
        seen = [(t, s.labels.get("pod")) for s in samples[UTIL] if s.labels["UUID"] == uuid for t, _ in s.samples
                if lo <= t < hi]
        return [pod for _, pod in sorted(seen)]

    a0 = owners(GPU_A0.uuid)
    changes = [p for i, p in enumerate(a0) if i == 0 or p != a0[i - 1]]
    assert changes == ["train-a", None, "train-b"], f"{store}: owners of live-a/gpu0 in turn: {changes}"
    first_a1 = min(t for s in samples[UTIL] if s.labels["UUID"] == GPU_A1.uuid for t, _ in s.samples)
    assert first_a1 / 1000 > cluster.at(0.1), f"{store}: live-a/gpu1 stored before it appeared"
    last_a2 = max(t for s in samples[UTIL] if s.labels["UUID"] == GPU_A2.uuid for t, _ in s.samples)
    assert last_a2 / 1000 < cluster.at(0.8), f"{store}: live-a/gpu2 stored after it vanished"
    failed = [s for s in cluster.served(store, "dcgm-live-a") if s.status == 503]
    assert len(failed) >= cluster.outage_seconds / INTERVAL - 2, f"{store}: {len(failed)} scrapes answered 503"
    down = cluster.restart()
    during = [s for s in cluster.served(store, "dcgm-live-b") if down[0] + 0.1 < s.arrival < down[1] - 0.1]
    assert not during, f"{store}: live-b answered {len(during)} scrapes while restarting"
    counter = sorted({(t, v) for s in samples[ENERGY] if s.labels["UUID"] == GPU_B0.uuid for t, v in s.samples})
    drops = [t for (t0, v0), (t, v) in zip(counter, counter[1:]) if v < v0]
    assert len(drops) == 1 and drops[0] / 1000 >= down[1], f"{store}: energy counter drops of live-b/gpu0: {drops}"


@pytest.mark.parametrize("store", STORES)
def test_stored_samples_are_the_served_scrapes(live, store):
    """Every scrape of a dcgm exporter that the store's scraper got a 200 for is one stored
    sample per series served, with those labels and values, stamped within half an interval
    before the request arrived; nothing else is stored (no sample from a 503 or a refused
    connection)."""
    cluster, stores = live
    samples = stores[store].samples
    problems = []
    for target in ("dcgm-live-a", "dcgm-live-b"):
        instance = cluster.instance(target)
        kept: dict[int, dict] = {}
        for name in DCGM_FIELDS:
            for s in samples[name]:
                if s.labels.get("instance") != instance:
                    continue
                labels = tuple(sorted((k, v) for k, v in s.labels.items() if k not in ("instance", "job")))
                for t, v in s.samples:
                    kept.setdefault(t, {})[(name, labels)] = v
        served = [s for s in cluster.served(store, target) if s.status == 200]
        matched = set()
        for t in sorted(kept):
            hits = [i for i, s in enumerate(served)
                    if i not in matched and t / 1000 - 0.05 <= s.arrival <= t / 1000 + INTERVAL / 2]
            if len(hits) != 1:
                problems.append(f"{target}: sample at {t / 1000:.3f} matches {len(hits)} served scrapes")
                continue
            matched.add(hits[0])
            want = {(x.name, tuple(sorted(x.labels))): x.value for x in served[hits[0]].series}
            if kept[t] != want:
                diff = sorted(set(kept[t].items()) ^ set(want.items()))[:4]
                problems.append(f"{target}: sample at {t / 1000:.3f} differs from what was served: {diff}")
        for i, s in enumerate(served):
            if i not in matched and s.arrival < cluster.end - 1:
                problems.append(f"{target}: scrape served at {s.arrival:.3f} (HTTP 200) has no stored sample")
    assert not problems, f"{store}: stored samples against the exporters' log:\n" + "\n".join(problems[:20])


@pytest.mark.parametrize("store", STORES)
def test_gpu_seconds_busy_idle_on_live_a(live, store):
    """live-a's GPUs, owner by owner and grain by grain: seconds present = stored samples x
    1 s, busy and idle seconds and mean utilization from those samples, unallocated time
    (GPU 0 between its pods, GPU 2) under no owner."""
    stored = _ingested(live, store)
    expected, got = _expected(live, store, NODE_A), usage_rows(stored.db, NODE_A)
    wrong = bill_mismatches(expected, got, ("seconds", "busy", "idle", "util"), NAMES)
    assert not wrong, (f"{store}: GPU time on live-a differs from the samples the store kept "
                       f"({totals(expected, got)}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("store", STORES)
def test_energy_on_live_a(live, store):
    """live-a's energy: the counter's deltas between stored samples, given to the owner of the
    later sample; a staleness marker (the outage, a pod leaving, GPU 2 going away) is no value,
    so the joules of the outage go to the first sample after it, once."""
    stored = _ingested(live, store)
    expected, got = _expected(live, store, NODE_A), usage_rows(stored.db, NODE_A)
    wrong = bill_mismatches(expected, got, ("energy",), NAMES)
    assert not wrong, (f"{store}: energy on live-a differs from the counter the store kept "
                       f"({totals(expected, got)}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("store", STORES)
def test_shared_gpu_is_billed_to_its_pods(live, store):
    """live-b's time-sliced GPU (--kubernetes-virtual-gpus): the device-level series is the GPU,
    not an owner; each of the two pods gets half of every sample, busy and idle by its own
    utilization (share-x 80 %, share-y 3 %; the device reads 83 %); nothing is unallocated."""
    stored = _ingested(live, store)
    expected, got = _expected(live, store, (GPU_B0.uuid,)), usage_rows(stored.db, (GPU_B0.uuid,))
    assert {owner for _, owner, _ in expected} == {"team-a/share-x", "team-b/share-y"}
    wrong = bill_mismatches(expected, got, ("seconds", "busy", "idle", "util"), NAMES)
    assert not wrong, (f"{store}: the shared GPU's time differs from the samples the store kept "
                       f"({totals(expected, got)}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("store", STORES)
def test_shared_gpu_energy_across_the_restart(live, store):
    """live-b's energy: one counter served once per pod (the same value), each delta halved
    between the pods, the restart's drop read as a reset, the gap before it bridged once."""
    stored = _ingested(live, store)
    expected, got = _expected(live, store, (GPU_B0.uuid,)), usage_rows(stored.db, (GPU_B0.uuid,))
    wrong = bill_mismatches(expected, got, ("energy",), NAMES)
    assert not wrong, (f"{store}: the shared GPU's energy differs from the counter the store kept "
                       f"({totals(expected, got)}):\n" + "\n".join(wrong))


@pytest.mark.parametrize("store", STORES)
def test_pods_are_jobs_with_their_projects(live, store):
    """Every pod that held a GPU is a job named namespace/pod with the project and user of its
    kube_pod_labels; share-y, with no project label, is unlabeled."""
    stored = _ingested(live, store)
    billed = {owner for _, owner, _ in _expected(live, store, None) if owner}
    want = {p.owner: (dict(p.labels).get("project"), dict(p.labels).get("user")) for p in PODS if p.owner in billed}
    got = {r["job_id"]: (r["project"], r["user_name"]) for r in query(stored.db, "SELECT * FROM jobs")}
    assert got == want, f"{store}: jobs (project, user) expected {want}, got {got}"


@pytest.mark.parametrize("store", STORES)
def test_image_tag_is_what_the_pod_asked_for(live, store):
    """The tag comes from image_spec (what the pod asked for), not from image (what the runtime
    reports: share-x's runtime says `latest` for the same digest); the digest from image_id."""
    stored = _ingested(live, store)
    want = {p.owner: (p.image_spec.rpartition(":")[2], p.digest) for p in PODS}
    got = {r["job_id"]: (r["image_tag"], r["image_digest"]) for r in query(stored.db, "SELECT * FROM jobs")}
    wrong = {job: (want.get(job), tag) for job, tag in got.items() if want.get(job) != tag}
    assert not wrong, f"{store}: job -> ((expected tag, digest), (stored tag, digest)): {wrong}"
