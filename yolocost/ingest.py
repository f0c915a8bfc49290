"""`yolocost ingest`: one time window from Prometheus into the raw tables, atomically.

Everything is fetched first (grain-level points, and the energy counter's raw samples for
GPUs with one series at a time, see promql.py), in a child process (forked.py) whose
memory is gone before the write starts. Each chunk of the window is assembled into raw
rows as soon as all its answers are in and set aside in a Parquet file of a scratch folder
beside the database (`_Spill`), so the fetch holds a few chunks in memory whatever the
window's length. The rows are then written in one transaction that replaces the window and
rebuilds the models. A kill at any point leaves the database as it was; a lock file keeps a
second ingest of the same database out while one runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import math
import os
import re
import shutil
import tempfile
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable
from zoneinfo import ZoneInfo

import duckdb
import numpy as np

from . import coverage, db, forked, months, promql
from .attribution import Attribution, JobLabels, gpu_of, uuid_of
from .config import Config
from .errors import DataError, YolocostError
from .load import rebuild, replace_window, touched
from .promclient import PrometheusClient, PrometheusError, QueryTooBig
from .sqltext import literal
from .storeprobe import StoreProbe, spread

Progress = Callable[[str], None]
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
MAX_POINTS = 11_000  # Prometheus refuses more points per series in one query_range
TRAINING_SLACK = 3600  # progress series are read this long past the window end
RAW_SECONDS = 3600  # the grains whose energy is read raw go together by this much (see _telescoped_energy)
# dcgm utilization metrics read per [ingest] utilization, in order of preference for the message
_UTIL_METRICS = {"dev": (promql.UTIL_DEV,), "prof": (promql.UTIL_PROF,), "auto": (promql.UTIL_DEV, promql.UTIL_PROF)}


@dataclass(frozen=True)
class IngestResult:
    start: dt.datetime
    end: dt.datetime
    usage_rows: int
    jobs: int
    epochs: int
    requests: int
    chunks_split: int


def month_window(config: Config, month: str) -> tuple[dt.datetime, dt.datetime]:
    """[first, next first) of a calendar month in the configured time zone, as UTC instants."""
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month or ""):
        raise YolocostError(f"--month must read YYYY-MM, got {month!r}")
    if not 1970 <= int(month[:4]) <= 9998:
        raise YolocostError(f"--month must be a month from 1970-01 to 9998-12, got {month!r}")
    return months.window(config, month)


def parse_instant(text: str, config: Config, what: str) -> dt.datetime:
    """An ISO date or date-time; without an offset it is read in the configured time zone."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise YolocostError(f"{what} must be an ISO date or date-time such as 2026-10-01T00:00, got {text!r}") from None
    out_of_range = YolocostError(f"{what} must lie between 1970 and 9998 (UTC), got {text!r}")
    if not 1970 <= value.year <= 9998:  # outside, the arithmetic on UTC instants overflows
        raise out_of_range
    if value.tzinfo is None:
        value = value.replace(tzinfo=ZoneInfo(config.timezone))
    value = value.astimezone(UTC)
    if value.year < 1970:  # 1970-01-01 east of UTC: before the epoch
        raise out_of_range
    return value


