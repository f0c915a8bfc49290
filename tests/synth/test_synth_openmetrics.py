"""The Prometheus sample: OpenMetrics a real Prometheus backfills and serves, and expected tables.

One default sample is generated, backfilled and served per module; the checks compare what
Prometheus answers with the generator's plan and with the expected raw tables.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request

import numpy as np
import pandas as pd
import pytest

from yolocost.synth import SAMPLE_FILES, write_prometheus_sample
from yolocost.synth.grain import grain_rows
from yolocost.synth.openmetrics import FAMILIES, escape, label_text
from yolocost.synth.plan import plan_month
from yolocost.synth.samples import GpuSamples
from yolocost.synth.scenario import HostChoice
from helpers.promserver import (TEST_PASSWORD, TEST_USER, PrometheusServer, skip_or_fail_without_prometheus)

GRAIN, SCRAPE = 300, 30


class Prom:
    def __init__(self, server: PrometheusServer):
        self.server = server

    def get(self, path: str, **params) -> dict:
        url = f"{self.server.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        req = urllib.request.Request(url, headers=self.server.headers())
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = json.loads(resp.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, q: str, t: float) -> list[dict]:
        return self.get("/api/v1/query", query=q, time=f"{t:.3f}")["result"]

    def query_range(self, q: str, start: float, end: float, step: float) -> list[dict]:
        return self.get("/api/v1/query_range", query=q, start=f"{start:.3f}", end=f"{end:.3f}", step=step)["result"]


@pytest.fixture(scope="module")
def sample(prom_sample):
    result, server = prom_sample
    return result, Prom(server)


@pytest.fixture(scope="module")
def usage(sample) -> pd.DataFrame:
    df = pd.read_parquet(sample[0].files["gpu_usage"])
    for c in ("seconds_present", "seconds_busy", "seconds_idle"):
        df[c] = df[c].astype(float)
    return df


@pytest.fixture(scope="module")
def plan():
    return plan_month(20261001, "2026-10", "Europe/Berlin", 1.0)


def test_writes_all_files_and_a_window_of_whole_local_days(sample):
    result, _ = sample
    assert set(result.files) == set(SAMPLE_FILES)
    assert all(p.is_file() for p in result.files.values())
    sc = result.scenario
    assert (sc["start_utc"], sc["end_utc"]) == ("2026-10-16T22:00:00Z", "2026-10-19T22:00:00Z")  # local midnights
    assert sc["start"] % GRAIN == 0 and sc["end"] - sc["start"] == 3 * 86400
    modes = {h["mode"] for h in sc["hosts"]}
    assert modes == {"k8s", "k8s_exported", "k8s_old", "k8s_copied", "slurm", "job_info"}
    assert 12 <= sum(len(h["gpus"]) for h in sc["hosts"]) <= 16
    assert len({h["gpu_model"] for h in sc["hosts"]}) == 3
    for key in ("mig", "shared", "retried_pod", "counter_resets", "short_gaps", "exporter_outages"):
        assert sc["specials"][key], key
    assert result.files["metrics"].stat().st_size < 300e6


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    hosts = (HostChoice("gpu-a100-03", "k8s", (0, 2)), HostChoice("gpu-a100-02", "slurm", (3,)))
    runs = [write_prometheus_sample(tmp_path / n, seed=s, days=1, hosts=hosts)
            for n, s in (("a", 7), ("b", 7), ("c", 8))]
    for key in SAMPLE_FILES:
        assert runs[0].files[key].read_bytes() == runs[1].files[key].read_bytes(), key
    assert runs[0].files["metrics"].read_bytes() != runs[2].files["metrics"].read_bytes()


def test_label_values_are_escaped():
    assert escape('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert label_text([("x", 'say "hi"'), ("skip", None), ("n", 3)]) == 'x="say \\"hi\\"",n="3"'


def test_openmetrics_text(sample):
    """Families declared once before their samples, timestamps in seconds with ms, off the 30 s grid."""
    path = sample[0].files["metrics"]
    declared, seen, names = [], set(), set()
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) (\d+\.\d{3})$')
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if line.startswith("#"):
                if line.startswith("# TYPE "):
                    name, kind = line.split()[2:4]
                    assert kind in ("gauge", "unknown") and name not in declared
                    declared.append(name)
                continue
            name = line[: line.index("{")]
            names.add(name)
            assert declared and name == declared[-1], f"line {i}: {name} outside its family"
            if i % 97 == 0:  # a sample of the lines, fully parsed
                m = line_re.match(line.rstrip("\n"))
                assert m, line
                float(m.group(3))
                assert float(m.group(4)) % SCRAPE != 0
            seen.add(name)
    assert line == "# EOF\n"
    assert set(declared) == set(FAMILIES) and names == set(FAMILIES)
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" in names  # an exporter's name, no _total


def test_series_per_host_and_label_sets_per_mode(sample):
    result, prom = sample
    sc = result.scenario
    t0, t1 = sc["data_start"], sc["end"]
    want_owner = {
        "k8s": {"namespace", "pod", "container"},
        "k8s_exported": {"namespace", "pod", "container", "exported_namespace", "exported_pod", "exported_container"},
        "k8s_old": {"pod_namespace", "pod_name", "container_name"},
        "k8s_copied": {"namespace", "pod", "container", "batch_kubernetes_io_job_name", "user"},
        "slurm": {"hpc_job"},
        "job_info": set(),
    }
    every = {"__name__", "gpu", "UUID", "pci_bus_id", "device", "modelName", "DCGM_FI_DRIVER_VERSION", "job",
             "instance"}
    for h in sc["hosts"]:
        series = prom.get("/api/v1/series", **{"match[]": f'DCGM_FI_DEV_FB_USED{{instance="{h["instance"]}"}}'},
                          start=t0, end=t1)
        assert len(series) == sum(d["series"] for d in h["devices"]), h["host"]
        label_sets = [set(s) for s in series]
        assert all(every | {h["hostname_label"]} <= ls for ls in label_sets), h["host"]
        assert any(want_owner[h["mode"]] <= ls for ls in label_sets), h["host"]
        if h["mode"] == "k8s_exported":  # the exporter's own pod on every series
            assert all(s["namespace"] == "gpu-operator" for s in series)
        if h["mode"] == "job_info":
            assert len(series) == len(h["devices"])
    # MIG instances: no DCGM_FI_DEV_GPU_UTIL, the profiling metric instead
    mig = sc["specials"]["mig"]
    assert not prom.get("/api/v1/series", **{"match[]": f'DCGM_FI_DEV_GPU_UTIL{{UUID="{mig["uuid"]}"}}'},
                        start=t0, end=t1)
    prof = prom.get("/api/v1/series", **{"match[]": f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID="{mig["uuid"]}"}}'},
                    start=t0, end=t1)
    assert {s["GPU_I_ID"] for s in prof} == {"1", "2"} and {s["GPU_I_PROFILE"] for s in prof} == {"3g.40gb"}


def test_utilization_at_an_instant_is_the_plans_sample(sample, plan):
    result, prom = sample
    sc = result.scenario
    base = (sc["data_start"] - plan.window.start) // SCRAPE
    checked = 0
    by_name = {h.name: h for h in plan.hosts}
    for h in sc["hosts"]:
        plan_gpus = {s.gpu.index: s for s in plan.host_samples(by_name[h["host"]])}
        for d in h["devices"]:
            s = plan_gpus[d["gpu"]]
            util = dict(zip(s.sample.tolist(), s.util.tolist()))
            for k in (sc["lead_slots"] + 1, 2000, 4321, 7777):
                slot = sc["data_start"] + SCRAPE * k
                mig = f',GPU_I_ID="{d["gpu_i_id"]}"' if d["gpu_i_id"] else ""
                sel = f'{d["util_metric"]}{{UUID="{d["uuid"]}"{mig}'
                got = prom.query(f"{sel}}}[{SCRAPE * 1000 - 1}ms]", slot + SCRAPE - 0.001)
                if not got:  # a missing sample
                    continue
                (ts, value), = got[0]["values"]
                assert slot < float(ts) < slot + SCRAPE
                if d["gpu_i_id"] == 2:
                    continue  # the second MIG instance runs a job of its own
                if d["gpu_i_id"] == 1:
                    assert float(value) * 100 == pytest.approx(util[base + k], abs=1.0)
                else:
                    assert float(value) == util[base + k]
                checked += 1
    assert checked > 40


def test_samples_per_grain_match_the_expected_seconds(sample, usage):
    """count_over_time of each GPU's utilization over every grain interval = expected samples."""
    result, prom = sample
    sc = result.scenario
    shared_second = sc["specials"]["shared"]["owners"][1]
    want = usage.assign(samples=usage["seconds_present"] / SCRAPE
                        + np.where(usage["job_id"] == shared_second, usage["seconds_present"] / 15, 0))
    want = want.groupby(["gpu_uuid", "interval_start"])["samples"].sum()
    got = {}
    q = (f'sum by (UUID, GPU_I_ID) (count_over_time(DCGM_FI_DEV_GPU_UTIL[{GRAIN * 1000 - 1}ms]) '
         f'or count_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[{GRAIN * 1000 - 1}ms]))')
    for r in prom.query_range(q, sc["start"] + GRAIN - 0.001, sc["end"] - 0.001, GRAIN):
        uuid = r["metric"]["UUID"] + (f'/{r["metric"]["GPU_I_ID"]}' if "GPU_I_ID" in r["metric"] else "")
        for t, v in r["values"]:
            got[(uuid, pd.Timestamp(round(float(t) + 0.001) - GRAIN, unit="s", tz="UTC"))] = float(v)
    got = pd.Series(got)
    got.index.names = want.index.names
    joined = pd.concat({"want": want, "got": got}, axis=1).fillna(0)
    assert len(joined) > 15 * 800
    bad = joined[joined["want"] != joined["got"]]
    assert bad.empty, bad.head()


