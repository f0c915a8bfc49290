"""The fetch: every query of a window against one server, turned into raw rows.

`fetch` runs it as the ingest does, in a child process (forked.py) whose memory is gone
before the write starts: what the write needs comes back as `Fetched`, the usage rows as
the spill's files (spill.py). `Fetcher.run` is the order of the work: discovery, the store
probe, the grain queries (pipeline.py), the checks on what came back, training progress.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from .. import coverage, promql
from ..attribution import Attribution, JobLabels, gpu_of
from ..config import Config
from ..errors import DataError
from ..promclient import PrometheusClient, PrometheusError, QueryTooBig
from ..storeprobe import StoreProbe
from .checks import check_scrape_interval
from .decoding import Points
from .discovery import UTIL_METRICS, discover
from .heap import one_heap
from .pipeline import GrainPipeline, Keep, chunks
from .rows import Columns, coded, grouped
from .spill import Spill

Progress = Callable[[str], None]
UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
TRAINING_SLACK = 3600  # progress series are read this long past the window end


@dataclass
class Fetched:
    """What the write needs of the fetch (it comes back from the child process pickled)."""

    jobs: dict[str, JobLabels]  # the owners' labels (the pods' and job-info's label sets stay behind)
    progress: Columns
    results: Columns
    where: str = ""  # the server, for messages and the load's source
    requests: int = 0
    splits: int = 0
    files: list[tuple[int, Path]] = field(default_factory=list)  # the spill's (`Spill.files`)
    notes: list[tuple] = field(default_factory=list)  # `ingest_notes` rows (epoch seconds for the times)


def fetch(config: Config, start: int, end: int, spill: Spill, progress: Progress,
          allow_uncounted: bool = False) -> Fetched:
    """`Fetcher.run` with its own client, as the ingest runs it in a child process (forked.py):
    what the fetch allocates goes with the child, and what the write needs comes back."""
    one_heap()
    client = PrometheusClient(config.prometheus)
    try:
        fetcher = Fetcher(config, client, progress)
        fetcher.allow_uncounted = allow_uncounted
        fetched = fetcher.run(start, end, spill)
        note = client.partial_note()  # answers with warnings, accepted by [prometheus] accept_partial_responses
        if note:
            progress(f"warning: {note}")
        scrape = config.prometheus.scrape_interval_seconds
        notes: list[tuple] = [(at, at + config.grain_seconds, "uncounted", host, gpu, n, n * scrape, None)
                 for (host, gpu, at), n in sorted(fetcher.uncounted.items(), key=lambda kv: (kv[0][2], kv[0][1]))]
        notes += [(start, end, "partial", None, None, None, None, w) for w in client.warnings[:1]]
    finally:
        client.close()
        spill.close()
    return replace(fetched, where=fetcher.where, requests=fetcher.requests, splits=fetcher.splits,
                   files=spill.files, notes=notes)


class Fetcher:
    """Runs the window's queries against one server and turns the answers into raw rows."""

    def __init__(self, config: Config, client: PrometheusClient, progress: Progress):
        self.config, self.client, self.say = config, client, progress
        self.where = client.where
        self.requests = 0
        self.splits = 0
        self.uncounted: dict[tuple[str, str, int], int] = {}  # (host, GPU, interval) -> samples not counted
        self.allow_uncounted = False

    def run(self, start: int, end: int, spill: Spill) -> Fetched:
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
        util_metrics = UTIL_METRICS[cfg.utilization]
        # the other dcgm metrics only need to be there: their names, not their series' label sets
        needed = (promql.FB_USED, promql.POWER, promql.ENERGY)
        self.requests += 1
        present = set(self.client.metric_names(self.queries.any_of(needed), start, end))
        attribution = Attribution(self.config.labels)
        seen, requests = discover(self.client, self.queries, cfg.prometheus.concurrency, chunks(cfg, start, end),
                                  util_metrics, start, end, attribution)
        self.requests += requests
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
        check_scrape_interval(spill.gpu_intervals, spill.most_seconds, cfg, self.where)
        progress_rows, results = self._training(start, end)
        return Fetched(attribution.jobs, progress_rows, results)

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
    def _grain_points(self, start: int, end: int, always_special: set[str], keep: Keep) -> None:
        """Every grain query for every chunk (`GrainPipeline`), each chunk's points to `keep`;
        its requests, splits and uncounted samples added to this fetch's."""
        pipeline = GrainPipeline(self.config, self.client, self.queries, self.say, always_special, keep)
        try:
            pipeline.run(start, end)
        finally:
            self.requests += pipeline.requests
            self.splits += pipeline.splits
            for cell, n in pipeline.uncounted.items():
                self.uncounted[cell] = self.uncounted.get(cell, 0) + n

    def _usage(self, points: Points, columns: tuple, attribution: Attribution) -> Columns:
        """Raw usage rows (as sums) per GPU x owner x interval from one chunk's points."""
        gpus = [gpu_of(labels) for labels in points.labels]
        owners = [attribution.owner(labels) if gpu is not None else None
                  for labels, gpu in zip(points.labels, gpus)]
        return grouped(columns, points.start, gpus, owners, self.config)

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
            "job_id": coded(rows["job_id"]),
            "ts": np.array(rows["ts"], np.int64).astype("datetime64[us]"),
            "epoch": np.array(rows["epoch"], np.int64),
            "metric": coded(rows["metric"]),
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
            "job_id": coded(ids),
            "map50": np.array([results[j].get("map50", math.nan) for j in ids], np.float64),
            "map50_95": np.array([results[j].get("map50_95", math.nan) for j in ids], np.float64),
            "best_epoch": coded([int(b) if b is not None and math.isfinite(b) else None for b in best]),
        }
        return progress, table
