"""A simple synthetic GPU cluster as OpenMetrics, one file per UTC day, for the ingest benchmark.

Stand-in for the project's own Prometheus sample generator when that one cannot write a
large enough cluster: N GPUs scraped every 30 s by dcgm-exporter (utilization, framebuffer,
power, energy counter) with Kubernetes `namespace`/`pod`/`container` on a GPU's series while
a pod holds it, and kube-state-metrics `kube_pod_labels` / `kube_pod_container_info` for
the pods. Hosts are split into fixed "lanes" of 1-4 GPUs; each lane runs jobs of 1-10 hours
back to back with idle gaps, each job one pod holding all GPUs of its lane.

One file per UTC day keeps `promtool tsdb create-blocks-from openmetrics` fast: it reads a
whole file into memory and parses it once per block, so a week in one file is parsed eight
times over.

`generate` makes the whole window in memory (small fleets); `generate_days` makes the same
kind of cluster one day at a time, so that a 1,000-GPU month can be written, backfilled and
deleted day by day with flat memory and disk (its values are not the same as `generate`'s).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

SCRAPE = 30
DRIVER = "550.54.15"
MODELS = {  # modelName, GPUs per host, lanes, framebuffer MiB, idle W, max W
    "a100": ("NVIDIA A100-SXM4-80GB", 8, (4, 2, 1, 1), 81920, 62.0, 400.0),
    "a10g": ("NVIDIA A10G", 4, (2, 1, 1), 24576, 24.0, 300.0),
}
PROJECTS = ("vision-core", "retail-shelf", "drone-survey", "medical-xray", "traffic-cam")
USERS = ("amara", "bo", "chen", "dalia", "emil", "farah", "goran", "hana")
MODEL_TYPES = ("yolov8n", "yolov8m", "yolov10s", "yolo11m", "yolo11x")


@dataclass
class Job:
    pod: str
    namespace: str
    project: str
    user: str
    model_type: str
    tag: str
    digest: str
    first: int  # first slot
    last: int  # last slot, exclusive
    gpus: list[int]


def _hex(*parts: object, n: int = 64) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


def _uuid(seed: int, host: str, index: int) -> str:
    h = _hex(seed, "gpu", host, index, n=32)
    return f"GPU-{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def fleet(gpus: int) -> list[tuple[str, str, int]]:
    """(hostname, kind, gpus) with A100 hosts of 8 and A10G hosts of 4, at least `gpus` GPUs."""
    hosts: list[tuple[str, str, int]] = []
    total = 0
    a100 = max(1, (gpus * 3 // 4) // 8)
    for i in range(a100):
        hosts.append((f"gpu-a100-{i + 1:02d}", "a100", 8))
        total += 8
    i = 0
    while total < gpus:
        i += 1
        hosts.append((f"gpu-a10g-{i:02d}", "a10g", 4))
        total += 4
    return hosts


def generate(out_dir: Path, *, gpus: int = 64, days: int = 7, start: int, seed: int = 7,
             lead_slots: int = 20, tail_slots: int = 20) -> dict:
    """Write day files `metrics-YYYYMMDD.om` under out_dir and `meta.json`; returns the meta.

    Data covers [start - lead, start + days + tail); `start` must be a UTC midnight."""
    rng, n, t0, hosts, gpu_rows, jobs = _window(out_dir, gpus, days, start, seed, lead_slots, tail_slots)

    # ---- GPUs and their per-slot owner (job index, -1 idle)
    owner = [np.full(n, -1, np.int64) for _ in gpu_rows]
    for j, job in enumerate(jobs):
        for g in job.gpus:
            owner[g][job.first:job.last] = j

    # ---- sample values per GPU
    mean = np.array([rng.uniform(15, 98) for _ in jobs])
    util, fb, power, energy = [], [], [], []
    for g, (host, kind, index, uuid, h) in enumerate(gpu_rows):
        _, _, _, fb_max, idle_w, max_w = MODELS[kind]
        o = owner[g]
        held = o >= 0
        u = np.where(held, mean[np.maximum(o, 0)] + rng.normal(0, 12, n), rng.integers(0, 3, n))
        u = np.clip(np.rint(u), 0, 100).astype(np.int64)
        f = np.where(held, fb_max * (0.3 + 0.6 * u / 100), 0).astype(np.int64)
        p = np.round(idle_w + (max_w - idle_w) * u / 100 + rng.normal(0, 2, n), 1)
        e = int(rng.integers(10**9, 10**10)) + np.cumsum(np.rint(p * SCRAPE * 1000).astype(np.int64))
        util.append(u), fb.append(f), power.append(p), energy.append(e)

    # scrape times: exporter of host h at t0 + 30 k + its offset; kube-state-metrics at + 7.5 s
    offsets = [round(1.0 + 0.37 * h, 3) for h in range(len(hosts))]
    slot_t = t0 + SCRAPE * np.arange(n)

    def labels(g: int, o: int) -> str:
        return dcgm_labels(gpu_rows[g], jobs[o] if o >= 0 else None)

    files = []
    day_edges = [t0] + [start + d * 86400 for d in range(1, days)] + [t0 + n * SCRAPE + 1]
    lines_total = 0
    for d in range(days):
        lo, hi = day_edges[d], day_edges[d + 1]
        path = out_dir / f"metrics-{(start + d * 86400) // 86400}.om"
        count = 0
        with open(path, "w") as fh:
            for name, data, fmt in (("DCGM_FI_DEV_GPU_UTIL", util, str), ("DCGM_FI_DEV_FB_USED", fb, str),
                                    ("DCGM_FI_DEV_POWER_USAGE", power, repr),
                                    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", energy, str)):
                fh.write(f"# TYPE {name} gauge\n")
                for g, row in enumerate(gpu_rows):
                    ts = slot_t + offsets[row[4]]
                    k0, k1 = np.searchsorted(ts, lo), np.searchsorted(ts, hi)
                    o = owner[g][k0:k1]
                    for who in np.unique(o):
                        ks = np.nonzero(o == who)[0] + k0
                        prefix = f"{name}{{{labels(g, int(who))}}} "
                        vals = map(fmt, data[g][ks].tolist())
                        fh.write("".join(f"{prefix}{v} {t:.3f}\n" for v, t in zip(vals, ts[ks].tolist())))
                        count += int(len(ks))
            ksm = slot_t + 7.5
            k0, k1 = np.searchsorted(ksm, lo), np.searchsorted(ksm, hi)
            count += write_kube(fh, jobs, k0, k1, ksm[k0:k1])
            fh.write("# EOF\n")
        files.append(path.name)
        lines_total += count
    meta = {
        "generator": "benchmarks/synth_openmetrics.py",
        "seed": seed, "gpus": len(gpu_rows), "hosts": len(hosts), "days": days,
        "window_start": start, "window_end": start + days * 86400,
        "scrape_seconds": SCRAPE, "jobs": len(jobs), "samples": lines_total,
        "dcgm_samples": 4 * len(gpu_rows) * n, "files": files,
        "models": sorted({MODELS[k][0] for _, k, _ in hosts}),
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def _window(out_dir: Path, gpus: int, days: int, start: int, seed: int, lead_slots: int, tail_slots: int):
    """What both generators start from: the seeded generator, the number of slots, the first
    slot's time, the fleet and its plan (GPU rows and jobs); `start` must be a UTC midnight."""
    assert start % 86400 == 0
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = days * 86400 // SCRAPE + lead_slots + tail_slots
    hosts = fleet(gpus)
    gpu_rows, jobs = _plan(rng, seed, hosts, n)
    return rng, n, start - lead_slots * SCRAPE, hosts, gpu_rows, jobs


