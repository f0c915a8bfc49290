"""The energy counter's maths: energy per series x grain from DCGM's cumulative counter.

A GPU's counter is differenced sample by sample (`energy_points`), which counts every
stored sample once whoever owned the GPU at it; where nothing interrupts the deltas
through a grain, they telescope to the grain's last value minus the one before
(`telescoped_energy`), which the server can answer without sending raw samples. The
grains that do not telescope are read raw an hour at a time (`raw_energy`).
"""

from __future__ import annotations

import numpy as np

from .. import promql
from ..attribution import uuid_of
from .decoding import Points, aligned, flat

RAW_SECONDS = 3600  # the grains whose energy is read raw go together by this much (see telescoped_energy)


def energy_points(points: Points, answer: list[dict], start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(key, energy) per series x grain step of [start, end) from the energy counter's raw
    samples in [start - LOOKBACK, end) (`GrainQueries.energy_samples`), sample by sample: a
    GPU's samples (all its series together) in time order, each one's delta is its value
    minus the GPU's previous sample within LOOKBACK, or the value itself where it dropped (a
    reset); no delta without a previous sample within LOOKBACK. The delta goes to the
    sample's series (its labels are those of the utilization series of the same scrape, so
    its owner), in the grain interval holding the sample: where scrapes are stamped late, two
    samples may share a scrape step and none be in the one before, and each still has its
    own delta. Samples of one GPU at one time (copies of one scrape) are one value, the
    greatest, whose delta each of them takes. A NaN (a staleness marker) is no sample. Keys
    are `Points.arrays`' (series id x steps + grain step)."""
    ms, back = 1000, promql.LOOKBACK * 1000
    sid = points.sids(answer)
    uuids: dict[str, int] = {}
    gpu = np.array([uuids.setdefault(uuid_of(s["metric"]), len(uuids)) for s in answer], np.int64)
    sizes, t, value = flat(answer, ms)
    series = np.repeat(np.arange(len(answer)), sizes)
    keep = (t >= start * ms - back) & (t < end * ms) & ~np.isnan(value)  # a NaN is a staleness marker, no sample
    t, value, series = t[keep], value[keep], series[keep]
    if not len(t):
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    g = gpu[series]
    order = np.lexsort((value, t, g))
    t, value, series, g = t[order], value[order], series[order], g[order]
    # one value per GPU and time: the greatest (the last of its group in this order)
    moment = np.r_[True, (g[1:] != g[:-1]) | (t[1:] != t[:-1])]
    group = np.cumsum(moment) - 1
    last_of = np.r_[np.flatnonzero(moment)[1:] - 1, len(t) - 1]
    gv, gt, gg = value[last_of], t[last_of], g[last_of]
    prev_ok = np.r_[False, (gg[1:] == gg[:-1]) & (gt[1:] - gt[:-1] <= back)]
    before = np.r_[np.nan, gv[:-1]]
    delta = np.where(prev_ok, np.where(gv >= before, gv - before, gv), np.nan)
    d = delta[group]
    ok = ~np.isnan(d) & (t >= start * ms)
    grain_step = (t[ok] - points.start * ms) // (points.grain * ms)
    keys, where = np.unique(sid[series[ok]] * points.steps + grain_step, return_inverse=True)
    return keys, np.bincount(where, d[ok], len(keys))


