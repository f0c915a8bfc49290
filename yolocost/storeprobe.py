"""What the metric store does, measured on the window's own data before the grain queries.

The grain queries count every raw sample exactly once only if they know whether the store's
range selectors include their start (Prometheus 2.x: closed on both ends) or leave it out
(Prometheus 3.x, VictoriaMetrics: left-open), and only if `[prometheus]
scrape_interval_seconds` is the real sample spacing. A version string tells neither:
VictoriaMetrics answers `/api/v1/status/buildinfo` with nothing, Thanos and Mimir report
their own versions. So the ingest measures, with a handful of small queries that read only
a few series (the server's extra work stays far below that of the grain queries):

1. A few dcgm utilization series of different GPUs are located with one coarse
   `count_over_time` query, and their raw samples in one stretch are read with an instant
   query of a range selector, which answers with the stored timestamps.
2. The scrape interval is the median spacing of those samples (robust to gaps and jitter);
   one that differs from the configured interval stops the ingest with both values.
3. `count_over_time` over a range exactly as long as the distance between two consecutive
   samples, evaluated at the later one, answers 2 where ranges are closed and 1 where they
   are left-open; a range 1 ms longer must answer 2 either way.
4. Subqueries: their steps must fall on multiples of the step (the grain queries' steps
   then tile each interval), and their ranges must be bounded like range selectors.
5. After the grain queries, the samples they found on the probed GPUs are compared with the
   raw samples counted there by range selectors: far fewer stops the ingest, so a store
   that answers differently from what was measured never yields a short or zero bill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .attribution import gpu_of
from .coverage import at_epoch
from .errors import DataError
from .promclient import PrometheusClient, QueryTooBig
from .promql import matcher

PROBE_GPUS = 3  # series (of different GPUs) probed per round
PROBE_ROUNDS = 4  # rounds of candidates tried before giving up on finding samples
LOCATE_POINTS = 500  # at most this many coarse bins over the window
SCRAPE_TOLERANCE = 0.1  # measured vs configured scrape interval, relative


@dataclass(frozen=True)
class StoreFacts:
    """What was measured; `left_open` is what the grain queries use."""

    left_open: bool
    measured_on_samples: bool  # False: no raw samples found, judged from a subquery alone (or a guess)
    scrape_seconds: float | None  # median sample spacing, None when too few samples
    series: tuple[dict[str, str], ...]  # the probed series that hold samples in the window
    bin_seconds: int  # the coarse bins the spot check counts in
    bins: int  # bins from the window start

    def describe(self) -> str:
        ranges = "left-open" if self.left_open else "closed"
        how = "measured" if self.measured_on_samples else "not measured on samples: see above"
        scrape = f", samples every {_seconds(self.scrape_seconds)} s" if self.scrape_seconds else ""
        return f"range selectors {ranges} ({how}){scrape}"


def _seconds(value: float) -> str:
    return f"{round(value, 1):g}"


def _exact(labels: dict[str, str]) -> str:
    """A selector for exactly this series (the name included)."""
    return "{" + ", ".join(matcher(k, v) for k, v in sorted(labels.items())) + "}"


def _without_name(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k != "__name__"}


def _short(labels: dict[str, str]) -> str:
    keep = [k for k in ("__name__", "UUID", "uuid", "GPU_I_ID", "instance") if labels.get(k)]
    return "{" + ", ".join(matcher(k, labels[k]) for k in keep) + "}"


def spread(util_series: list[dict[str, str]]) -> list[dict[str, str]]:
    """Up to PROBE_GPUS x PROBE_ROUNDS of the series that name a GPU, spread evenly over their
    sorted label sets: what the probe draws its rounds from. The ingest keeps only these of
    each chunk of the window, so the probe never needs the window's series all at once."""
    named = sorted((s for s in util_series if gpu_of(s) is not None), key=lambda s: sorted(s.items()))
    n = min(len(named), PROBE_GPUS * PROBE_ROUNDS)
    return [named[i * len(named) // n] for i in range(n)]


class StoreProbe:
    """Runs the measurements against one server; `requests` counts what it sent."""

    def __init__(self, client: PrometheusClient, start: int, end: int, grain: int, scrape: int,
                 say: Callable[[str], None]):
        self.client, self.start, self.end, self.grain, self.scrape, self.say = client, start, end, grain, scrape, say
        self.where = client.where
        self.requests = 0
        grains = max(1, (end - start) // grain)
        self.bin_seconds = grain * math.ceil(grains / LOCATE_POINTS)
        self.bins = max(0, (end - start) // self.bin_seconds)

    # ---- the measurements
    def measure(self, util_series: list[dict[str, str]]) -> StoreFacts:
        """Range semantics and scrape interval of the store, from a few series of the window."""
        sub_left_open: bool | None = None
        raw: list[tuple[dict[str, str], np.ndarray]] = []  # (labels, timestamps in ms)
        try:
            sub_left_open = self._subquery_left_open()
            raw = self._raw_samples(util_series)
            why = "none of the probed GPU series holds samples in the window"
        except QueryTooBig as exc:  # a server limited below a few samples: the grain queries
            why = f"the server refused ({exc})"  # split, or say why they cannot
        if not raw:
            judged = "judged from a subquery" if sub_left_open is not None else "taken as left-open"
            self.say(f"could not measure how {self.where} bounds ranges: {why}; {judged}")
            return StoreFacts(sub_left_open is not False, False, None, (), self.bin_seconds, self.bins)
        left_open = self._range_left_open(raw)
        if left_open != sub_left_open:
            raise DataError(
                f"{self.where} bounds range selectors {_bounds(left_open)} but subquery ranges "
                f"{_bounds(sub_left_open)}; yolocost cannot count its samples exactly"
            )
        scrape = self._scrape_interval(raw)
        return StoreFacts(left_open, True, scrape, tuple(labels for labels, _ in raw), self.bin_seconds, self.bins)

    def _candidates(self, util_series: list[dict[str, str]]) -> list[list[dict[str, str]]]:
        """Rounds of series to probe, each of different GPUs, spread over the sorted series."""
        rounds: list[list[dict[str, str]]] = []
        for labels in spread(util_series):
            gpu = _gpu_uuid(labels)
            home = next((r for r in rounds if len(r) < PROBE_GPUS and all(_gpu_uuid(x) != gpu for x in r)), None)
            if home is None:
                rounds.append(home := [])
            home.append(labels)
        return rounds[:PROBE_ROUNDS]

    def _raw_samples(self, util_series: list[dict[str, str]]) -> list[tuple[dict[str, str], np.ndarray]]:
        """Raw sample timestamps (ms) of up to PROBE_GPUS series, each in its fullest coarse bin."""
        if self.bins == 0:
            return []
        for candidates in self._candidates(util_series):
            located = self._locate(candidates)
            out = []
            for labels, (at, count) in located.items():
                if count < 2:
                    continue
                self.requests += 1
                answer = self.client.query(f"{_exact(dict(labels))}[{self.bin_seconds}s]", at)
                # a NaN is a staleness marker (VictoriaMetrics returns them in raw ranges), no sample
                stamps = [round(float(t) * 1000) for s in answer for t, v in s.get("values", [])
                          if not math.isnan(float(v))]
                if len(stamps) >= 2:
                    out.append((dict(labels), np.unique(np.array(stamps, np.int64))))
            if out:
                return out
        return []

    def _locate(self, candidates: list[dict[str, str]]) -> dict[tuple, tuple[float, int]]:
        """The coarse bin (its end) holding the most samples of each candidate, and that count."""
        by_key = {tuple(sorted(_without_name(c).items())): c for c in candidates}
        promql = " or ".join(f"count_over_time({_exact(c)}[{self.bin_seconds}s])" for c in candidates)
        self.requests += 1
        answer = self.client.query_range(promql, self.start + self.bin_seconds,
                                         self.start + self.bins * self.bin_seconds, self.bin_seconds)
        best: dict[tuple, tuple[float, int]] = {}
        for s in answer:
            labels = by_key.get(tuple(sorted(_without_name(s["metric"]).items())))
            if labels is None:
                continue
            for t, v in s["values"]:
                count = int(float(v))
                key = tuple(sorted(labels.items()))
                if count > best.get(key, (0, 0))[1]:
                    best[key] = (float(t), count)
        return best

    def _range_left_open(self, raw: list[tuple[dict[str, str], np.ndarray]]) -> bool:
        """count_over_time over exactly the distance between two consecutive samples, at the later."""
        labels, stamps = max(raw, key=lambda r: len(r[1]))
        gaps = np.diff(stamps)
        typical = int(np.argmin(np.abs(gaps - np.median(gaps))))
        later, distance = int(stamps[typical + 1]), int(gaps[typical])
        exact = self._count(labels, distance, later)
        wider = self._count(labels, distance + 1, later)
        if wider != 2 or exact not in (1, 2):
            raise DataError(
                f"{self.where} does not count raw samples as a Prometheus query API does: count_over_time of "
                f"{_short(labels)} over {distance} ms and {distance + 1} ms at its sample of "
                f"{later / 1000:.3f} answered {exact} and {wider} (expected 1 or 2, and 2)"
            )
        return exact == 1

    def _count(self, labels: dict[str, str], range_ms: int, at_ms: int) -> int:
        self.requests += 1
        answer = self.client.query(f"count_over_time({_exact(labels)}[{range_ms}ms])", at_ms / 1000)
        return int(float(answer[0]["value"][1])) if answer else 0

    def _subquery_left_open(self) -> bool:
        """Subquery steps on multiples of the step, and whether the subquery range holds its
        start: a query of no data (`vector(0)`), so it costs the server nothing."""
        s = self.scrape
        self.requests += 2
        probe_at = self.start + s + 0.007  # between two multiples of the scrape interval
        last = self.client.query(f"max_over_time(timestamp(vector(0))[{2 * s}s:{s}s])", probe_at)
        step_at = float(last[0]["value"][1]) if last else math.nan
        if step_at != self.start + s:
            raise DataError(
                f"{self.where} evaluates subquery steps at {step_at:.3f} rather than on multiples of the "
                f"{s} s step ({self.start + s}); yolocost cannot count its samples exactly"
            )
        steps = self.client.query(f"count_over_time(vector(0)[{2 * s}s:{s}s])", self.start + 2 * s)
        n = int(float(steps[0]["value"][1])) if steps else 0
        if n not in (2, 3):
            raise DataError(f"{self.where} answers a subquery of 3 steps' length with {n} steps (expected 2 or 3); "
                            "yolocost cannot count its samples exactly")
        return n == 2

    def _scrape_interval(self, raw: list[tuple[dict[str, str], np.ndarray]]) -> float | None:
        """Median spacing of consecutive samples within each probed series; refused when it is
        not the configured interval (a faster or slower scrape changes seconds and cost)."""
        gaps = np.concatenate([np.diff(stamps) for _, stamps in raw]) / 1000
        if len(gaps) < 2:
            return None
        measured = float(np.median(gaps))
        if abs(measured - self.scrape) > SCRAPE_TOLERANCE * self.scrape:
            raise DataError(
                f"the GPU series at {self.where} hold a sample every {_seconds(measured)} s (median spacing of "
                f"{len(gaps) + len(raw)} samples of {len(raw)} series in the window), but [prometheus] "
                f"scrape_interval_seconds = {self.scrape}; set it to dcgm-exporter's scrape interval"
            )
        return measured

    # ---- after the grain queries
    def spot_check(self, facts: StoreFacts, gpu_uuid: np.ndarray, interval_start: np.ndarray,
                   samples: np.ndarray, uncounted: dict[str, int] | None = None) -> None:
        """The grain queries' samples on each probed GPU against the raw samples counted there.

        Every raw sample of a probed series is counted for its GPU (the plain GPUs' samples
        are raw counts; the joined GPUs' count each scrape step's sample once among their
        owners), so the GPU's samples summed over its owners cannot be fewer, less those
        the ingest found it could not count (`uncounted`, per GPU). Fewer means the store
        answered the grain queries otherwise than measured: stop rather than write a short
        or zero bill."""
        uncounted = uncounted or {}
        if not facts.series or facts.bins == 0:
            return
        width = facts.bin_seconds
        span_end = self.start + facts.bins * width
        ranged = f"{width * 1000 if facts.left_open else width * 1000 - 1}ms"
        promql = " or ".join(f"count_over_time({_exact(s)}[{ranged}] offset 1ms)" for s in facts.series)
        self.requests += 1
        try:
            answer = self.client.query_range(promql, self.start + width, span_end, width)
        except QueryTooBig as exc:
            self.say(f"warning: could not compare the grain queries' samples with raw samples: the server "
                     f"refused ({exc})")
            return
        raw: dict[str, float] = {}
        by_key = {tuple(sorted(_without_name(s).items())): s for s in facts.series}
        for s in answer:
            labels = by_key.get(tuple(sorted(_without_name(s["metric"]).items())))
            if labels is not None:
                gpu = _gpu_uuid(labels)
                raw[gpu] = raw.get(gpu, 0.0) + sum(float(v) for _, v in s["values"])
        inside = (interval_start >= self.start) & (interval_start < span_end)
        for gpu, held in sorted(raw.items()):
            found = float(samples[inside & (gpu_uuid == gpu)].sum())
            if held > 0 and found + uncounted.get(gpu, 0) < held:
                series = next(s for s in facts.series if _gpu_uuid(s) == gpu)
                raise DataError(
                    f"the grain queries at {self.where} found {found:g} samples of GPU {gpu} from "
                    f"{at_epoch(self.start)} to {at_epoch(span_end)} where its series {_short(series)} holds {held:g}: "
                    f"the store does not answer them as measured ({facts.describe()}); nothing was written"
                )


def _bounds(left_open: bool | None) -> str:
    return "left-open" if left_open else "closed"


def _gpu_uuid(labels: dict[str, str]) -> str:
    """The GPU of a series that names one (the probe's series all do)."""
    gpu = gpu_of(labels)
    assert gpu is not None
    return gpu.gpu_uuid