def _plan(rng: np.random.Generator, seed: int, hosts: list[tuple[str, str, int]], n: int
          ) -> tuple[list[tuple[str, str, int, str, int]], list[Job]]:
    """GPU rows (host, kind, index, uuid, host no) and the jobs of every lane over n slots."""
    gpu_rows: list[tuple[str, str, int, str, int]] = []
    jobs: list[Job] = []
    for h, (host, kind, count) in enumerate(hosts):
        g = 0
        for lane in MODELS[kind][2]:
            lane_gpus = list(range(len(gpu_rows) + g, len(gpu_rows) + g + lane))
            g += lane
            k = int(rng.integers(0, 240))
            while k < n:
                length = int(rng.integers(120, 1200))
                project = PROJECTS[int(rng.integers(len(PROJECTS)))]
                model_type = MODEL_TYPES[int(rng.integers(len(MODEL_TYPES)))]
                no = len(jobs)
                jobs.append(Job(
                    pod=f"train-{model_type}-{no:05d}-{_hex(seed, 'pod', no, n=5)}",
                    namespace=f"team-{project}", project=project,
                    user=USERS[int(rng.integers(len(USERS)))], model_type=model_type,
                    tag=f"train-{model_type}-medium-cu121" if rng.random() > 0.1 else "latest",
                    digest="sha256:" + _hex(seed, "image", no), first=k, last=min(k + length, n),
                    gpus=lane_gpus,
                ))
                k += length + int(rng.integers(0, 360))
        for index in range(count):
            gpu_rows.append((host, kind, index, _uuid(seed, host, index), h))
    return gpu_rows, jobs


