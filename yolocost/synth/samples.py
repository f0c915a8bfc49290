"""The per-sample GPU model: what dcgm-exporter would report every 30 s for each GPU.

Per GPU and sample: utilization (integer percent like DCGM_FI_DEV_GPU_UTIL), framebuffer
used (MiB), power (W), the cumulative energy counter (mJ, with its resets) and the job that
held the GPU. The energy each sample adds is kept too: the ground truth is computed from
it, not from the counter. Hosts are produced one at a time to bound memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from . import yolo
from .constants import SAMPLE_SECONDS
from .fleet import Gpu, Host
from .incidents import Incidents
from .rng import stream
from .scheduler import Placement
from .timeline import DIP, LOAD, STALL, STEADY, TAIL, ZOMBIE, Timeline
from .window import Window

NO_OWNER = -1

# phase -> (mean, sd, low, high) of utilization; steady and stall means are per job
_UTIL = {
    LOAD: (6.0, 5.0, 0, 15),
    STEADY: (None, 4.0, 75, 95),
    DIP: (30.0, 5.0, 20, 40),
    STALL: (None, 5.0, 10, 35),
    TAIL: (25.0, 6.0, 15, 38),
    ZOMBIE: (0.5, 0.8, 0, 2),  # a process holding its GPU memory and waiting for nothing
}


@dataclass(frozen=True)
class GpuSamples:
    """The samples of one GPU in time order (only those it sent: none while its host is down)."""

    gpu: Gpu
    sample: np.ndarray  # int64 sample index; its instant is window.start + 30 * sample
    util: np.ndarray  # int16, percent 0-100
    fb_used_mib: np.ndarray  # int32
    power_w: np.ndarray  # float64
    energy_mj: np.ndarray  # int64 counter as read (drops to 0 on a driver reload)
    energy_increment_mj: np.ndarray  # int64 energy added since the previous sample instant
    owner: np.ndarray  # int32 job code, NO_OWNER when nobody holds the GPU


@dataclass(frozen=True)
class JobRun:
    """A placement with its job code and timeline, as the sample model needs it."""

    code: int
    placement: Placement
    timeline: Timeline


def _job_util(rng: np.random.Generator, phases: np.ndarray, steady: float, stall: float) -> np.ndarray:
    mean = np.zeros(len(phases))
    sd = np.zeros(len(phases))
    lo = np.zeros(len(phases))
    hi = np.zeros(len(phases))
    for code, (m, s, a, b) in _UTIL.items():
        sel = phases == code
        mean[sel] = steady if code == STEADY else stall if code == STALL else m
        sd[sel], lo[sel], hi[sel] = s, a, b
    return np.clip(np.rint(mean + sd * rng.standard_normal(len(phases))), lo, hi).astype(np.int16)


def _job_mem(rng: np.random.Generator, phases: np.ndarray, load_samples: int, peak: float, cap: int) -> np.ndarray:
    n = len(phases)
    mem = np.full(n, peak) + rng.normal(0, 80, n)
    mem[phases == DIP] += 250
    mem[phases == STALL] -= 150
    tail = phases == TAIL
    mem[tail] = 0.65 * peak + rng.normal(0, 80, int(tail.sum()))
    k = min(load_samples, n)
    mem[:k] = np.linspace(300, peak, max(k, 1))[:k]
    return np.clip(np.rint(mem), 0, cap).astype(np.int32)


def _fill_job(seed: int, run: JobRun, rank: int, gpu: Gpu, n: int, util, mem, owner) -> None:
    p = run.placement
    lo, hi = p.start, min(p.start + p.samples, n)
    phases = run.timeline.phases(hi - lo)
    spec = p.spec
    job_rng = stream(seed, "job-level", spec.key)  # shared by all GPUs of the job
    steady = job_rng.uniform(80, 90)
    stall = job_rng.uniform(15, 28)
    size = yolo.size(spec.model_type)
    peak = yolo.CONTEXT_MIB + size.mib_per_image * spec.batch * job_rng.uniform(0.92, 1.08)
    rng = stream(seed, "job-gpu", spec.key, rank)
    cap = gpu.kind.memory_mib - 180
    util[lo:hi] = _job_util(rng, phases, steady, stall)
    mem[lo:hi] = _job_mem(rng, phases, spec.load_samples, peak + (300 if rank == 0 else 0), cap)
    owner[lo:hi] = run.code


def host_samples(seed: int, window: Window, host: Host, runs: list[JobRun], incidents: Incidents) -> Iterator[GpuSamples]:
    """The samples of each GPU of a host, GPU by GPU."""
    n = window.n_samples
    present = np.ones(n, bool)
    for d0, d1 in incidents.down_samples(window, host.name):
        present[max(d0, 0) : min(d1, n)] = False
    idx = np.flatnonzero(present).astype(np.int64)
    kind = host.kind
    for gpu in host.gpus:
        rng = stream(seed, "gpu", gpu.uuid)
        util = np.clip(np.rint(rng.normal(0.0, 0.9, n)), 0, 2).astype(np.int16)
        mem = np.zeros(n, np.int32)
        owner = np.full(n, NO_OWNER, np.int32)
        for run in runs:
            if gpu.index in run.placement.gpu_indices:
                rank = run.placement.gpu_indices.index(gpu.index)
                _fill_job(seed, run, rank, gpu, n, util, mem, owner)
        power: np.ndarray
        power = kind.idle_w + util / 100.0 * (kind.tdp_w - kind.idle_w) + rng.normal(0, 0.015 * kind.tdp_w, n)
        power = np.round(np.clip(power, 0.9 * kind.idle_w, kind.tdp_w), 2)
        increment = np.rint(power * SAMPLE_SECONDS * 1000).astype(np.int64)[idx]
        counter = int(rng.integers(20_000_000_000, 900_000_000_000)) + np.cumsum(increment)
        reset = incidents.reset_for(gpu)
        if reset is not None:
            at = int(np.searchsorted(idx, reset.sample))
            counter[at:] = np.cumsum(increment[at:])
        yield GpuSamples(gpu, idx, util[idx], mem[idx], power[idx], counter, increment, owner[idx])