def raw_energy(points: Points, answer: list[dict], start: int, end: int, wanted: dict[str, set[int]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """`energy_points` of raw samples of [start, end), kept for the `wanted` grain steps of each
    GPU (a piece of `telescoped_energy`'s; the answer may hold more)."""
    answer = [s for s in answer if uuid_of(s["metric"]) in wanted]
    keys, values = energy_points(points, answer, start, end)
    keep = np.array([k % points.steps in wanted[uuid_of(points.labels[k // points.steps])]
                     for k in keys.tolist()], bool)
    return keys[keep], values[keep]


def telescoped_energy(points: Points, samples: tuple[np.ndarray, np.ndarray],
                      last: tuple[np.ndarray, np.ndarray], count: tuple[np.ndarray, np.ndarray],
                      reset: set[str], scrape: int
                      ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, dict[str, set[int]]]]]:
    """The plain GPUs' energy per series x grain step where the counter's deltas telescope, and
    the grains left for raw samples (`energy_points`) as (start, end, {GPU: grain steps}).

    `energy_points` gives each sample the GPU's counter minus its previous sample within
    LOOKBACK, to the sample's series. Where, through the grain and the LOOKBACK before it, a
    GPU's only series is S (in utilization and energy alike), S holds a sample of both in every
    scrape step of the grain (its energy comes with the utilization, one scrape) and one in the
    grain before (in every step, for grains longer than LOOKBACK), and its counter does not
    drop, every sample has its previous one within LOOKBACK, every delta goes to S, and they
    sum to S's last value in the grain minus its last value in the grain before.
    `samples` is the plain `slots` answer (scrape steps holding a sample: a step of a late
    scrape that holds none sends the grain to raw samples), `last` and `count` the
    `energy_last` and `energy_count` answers (`Points.arrays`); `reset` the GPUs whose counter
    drops in the chunk (`energy_resets`). A chunk's first grains lack the LOOKBACK before
    them here, so they always go raw."""
    grain, steps = points.grain, points.steps
    full, back = grain // scrape, -(-promql.LOOKBACK // grain)  # grains the LOOKBACK reaches into
    uuids: dict[str, int] = {}
    gpu_of_sid = np.array([uuids.setdefault(uuid_of(labels), len(uuids)) for labels in points.labels],
                          np.int64)
    shape = (len(uuids), steps)

    def per_cell(key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per GPU x grain: the series held; the one series where it is one (else -1); whether
        that one has a sample in every scrape interval."""
        sid = key // steps
        cell = gpu_of_sid[sid] * steps + key % steps
        held = np.bincount(cell, minlength=shape[0] * steps).reshape(shape)
        lone = np.full(held.size, -1, np.int64)
        lone[cell] = sid
        whole = np.zeros(held.size, bool)
        whole[cell] = value == full
        one = held == 1
        return held, np.where(one, lone.reshape(shape), -1), whole.reshape(shape) & one

    held, lone, whole = per_cell(*samples)
    e_held, e_lone, e_whole = per_cell(*count)
    fast = np.zeros(shape, bool)
    now_ = slice(back, steps)
    series = lone[:, now_]
    fast[:, now_] = whole[:, now_] & e_whole[:, now_] & (e_lone[:, now_] == series)
    for d in range(1, back + 1):
        was = slice(back - d, steps - d)
        alone = ((held[:, was] == 0) | (lone[:, was] == series)) & ((e_held[:, was] == 0) | (e_lone[:, was] == series))
        fast[:, now_] &= alone
    before_ok = e_lone[:, back - 1:steps - 1] == series  # S's energy in the grain before
    if grain > promql.LOOKBACK:  # its newest sample there within LOOKBACK of the grain's start
        before_ok &= e_whole[:, back - 1:steps - 1]
    fast[:, now_] &= before_ok
    fast[[n for u, n in uuids.items() if u in reset]] = False
    g, j = np.nonzero(fast)
    series = lone[g, j]
    now, before = aligned(series * steps + j, *last), aligned(series * steps + j - 1, *last)
    ok = now >= before  # (a NaN value compares false: raw samples decide)
    fast[g[~ok], j[~ok]] = False
    # the rest an hour at a time: each request costs the server about as much as reading a few
    # dozen series, so the grains of an hour go together (each GPU from its first grain there
    # on), and only the grains asked for are kept of the answer
    per = max(1, RAW_SECONDS // grain)
    raw_g, raw_j = np.nonzero((held > 0) & ~fast)
    names = list(uuids)
    hours: dict[int, dict[str, set[int]]] = {}
    for gpu, at in zip(raw_g.tolist(), raw_j.tolist()):
        hours.setdefault(at // per, {}).setdefault(names[gpu], set()).add(at)
    pieces = []
    for hour, wanted in sorted(hours.items()):
        first, end = min(map(min, wanted.values())), max(map(max, wanted.values())) + 1
        pieces.append((points.start + first * grain, points.start + end * grain, wanted))
    return series[ok] * steps + j[ok], (now - before)[ok], pieces