def generate_days(out_dir: Path, *, gpus: int = 1000, days: int = 31, start: int, seed: int = 7,
                  lead_slots: int = 20, tail_slots: int = 20, first_day: int = 0) -> Iterator[tuple[int, Path, dict]]:
    """Yield (day, file, meta so far) for each UTC day: the day's file is written just before it
    is yielded, so the caller can backfill and delete it before the next one is made.

    Same cluster model as `generate`: lanes of 1-4 GPUs running 1-10 h jobs with idle gaps, 4
    dcgm metrics per GPU every 30 s with the pod's labels while it holds the GPU, and
    kube-state-metrics per pod. Only the plan of jobs (a few bytes per job) spans the window;
    values are drawn per day (the energy counter carries over), so memory does not grow with
    the number of days. Day 0 also holds `lead_slots` before `start`, the last day `tail_slots`
    after the window. Days before `first_day` are drawn but not written (resuming)."""
    rng, n, t0, hosts, gpu_rows, jobs = _window(out_dir, gpus, days, start, seed, lead_slots, tail_slots)
    mean = rng.uniform(15, 98, len(jobs))
    gpu_jobs = [[] for _ in gpu_rows]
    for j, job in enumerate(jobs):
        for g in job.gpus:
            gpu_jobs[g].append(j)
    counter = rng.integers(10**9, 10**10, len(gpu_rows))
    offsets = np.array([round((1.0 + 0.37 * h) % 29.0, 3) for h in range(len(hosts))])
    host_of = np.array([row[4] for row in gpu_rows])

    def labels(g: int, o: int) -> str:
        return dcgm_labels(gpu_rows[g], jobs[o] if o >= 0 else None)

    # slots of each day: day 0 from slot 0 (the lead), the last day to slot n (the tail)
    edges = [0] + [lead_slots + d * 86400 // SCRAPE for d in range(1, days)] + [n]
    meta = {"generator": "benchmarks/synth_openmetrics.py generate_days", "seed": seed, "gpus": len(gpu_rows),
            "hosts": len(hosts), "days": days, "window_start": start, "window_end": start + days * 86400,
            "scrape_seconds": SCRAPE, "jobs": len(jobs), "samples": 0, "dcgm_samples": 0, "files": [],
            "models": sorted({MODELS[k][0] for _, k, _ in hosts})}
    for d in range(days):
        k0, k1 = edges[d], edges[d + 1]
        m = k1 - k0
        day_rng = np.random.default_rng([seed, d])
        slots = np.arange(k0, k1)
        owner = np.full((len(gpu_rows), m), -1, np.int64)
        for g, js in enumerate(gpu_jobs):
            for j in js:
                a, b = max(jobs[j].first, k0), min(jobs[j].last, k1)
                if a < b:
                    owner[g, a - k0:b - k0] = j
        held = owner >= 0
        u = np.where(held, mean[np.maximum(owner, 0)] + day_rng.normal(0, 12, owner.shape),
                     day_rng.integers(0, 3, owner.shape))
        util = np.clip(np.rint(u), 0, 100).astype(np.int64)
        fb_max = np.array([MODELS[r[1]][3] for r in gpu_rows])[:, None]
        idle_w = np.array([MODELS[r[1]][4] for r in gpu_rows])[:, None]
        max_w = np.array([MODELS[r[1]][5] for r in gpu_rows])[:, None]
        fb = np.where(held, fb_max * (0.3 + 0.6 * util / 100), 0).astype(np.int64)
        power = np.round(idle_w + (max_w - idle_w) * util / 100 + day_rng.normal(0, 2, owner.shape), 1)
        energy = counter[:, None] + np.cumsum(np.rint(power * SCRAPE * 1000).astype(np.int64), axis=1)
        counter = energy[:, -1].copy()
        if d < first_day:
            continue
        ts_base = t0 + SCRAPE * slots
        # "value timestamp" of every sample built with numpy string ops, joined per series run
        path = out_dir / f"metrics-{(start + d * 86400) // 86400}.om"
        count = 0
        with open(path, "w") as fh:
            for name, data, fmt in (("DCGM_FI_DEV_GPU_UTIL", util, "%d"), ("DCGM_FI_DEV_FB_USED", fb, "%d"),
                                    ("DCGM_FI_DEV_POWER_USAGE", power, "%.1f"),
                                    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", energy, "%d")):
                fh.write(f"# TYPE {name} gauge\n")
                for g in range(len(gpu_rows)):
                    ts = ts_base + offsets[host_of[g]]
                    tail = np.char.add(np.char.add(np.char.mod(fmt, data[g]), " "), np.char.mod("%.3f\n", ts))
                    o = owner[g]
                    cuts = np.flatnonzero(np.diff(o)) + 1
                    for a, b in zip(np.r_[0, cuts], np.r_[cuts, m]):
                        prefix = f"{name}{{{labels(g, int(o[a]))}}} "
                        fh.write(prefix + prefix.join(tail[a:b].tolist()))
                    count += m
            ksm = ts_base + 7.5
            count += write_kube(fh, jobs, k0, k1, ksm)
            fh.write("# EOF\n")
        meta["files"].append(path.name)
        meta["samples"] += count
        meta["dcgm_samples"] += 4 * len(gpu_rows) * m
        yield d, path, meta


def dcgm_labels(row: tuple[str, str, int, str, int], job) -> str:
    """A GPU's dcgm-exporter labels (row: host, kind, index, uuid, host no), with the pod's while
    `job` holds it. Exporter addresses run 10.1.0.1 .. 10.1.0.250, then 10.1.1.1, ..."""
    host, kind, index, uuid, h = row
    base = (f'gpu="{index}",UUID="{uuid}",device="nvidia{index}",modelName="{MODELS[kind][0]}",'
            f'Hostname="{host}",DCGM_FI_DRIVER_VERSION="{DRIVER}",instance="10.1.{h // 250}.{h % 250 + 1}:9400",'
            f'job="dcgm-exporter"')
    if job is None:
        return base
    return base + f',namespace="{job.namespace}",pod="{job.pod}",container="trainer"'


def write_kube(fh, jobs: list, k0: int, k1: int, times: np.ndarray) -> int:
    """Write every job's kube-state-metrics samples (pod labels, container info) in slots
    [k0, k1), `times` holding those slots' sample times; returns the samples written."""
    text = np.char.mod("1 %.3f\n", times)
    count = 0
    for name in ("kube_pod_labels", "kube_pod_container_info"):
        fh.write(f"# TYPE {name} gauge\n")
        for job in jobs:
            a, b = max(job.first, k0), min(job.last, k1)
            if a < b:
                prefix = kube_prefix(name, job)
                fh.write(prefix + prefix.join(text[a - k0:b - k0].tolist()))
                count += int(b - a)
    return count


def kube_prefix(name: str, job) -> str:
    """A job's kube-state-metrics series (pod labels or container info) up to its value."""
    if name == "kube_pod_labels":
        extra = (f'label_project="{job.project}",label_user="{job.user}",'
                 f'label_model_type="{job.model_type}",label_app="yolo-train"')
    else:
        extra = (f'container="trainer",image="registry.example/yolo:{job.tag}",'
                 f'image_id="registry.example/yolo@{job.digest}"')
    return (f'{name}{{namespace="{job.namespace}",pod="{job.pod}",{extra},'
            f'job="kube-state-metrics",instance="10.1.9.9:8080"}} ')


if __name__ == "__main__":  # quick look: python benchmarks/synth_openmetrics.py OUT [GPUS DAYS]
    import sys
    import time

    t = time.monotonic()
    m = generate(Path(sys.argv[1]), gpus=int(sys.argv[2]) if len(sys.argv) > 2 else 64,
                 days=int(sys.argv[3]) if len(sys.argv) > 3 else 7, start=1791158400)
    print(json.dumps({k: v for k, v in m.items() if k != "files"}), f"{time.monotonic() - t:.1f} s")
