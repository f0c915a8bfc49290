"""yolocost.ingest.energy's rules that test_energy_points.py leaves out: a staleness marker is
no sample, copies of one scrape take the greatest value, only the window's samples (and the
LOOKBACK before it, as previous values) count, and `raw_energy` keeps only the grains asked for.

Samples on a 30 s scrape, 300 s grains, sample j stamped 30 j + 1 s after the window start;
the expected figures are worked out by hand from `energy_points`' rule (a sample's delta is
the GPU's counter minus its previous sample within 5 minutes, a drop being a reset).
"""

from __future__ import annotations

from yolocost.ingest.decoding import Points
from yolocost.ingest.energy import energy_points, raw_energy

S = 1_790_812_800  # a UTC midnight
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def _series(uuid: str, pod: str, samples: dict[int, object]) -> dict:
    return {"metric": {"__name__": ENERGY, "UUID": uuid, "pod": pod},
            "values": [[S + 30 * j + 1, str(v)] for j, v in sorted(samples.items())]}


def _named(points: Points, keys, values) -> dict[tuple[str, int], float]:
    return {(points.labels[k // points.steps]["pod"], int(k % points.steps)): float(v) for k, v in zip(keys, values)}


def _energy(answer: list[dict]) -> dict[tuple[str, int], float]:
    points = Points(["samples", "energy"], S, S + 600, 300)
    return _named(points, *energy_points(points, answer, S, S + 600))


def test_a_staleness_marker_is_no_sample():
    # read as a sample, the NaN would end the deltas and the next value would count whole, as a reset
    values = {j: 1000 + 100 * j for j in range(-10, 20)} | {3: "NaN"}
    assert _energy([_series("GPU-1", "a", values)]) == {("a", 0): 1000.0, ("a", 1): 1000.0}


def test_copies_of_one_scrape_take_the_greatest_value():
    # the copy in pod b is low at j = 5: by itself it would read as a reset
    counter = {j: 1000 + 100 * j for j in range(-10, 20)}
    got = _energy([_series("GPU-2", "a", counter), _series("GPU-2", "b", counter | {5: 10})])
    assert got == {("a", 0): 1000.0, ("a", 1): 1000.0, ("b", 0): 1000.0, ("b", 1): 1000.0}


def test_only_the_window_and_the_lookback_before_it_are_read():
    # j = -11 is 329 s before the window: no previous value for j = 0; j = 20 is past the end
    values = {j: 100 * j for j in range(-20, -10)} | {j: 100 * j for j in range(0, 21)}
    assert _energy([_series("GPU-3", "c", values)]) == {("c", 0): 900.0, ("c", 1): 1000.0}


def test_raw_energy_keeps_the_grains_asked_for_of_the_gpus_asked_for():
    points = Points(["samples", "energy"], S, S + 600, 300)
    answer = [_series(f"GPU-{n}", pod, {j: 100 * j for j in range(-10, 20)}) for n, pod in ((4, "d"), (5, "e"), (6, "f"))]
    got = _named(points, *raw_energy(points, answer, S, S + 600, {"GPU-4": {1}, "GPU-5": {0}}))
    assert got == {("d", 1): 1000.0, ("e", 0): 1000.0}
