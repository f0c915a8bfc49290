"""Prometheus answers as numpy arrays: one (key, value) pair per point.

A key is series id x steps + grain step of one chunk (`Points`). Converting an answer as
soon as it arrives lets its JSON go at once and keeps a point at 16 bytes; the lookups
here line up the answers of one chunk, which all answer per (series, time).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import promql

RAW_UTIL = ("samples", "busy", "idle", "util")  # what `raw_utilization` gives, in this order


def flat(answer: list[dict], scale: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An answer's points as arrays: each series' point count, and every point's time (x `scale`,
    rounded to an integer: 1000 gives milliseconds) and value, series after series."""
    sizes = np.array([len(s["values"]) for s in answer], np.int64)
    points = [v for s in answer for v in s["values"]]
    times = np.rint(np.fromiter((v[0] for v in points), np.float64, len(points)) * scale).astype(np.int64)
    return sizes, times, np.array([v[1] for v in points], dtype=np.float64)


class Points:
    """The series of one chunk's answers (numbered as they come, labels kept) and each
    answer's points as arrays: per point one key (series id, grain step) and one value.
    Converting on arrival lets an answer's JSON go at once and keeps a point at 16 bytes;
    one per chunk, so the labels of a month's series (some 5 a GPU a day) are never held
    together."""

    def __init__(self, names: list[str], start: int, end: int, grain: int):
        self.names = [n for n in names if n != "samples"]
        self.start, self.grain = start, grain
        self.steps = max(1, (end - start) // grain)
        self.ids: dict[tuple, int] = {}
        self.labels: list[dict[str, str]] = []
        self._numbering = threading.Lock()  # a chunk's answers are converted by several threads

    def sids(self, result: list[dict]) -> np.ndarray:
        """The series id of each series of an answer, numbering the new ones."""
        with self._numbering:
            return np.array([self._sid(s["metric"]) for s in result], np.int64)

    def _sid(self, metric: dict[str, str]) -> int:
        # some stores keep the metric name through max_over_time/last_over_time (VictoriaMetrics),
        # Prometheus drops it: without it, every query names a series alike
        metric = {k: v for k, v in metric.items() if k != "__name__"}
        key = tuple(sorted(metric.items()))
        n = self.ids.get(key)
        if n is None:
            n = self.ids[key] = len(self.labels)
            self.labels.append(metric)
        return n

    def arrays(self, result: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """(key, value) arrays of one query answer, key = series id x steps + grain step."""
        sizes, ts, value = flat(result)
        sid = np.repeat(self.sids(result), sizes)
        step, off_grid = np.divmod(ts - self.start - self.grain, self.grain)
        if len(step) and (off_grid.any() or step.min() < 0 or step.max() >= self.steps):  # another point's key
            raise ValueError("a point's time is not one of the query's steps")
        return sid * self.steps + step, value

    def keep_chunk(self, parts: list[tuple[str, tuple[np.ndarray, np.ndarray]]]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """All answers of one chunk (a query may come in two parts: plain and joined GPUs) as
        (series id, grain step, samples, {query: values}) of every point held."""
        def joined(name: str) -> tuple[np.ndarray, np.ndarray]:
            mine = [p for n, p in parts if n == name]
            if not mine:
                return np.zeros(0, np.int64), np.zeros(0, np.float64)
            return np.concatenate([p[0] for p in mine]), np.concatenate([p[1] for p in mine])

        key, samples = joined("samples")
        held = samples > 0
        key, samples = key[held], samples[held]
        values = {name: aligned(key, *joined(name)) for name in self.names}
        return key // self.steps, key % self.steps, samples, values


def aligned(key: np.ndarray, other: np.ndarray, value: np.ndarray) -> np.ndarray:
    """One query's values at the points `key` (NaN where it has none): every grain query
    answers per (series, time), so this is a lookup, not a join."""
    if len(other) == 0:
        return np.full(len(key), np.nan)
    order = np.argsort(other, kind="stable")
    other, value = other[order], value[order]
    at = np.minimum(np.searchsorted(other, key), len(other) - 1)
    return np.where(other[at] == key, value[at], np.nan)


def collided(samples: tuple[np.ndarray, np.ndarray], slots: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Keys (series x grain step) of `samples` whose count differs from the other answer's
    (missing: 0), sorted: against the subquery steps that hold a sample, some step held two
    samples of the series; the profiling metric's count against the samples', it has other
    samples than DCGM_FI_DEV_GPU_UTIL."""
    key, count = samples
    held = np.nan_to_num(aligned(key, *slots))
    return np.sort(key[held != count])


def raw_utilization(points: Points, answer: list[dict], cells: np.ndarray, busy: float, idle: float
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Samples, samples above `busy` and below `idle`, and utilization summed, per cell (series
    x grain step, every one of `cells`, zeros included) from the utilization metrics' raw
    samples: each stored sample counts once. A NaN (a staleness marker, which some stores
    return as a sample) is no sample. Where a series has a DCGM_FI_PROF_GR_ENGINE_ACTIVE
    sample at a time, it is that time's utilization (x 100), as the grain queries prefer it;
    else DCGM_FI_DEV_GPU_UTIL's (one scrape stamps both alike). In `RAW_UTIL`'s order."""
    sizes, ms, value = flat(answer, 1000)
    sid = np.repeat(points.sids(answer), sizes)
    prof = np.repeat(np.array([s["metric"].get("__name__") == promql.UTIL_PROF for s in answer], bool), sizes)
    step = (ms - points.start * 1000) // (points.grain * 1000)
    key = sid * points.steps + step
    keep = ~np.isnan(value) & (step >= 0) & (step < points.steps) & np.isin(key, cells)
    key, ms, prof = key[keep], ms[keep], prof[keep]
    value = np.where(prof, value[keep] * 100, value[keep])
    order = np.lexsort((prof, ms, key))  # per series and time, the profiling sample last
    key, ms, value = key[order], ms[order], value[order]
    last = np.r_[(key[1:] != key[:-1]) | (ms[1:] != ms[:-1]), True] if len(key) else np.zeros(0, bool)
    key, value = key[last], value[last]
    at = np.searchsorted(cells, key)
    n = len(cells)
    return [(cells, np.bincount(at, minlength=n).astype(np.float64)),
            (cells, np.bincount(at, value > busy, n).astype(np.float64)),
            (cells, np.bincount(at, value < idle, n).astype(np.float64)),
            (cells, np.bincount(at, value, n))]
