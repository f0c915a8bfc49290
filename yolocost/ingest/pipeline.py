"""The request pipeline of the grain queries: every chunk of the window, planned, asked and
assembled, with the server kept busy.

GPUs that need the attribution join (job-info, MIG, more than one series at a sample) get
`grain_queries`; all others the cheap per-series `plain_queries` (promql.py); both answer in
the same shape, one point per series and grain step. A chunk's answers are decoded by the
worker thread that fetched them, and its points go on as soon as all of them are in, so the
fetch holds a few chunks whatever the window's length.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from .. import coverage, promql
from ..attribution import gpu_of, uuid_of
from ..config import Config
from ..errors import DataError
from ..promclient import PrometheusClient, PrometheusError, QueryTooBig
from .decoding import RAW_UTIL, Points, aligned, collided, raw_utilization
from .energy import RAW_SECONDS, raw_energy, telescoped_energy

MAX_POINTS = 11_000  # Prometheus refuses more points per series in one query_range
TELESCOPE = ("slots", "energy_last", "energy_count", "energy_resets")  # what `_telescope` reads
EXACT = ("slots", *RAW_UTIL)  # what `_exact` reads (and `prof_samples` in auto mode)
HELD = set(TELESCOPE + EXACT + ("prof_samples",))  # the plain GPUs' answers a chunk holds for those two
SERIES_COUNTS = ("series_samples", "series_slots")  # the joined GPUs' answers `_uncounted` reads

Keep = Callable[[Points, tuple], None]  # what takes a chunk's points (`Points.keep_chunk`'s columns)


def chunks(config: Config, start: int, end: int) -> list[tuple[int, int]]:
    """The request windows of [start, end): [prometheus] chunk_hours, on the grain, and no more
    grain steps than one query_range may answer."""
    grain = config.grain_seconds
    size = min(config.prometheus.chunk_hours * 3600, (MAX_POINTS - 1) * grain)
    size = max(grain, size // grain * grain)
    return [(a, min(a + size, end)) for a in range(start, end, size)]


@dataclass(eq=False)
class Chunk:
    """One request window of the grain queries and what has come back for it so far."""

    start: int
    end: int
    waiting: int = 0  # grain queries still out
    dropped: bool = False  # refused as too big: split, answers ignored
    parts: list = field(default_factory=list)
    points: Points | None = None  # its series, numbered apart from every other chunk's
    held: dict = field(default_factory=dict)  # the plain GPUs' answers `_telescope` and `_exact` read
    telescoped: bool = False  # the plain GPUs' energy is settled (raw requests sent)
    exact: bool = False  # the plain GPUs' busy and idle are settled (raw requests sent)
    counts: dict = field(default_factory=dict)  # the joined GPUs' `series_counts` answers
    needs: tuple = ()  # what `_exact` reads (`EXACT`, and `prof_samples` where sent)
    uncounted: dict = field(default_factory=dict)  # (host, GPU, interval) -> samples not counted


def by_hour(points: Points, cells: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """The cells (series x grain step) grouped by the hour they lie in, as (start, end, cells):
    one raw request per hour reads all of them (as `telescoped_energy`'s pieces)."""
    per = max(1, RAW_SECONDS // points.grain)
    step = cells % points.steps
    pieces = []
    for hour in np.unique(step // per).tolist():
        mine = cells[step // per == hour]
        first, last = int((mine % points.steps).min()), int((mine % points.steps).max())
        pieces.append((points.start + first * points.grain, points.start + (last + 1) * points.grain, mine))
    return pieces


class GrainPipeline:
    """Every grain query for every chunk of a window. The plain GPUs' energy comes last: once
    their samples and counter values are in (`_telescope`), raw samples are asked for the
    grains those do not settle.

    Pipelined: every chunk's planning query is queued at once and a chunk's grain queries
    are queued as soon as its plan is back, so the server always has `concurrency`
    requests to work on (no chunk waits for the slowest query of the one before). A
    chunk's answers are kept only once all of them have arrived; a chunk refused as too
    big is dropped whole and planned again as two halves. Each answer is turned into
    arrays by the worker thread that fetched it, so decoded JSON lives only as long as its
    conversion (the small plan and resets answers stay as they are); at most `concurrency` + 2
    requests are out or converted and not yet taken up here. A chunk's
    points, once all in, go to `keep` (with the `Points` that names their series) and
    are not held here after.

    A request's kind: "plan", "plain" (a plain query), "part" (a joined one), "raw" (energy
    samples), "rawutil" (utilization samples)."""

    def __init__(self, config: Config, client: PrometheusClient, queries: promql.GrainQueries,
                 progress: Callable[[str], None], always_special: set[str], keep: Keep):
        self.config, self.client, self.queries, self.say = config, client, queries, progress
        self.where = client.where
        self.always_special = always_special  # GPUs joined in every chunk (job-info, MIG)
        self.keep = keep
        self.grain = config.grain_seconds
        self.names = list(queries.grain_queries())
        self.running: dict[Future, tuple[Chunk, object, str]] = {}  # future -> (chunk, query name, kind)
        self.backlog: deque = deque()  # (chunk, name, kind, function, arguments) not sent yet
        self.limit = config.prometheus.concurrency + 2  # requests out or converted, not yet taken up
        self.pool: ThreadPoolExecutor | None = None
        self.total = self.done = 0  # seconds of the window, and of its chunks kept
        self.requests = 0
        self.splits = 0
        self.uncounted: dict[tuple[str, str, int], int] = {}  # (host, GPU, interval) -> samples not counted

    def run(self, start: int, end: int) -> None:
        """Fetch [start, end), handing each chunk's points to `keep` as it completes."""
        self.total, self.done = end - start, 0
        self.pool = ThreadPoolExecutor(self.config.prometheus.concurrency)
        try:
            for a, b in chunks(self.config, start, end):
                self._plan(Chunk(a, b))
            self._fill()
            while self.running:
                finished, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
                for fut in finished:
                    chunk, name, kind = self.running.pop(fut)
                    if chunk.dropped:  # (its cancelled futures among them)
                        continue
                    try:
                        answer = fut.result()
                    except QueryTooBig as too_big:
                        self._split(chunk, too_big)
                        continue
                    self._arrived(chunk, name, kind, answer)
                    del answer
                self._fill()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)

    # ---- requests
    def _send(self, chunk: Chunk, name, kind: str, fn, *args) -> None:
        self.requests += 1
        # a chunk's raw requests go first: its points are held until they are answered
        (self.backlog.appendleft if kind in ("raw", "rawutil") else self.backlog.append)((chunk, name, kind, fn, args))

    def _fill(self) -> None:
        while self.backlog and len(self.running) < self.limit:
            chunk, name, kind, fn, args = self.backlog.popleft()
            if not chunk.dropped:
                assert self.pool is not None  # run() is going
                self.running[self.pool.submit(self._fetch, chunk, name, kind, fn, args)] = (chunk, name, kind)

    def _fetch(self, chunk: Chunk, name, kind: str, fn, args):
        """One request's answer, turned into arrays by the thread that fetched it (a plan's
        and the resets' answers stay as they are): decoded JSON takes some ten times its
        arrays' memory, and goes at once instead of waiting for this thread."""
        answer = fn(*args)
        if kind == "plan" or name == "energy_resets":
            return answer
        assert chunk.points is not None  # from its plan until it completes
        if kind == "raw":
            return self._energy_arrays(chunk.points, answer, *name)
        if kind == "rawutil":
            return self._utilization_arrays(chunk.points, answer, *name)
        return self._arrays(chunk.points, answer)

    # ---- a chunk's course: plan, refine, queue; telescope and exact once their answers are in
    def _plan(self, chunk: Chunk) -> None:
        chunk.points = Points(self.names, chunk.start, chunk.end, self.grain)
        self._send(chunk, None, "plan", self.client.query, self.queries.several_series(chunk.end - chunk.start),
                   chunk.end)

    def _refine(self, chunk: Chunk, plan_answer: list[dict]) -> None:
        """The GPUs with two series in one scrape step (usually few): which of them need the
        join (`special_gpus`), asked of them alone, as it costs the server several times more."""
        several = sorted({uuid_of(r["metric"]) for r in plan_answer} - {""})
        if not several:
            self._queue(chunk, [])
            return
        self._send(chunk, "refine", "plan", self.client.query,
                   self.queries.only(several, keep=True).special_gpus(chunk.end - chunk.start), chunk.end)

    def _queue(self, chunk: Chunk, plan_answer: list[dict]) -> None:
        shared = {uuid_of(r["metric"]) for r in plan_answer if "device_series" not in r["metric"]}
        device = {uuid_of(r["metric"]) for r in plan_answer if "device_series" in r["metric"]} - {""}
        special = sorted((self.always_special | shared | device) - {""})
        plain = self.queries.only(special, keep=False)
        queries = [(name, "plain", q) for name, q in plain.plain_queries().items()]
        if special:
            queries += [(name, "part", q) for name, q in self.queries.only(special, keep=True).series_counts().items()]
        # the joined queries: the longer form only for GPUs with a device-level series (promql.special_gpus)
        for group, longer in ((sorted(set(special) - device), False), (sorted(device), True)):
            if group:
                joined = replace(self.queries, device_series=longer).only(group, keep=True)
                queries += [(name, "part", q) for name, q in joined.grain_queries().items()]
        chunk.waiting = len(queries) + 1
        chunk.needs = EXACT + tuple(n for n, kind, _ in queries if kind == "plain" and n == "prof_samples")
        for name, kind, q in queries:
            self._send(chunk, name, kind, self.client.query_range, q, chunk.start + self.grain, chunk.end, self.grain)
        self._send(chunk, "energy_resets", "plain", self.client.query, plain.energy_resets(chunk.end - chunk.start),
                   chunk.end)

    def _telescope(self, chunk: Chunk) -> None:
        """The plain GPUs' energy once their samples and counters are in: differenced where
        a grain allows it, raw samples asked for the rest."""
        held = chunk.held
        assert chunk.points is not None
        keys, values, raw = telescoped_energy(
            chunk.points, held["slots"], held["energy_last"], held["energy_count"],
            {uuid_of(r["metric"]) for r in held["energy_resets"]},
            self.config.prometheus.scrape_interval_seconds)
        chunk.parts.append(("energy", (keys, values)))
        chunk.telescoped = True
        for name in ("energy_last", "energy_count", "energy_resets"):
            del held[name]
        chunk.waiting += len(raw)
        for a, b, wanted in raw:
            # the GPUs named: excluding the chunk's special ones instead costs the server more
            which = self.queries.only(sorted(wanted), keep=True)
            self._send(chunk, (a, b, wanted), "raw", self.client.query, which.energy_samples(b - a), b)

    def _exact(self, chunk: Chunk) -> None:
        """The plain GPUs' samples, busy and idle counts and utilization, taken from raw
        samples where a subquery step held two samples of a series, or where a series'
        profiling metric has other samples than DCGM_FI_DEV_GPU_UTIL (`auto`;
        `GrainQueries.plain_queries`)."""
        held = chunk.held
        assert chunk.points is not None
        self._check_steps(chunk.points, held["samples"], held["slots"])
        redo = collided(held["samples"], held["slots"])
        if "prof_samples" in held:
            redo = np.union1d(redo, collided(held.pop("prof_samples"), held["samples"]))
        for name in RAW_UTIL:
            key, value = held.pop(name)
            keep = ~np.isin(key, redo)
            chunk.parts.append((name, (key[keep], value[keep])))
        chunk.exact = True
        pieces = by_hour(chunk.points, redo)
        chunk.waiting += len(pieces)
        for a, b, cells in pieces:
            uuids = sorted({uuid_of(chunk.points.labels[k // chunk.points.steps]) for k in cells.tolist()})
            self._send(chunk, (a, b, cells), "rawutil", self.client.query,
                       self.queries.only(uuids, keep=True).raw_util_samples(b - a), b)

    def _split(self, chunk: Chunk, too_big: QueryTooBig) -> None:
        chunk.dropped = True
        for fut, (c, _, _) in self.running.items():
            if c is chunk:
                fut.cancel()
        grain = self.grain
        if chunk.end - chunk.start <= grain:
            raise PrometheusError(
                f"{too_big}; even a single {grain} s interval is too much for this server "
                "(raise its --query.max-samples or --query.timeout, or [prometheus] timeout_seconds)"
            ) from None
        mid = chunk.start + (chunk.end - chunk.start) // grain // 2 * grain
        self.splits += 1
        self.say(f"server refused {coverage.at_epoch(chunk.start)}..{coverage.at_epoch(chunk.end)} "
                 f"({too_big.__class__.__name__}): splitting it")
        self._plan(Chunk(chunk.start, mid))
        self._plan(Chunk(mid, chunk.end))

    def _arrived(self, chunk: Chunk, name, kind: str, answer) -> None:
        """One answer of a chunk that is not dropped, put where it belongs; the steps it
        unblocks taken, and the chunk kept once nothing of it is out."""
        if kind == "plan":
            (self._queue if name == "refine" else self._refine)(chunk, answer)
            return
        if kind == "raw":
            chunk.parts.append(("energy", answer))
        elif kind == "rawutil":
            chunk.parts += list(zip(RAW_UTIL, answer))
        elif kind == "part" and name in SERIES_COUNTS:
            chunk.counts[name] = answer
            if len(chunk.counts) == len(SERIES_COUNTS):
                assert chunk.points is not None
                chunk.uncounted = self._uncounted(chunk.points, chunk.counts)
        elif kind == "plain" and name in HELD:
            chunk.held[name] = answer
        else:
            chunk.parts.append((name, answer))
        if not chunk.telescoped and all(n in chunk.held for n in TELESCOPE):
            self._telescope(chunk)
        if not chunk.exact and all(n in chunk.held for n in chunk.needs):
            self._exact(chunk)
        chunk.waiting -= 1
        if chunk.waiting == 0:
            self._complete(chunk)

    def _complete(self, chunk: Chunk) -> None:
        """A chunk all of whose answers are in: its points to `keep`, and none held here after."""
        for gpu, n in chunk.uncounted.items():  # a chunk counts once it is whole (not split)
            self.uncounted[gpu] = self.uncounted.get(gpu, 0) + n
        assert chunk.points is not None
        columns = chunk.points.keep_chunk(chunk.parts)
        self.keep(chunk.points, columns)
        chunk.parts, chunk.points = [], None
        del columns
        self.done += chunk.end - chunk.start
        self.say(f"fetched {coverage.at_epoch(chunk.start)}..{coverage.at_epoch(chunk.end)} "
                 f"({100 * self.done / self.total:.0f}%)")

    # ---- decoding in the worker threads, and what the answers must satisfy
    def _arrays(self, points: Points, answer: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """`points.arrays(answer)`; a point that is not a [time, "value"] pair on the query's
        steps (no Prometheus sends one, a broken proxy might) stops the ingest, naming the server."""
        try:
            return points.arrays(answer)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query_range", 'a point is not a [time, "value"] pair of numbers '
                                        "on the query's steps") from None

    def _energy_arrays(self, points: Points, answer: list[dict], start: int, end: int,
                       wanted: dict[str, set[int]]) -> tuple[np.ndarray, np.ndarray]:
        """`energy_points` of the raw samples of [start, end), kept for the `wanted` grain steps
        of each GPU (an answer holds more); a point that is not a [time, "value"] pair stops the
        ingest, naming the server (as `_arrays`)."""
        try:
            return raw_energy(points, answer, start, end, wanted)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query", 'a sample is not a [time, "value"] pair of '
                                        "numbers") from None

    def _utilization_arrays(self, points: Points, answer: list[dict], start: int, end: int,
                            cells: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """`raw_utilization` of the raw utilization samples of [start, end), a point that is not
        a [time, "value"] pair stopping the ingest, naming the server (as `_arrays`)."""
        q = self.queries
        try:
            return raw_utilization(points, answer, cells, q.busy, q.idle)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query", 'a sample is not a [time, "value"] pair of '
                                        "numbers") from None

    def _uncounted(self, points: Points, counts: dict) -> dict[tuple[str, str, int], int]:
        """Samples of the joined GPUs that the grain queries could not count (two in one
        subquery step of a series) per (host, GPU, interval start): `series_counts` raw samples
        minus steps held, the most of any of the GPU's series (the series of one GPU, e.g. its
        pods' on a shared GPU, share their scrapes' steps)."""
        (key, samples), slots = counts.pop("series_samples"), counts.pop("series_slots")
        self._check_steps(points, (key, samples), slots)
        short = samples - np.nan_to_num(aligned(key, *slots))
        out: dict[tuple[str, str, int], int] = {}
        for k, n in zip(key[short > 0].tolist(), short[short > 0].tolist()):
            gpu = gpu_of(points.labels[k // points.steps])
            if gpu is not None:
                cell = (gpu.hostname, gpu.gpu_uuid, points.start + (k % points.steps) * points.grain)
                out[cell] = max(out.get(cell, 0), int(n))
        return out

    def _check_steps(self, points: Points, samples: tuple[np.ndarray, np.ndarray],
                     slots: tuple[np.ndarray, np.ndarray]) -> None:
        """A grain holds at most one sample more than it has scrape intervals (the last one
        stamped late past its end), and a scrape step at most two samples of a series however
        late they were stamped: more samples means a scrape faster than configured (which the
        store probe measures on a few series only), fewer steps than half the raw samples a
        store that bounds ranges otherwise than measured (storeprobe.py). Stop, naming a series."""
        key, count = samples
        scrape = self.config.prometheus.scrape_interval_seconds
        most = points.grain // scrape + 1
        fast = np.flatnonzero(count > most)
        if len(fast):
            k = int(key[fast[0]])
            raise DataError(
                f"the series {_series_name(points.labels[k // points.steps])} at {self.where} holds "
                f"{int(count[fast[0]])} samples in the {points.grain} s from "
                f"{coverage.at_epoch(points.start + (k % points.steps) * points.grain)} (at most {most} at one "
                f"every {scrape} s): it is scraped more often than [prometheus] scrape_interval_seconds = {scrape}; "
                "set it to dcgm-exporter's scrape interval"
            )
        held = np.nan_to_num(aligned(key, *slots))
        wrong = np.flatnonzero(2 * held < count)
        if len(wrong):
            k = int(key[wrong[0]])
            at = points.start + (k % points.steps) * points.grain
            raise DataError(
                f"{self.where} answers the grain queries otherwise than its ranges were measured: the series "
                f"{_series_name(points.labels[k // points.steps])} holds {int(count[wrong[0]])} raw samples in the {points.grain} s from "
                f"{coverage.at_epoch(at)} but only {int(held[wrong[0]])} of its scrape steps hold one; nothing was written"
            )


def _series_name(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{n}={labels[n]}" for n in ("UUID", "uuid", "GPU_I_ID", "pod", "instance")
                           if labels.get(n)) + "}"
