"""Grain rows from samples, exactly as an ingest derives them.

One row per GPU x owner x grain interval (a sample at t covers [t, t+30) and belongs to the
interval holding t): seconds_present = samples x 30, util_mean = mean, seconds_busy/idle =
30 x samples above the busy / below the idle threshold, mem_peak_mib = max, power_mean_w =
mean, energy_mj = sum of energy counter deltas, where the counter is differenced in time
order per GPU, a drop is a reset (the delta is then the new value), each delta goes to the
owner of the later sample and the first sample has no delta.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constants import BUSY_UTIL, GRAIN_SECONDS, IDLE_UTIL, SAMPLE_SECONDS
from .samples import GpuSamples


@dataclass(frozen=True)
class GrainRows:
    interval_start: np.ndarray  # int64 epoch seconds, a multiple of the grain
    owner: np.ndarray  # int32 job code or NO_OWNER
    seconds_present: np.ndarray  # int32
    util_mean: np.ndarray  # float64
    seconds_busy: np.ndarray  # int32
    seconds_idle: np.ndarray  # int32
    mem_peak_mib: np.ndarray  # float64
    power_mean_w: np.ndarray  # float64
    energy_mj: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.interval_start)


def counter_deltas(counter: np.ndarray) -> np.ndarray:
    """Per-sample energy deltas of a cumulative counter; a drop is a reset; no delta for the first."""
    delta = np.zeros(len(counter), np.int64)
    if len(counter) > 1:
        step = np.diff(counter)
        later = counter[1:]
        delta[1:] = np.where(step < 0, later, step)
    return delta


def grain_rows(s: GpuSamples, window_start: int, busy: int = BUSY_UTIL, idle: int = IDLE_UTIL) -> GrainRows:
    """Rows of one GPU, sorted by interval then owner (unallocated first)."""
    if len(s.sample) == 0:
        e64, e32, ef = np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64)
        return GrainRows(e64, e32, e32, ef, e32, e32, ef, ef, e64)
    instant = window_start + s.sample * SAMPLE_SECONDS
    interval = instant // GRAIN_SECONDS
    owners = int(s.owner.max(initial=-1)) + 2
    key = interval * owners + (s.owner.astype(np.int64) + 1)
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    count = np.diff(np.append(first, len(key)))
    util = s.util[order].astype(np.int64)
    delta = counter_deltas(s.energy_mj)[order]
    power = s.power_w[order]
    return GrainRows(
        interval_start=(key[first] // owners) * GRAIN_SECONDS,
        owner=(key[first] % owners - 1).astype(np.int32),
        seconds_present=(count * SAMPLE_SECONDS).astype(np.int32),
        util_mean=np.add.reduceat(util, first) / count,
        seconds_busy=(np.add.reduceat((util > busy).astype(np.int64), first) * SAMPLE_SECONDS).astype(np.int32),
        seconds_idle=(np.add.reduceat((util < idle).astype(np.int64), first) * SAMPLE_SECONDS).astype(np.int32),
        mem_peak_mib=np.maximum.reduceat(s.fb_used_mib[order], first).astype(np.float64),
        power_mean_w=np.round(np.add.reduceat(power, first) / count, 3),
        energy_mj=np.add.reduceat(delta, first),
    )