def test_energy_counter_deltas_from_prometheus_match_the_expected_energy(sample, usage):
    """Recompute per-interval energy of the reset GPU and of the outage host from raw samples."""
    result, prom = sample
    sc = result.scenario
    uuids = [sc["specials"]["counter_resets"][0]["uuid"]]
    outage = sc["specials"]["exporter_outages"][0]
    uuids += [d["uuid"] for h in sc["hosts"] if h["host"] == outage["host"] for d in h["devices"]]
    for uuid in uuids:
        raw = prom.query(f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{UUID="{uuid}"}}[{sc["end"] - sc["data_start"]}s]',
                         sc["end"] - 0.001)
        pts = sorted({(float(t), int(float(v))) for r in raw for t, v in r["values"]})  # duplicates collapse
        t = np.array([p[0] for p in pts])
        c = np.array([p[1] for p in pts], np.int64)
        step = np.diff(c)
        delta = np.where(step < 0, c[1:], step)
        delta[np.diff(t) > 300] = 0  # previous sample beyond the 5-minute lookback
        interval = (t[1:] // SCRAPE * SCRAPE) // GRAIN * GRAIN
        keep = interval >= sc["start"]
        got = pd.Series(delta[keep]).groupby(interval[keep]).sum()
        want = usage[usage["gpu_uuid"] == uuid].groupby("interval_start")["energy_mj"].sum()
        want.index = want.index.map(lambda x: int(x.timestamp()))
        assert len(want) > 800
        assert (got.reindex(want.index).fillna(0) == want).all(), uuid
    reset = sc["specials"]["counter_resets"][0]
    assert usage[usage["gpu_uuid"] == reset["uuid"]]["energy_mj"].min() >= 0


def test_expected_usage_invariants(usage, sample):
    sc = sample[0].scenario
    per_gpu = usage.groupby(["gpu_uuid", "interval_start"])["seconds_present"].sum()
    assert per_gpu.max() <= GRAIN
    assert (usage["seconds_present"] % 15 == 0).all()
    assert (usage["seconds_busy"] + usage["seconds_idle"] <= usage["seconds_present"]).all()
    shared = sc["specials"]["shared"]
    rows = usage[usage["gpu_uuid"] == shared["uuid"]]
    both = rows.groupby("interval_start")["job_id"].apply(set)
    both = both[both.apply(lambda s: set(shared["owners"]) <= s)]
    assert len(both) >= 18  # 90 minutes, starting mid-grain
    for t in both.index:
        r = rows[rows["interval_start"] == t]
        assert r["seconds_present"].sum() == per_gpu[(shared["uuid"], t)]
        assert r["seconds_present"].sum() <= GRAIN
        nb = r[r["job_id"] == shared["owners"][1]].iloc[0]
        assert nb["seconds_present"] % 15 == 0
    mig = usage[usage["mig_profile"].notna()]
    assert set(mig["gpu_uuid"]) == {f'{sc["specials"]["mig"]["uuid"]}/{i}' for i in (1, 2)}
    assert mig["job_id"].isna().any() and (mig["job_id"] == sc["specials"]["mig"]["second_job"]).any()
    assert usage["job_id"].isna().any()
    assert usage["interval_start"].min() == pd.Timestamp(sc["start"], unit="s", tz="UTC")
    assert usage["interval_start"].max() == pd.Timestamp(sc["end"] - GRAIN, unit="s", tz="UTC")


def test_expected_rows_agree_with_grain_rows_on_plain_gpus(sample, plan, usage):
    """Whole GPUs held by one owner at a time: the expected rows are what grain.py makes of the samples."""
    sc = sample[0].scenario
    special = {sc["specials"]["shared"]["uuid"], sc["specials"]["mig"]["uuid"]}
    outage_hosts = {o["host"] for o in sc["specials"]["exporter_outages"]}
    got_rows = pd.read_parquet(sample[0].files["gpu_usage"])
    by_name = {h.name: h for h in plan.hosts}
    ids = np.array([j.job_id for j in plan.jobs] + [None], dtype=object)
    lo = (sc["data_start"] - plan.window.start) // SCRAPE
    hi = (sc["end"] - plan.window.start) // SCRAPE
    compared = 0
    for h in sc["hosts"]:
        if h["host"] in outage_hosts:
            continue
        for s in plan.host_samples(by_name[h["host"]]):
            d = next((d for d in h["devices"] if d["gpu"] == s.gpu.index), None)
            if d is None or d["uuid"] in special:
                continue
            # the samples present in metrics.om (dropped ones and gaps are missing there)
            rows = got_rows[got_rows["gpu_uuid"] == d["uuid"]]
            keep = (s.sample >= lo) & (s.sample < hi)
            present = _present_samples(sample, d["uuid"], s.sample[keep] - lo)
            sel = np.flatnonzero(keep)[present]
            sub = GpuSamples(s.gpu, s.sample[sel], s.util[sel], s.fb_used_mib[sel], s.power_w[sel],
                             s.energy_mj[sel], s.energy_increment_mj[sel], s.owner[sel])
            g = grain_rows(sub, plan.window.start)
            ref = pd.DataFrame({"interval_start": pd.to_datetime(g.interval_start, unit="s", utc=True),
                                "job_id": ids[g.owner], "seconds_present": g.seconds_present,
                                "util_mean": g.util_mean, "seconds_busy": g.seconds_busy,
                                "seconds_idle": g.seconds_idle, "mem_peak_mib": g.mem_peak_mib,
                                "power_mean_w": g.power_mean_w, "energy_mj": g.energy_mj})
            ref = ref[ref["interval_start"] >= pd.Timestamp(sc["start"], unit="s", tz="UTC")].reset_index(drop=True)
            mine = rows[ref.columns].reset_index(drop=True)
            for c in ("seconds_present", "seconds_busy", "seconds_idle"):
                mine[c] = mine[c].astype(float)
            assert len(mine) == len(ref), d["uuid"]
            assert (mine["job_id"].fillna("-") == ref["job_id"].fillna("-")).all()
            for c in ("seconds_present", "seconds_busy", "seconds_idle", "mem_peak_mib", "energy_mj"):
                assert (mine[c].astype(float) == ref[c].astype(float)).all(), (d["uuid"], c)
            assert np.allclose(mine["util_mean"], ref["util_mean"])
            assert np.allclose(mine["power_mean_w"], ref["power_mean_w"], atol=0.001)
            compared += 1
    assert compared >= 6


_PRESENT: dict = {}


def _present_samples(sample, uuid: str, slots: np.ndarray) -> np.ndarray:
    """Which slots have a sample of this GPU in metrics.om (read once per module)."""
    if not _PRESENT:
        sc = sample[0].scenario
        want = {d["uuid"] for h in sc["hosts"] for d in h["devices"]}
        pat = re.compile(r'^DCGM_FI_DEV_FB_USED\{gpu="\d+",UUID="([^"]+)".* (\d+)\.\d{3}$')
        seen: dict[str, set] = {u: set() for u in want}
        with open(sample[0].files["metrics"], encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("DCGM_FI_DEV_FB_USED{"):
                    m = pat.match(line.rstrip("\n"))
                    seen[m.group(1)].add((int(m.group(2)) - sc["data_start"]) // SCRAPE)
        _PRESENT.update(seen)
    return np.isin(slots, np.fromiter(_PRESENT[uuid], np.int64))


def test_expected_jobs_follow_the_contract(sample):
    result, _ = sample
    sc = result.scenario
    jobs = pd.read_parquet(result.files["jobs"]).set_index("job_id")
    usage_jobs = set(pd.read_parquet(result.files["gpu_usage"])["job_id"].dropna())
    assert set(jobs.index) == usage_jobs
    assert sc["specials"]["shared"]["owners"][1] in jobs.index  # a bare pod: <namespace>/<pod>
    assert "/" in sc["specials"]["shared"]["owners"][1]
    retried = sc["specials"]["retried_pod"]
    assert retried["job_id"] in jobs.index and len(retried["pods"]) == 2
    assert jobs["project"].isna().any()  # unlabeled jobs stay unlabeled
    usage = pd.read_parquet(result.files["gpu_usage"])
    most = usage.groupby(["job_id", "interval_start"])["gpu_uuid"].nunique().groupby("job_id").max()
    last = usage.groupby("job_id")["interval_start"].max()
    for job_id, j in sc["jobs"].items():
        row = jobs.loc[job_id]
        assert (row["image_tag"] if pd.notna(row["image_tag"]) else None) == j["image_tag"]
        running = last[job_id] == pd.Timestamp(sc["end"] - GRAIN, unit="s", tz="UTC")
        assert pd.isna(row["end_time"]) if running else row["end_time"] == last[job_id] + pd.Timedelta(seconds=GRAIN)
        if j["mode"].startswith("k8s"):  # no label gives the request: the most GPUs held at once
            assert row["gpu_request"] == most[job_id] and pd.isna(row["epochs"]) and j["image_digest"]
            if j["plan_image_tag"] == "":
                assert j["image_tag"] == "latest"  # an image without a tag
        elif j["plan_image_tag"] == "":
            # Prometheus cannot carry an empty tag: digest-only with a digest, else the empty tag
            assert j["image_tag"] == ("" if j["image_digest"] is None else None)
    tags = {j["image_tag"] for j in sc["jobs"].values()}
    assert {"", None, "latest"} <= tags


def test_training_progress_and_results_are_served(sample):
    result, prom = sample
    sc = result.scenario
    horizon = sc["end"] + sc["tail_slots"] * SCRAPE
    span = f'{horizon - sc["data_start"]}s'
    ends = prom.query(f"last_over_time(yolocost_epoch_end_time_seconds[{span}])", horizon)
    served = {(r["metric"]["job_id"], int(r["metric"]["epoch"])) for r in ends
              if sc["start"] <= float(r["value"][1]) < sc["end"]}
    progress = pd.read_parquet(result.files["training_progress"])
    assert served == set(zip(progress["job_id"], progress["epoch"]))
    assert set(progress["metric"]) == {"train/box_loss", "train/cls_loss", "train/dfl_loss",
                                       "metrics/mAP50(B)", "metrics/mAP50-95(B)"}
    one = progress.iloc[len(progress) // 2]
    got = prom.query(f'last_over_time(yolocost_epoch_metric{{job_id="{one.job_id}",epoch="{one.epoch}",'
                     f'name="{one.metric}"}}[{span}])', horizon)
    assert float(got[0]["value"][1]) == one.value
    res = pd.read_parquet(result.files["job_results"]).set_index("job_id")
    got = prom.query(f"last_over_time(yolocost_job_result[{span}])", horizon)
    answered = {}
    for r in got:
        answered.setdefault(r["metric"]["job_id"], {})[r["metric"]["name"]] = float(r["value"][1])
    assert set(answered) == set(res.index) and len(res) > 5
    for job_id, v in answered.items():
        assert v == {"map50": res.loc[job_id, "map50"], "map50_95": res.loc[job_id, "map50_95"],
                     "best_epoch": res.loc[job_id, "best_epoch"]}


def test_expected_tables_load(sample, tmp_path, cli):
    result, _ = sample
    out = cli("--db", str(tmp_path / "x.duckdb"), "--config", str(result.files["config"]), "load", str(result.out_dir),
              timeout=None)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{result.usage_rows:,} usage rows" in out.stdout


def test_server_with_basic_auth(tmp_path):
    skip_or_fail_without_prometheus()
    with PrometheusServer(tmp_path / "empty", basic_auth={TEST_USER: TEST_PASSWORD},
                          extra_flags=("--query.max-samples=1000",)) as server:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server.url + "/api/v1/query?query=1", timeout=10)
        assert err.value.code == 401
        assert Prom(server).get("/api/v1/query", query="1+1")["result"][1] == "2"
    assert server.proc is None
