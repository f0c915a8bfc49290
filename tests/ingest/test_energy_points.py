"""The plain path's energy (yolocost.ingest.energy): from the counter's raw samples
(`energy_points`), and telescoped from its last value per grain where nothing interrupts the
deltas (`telescoped_energy`, checked against the raw computation).

Hand-made samples on a 30 s scrape, 300 s grains, each sample 1 s after a scrape step's start
(so sample j belongs to the step ending 30 (j + 1) s after the window start). Expected figures
are worked out by hand from the generator's truth's rule: a sample's delta is its counter minus
the GPU's previous sample within 5 minutes (a drop is a reset: the value itself; no previous
sample within 5 minutes: no delta), given to the series of that sample.
"""

from __future__ import annotations

import random

import pytest

from yolocost.ingest.decoding import Points
from yolocost.ingest.energy import energy_points, raw_energy, telescoped_energy

S = 1_790_812_800  # a UTC midnight
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def _series(uuid: str, pod: str, samples: dict[int, int]) -> dict:
    return {"metric": {"__name__": ENERGY, "UUID": uuid, "pod": pod},
            "values": [[S + 30 * j + 1, str(v)] for j, v in sorted(samples.items())]}


def _energy(answer: list[dict]) -> dict[tuple[str, int], float]:
    points = Points(["samples", "energy"], S, S + 600, 300)
    keys, values = energy_points(points, answer, S, S + 600)
    return {(points.labels[k // points.steps]["pod"], int(k % points.steps)): float(v) for k, v in zip(keys, values)}


def test_steady_counter_gives_each_grain_its_ten_deltas():
    # samples from 5 minutes before the window: the first step's delta is there too
    got = _energy([_series("GPU-1", "a", {j: 1000 + 100 * j for j in range(-10, 20)})])
    assert got == {("a", 0): 1000.0, ("a", 1): 1000.0}


def test_a_reset_gives_the_new_value():
    values = {j: 5000 + 100 * j for j in range(-10, 5)} | {j: 7 + 100 * (j - 5) for j in range(5, 20)}
    got = _energy([_series("GPU-2", "b", values)])
    assert got == {("b", 0): 5 * 100 + 7 + 4 * 100, ("b", 1): 1000.0}


def test_no_delta_after_more_than_five_minutes_without_a_sample():
    # samples up to j = 2, then none until j = 15 (6.5 minutes later)
    values = {j: 100 * j for j in range(-10, 3)} | {j: 100 * j + 50 for j in range(15, 20)}
    got = _energy([_series("GPU-3", "c", values)])
    assert got == {("c", 0): 300.0, ("c", 1): 400.0}


def test_an_owner_change_splits_the_grain_by_sample():
    counter = {j: 10_000 + 100 * j for j in range(-10, 20)}
    got = _energy([_series("GPU-4", "d", {j: v for j, v in counter.items() if j <= 4}),
                   _series("GPU-4", "e", {j: v for j, v in counter.items() if j >= 5})])
    assert got == {("d", 0): 500.0, ("e", 0): 500.0, ("e", 1): 1000.0}


def test_gpus_are_differenced_apart():
    got = _energy([_series("GPU-5", "f", {j: 100 * j for j in range(-10, 20)}),
                   _series("GPU-6", "g", {j: 10**12 + 7 * j for j in range(-10, 20)})])
    assert got == {("f", 0): 1000.0, ("f", 1): 1000.0, ("g", 0): 70.0, ("g", 1): 70.0}


# ---- the telescoped path (`telescoped_energy`): a grain's deltas summed as last minus last

GRAIN, SCRAPE = 300, 30


def _served(series: list[dict], grains: int, grain: int) -> tuple[list[dict], list[dict], list[dict], set[str]]:
    """What the server answers for a chunk of `grains` grains from raw samples, worked out here
    sample by sample: the plain `samples` query (scrape intervals with a sample, per series x
    grain; utilization comes with energy, one scrape), `energy_last` and `energy_count` (the
    last value and the number of samples per series x grain), all as query_range answers at the
    grain ends, and `energy_resets` (the GPUs whose counter drops in the chunk)."""
    samples, last, count, resets = [], [], [], set()
    for s in series:
        points = sorted((float(t), float(v)) for t, v in s["values"])
        held, lasts, counts = [], [], []
        for g in range(grains):
            lo, hi = S + g * grain, S + (g + 1) * grain
            inside = [(t, v) for t, v in points if lo <= t < hi]
            if inside:
                held.append([hi, str(len({int(t - S) // SCRAPE for t, _ in inside}))])
                lasts.append([hi, str(inside[-1][1])])
                counts.append([hi, str(len(inside))])
        chunk = [v for t, v in points if S - SCRAPE <= t < S + grains * grain]
        if any(b < a for a, b in zip(chunk, chunk[1:])):
            resets.add(s["metric"]["UUID"])
        labels = {k: v for k, v in s["metric"].items() if k != "__name__"}
        samples.append({"metric": labels, "values": held})
        last.append({"metric": labels, "values": lasts})
        count.append({"metric": labels, "values": counts})
    return samples, last, count, resets


def _both_ways(series: list[dict], grains: int, grain: int = GRAIN) -> tuple[dict, dict, list]:
    """(telescoped + raw for the rest, raw for the whole chunk, the raw requests) per (pod, grain)."""
    end = S + grains * grain
    points = Points(["samples", "energy"], S, end, grain)
    samples, last, count, resets = _served(series, grains, grain)
    keys, values, raw = telescoped_energy(points, points.arrays(samples), points.arrays(last),
                                          points.arrays(count), resets, SCRAPE)
    got = dict(zip(keys.tolist(), values.tolist()))
    for a, b, wanted in raw:
        window = [{"metric": s["metric"], "values": [v for v in s["values"] if a - 300 <= v[0] < b]}
                  for s in series]  # what the server sends: every series of the piece's GPUs and more
        k, v = raw_energy(points, window, a, b, wanted)
        assert not set(k.tolist()) & set(got), "a grain computed both ways"
        got.update(zip(k.tolist(), v.tolist()))
    k, v = energy_points(points, series, S, end)
    whole = dict(zip(k.tolist(), v.tolist()))
    named = lambda d: {(points.labels[k // points.steps]["pod"], k % points.steps): x for k, x in d.items()}  # noqa: E731
    return named(got), named(whole), raw


def test_a_steady_counter_is_telescoped_after_the_chunks_first_grain():
    counter = {j: 1000 + 100 * j for j in range(-10, 30)}
    got, whole, raw = _both_ways([_series("GPU-1", "a", counter)], 3)
    assert got == whole == {("a", 0): 1000.0, ("a", 1): 1000.0, ("a", 2): 1000.0}
    assert raw == [(S, S + GRAIN, {"GPU-1": {0}})]  # only the first grain: the grain before is not in the chunk


def test_an_owner_change_sends_its_grain_and_the_next_to_raw_samples():
    counter = {j: 10_000 + 100 * j for j in range(-10, 40)}
    got, whole, raw = _both_ways([_series("GPU-4", "d", {j: v for j, v in counter.items() if j <= 14}),
                                  _series("GPU-4", "e", {j: v for j, v in counter.items() if j >= 15})], 4)
    assert got == whole == {("d", 0): 1000.0, ("d", 1): 500.0, ("e", 1): 500.0, ("e", 2): 1000.0,
                            ("e", 3): 1000.0}
    # the first grain, the change and the grain after it (the old series within 5 minutes)
    assert raw == [(S, S + 3 * GRAIN, {"GPU-4": {0, 1, 2}})]  # grain 3 telescoped


def test_a_counter_that_drops_between_two_owners_is_not_telescoped():
    # no series drops on its own; the GPU's counter does: e's first sample (7) is newer than d's
    # last (11,400) and lower, a reset, so e's grain 1 gets 7 + 4 x 100 (not deferred until d's
    # value leaves the 5 minutes, as the greatest of the series' values would have it)
    got, whole, raw = _both_ways([_series("GPU-7", "d", {j: 10_000 + 100 * j for j in range(-10, 15)}),
                                  _series("GPU-7", "e", {j: 7 + 100 * (j - 15) for j in range(15, 40)})], 4)
    assert got == whole == {("d", 0): 1000.0, ("d", 1): 500.0, ("e", 1): 407.0, ("e", 2): 1000.0,
                            ("e", 3): 1000.0}
    assert raw == [(S, S + 3 * GRAIN, {"GPU-7": {0, 1, 2}})]


def test_a_reset_a_missed_scrape_and_a_long_gap_go_to_raw_samples():
    reset = {j: 5000 + 100 * j for j in range(-10, 15)} | {j: 7 + 100 * (j - 15) for j in range(15, 50)}
    missed = {j: 100 * j for j in range(-10, 50) if j != 23}
    gap = {j: 100 * j for j in range(-10, 50) if not 31 <= j <= 41}
    got, whole, raw = _both_ways([_series("GPU-2", "r", reset), _series("GPU-3", "m", missed),
                                  _series("GPU-5", "g", gap)], 5)
    assert got == whole
    assert got[("r", 1)] == 4 * 100 + 7 + 5 * 100 and got[("m", 2)] == 1000.0  # by the rule, from raw samples
    assert got[("g", 3)] == 100.0 and got[("g", 4)] == 700.0  # none for the first sample 5+ minutes after the last
    # grain 0: the chunk's first; a counter that drops sends its GPU's every grain of the chunk; the
    # missed scrape its own grain only (the next has a sample in the grain before); the gap grains 3
    # and 4. Grains of one hour are read together
    assert raw == [(S, S + 5 * GRAIN, {"GPU-2": {0, 1, 2, 3, 4}, "GPU-3": {0, 2}, "GPU-5": {0, 3, 4}})]


@pytest.mark.parametrize("grain", [60, 300, 900])
def test_random_counters_telescope_to_what_raw_samples_give(grain):
    # grains shorter than the 5-minute lookback need every grain it reaches settled alike
    rng = random.Random(7)
    for round_ in range(40):
        series = []
        for n in range(4):
            value, samples, pod = rng.randrange(10**9), {}, 0
            for j in range(-10, 120):
                if rng.random() < 0.03:
                    pod += 1  # owner change
                if rng.random() < 0.05:
                    continue  # missed scrape
                value = rng.randrange(100) if rng.random() < 0.01 else value + rng.randrange(1, 5000)
                samples.setdefault(pod, {})[j] = value
            series += [_series(f"GPU-{n}", f"{n}-{p}", v) for p, v in samples.items()]
        got, whole, _ = _both_ways(series, 120 * SCRAPE // grain, grain)
        assert got == whole, round_