def ingest(config: Config, start: dt.datetime, end: dt.datetime, progress: Progress = lambda _: None,
           now: dt.datetime | None = None, lock: bool = True, allow_loss: bool = False,
           allow_uncounted: bool = False) -> IngestResult:
    """Fetch [start, end) from Prometheus and make it the database's contents for that window.

    Stored GPU-intervals of the window that the server does not return stop it unless
    `allow_loss` (coverage.py); samples of shared GPUs that could not be counted, unless
    `allow_uncounted` (`_Fetcher._check_uncounted`). `lock=False` is for a caller that already holds the database's
    lock (`monthly`)."""
    grain = config.grain_seconds
    coverage.check_window(config, start, end, "the window (--start/--end)")
    s, e = int(start.timestamp()), int(end.timestamp())
    current = int((now or dt.datetime.now(UTC)).timestamp())
    if s >= current:
        raise YolocostError(f"the window starts in the future ({start:%Y-%m-%d %H:%M} UTC)")
    e_fetch = min(e, (current // grain) * grain)  # the part that has happened
    if e_fetch <= s:
        raise YolocostError(
            f"the window's first {grain} s interval ({start:%Y-%m-%d %H:%M} UTC on) has not ended yet: "
            f"nothing to ingest before {coverage.at_epoch(s + grain)}")
    with db.exclusive(config.database, "ingest") if lock else contextlib.nullcontext(), _Spill(config) as spill:
        _check_not_archived(config, start, end)  # before the fetch, which may take many minutes
        # in a child process: the heap the fetch leaves is gone before DuckDB's write starts
        fetched = forked.run(lambda say: _fetch(config, s, e_fetch, spill, say, allow_uncounted), progress,
                             "the ingest's fetch process")
        spill.files = fetched.files
        progress("writing to the database")
        with db.writing(config.database, config.memory_limit) as con:
            rows = spill.stage(con)
            _check_nothing_lost(con, start, end, fetched.where, progress, config=config, now=now,
                                allow_loss=allow_loss)
            jobs = _stage_jobs(con, config, fetched.jobs)
            _stage(con, "training_progress", fetched.progress)
            _stage(con, "job_results", fetched.results)
            epochs = len(set(zip(fetched.progress["job_id"], fetched.progress["epoch"])))
            _job_times(con, config, s, e)
            replace_window(
                con, config, ["gpu_usage", "jobs", "training_progress", "job_results"],
                start, end, source=f"prometheus:{fetched.where}", where=lambda t: f"ingest from {fetched.where}",
                progress=progress, progress_by_window=True,
            )
            _set_job_times(con)
            _store_notes(con, config, start, end, fetched.notes)
            stored = con.execute(f"SELECT count(*) FROM gpu_usage WHERE interval_start >= to_timestamp({s}) "
                                 f"AND interval_start < to_timestamp({e}) AND cluster = {literal(config.cluster)}"
                                 ).fetchone()[0]
            if stored != rows:  # never commit a window that lost rows on the way in
                raise DataError(f"the database kept {stored:,} of the {rows:,} usage rows fetched for the window; "
                                "nothing was changed")
            rebuild(con, config, touched(config, start, end), progress)
    return IngestResult(start, end, rows, jobs, epochs, fetched.requests, fetched.splits)


def _check_not_archived(config: Config, start: dt.datetime, end: dt.datetime) -> None:
    """Refuse a window in an archived month before anything is fetched (the write checks it
    again, as every load does: months.check_not_archived)."""
    if not Path(config.database).is_file():
        return
    con = db.connect(config.database, read_only=True)
    try:
        if months.has_table(con, "month_builds"):
            months.check_not_archived(con, config, start, end, "the window")
    finally:
        con.close()


def _fetch(config: Config, start: int, end: int, spill: "_Spill", progress: Progress,
           allow_uncounted: bool = False) -> "_Fetched":
    """`_Fetcher.run` with its own client, as the ingest runs it in a child process (forked.py):
    what the fetch allocates goes with the child, and what the write needs comes back."""
    _one_heap()
    client = PrometheusClient(config.prometheus)
    try:
        fetcher = _Fetcher(config, client, progress)
        fetcher.allow_uncounted = allow_uncounted
        fetched = fetcher.run(start, end, spill)
        note = client.partial_note()  # answers with warnings, accepted by [prometheus] accept_partial_responses
        if note:
            progress(f"warning: {note}")
        scrape = config.prometheus.scrape_interval_seconds
        notes = [(at, at + config.grain_seconds, "uncounted", host, gpu, n, n * scrape, None)
                 for (host, gpu, at), n in sorted(fetcher.uncounted.items(), key=lambda kv: (kv[0][2], kv[0][1]))]
        notes += [(start, end, "partial", None, None, None, None, w) for w in client.warnings[:1]]
    finally:
        client.close()
        spill.close()
    return replace(fetched, where=fetcher.where, requests=fetcher.requests, splits=fetcher.splits,
                   files=spill.files, notes=notes)


def _one_heap() -> None:
    """Keep the threads that fetch and decode answers on glibc's main heap (M_ARENA_MAX = 1)
    rather than one heap each: decoded answers freed across several heaps leave them
    fragmented, and the fetch's peak grows with the window (BENCHMARKS.md). The threads hold
    the GIL while they decode (the numpy part of their conversions is short), so one heap
    costs them little. Nothing to do off glibc."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(-8, 1)  # M_ARENA_MAX


def _glibc():
    """glibc as a ctypes library, None on other C libraries (musl, macOS, Windows)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        return ctypes.CDLL("libc.so.6")
    except (AttributeError, OSError, ValueError):  # no such name or library
        return None


Columns = dict[str, "np.ndarray | _Coded"]  # a table as numpy arrays (strings as codes, _Coded),
# which DuckDB scans directly: NaN reads as NULL, datetime64 as TIMESTAMP


@dataclass
class _Fetched:
    """What the write needs of the fetch (it comes back from the child process pickled)."""

    jobs: dict[str, JobLabels]  # the owners' labels (the pods' and job-info's label sets stay behind)
    progress: Columns
    results: Columns
    where: str = ""  # the server, for messages and the load's source
    requests: int = 0
    splits: int = 0
    files: list[tuple[int, Path]] = field(default_factory=list)  # the spill's (`_Spill.files`)
    notes: list[tuple] = field(default_factory=list)  # `ingest_notes` rows (epoch seconds for the times)


@dataclass
class _Discovered:
    """What the fetch needs of the window's series, gathered a chunk at a time
    (`_Fetcher._discover`) so that no chunk's label sets outlive it."""

    util_metrics: tuple[str, ...]
    util: bool = False  # any utilization series in the window
    named: bool = False  # any of them with a UUID label
    uuid_labels: set[str] = field(default_factory=set)  # how they spell it: UUID, uuid (--use-old-namespace)
    device_series: bool = False  # a GPU with series with and without an owner in one chunk (virtual GPUs)
    has_prof: bool = False  # any DCGM_FI_PROF_GR_ENGINE_ACTIVE series
    job_info: bool = False  # any yolocost_job_info series
    exported: set[str] = field(default_factory=set)  # scrape jobs whose series carry exported_pod
    always: set[str] = field(default_factory=set)  # GPUs always joined: claimed by job-info, or MIG instances
    probe_sample: dict[tuple, dict[str, str]] = field(default_factory=dict)  # for the store probe

    def add(self, found: dict[str, list[dict[str, str]]]) -> None:
        """One chunk's label sets (`_Fetcher._series`), reduced to the above."""
        util = [s for m in self.util_metrics for s in found[m]]
        job_info = found[promql.JOB_INFO]
        self.util = self.util or bool(util)
        self.named = self.named or any(uuid_of(s) for s in util)
        self.uuid_labels.update(next(k for k in promql.UUID_LABELS if s.get(k)) for s in util if uuid_of(s))
        self.has_prof = self.has_prof or bool(found.get(promql.UTIL_PROF))
        self.job_info = self.job_info or bool(job_info)
        self.exported.update(s.get("job", "") for s in util if s.get("exported_pod"))
        self.always.update(uuid_of(s) for s in job_info)
        self.always.update(uuid_of(s) for s in util if s.get("GPU_I_ID"))
        by_gpu: dict[tuple, set[bool]] = {}
        for s in util:  # owned as GrainQueries._unowned_util has it: a renaming scrape's own pod is no owner
            owned = s.get("hpc_job") or s.get("exported_pod") or s.get("pod_name") or \
                (s.get("pod") and s.get("job", "") not in self.exported)
            by_gpu.setdefault((uuid_of(s), s.get("GPU_I_ID", "")), set()).add(bool(owned))
        self.device_series = self.device_series or any(len(kinds) == 2 for kinds in by_gpu.values())
        # the probe's spread of each chunk, then the probe's own over their union: a few
        # series a chunk, drawn as the probe would from the window's
        for s in spread(util):
            self.probe_sample.setdefault(tuple(sorted(s.items())), s)


class _Fetcher:
    """Runs the window's queries against one server and turns the answers into raw rows."""

    def __init__(self, config: Config, client: PrometheusClient, progress: Progress):
        self.config, self.client, self.say = config, client, progress
        self.where = client.where
        self.requests = 0
        self.splits = 0
        self.uncounted: dict[tuple[str, str, int], int] = {}  # (host, GPU, interval) -> samples not counted
        self.allow_uncounted = False

    # ---- discovery
    def _series(self, metrics: list[str], start: int, end: int) -> dict[str, list[dict[str, str]]]:
        """Label sets of each metric's series in [start, end], the requests sent side by side."""
        self.requests += len(metrics)
        with ThreadPoolExecutor(self.config.prometheus.concurrency) as pool:
            found = pool.map(lambda m: self.client.series(self.queries.selector_for(m), start, end), metrics)
            return dict(zip(metrics, found))

    def _discover(self, util_metrics: tuple[str, ...], start: int, end: int,
                  attribution: Attribution) -> "_Discovered":
        """The window's series a chunk (`_chunks`) at a time, each chunk's answers reduced at once
        to what the fetch needs and their pods and job-info put into `attribution`: a month
        of a large fleet holds hundreds of thousands of label sets, a chunk a few thousand.
        The union of the chunks' answers is the window's, so nothing read differs."""
        seen = _Discovered(util_metrics)
        for a, b in self._chunks(start, end) or [(start, end)]:  # (none: a window that has not begun)
            found = self._series([*util_metrics, promql.POD_LABELS, promql.CONTAINER_INFO, promql.JOB_INFO], a, b)
            seen.add(found)
            attribution.add_pod_labels(found[promql.POD_LABELS])
            attribution.add_container_info(found[promql.CONTAINER_INFO])
            attribution.add_job_info(found[promql.JOB_INFO])
            del found
        attribution.exported_jobs = frozenset(seen.exported)
        return seen

    def run(self, start: int, end: int, spill: "_Spill") -> _Fetched:
        """Every query of the window; the usage rows go to `spill` a chunk at a time."""
        cfg = self.config
        info = self.client.buildinfo()
        self.requests += 1
        self.queries = promql.GrainQueries(
            scrape=cfg.prometheus.scrape_interval_seconds, grain=cfg.grain_seconds,
            busy=cfg.thresholds.busy_util_percent, idle=cfg.thresholds.idle_util_percent,
            utilization=cfg.utilization, selector=cfg.prometheus.selector,
        )
        self.say(f"{info.name} at {self.where}: reading series of the window")
        util_metrics = _UTIL_METRICS[cfg.utilization]
        # the other dcgm metrics only need to be there: their names, not their series' label sets
        needed = (promql.FB_USED, promql.POWER, promql.ENERGY)
        self.requests += 1
        present = set(self.client.metric_names(self.queries.any_of(needed), start, end))
        attribution = Attribution(self.config.labels)
        seen = self._discover(util_metrics, start, end, attribution)
        if not seen.util:
            raise DataError(
                f"Prometheus at {self.where} holds no {' or '.join(util_metrics)} series{self._matching()} between "
                f"{coverage.at_epoch(start)} and {coverage.at_epoch(end)}; is dcgm-exporter scraped there?"
            )
        if not seen.named:
            raise DataError(
                f"the {' or '.join(util_metrics)} series at {self.where}{self._matching()} carry no UUID label, which "
                "yolocost tells GPUs apart by; keep dcgm-exporter's default labels (UUID, gpu, modelName, hostname)"
            )
        if len(seen.uuid_labels) > 1:
            raise DataError(
                f"the {' or '.join(util_metrics)} series at {self.where}{self._matching()} name GPUs by UUID on some "
                "hosts and by uuid (dcgm-exporter --use-old-namespace) on others; yolocost reads one spelling per "
                "ingest: run the exporters alike, or ingest the two groups apart with [prometheus] selector"
            )
        for metric in needed:
            if metric not in present:
                raise DataError(
                    f"Prometheus at {self.where} holds GPU utilization but no {metric} series{self._matching()} "
                    f"between {coverage.at_epoch(start)} and {coverage.at_epoch(end)}; "
                    "enable it in dcgm-exporter's counters file"
                )
        # leave out what the window does not need: each part costs the server time per step
        utilization = cfg.utilization if cfg.utilization != "auto" or seen.has_prof else "dev"
        self.queries = replace(self.queries, exported_jobs=tuple(sorted(seen.exported)),
                                job_info=seen.job_info, utilization=utilization, uuid=min(seen.uuid_labels),
                                device_series=seen.device_series)
        probe = StoreProbe(self.client, start, end, cfg.grain_seconds, cfg.prometheus.scrape_interval_seconds, self.say)
        facts = probe.measure(list(seen.probe_sample.values()))  # range semantics and scrape interval, measured
        self.requests += probe.requests
        self.say(f"{self.where}: {facts.describe()}")
        self.queries = replace(self.queries, left_open=facts.left_open)
        spill.probed = {gpu.gpu_uuid for gpu in map(gpu_of, facts.series) if gpu is not None}
        always = seen.always
        del seen
        self._grain_points(start, end, always, lambda points, columns: spill.add(self._usage(points, columns,
                                                                                            attribution)))
        probe.requests = 0
        probe.spot_check(facts, *spill.probed_rows(), {gpu: n for (_, gpu), n in self._uncounted_per_gpu().items()})
        self.requests += probe.requests
        self._check_uncounted()
        for line in attribution.warnings():  # what the owners' labels lacked (kube-state-metrics' flags)
            self.say(f"warning: {line}")
        _check_scrape_interval(spill.gpu_intervals, spill.most_seconds, cfg, self.where)
        progress_rows, results = self._training(start, end)
        return _Fetched(attribution.jobs, progress_rows, results)

    def _uncounted_per_gpu(self) -> dict[tuple[str, str], int]:
        """The uncounted samples per (host, GPU), over the window's intervals."""
        out: dict[tuple[str, str], int] = {}
        for (host, gpu, _), n in self.uncounted.items():
            out[(host, gpu)] = out.get((host, gpu), 0) + n
        return out

    def _check_uncounted(self) -> None:
        """Samples of joined GPUs (shared, MIG, job-info) that two fell into one scrape step of a
        series: stop, naming the GPUs and how much, unless `allow_uncounted` (then say it)."""
        if not self.uncounted:
            return
        scrape = self.config.prometheus.scrape_interval_seconds
        per_gpu = self._uncounted_per_gpu()
        worst = sorted(per_gpu.items(), key=lambda kv: (-kv[1], kv[0]))
        named = ", ".join(f"{gpu} on {host} ({n:,} samples, {n * scrape:,} s)" for (host, gpu), n in worst[:3])
        more = f" and {len(worst) - 3} more" if len(worst) > 3 else ""
        total = sum(per_gpu.values())
        what = (f"{total:,} samples ({total * scrape:,} GPU-seconds) of {len(worst)} shared, MIG or job-info GPU(s) "
                f"at {self.where} were stamped so late that two fell into one {scrape} s scrape step, where their "
                f"owners are decided: {named}{more}")
        if not self.allow_uncounted:
            raise DataError(f"{what}; nothing was written. Pass --allow-uncounted to bill the window without them")
        self.say(f"warning: --allow-uncounted: {what}; the window is billed without them")

    def _matching(self) -> str:
        sel = self.config.prometheus.selector
        return f" matching {{{sel}}}" if sel else ""

    # ---- grain points, chunk by chunk
    def _chunks(self, start: int, end: int) -> list[tuple[int, int]]:
        grain = self.config.grain_seconds
        size = min(self.config.prometheus.chunk_hours * 3600, (MAX_POINTS - 1) * grain)
        size = max(grain, size // grain * grain)
        return [(a, min(a + size, end)) for a in range(start, end, size)]

    def _grain_points(self, start: int, end: int, always_special: set[str],
                      keep: Callable[["_Points", tuple], None]) -> None:
        """Every grain query for every chunk. GPUs that need the attribution join (job-info,
        MIG, more than one series at a sample) get `grain_queries`; all others the cheap
        per-series `plain_queries`. Both answer in the same shape, one point per series. The
        plain GPUs' energy comes last: once their samples and counter values are in
        (`telescope`), raw samples are asked for the grains those do not settle.

        Pipelined: every chunk's planning query is queued at once and a chunk's grain queries
        are queued as soon as its plan is back, so the server always has `concurrency`
        requests to work on (no chunk waits for the slowest query of the one before). A
        chunk's answers are kept only once all of them have arrived; a chunk refused as too
        big is dropped whole and planned again as two halves. Each answer is turned into
        arrays by the worker thread that fetched it, so decoded JSON lives only as long as its
        conversion (the small plan and resets answers stay as they are); at most `concurrency` + 2
        requests are out or converted and not yet taken up here. A chunk's
        points, once all in, go to `keep` (with the `_Points` that names their series) and
        are not held here after."""
        grain = self.config.grain_seconds
        total, done = end - start, 0
        names = list(self.queries.grain_queries())
        # kind: "plan", "plain" (a plain query), "part" (a joined one), "raw" (energy samples)
        running: dict = {}  # future -> (chunk, query name, kind)
        backlog: deque = deque()  # (chunk, name, kind, function, arguments) not sent yet
        limit = self.config.prometheus.concurrency + 2

        def send(chunk: _Chunk, name, kind: str, fn, *args) -> None:
            self.requests += 1
            # a chunk's raw requests go first: its points are held until they are answered
            (backlog.appendleft if kind in ("raw", "rawutil") else backlog.append)((chunk, name, kind, fn, args))

        def fill() -> None:
            while backlog and len(running) < limit:
                chunk, name, kind, fn, args = backlog.popleft()
                if not chunk.dropped:
                    running[pool.submit(fetch, chunk, name, kind, fn, args)] = (chunk, name, kind)

        def fetch(chunk: _Chunk, name, kind: str, fn, args):
            """One request's answer, turned into arrays by the thread that fetched it (a plan's
            and the resets' answers stay as they are): decoded JSON takes some ten times its
            arrays' memory, and goes at once instead of waiting for this thread."""
            answer = fn(*args)
            if kind == "plan" or name == "energy_resets":
                return answer
            if kind == "raw":
                return self._energy_arrays(chunk.points, answer, *name)
            if kind == "rawutil":
                return self._utilization_arrays(chunk.points, answer, *name)
            return self._arrays(chunk.points, answer)

        def plan(chunk: _Chunk) -> None:
            chunk.points = _Points(names, chunk.start, chunk.end, grain)
            send(chunk, None, "plan", self.client.query, self.queries.several_series(chunk.end - chunk.start),
                 chunk.end)

        def refine(chunk: _Chunk, plan_answer: list[dict]) -> None:
            """The GPUs with two series in one scrape step (usually few): which of them need the
            join (`special_gpus`), asked of them alone, as it costs the server several times more."""
            several = sorted({uuid_of(r["metric"]) for r in plan_answer} - {""})
            if not several:
                queue(chunk, [])
                return
            send(chunk, "refine", "plan", self.client.query,
                 self.queries.only(several, keep=True).special_gpus(chunk.end - chunk.start), chunk.end)

        def queue(chunk: _Chunk, plan_answer: list[dict]) -> None:
            shared = {uuid_of(r["metric"]) for r in plan_answer if "device_series" not in r["metric"]}
            device = {uuid_of(r["metric"]) for r in plan_answer if "device_series" in r["metric"]} - {""}
            special = sorted((always_special | shared | device) - {""})
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
            chunk.needs = _EXACT + tuple(n for n, kind, _ in queries if kind == "plain" and n == "prof_samples")
            for name, kind, q in queries:
                send(chunk, name, kind, self.client.query_range, q, chunk.start + grain, chunk.end, grain)
            send(chunk, "energy_resets", "plain", self.client.query, plain.energy_resets(chunk.end - chunk.start),
                 chunk.end)

        def telescope(chunk: _Chunk) -> None:
            """The plain GPUs' energy once their samples and counters are in: differenced where
            a grain allows it, raw samples asked for the rest."""
            held = chunk.held
            keys, values, raw = _telescoped_energy(
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
                send(chunk, (a, b, wanted), "raw", self.client.query, which.energy_samples(b - a), b)

        def exact(chunk: _Chunk) -> None:
            """The plain GPUs' samples, busy and idle counts and utilization, taken from raw
            samples where a subquery step held two samples of a series, or where a series'
            profiling metric has other samples than DCGM_FI_DEV_GPU_UTIL (`auto`;
            `GrainQueries.plain_queries`)."""
            held = chunk.held
            self._check_steps(chunk.points, held["samples"], held["slots"])
            redo = _collided(held["samples"], held["slots"])
            if "prof_samples" in held:
                redo = np.union1d(redo, _collided(held.pop("prof_samples"), held["samples"]))
            for name in _RAW_UTIL:
                key, value = held.pop(name)
                keep = ~np.isin(key, redo)
                chunk.parts.append((name, (key[keep], value[keep])))
            chunk.exact = True
            pieces = _by_hour(chunk.points, redo)
            chunk.waiting += len(pieces)
            for a, b, cells in pieces:
                uuids = sorted({uuid_of(chunk.points.labels[k // chunk.points.steps]) for k in cells.tolist()})
                send(chunk, (a, b, cells), "rawutil", self.client.query,
                     self.queries.only(uuids, keep=True).raw_util_samples(b - a), b)

        def split(chunk: _Chunk, too_big: QueryTooBig) -> None:
            chunk.dropped = True
            for fut, (c, _, _) in running.items():
                if c is chunk:
                    fut.cancel()
            if chunk.end - chunk.start <= grain:
                raise PrometheusError(
                    f"{too_big}; even a single {grain} s interval is too much for this server "
                    "(raise its --query.max-samples or --query.timeout, or [prometheus] timeout_seconds)"
                ) from None
            mid = chunk.start + (chunk.end - chunk.start) // grain // 2 * grain
            self.splits += 1
            self.say(f"server refused {coverage.at_epoch(chunk.start)}..{coverage.at_epoch(chunk.end)} "
                     f"({too_big.__class__.__name__}): splitting it")
            plan(_Chunk(chunk.start, mid))
            plan(_Chunk(mid, chunk.end))

        pool = ThreadPoolExecutor(self.config.prometheus.concurrency)
        try:
            for a, b in self._chunks(start, end):
                plan(_Chunk(a, b))
            fill()
            while running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in finished:
                    chunk, name, kind = running.pop(fut)
                    if chunk.dropped:  # (its cancelled futures among them)
                        continue
                    try:
                        answer = fut.result()
                    except QueryTooBig as too_big:
                        split(chunk, too_big)
                        continue
                    if kind == "plan":
                        (queue if name == "refine" else refine)(chunk, answer)
                        continue
                    if kind == "raw":
                        chunk.parts.append(("energy", answer))
                    elif kind == "rawutil":
                        chunk.parts += list(zip(_RAW_UTIL, answer))
                    elif kind == "part" and name in _SERIES_COUNTS:
                        chunk.counts[name] = answer
                        if len(chunk.counts) == len(_SERIES_COUNTS):
                            chunk.uncounted = self._uncounted(chunk.points, chunk.counts)
                    elif kind == "plain" and name in _HELD:
                        chunk.held[name] = answer
                    else:
                        chunk.parts.append((name, answer))
                    if not chunk.telescoped and all(n in chunk.held for n in _TELESCOPE):
                        telescope(chunk)
                    if not chunk.exact and all(n in chunk.held for n in chunk.needs):
                        exact(chunk)
                    chunk.waiting -= 1
                    if chunk.waiting == 0:
                        for gpu, n in chunk.uncounted.items():  # a chunk counts once it is whole (not split)
                            self.uncounted[gpu] = self.uncounted.get(gpu, 0) + n
                        columns = chunk.points.keep_chunk(chunk.parts)
                        keep(chunk.points, columns)
                        chunk.parts, chunk.points = [], None
                        del columns
                        done += chunk.end - chunk.start
                        self.say(f"fetched {coverage.at_epoch(chunk.start)}..{coverage.at_epoch(chunk.end)} "
                                 f"({100 * done / total:.0f}%)")
                    del answer
                fill()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _energy_arrays(self, points: "_Points", answer: list[dict], start: int, end: int,
                       wanted: dict[str, set[int]]) -> tuple[np.ndarray, np.ndarray]:
        """`_energy_points` of the raw samples of [start, end), kept for the `wanted` grain steps
        of each GPU (an answer holds more); a point that is not a [time, "value"] pair stops the
        ingest, naming the server (as `_arrays`)."""
        try:
            return _raw_energy(points, answer, start, end, wanted)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query", 'a sample is not a [time, "value"] pair of '
                                        "numbers") from None

    def _utilization_arrays(self, points: "_Points", answer: list[dict], start: int, end: int,
                            cells: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """`_raw_utilization` of the raw utilization samples of [start, end), a point that is not
        a [time, "value"] pair stopping the ingest, naming the server (as `_arrays`)."""
        q = self.queries
        try:
            return _raw_utilization(points, answer, cells, q.busy, q.idle)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query", 'a sample is not a [time, "value"] pair of '
                                        "numbers") from None

    def _uncounted(self, points: "_Points", counts: dict) -> dict[tuple[str, str, int], int]:
        """Samples of the joined GPUs that the grain queries could not count (two in one
        subquery step of a series) per (host, GPU, interval start): `series_counts` raw samples
        minus steps held, the most of any of the GPU's series (the series of one GPU, e.g. its
        pods' on a shared GPU, share their scrapes' steps)."""
        (key, samples), slots = counts.pop("series_samples"), counts.pop("series_slots")
        self._check_steps(points, (key, samples), slots)
        short = samples - np.nan_to_num(_aligned(key, *slots))
        out: dict[tuple[str, str, int], int] = {}
        for k, n in zip(key[short > 0].tolist(), short[short > 0].tolist()):
            gpu = gpu_of(points.labels[k // points.steps])
            if gpu is not None:
                cell = (gpu.hostname, gpu.gpu_uuid, points.start + (k % points.steps) * points.grain)
                out[cell] = max(out.get(cell, 0), int(n))
        return out

    def _check_steps(self, points: "_Points", samples: tuple[np.ndarray, np.ndarray],
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
                f"the series {self._series_name(points.labels[k // points.steps])} at {self.where} holds "
                f"{int(count[fast[0]])} samples in the {points.grain} s from "
                f"{coverage.at_epoch(points.start + (k % points.steps) * points.grain)} (at most {most} at one "
                f"every {scrape} s): it is scraped more often than [prometheus] scrape_interval_seconds = {scrape}; "
                "set it to dcgm-exporter's scrape interval"
            )
        held = np.nan_to_num(_aligned(key, *slots))
        wrong = np.flatnonzero(2 * held < count)
        if len(wrong):
            k = int(key[wrong[0]])
            at = points.start + (k % points.steps) * points.grain
            raise DataError(
                f"{self.where} answers the grain queries otherwise than its ranges were measured: the series "
                f"{self._series_name(points.labels[k // points.steps])} holds {int(count[wrong[0]])} raw samples in the {points.grain} s from "
                f"{coverage.at_epoch(at)} but only {int(held[wrong[0]])} of its scrape steps hold one; nothing was written"
            )

    @staticmethod
    def _series_name(labels: dict[str, str]) -> str:
        return "{" + ", ".join(f"{n}={labels[n]}" for n in ("UUID", "uuid", "GPU_I_ID", "pod", "instance")
                               if labels.get(n)) + "}"

    def _arrays(self, points: "_Points", answer: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """`points.arrays(answer)`; a point that is not a [time, "value"] pair on the query's
        steps (no Prometheus sends one, a broken proxy might) stops the ingest, naming the server."""
        try:
            return points.arrays(answer)
        except (TypeError, ValueError, IndexError, KeyError):
            raise self.client.malformed("/api/v1/query_range", 'a point is not a [time, "value"] pair of numbers '
                                        "on the query's steps") from None

    def _usage(self, points: "_Points", columns: tuple, attribution: Attribution) -> Columns:
        """Raw usage rows (as sums) per GPU x owner x interval from one chunk's points."""
        gpus = [gpu_of(labels) for labels in points.labels]
        owners = [attribution.owner(labels) if gpu is not None else None
                  for labels, gpu in zip(points.labels, gpus)]
        return _grouped(columns, points.start, gpus, owners, self.config)

    # ---- training progress and results
    def _last_values(self, metric: str, by: tuple[str, ...], start: int, end: int) -> list[dict]:
        """The last value per `by` labels of a sparse metric in [start, end], a day per point."""
        step = 86400
        first = start + step
        out: dict[tuple, tuple[float, str]] = {}
        while True:
            try:
                self.requests += 1
                result = self.client.query_range(self.queries.last_values(metric, step, by), first, end + step, step)
                break
            except QueryTooBig as exc:
                if step <= 3600:
                    raise PrometheusError(
                        f"{exc}; reading {metric} an hour at a time is too much for this server "
                        "(raise its --query.max-samples or --query.timeout, or [prometheus] timeout_seconds)"
                    ) from None
                step //= 4
                first = start + step
        try:
            for s in result:
                key = tuple(sorted(s["metric"].items()))
                for t, v in s["values"]:
                    if key not in out or float(t) >= out[key][0]:
                        out[key] = (float(t), v)
            return [{"metric": dict(k), "value": float(v)} for k, (t, v) in out.items()]
        except (TypeError, ValueError):  # no Prometheus sends such points; a broken proxy might
            raise self.client.malformed("/api/v1/query_range", 'a point is not a [time, "value"] pair of '
                                        "numbers") from None

    def _training(self, start: int, end: int) -> tuple[Columns, Columns]:
        self.say("reading training progress")
        horizon = end + TRAINING_SLACK
        ends = {}
        for s in self._last_values(promql.EPOCH_END, ("job_id", "epoch"), start, horizon):
            m = s["metric"]
            epoch = m.get("epoch", "")
            if m.get("job_id") and epoch.isdigit() and math.isfinite(s["value"]):
                ends[(m["job_id"], int(epoch))] = s["value"]
        rows: dict[str, list] = {"job_id": [], "ts": [], "epoch": [], "metric": [], "value": []}
        for s in self._last_values(promql.EPOCH_METRIC, ("job_id", "epoch", "name"), start, horizon):
            m = s["metric"]
            epoch = m.get("epoch", "")
            key = (m.get("job_id", ""), int(epoch) if epoch.isdigit() else -1)
            when = ends.get(key)
            if when is None or not (start <= when < end) or not m.get("name"):
                continue
            rows["job_id"].append(key[0])
            rows["ts"].append((dt.datetime.fromtimestamp(when, UTC) - EPOCH) // dt.timedelta(microseconds=1))
            rows["epoch"].append(key[1])
            rows["metric"].append(m["name"])
            rows["value"].append(s["value"] if math.isfinite(s["value"]) else math.nan)
        progress = {
            "job_id": _coded(rows["job_id"]),
            "ts": np.array(rows["ts"], np.int64).astype("datetime64[us]"),
            "epoch": np.array(rows["epoch"], np.int64),
            "metric": _coded(rows["metric"]),
            "value": np.array(rows["value"], np.float64),
        }
        results: dict[str, dict[str, float]] = {}
        for s in self._last_values(promql.JOB_RESULT, ("job_id", "name"), start, horizon):
            m = s["metric"]
            if m.get("job_id") and m.get("name") in ("map50", "map50_95", "best_epoch"):
                value = s["value"]
                if not math.isfinite(value):  # a failed validation: what Prometheus holds stays so, so
                    # refusing it would block the window for good; the job is stored without it
                    self.say(f"job {m['job_id']}: {m['name']} is {value} in Prometheus; stored as missing")
                    value = math.nan
                results.setdefault(m["job_id"], {})[m["name"]] = value
        ids = sorted(results)
        best = [results[j].get("best_epoch") for j in ids]
        table = {
            "job_id": _coded(ids),
            "map50": np.array([results[j].get("map50", math.nan) for j in ids], np.float64),
            "map50_95": np.array([results[j].get("map50_95", math.nan) for j in ids], np.float64),
            "best_epoch": _coded([int(b) if b is not None and math.isfinite(b) else None for b in best]),
        }
        return progress, table


_TELESCOPE = ("slots", "energy_last", "energy_count", "energy_resets")  # what `telescope` reads
_RAW_UTIL = ("samples", "busy", "idle", "util")  # what `exact` replaces where raw samples decide
_EXACT = ("slots", *_RAW_UTIL)  # what `exact` reads (and `prof_samples` in auto mode)
_HELD = set(_TELESCOPE + _EXACT + ("prof_samples",))
_SERIES_COUNTS = ("series_samples", "series_slots")


@dataclass(eq=False)
class _Chunk:
    """One request window of the grain queries and what has come back for it so far."""

    start: int
    end: int
    waiting: int = 0  # grain queries still out
    dropped: bool = False  # refused as too big: split, answers ignored
    parts: list = field(default_factory=list)
    points: "_Points | None" = None  # its series, numbered apart from every other chunk's
    held: dict = field(default_factory=dict)  # the plain GPUs' answers `telescope` and `exact` read
    telescoped: bool = False  # the plain GPUs' energy is settled (raw requests sent)
    exact: bool = False  # the plain GPUs' busy and idle are settled (raw requests sent)
    counts: dict = field(default_factory=dict)  # the joined GPUs' `series_counts` answers
    needs: tuple = ()  # what `exact` reads (`_EXACT`, and `prof_samples` where sent)
    uncounted: dict = field(default_factory=dict)  # (host, GPU, interval) -> samples not counted


def _flat(answer: list[dict], scale: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An answer's points as arrays: each series' point count, and every point's time (x `scale`,
    rounded to an integer: 1000 gives milliseconds) and value, series after series."""
    sizes = np.array([len(s["values"]) for s in answer], np.int64)
    flat = [v for s in answer for v in s["values"]]
    times = np.rint(np.fromiter((v[0] for v in flat), np.float64, len(flat)) * scale).astype(np.int64)
    return sizes, times, np.array([v[1] for v in flat], dtype=np.float64)


class _Points:
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
        sizes, ts, value = _flat(result)
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
        values = {name: _aligned(key, *joined(name)) for name in self.names}
        return key // self.steps, key % self.steps, samples, values


def _energy_points(points: "_Points", answer: list[dict], start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
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
    are `_Points.arrays`' (series id x steps + grain step)."""
    ms, back = 1000, promql.LOOKBACK * 1000
    sid = points.sids(answer)
    uuids: dict[str, int] = {}
    gpu = np.array([uuids.setdefault(uuid_of(s["metric"]), len(uuids)) for s in answer], np.int64)
    sizes, t, value = _flat(answer, ms)
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


def _raw_energy(points: "_Points", answer: list[dict], start: int, end: int, wanted: dict[str, set[int]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """`_energy_points` of raw samples of [start, end), kept for the `wanted` grain steps of each
    GPU (a piece of `_telescoped_energy`'s; the answer may hold more)."""
    answer = [s for s in answer if uuid_of(s["metric"]) in wanted]
    keys, values = _energy_points(points, answer, start, end)
    keep = np.array([k % points.steps in wanted[uuid_of(points.labels[k // points.steps])]
                     for k in keys.tolist()], bool)
    return keys[keep], values[keep]


def _telescoped_energy(points: "_Points", samples: tuple[np.ndarray, np.ndarray],
                       last: tuple[np.ndarray, np.ndarray], count: tuple[np.ndarray, np.ndarray],
                       reset: set[str], scrape: int
                       ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, dict[str, set[int]]]]]:
    """The plain GPUs' energy per series x grain step where the counter's deltas telescope, and
    the grains left for raw samples (`_energy_points`) as (start, end, {GPU: grain steps}).

    `_energy_points` gives each sample the GPU's counter minus its previous sample within
    LOOKBACK, to the sample's series. Where, through the grain and the LOOKBACK before it, a
    GPU's only series is S (in utilization and energy alike), S holds a sample of both in every
    scrape step of the grain (its energy comes with the utilization, one scrape) and one in the
    grain before (in every step, for grains longer than LOOKBACK), and its counter does not
    drop, every sample has its previous one within LOOKBACK, every delta goes to S, and they
    sum to S's last value in the grain minus its last value in the grain before.
    `samples` is the plain `slots` answer (scrape steps holding a sample: a step of a late
    scrape that holds none sends the grain to raw samples), `last` and `count` the
    `energy_last` and `energy_count` answers (`_Points.arrays`); `reset` the GPUs whose counter
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
    now, before = _aligned(series * steps + j, *last), _aligned(series * steps + j - 1, *last)
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


def _collided(samples: tuple[np.ndarray, np.ndarray], slots: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Keys (series x grain step) of `samples` whose count differs from the other answer's
    (missing: 0), sorted: against the subquery steps that hold a sample, some step held two
    samples of the series; the profiling metric's count against the samples', it has other
    samples than DCGM_FI_DEV_GPU_UTIL."""
    key, count = samples
    held = np.nan_to_num(_aligned(key, *slots))
    return np.sort(key[held != count])


def _by_hour(points: "_Points", cells: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """The cells (series x grain step) grouped by the hour they lie in, as (start, end, cells):
    one raw request per hour reads all of them (as `_telescoped_energy`'s pieces)."""
    per = max(1, RAW_SECONDS // points.grain)
    step = cells % points.steps
    pieces = []
    for hour in np.unique(step // per).tolist():
        mine = cells[step // per == hour]
        first, last = int((mine % points.steps).min()), int((mine % points.steps).max())
        pieces.append((points.start + first * points.grain, points.start + (last + 1) * points.grain, mine))
    return pieces


def _raw_utilization(points: "_Points", answer: list[dict], cells: np.ndarray, busy: float, idle: float
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Samples, samples above `busy` and below `idle`, and utilization summed, per cell (series
    x grain step, every one of `cells`, zeros included) from the utilization metrics' raw
    samples: each stored sample counts once. A NaN (a staleness marker, which some stores
    return as a sample) is no sample. Where a series has a DCGM_FI_PROF_GR_ENGINE_ACTIVE
    sample at a time, it is that time's utilization (x 100), as the grain queries prefer it;
    else DCGM_FI_DEV_GPU_UTIL's (one scrape stamps both alike). In `_RAW_UTIL`'s order."""
    sizes, ms, value = _flat(answer, 1000)
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


def _aligned(key: np.ndarray, other: np.ndarray, value: np.ndarray) -> np.ndarray:
    """One query's values at the points `key` (NaN where it has none): every grain query
    answers per (series, time), so this is a lookup, not a join."""
    if len(other) == 0:
        return np.full(len(key), np.nan)
    order = np.argsort(other, kind="stable")
    other, value = other[order], value[order]
    at = np.minimum(np.searchsorted(other, key), len(other) - 1)
    return np.where(other[at] == key, value[at], np.nan)


def _summed(groups: np.ndarray, n: int, values: np.ndarray, nulls_sum_to_null: bool) -> np.ndarray:
    """Per-group sums; NaN (NULL) values count as 0, and a group of only NULLs is NULL if asked."""
    present = ~np.isnan(values)
    out = np.bincount(groups, np.where(present, values, 0.0), n).astype(np.float64, copy=False)
    if nulls_sum_to_null:
        out[np.bincount(groups, present, n) == 0] = np.nan
    return out


class _Coded:
    """A column of strings (or ints with NULLs) as int32 codes into its distinct values (0: NULL,
    n: values[n - 1]). DuckDB 1.5 imports pandas and pyarrow (74 MiB) to scan a numpy object
    array; the codes it scans as is, and `sql` turns them back into the values in the query.
    Indexing, iterating and `==` behave as on the object array it stands for."""

    __slots__ = ("codes", "values")
    __hash__ = None

    def __init__(self, codes: np.ndarray, values: list):
        self.codes, self.values = codes, values

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index) -> "_Coded":
        return _Coded(self.codes[index], self.values)

    def __iter__(self):
        decoded = [None, *self.values]
        return (decoded[c] for c in self.codes.tolist())

    def __eq__(self, other) -> np.ndarray:
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


def _coded(values: list) -> _Coded:
    """A list of strings or ints, None for NULL, as codes into its distinct values."""
    index: dict = {}
    codes = np.fromiter((0 if v is None else index.setdefault(v, len(index) + 1) for v in values),
                        np.int32, len(values))
    return _Coded(codes, list(index))


def _grouped(columns: tuple, start: int, gpus: list, owners: list[str | None], config: Config) -> Columns:
    """Raw usage rows as sums per GPU x owner x interval, grouped in numpy on integer codes
    (series -> GPU, owner), so memory stays near that of the point arrays; strings are
    attached to the grouped rows only. The rows come in the raw table's order (interval,
    GPU, owner with nobody first), and with `seconds_us`, the owner's present seconds: the
    GPU-interval's seconds rounded to the microsecond cumulatively over its owners in that
    order, so shared samples (1/3 each, ...) still add up exactly to the GPU's seconds."""
    grain, scrape = config.grain_seconds, config.prometheus.scrape_interval_seconds
    uuids = sorted({g.gpu_uuid for g in gpus if g is not None})
    gpu_code = {u: n for n, u in enumerate(uuids)}
    owner_code = {o: n + 1 for n, o in enumerate(sorted({o for o in owners if o is not None}))}  # 0: nobody's
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
    seconds_us = _owner_seconds_us(gpu_interval, held, scrape)
    row_series = sid[first]  # each row's strings are those of the first series it was summed from
    rows = {
        "interval_start": start + step[first] * grain,
        **{name: _coded([getattr(g, name) if g else None for g in gpus])[row_series]
           for name in ("gpu_uuid", "hostname", "gpu_index", "gpu_model", "mig_profile")},
        "job_id": _coded(owners)[row_series],
        "gpu_interval": gpu_interval,  # for checks; not stored
        "samples": held,
        "seconds_us": seconds_us,
        "busy": _summed(groups, n, value["busy"], False),
        "idle": _summed(groups, n, value["idle"], False),
        "util": _summed(groups, n, value["util"], False),
        "mem_peak": mem_peak,  # NaN: no value (NULL)
        "power": _summed(groups, n, power, True),
        "energy": _summed(groups, n, value["energy"], False),
        "power_energy": _summed(groups, n, power_energy, True),
    }
    keep = seconds_us > 0
    return rows if keep.all() else {k: v[keep] for k, v in rows.items()}


def _owner_seconds_us(gpu_interval: np.ndarray, samples: np.ndarray, scrape: int) -> np.ndarray:
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


def _stage_usage(con: duckdb.DuckDBPyConnection, config: Config, rows: Columns) -> int:
    """`incoming_gpu_usage` (raw rows, in order) from the grouped sums. Returns its row count."""
    scrape = config.prometheus.scrape_interval_seconds
    _stage(con, "gpu_usage", rows, None, f"""
        WITH timed AS (
            SELECT *, (seconds_us * 0.000001)::DECIMAL(12, 6) AS seconds,
                   least(round(busy * {scrape}, 6)::DECIMAL(12, 6), seconds) AS busy_seconds
            FROM fetched
        )
        SELECT to_timestamp(interval_start) AS interval_start, {literal(config.cluster)}::VARCHAR AS cluster, hostname, gpu_uuid, gpu_index,
               gpu_model, mig_profile, job_id, seconds AS seconds_present,
               least(greatest(util / samples, 0), 100) AS util_mean,
               busy_seconds AS seconds_busy,
               least(round(idle * {scrape}, 6)::DECIMAL(12, 6), seconds - busy_seconds) AS seconds_idle,
               mem_peak AS mem_peak_mib, round(power / samples, 3) AS power_mean_w,
               round(energy) AS energy_mj, round(power_energy * {scrape} * 1000) AS energy_power_mj
        FROM timed""")
    return con.execute("SELECT count(*) FROM incoming_gpu_usage").fetchone()[0]


class _Spill:
    """The window's usage rows, a chunk at a time, as Parquet files in a scratch folder beside
    the database (removed at the end; one left by a killed ingest goes at the next): the fetch
    holds a few chunks' rows in memory whatever the window's length. Counts, as the rows go
    by, what the checks after the fetch need: GPU-intervals, the most seconds of one, and the
    rows of the GPUs the store probe counted raw samples on (`probed`)."""

    def __init__(self, config: Config):
        self.config = config
        self.files: list[tuple[int, Path]] = []  # (first interval, file)
        self.gpu_intervals, self.most_seconds = 0, 0.0
        self.probed: set[str] = set()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._probed_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __enter__(self) -> "_Spill":
        database = Path(self.config.database)
        prefix = f".{database.name}.ingest-"
        try:
            database.parent.mkdir(parents=True, exist_ok=True)
            for stale in database.parent.glob(prefix + "*"):  # the database's lock is held: no ingest runs
                shutil.rmtree(stale, ignore_errors=True)
            self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=database.parent))
        except OSError as exc:
            raise YolocostError(f"{database.parent}: cannot make a scratch folder for the ingest there: "
                                f"{exc.strerror}") from None
        return self

    def __exit__(self, *exc) -> None:
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The scratch connection that writes the files, opened by the first chunk: in the
        process that fetches (a child's DuckDB is not the parent's)."""
        if self._con is None:
            # a chunk's rows (some 300,000 at 1,000 GPUs a day) take a few dozen MB in DuckDB
            self._con = duckdb.connect(config={**db.NO_EXTENSION_DOWNLOADS, "memory_limit": "128MB", "threads": 1})
            self._con.execute("SET TimeZone = 'UTC'")
            db.create_schema(self._con)
        return self._con

    def close(self) -> None:
        """Close the scratch connection, so its memory goes back."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def add(self, rows: Columns) -> None:
        """One chunk's grouped rows (`_grouped`), written to their own file."""
        if not len(rows["samples"]):
            return
        _, gpu_interval = np.unique(rows["gpu_interval"], return_inverse=True)
        seconds = np.bincount(gpu_interval, rows["seconds_us"]) / 1e6
        self.gpu_intervals += len(seconds)
        self.most_seconds = max(self.most_seconds, float(seconds.max()))
        if self.probed:
            uuid = rows["gpu_uuid"]
            mine = np.array([False, *(v in self.probed for v in uuid.values)])[uuid.codes]
            if mine.any():
                self._probed_rows.append((np.array(list(uuid[mine]), object), rows["interval_start"][mine],
                                          rows["samples"][mine]))
        _stage_usage(self.con, self.config, rows)
        path = self.folder / f"{len(self.files)}.parquet"
        self.con.execute(f"COPY incoming_gpu_usage TO {literal(str(path))} (FORMAT parquet)")
        self.con.execute("DROP TABLE incoming_gpu_usage")
        self.files.append((int(rows["interval_start"].min()), path))

    def probed_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gpu_uuid, interval_start, samples) of the rows of the probed GPUs."""
        parts = self._probed_rows or [(np.zeros(0, object), np.zeros(0, np.int64), np.zeros(0))]
        return tuple(np.concatenate(column) for column in zip(*parts))

    def stage(self, con: duckdb.DuckDBPyConnection) -> int:
        """`incoming_gpu_usage` of `con`: a view of the files, in the raw table's order (chunks
        in time order, each file in order; DuckDB keeps a scan's order). A view, not a table:
        the checks and the insert stream the rows from the files, so a month of a large fleet
        never sits in memory whole. Returns its row count."""
        self.close()  # the scratch connection's memory goes back before the write needs its own
        files = [literal(str(path)) for _, path in sorted(self.files)]
        source = f"read_parquet([{', '.join(files)}])" if files else "(SELECT * FROM gpu_usage LIMIT 0)"
        types = con.execute("SELECT column_name, column_type FROM (DESCRIBE gpu_usage)").fetchall()
        select = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in types)
        con.execute(f"CREATE OR REPLACE TEMP VIEW incoming_gpu_usage AS SELECT {select} FROM {source}")
        return con.execute("SELECT count(*) FROM incoming_gpu_usage").fetchone()[0]


@contextlib.contextmanager
def _registered(con: duckdb.DuckDBPyConnection, name: str, data: Columns):
    """`data` readable as the view `name` for the block. A failed statement aborts the
    transaction, and unregistering then fails too: that error must not hide the first."""
    con.register(name, data)
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister(name)


def _check_nothing_lost(con: duckdb.DuckDBPyConnection, start: dt.datetime, end: dt.datetime, where: str,
                        progress: Progress, *, config: Config, now: dt.datetime | None = None,
                        allow_loss: bool = False) -> None:
    """Replacing the window must not delete stored GPU-intervals that Prometheus did not return
    (its retention is shorter than the window, an outage, a selector or another server that
    leaves GPUs or hosts out): refuse, naming them, unless `allow_loss`. A window whose first
    part Prometheus does not hold, and the database neither, is said."""
    coverage.check_database(con, config)
    coverage.check_times(con, config, start, end, f"Prometheus at {where}", now)
    coverage.check_nothing_lost(
        con, config, start, end, lacking=f"Prometheus at {where} returned no samples for", allow_loss=allow_loss,
        progress=progress, advice="Is its retention shorter than the window, or does [prometheus] selector leave "
        "them out? Ingest a window it still holds (--start/--end)",
    )
    earliest = con.execute("SELECT min(interval_start) FROM incoming_gpu_usage").fetchone()[0]
    if earliest is None:
        progress(f"warning: Prometheus at {where} holds no GPU samples in the window")
    elif earliest > start + dt.timedelta(hours=1):
        progress(f"warning: Prometheus at {where} holds no GPU samples from {start:%Y-%m-%d %H:%M} to "
                 f"{earliest:%Y-%m-%d %H:%M} UTC: the window's figures start there")


def _check_scrape_interval(gpu_intervals: int, most: float, config: Config, where: str) -> None:
    """A slower scrape than configured leaves every interval short of samples and would
    undercount present seconds: refuse it. (A faster one is harmless: one sample per
    scrape-interval step counts.) Judged from the fetched rows: in a window with a dozen
    GPU-intervals or more, some GPU is present for a whole interval. A backstop for windows
    where the store probe found no samples to measure the interval on (storeprobe.py).
    `gpu_intervals`: how many GPU-intervals the window has rows for; `most`: the most seconds
    of one (`_Spill` counts both)."""
    scrape, grain = config.prometheus.scrape_interval_seconds, config.grain_seconds
    if gpu_intervals >= 12 and most < grain - scrape:
        raise DataError(
            f"no GPU at {where} has more than {float(most):g} s of samples in any {grain} s interval: "
            f"dcgm-exporter is scraped less often than [prometheus] scrape_interval_seconds = {scrape}; "
            "set it to the scrape interval"
        )


def _stage_jobs(con: duckdb.DuckDBPyConnection, config: Config, labels: dict[str, JobLabels]) -> int:
    """`incoming_jobs`: every owner of the incoming usage rows with its labels, its most used
    GPU model and (where no request is known) the most GPUs it held at once."""
    per_job = con.execute(
        "SELECT job_id, mode(gpu_model), max(gpus) FROM (SELECT job_id, interval_start, any_value(gpu_model) "
        "AS gpu_model, count(DISTINCT gpu_uuid) AS gpus FROM incoming_gpu_usage WHERE job_id IS NOT NULL "
        "GROUP BY ALL) GROUP BY job_id ORDER BY job_id"
    ).fetchall()
    cols: dict[str, list] = {k: [] for k in ("job_id", "cluster", "project", "user_name", "model_type", "image_tag",
                                             "image_digest", "gpu_request", "gpu_model", "epochs", "imgsz", "batch")}
    for job_id, model, gpus in per_job:
        j = labels.get(job_id)
        values = dict(job_id=job_id, cluster=config.cluster, gpu_model=model)
        if j is not None:
            values.update(project=j.project, user_name=j.user_name, model_type=j.model_type,
                          image_tag=j.image_tag, image_digest=j.image_digest,
                          gpu_request=j.gpu_request or gpus, epochs=j.epochs, imgsz=j.imgsz, batch=j.batch)
        else:
            values["gpu_request"] = gpus
        for k in cols:
            cols[k].append(values.get(k))
    _stage(con, "jobs", {k: _coded(v) for k, v in cols.items()})
    return len(per_job)


def _stage(con: duckdb.DuckDBPyConnection, table: str, data: Columns, params: list | None = None,
           source: str = "SELECT * FROM fetched") -> None:
    """The temp table incoming_<table>, shaped like the raw table: the columns of `source` (a
    query of `data`, seen as `fetched`) cast to the raw table's types, absent ones NULL.
    Better no `params`: DuckDB 1.5 imports pandas and pyarrow to bind them (sqltext.py)."""
    scanned = {name: column.codes if isinstance(column, _Coded) else column for name, column in data.items()}
    columns = ", ".join(column.sql(name) + f' AS "{name}"' if isinstance(column, _Coded) else f'"{name}"'
                        for name, column in data.items())
    source = f"WITH fetched AS NOT MATERIALIZED (SELECT {columns} FROM fetched_codes) SELECT * FROM ({source})"
    with _registered(con, "fetched_codes", scanned):
        types = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
        present = {d[0] for d in con.execute(f"SELECT * FROM ({source}) LIMIT 0", params).description}
        select = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' if c in present else f'CAST(NULL AS {t}) AS "{c}"'
                           for c, t in types)
        # one CREATE ... AS statement: DuckDB 2.0.0 loses rows that a parallel INSERT puts into
        # a temp table created earlier in the same transaction (seen above ~100k rows)
        con.execute(f"CREATE OR REPLACE TEMP TABLE incoming_{table} AS SELECT {select} FROM ({source})", params)


def _job_times(con: duckdb.DuckDBPyConnection, config: Config, window_start: int, window_end: int) -> None:
    """First and last interval of the incoming jobs over all usage (stored outside the window
    plus incoming); no end while the job still holds a GPU at the end of all data. Of the rows
    before the window only those from the first month an incoming job was billed in are read
    (mart_job_month), so earlier months' rows are not (a month's build reads its own only)."""
    since = window_start
    if months.has_table(con, "mart_job_month"):
        first = con.execute("SELECT min(month) FROM mart_job_month WHERE job_id IN (SELECT job_id FROM incoming_jobs)"
                            ).fetchone()[0]
        if first is not None:
            since = min(since, int(months.window(config, first)[0].timestamp()))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE incoming_job_times AS
        WITH kept AS (
            SELECT job_id, interval_start FROM gpu_usage
            WHERE interval_start >= to_timestamp({since}) AND interval_start < to_timestamp({window_start})
            UNION ALL SELECT job_id, interval_start FROM gpu_usage WHERE interval_start >= to_timestamp({window_end})
            UNION ALL SELECT job_id, interval_start FROM incoming_gpu_usage
        ),
        data_end AS (SELECT greatest(max(interval_start), to_timestamp({window_end}) - to_seconds({config.grain_seconds}))
                     AS last FROM kept)
        SELECT job_id, min(interval_start) AS first,
               CASE WHEN max(interval_start) >= (SELECT last FROM data_end) THEN NULL
                    ELSE max(interval_start) + to_seconds({config.grain_seconds}) END AS last
        FROM kept WHERE job_id IN (SELECT job_id FROM incoming_jobs)
        GROUP BY job_id
    """)


def _store_notes(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime, end: dt.datetime,
                 notes: list[tuple]) -> None:
    """The window's `ingest_notes` (schema.sql), replacing those inside it: uncounted samples are
    noted per grain interval, so a later ingest of part of the window replaces exactly its own."""
    cluster = literal(config.cluster)
    con.execute(f"DELETE FROM ingest_notes WHERE cluster = {cluster} AND window_start >= {literal(start)} "
                f"AND window_end <= {literal(end)}")
    for a, b, kind, host, gpu, samples, seconds, detail in notes:
        con.execute(f"INSERT INTO ingest_notes VALUES (to_timestamp({int(a)}), to_timestamp({int(b)}), {cluster}, "
                    f"{literal(kind)}, {literal(host)}, {literal(gpu)}, {literal(samples)}, {literal(seconds)}, "
                    f"{literal(detail)})")


def _set_job_times(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
        UPDATE jobs SET start_time = t.first, end_time = t.last
        FROM incoming_job_times AS t WHERE jobs.job_id = t.job_id
    """)
    con.execute("DROP TABLE incoming_job_times")
