"""The plain path's energy, computed from the counter's raw samples (`ingest._energy_points`).

Hand-made samples on a 30 s scrape, 300 s grains, each sample 1 s after a scrape step's start
(so sample j belongs to the step ending 30 (j + 1) s after the window start). Expected figures
are worked out by hand from the rule the joined path's PromQL and the generator's truth share:
a sample's delta is its counter minus the GPU's previous value within 5 minutes (a drop is a
reset: the value itself; no previous value within 5 minutes: no delta), given to the series of
that sample.
"""

from __future__ import annotations

from yolocost.ingest import _energy_points, _Points

S = 1_790_812_800  # a UTC midnight
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def _series(uuid: str, pod: str, samples: dict[int, int]) -> dict:
    return {"metric": {"__name__": ENERGY, "UUID": uuid, "pod": pod},
            "values": [[S + 30 * j + 1, str(v)] for j, v in sorted(samples.items())]}


def _energy(answer: list[dict]) -> dict[tuple[str, int], float]:
    points = _Points(["samples", "energy"], S, S + 600, 300)
    keys, values = _energy_points(points, answer, S, S + 600, 30)
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
