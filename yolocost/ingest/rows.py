"""Grouping a chunk's points into raw usage rows, and the column type those rows use.

Rows are summed per GPU x owner x interval in numpy on integer codes, so the grouping's
memory stays near that of the point arrays; strings are columns of codes (`Coded`) that
DuckDB scans as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import Config
from ..sqltext import literal

Columns = dict[str, Any]  # a table as numpy arrays (strings as codes, Coded; Any: the name tells which),
# which DuckDB scans directly: NaN reads as NULL, datetime64 as TIMESTAMP


class Coded:
    """A column of strings (or ints with NULLs) as int32 codes into its distinct values (0: NULL,
    n: values[n - 1]). DuckDB 1.5 imports pandas and pyarrow (74 MiB) to scan a numpy object
    array; the codes it scans as is, and `sql` turns them back into the values in the query.
    Indexing, iterating and `==` behave as on the object array it stands for."""

    __slots__ = ("codes", "values")
    __hash__ = None  # type: ignore[assignment]  # unhashable, as an array: typeshed types it a method

    def __init__(self, codes: np.ndarray, values: list):
        self.codes, self.values = codes, values

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index) -> "Coded":
        return Coded(self.codes[index], self.values)

    def __iter__(self):
        decoded = [None, *self.values]
        return (decoded[c] for c in self.codes.tolist())

    def __eq__(self, other) -> np.ndarray:  # type: ignore[override]  # elementwise, as on an array
        return np.array([False, *(v == other for v in self.values)], bool)[self.codes]

    def sql(self, column: str) -> str:
        """The values of `column` (its codes) in SQL: a list literal indexed by the code, a
        projection that keeps the rows' order; list_extract(..., 0) is NULL."""
        if not self.values:
            return "NULL"
        kinds = {type(v) for v in self.values}
        if kinds <= {str}:
            kind = "VARCHAR"
        elif kinds <= {int}:
            kind = "BIGINT"
        else:
            raise TypeError(f"column {column} mixes {sorted(k.__name__ for k in kinds)}")
        return f'list_extract([{", ".join(map(literal, self.values))}]::{kind}[], "{column}")'


def coded(values: list) -> Coded:
    """A list of strings or ints, None for NULL, as codes into its distinct values."""
    index: dict = {}
    codes = np.fromiter((0 if v is None else index.setdefault(v, len(index) + 1) for v in values),
                        np.int32, len(values))
    return Coded(codes, list(index))


def summed(groups: np.ndarray, n: int, values: np.ndarray, nulls_sum_to_null: bool) -> np.ndarray:
    """Per-group sums; NaN (NULL) values count as 0, and a group of only NULLs is NULL if asked."""
    present = ~np.isnan(values)
    out = np.bincount(groups, np.where(present, values, 0.0), n).astype(np.float64, copy=False)
    if nulls_sum_to_null:
        out[np.bincount(groups, present, n) == 0] = np.nan
    return out


def grouped(columns: tuple, start: int, gpus: list, owners: list[str | None], config: Config) -> Columns:
    """Raw usage rows as sums per GPU x owner x interval, grouped in numpy on integer codes
    (series -> GPU, owner), so memory stays near that of the point arrays; strings are
    attached to the grouped rows only. The rows come in the raw table's order (interval,
    GPU, owner with nobody first), and with `seconds_us`, the owner's present seconds: the
    GPU-interval's seconds rounded to the microsecond cumulatively over its owners in that
    order, so shared samples (1/3 each, ...) still add up exactly to the GPU's seconds."""
    grain, scrape = config.grain_seconds, config.prometheus.scrape_interval_seconds
    uuids = sorted({g.gpu_uuid for g in gpus if g is not None})
    gpu_code = {u: n for n, u in enumerate(uuids)}
    owner_code: dict[str | None, int] = {  # 0: nobody's
        o: n + 1 for n, o in enumerate(sorted({o for o in owners if o is not None}))}
    series_gpu = np.array([gpu_code[g.gpu_uuid] if g is not None else -1 for g in gpus], np.int64)
    series_owner = np.array([owner_code.get(o, 0) for o in owners], np.int64)

    sid, step, samples, value = columns
    gpu = series_gpu[sid]
    on_gpu = gpu >= 0
    if not on_gpu.all():
        sid, step, samples, gpu = sid[on_gpu], step[on_gpu], samples[on_gpu], gpu[on_gpu]
        value = {name: v[on_gpu] for name, v in value.items()}
    # group key in the raw table's order: interval, GPU (codes follow the sorted UUIDs), owner
    group_key = (step * len(uuids) + gpu) * (len(owner_code) + 1) + series_owner[sid]
    keys, first, groups = np.unique(group_key, return_index=True, return_inverse=True)
    del group_key
    n = len(first)
    mem_peak = np.full(n, np.nan)
    np.fmax.at(mem_peak, groups, value["mem_peak"])
    power = value["power"]
    power_energy = np.where(np.isnan(value["power_energy"]), power, value["power_energy"])
    held = np.bincount(groups, samples, n).astype(np.float64, copy=False)
    gpu_interval = keys // (len(owner_code) + 1)
    seconds_us = owner_seconds_us(gpu_interval, held, scrape)
    row_series = sid[first]  # each row's strings are those of the first series it was summed from
    rows = {
        "interval_start": start + step[first] * grain,
        **{name: coded([getattr(g, name) if g else None for g in gpus])[row_series]
           for name in ("gpu_uuid", "hostname", "gpu_index", "gpu_model", "mig_profile")},
        "job_id": coded(owners)[row_series],
        "gpu_interval": gpu_interval,  # for checks; not stored
        "samples": held,
        "seconds_us": seconds_us,
        "busy": summed(groups, n, value["busy"], False),
        "idle": summed(groups, n, value["idle"], False),
        "util": summed(groups, n, value["util"], False),
        "mem_peak": mem_peak,  # NaN: no value (NULL)
        "power": summed(groups, n, power, True),
        "energy": summed(groups, n, value["energy"], False),
        "power_energy": summed(groups, n, power_energy, True),
    }
    keep = seconds_us > 0
    return rows if keep.all() else {k: v[keep] for k, v in rows.items()}


def owner_seconds_us(gpu_interval: np.ndarray, samples: np.ndarray, scrape: int) -> np.ndarray:
    """Each row's share of its GPU-interval's seconds in microseconds (rows sorted by GPU-interval,
    then owner): round(running total x scrape) - round(running total before it), so the rows of
    a GPU-interval add up to its rounded total. Rounding is half away from zero, as SQL's round."""
    n = len(samples)
    index = np.arange(n)
    starts = np.r_[True, gpu_interval[1:] != gpu_interval[:-1]] if n else np.zeros(0, bool)
    position = index - np.maximum.accumulate(np.where(starts, index, 0)) if n else index
    running = samples.copy()
    for back in range(1, int(position.max(initial=0)) + 1):  # a GPU rarely has more than a few owners at once
        later = np.nonzero(position >= back)[0]
        running[later] += samples[later - back]
    before = np.where(starts, 0.0, np.r_[0.0, running[:-1]])

    def micro(total: np.ndarray) -> np.ndarray:
        scaled = total * scrape * 1e6
        whole = np.floor(scaled)
        return (whole + (scaled - whole >= 0.5)).astype(np.int64)

    return micro(running) - micro(before)
