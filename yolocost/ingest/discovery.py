"""Series discovery: what the window's series are, read before any grain query is planned.

The label sets of the window's utilization series, pods, containers and job-info decide
which queries the fetch sends and who owns each series; they are read a chunk at a time
and reduced at once, so no chunk's label sets outlive it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .. import promql
from ..attribution import Attribution, uuid_of
from ..promclient import PrometheusClient
from ..storeprobe import spread

# dcgm utilization metrics read per [ingest] utilization, in order of preference for the message
UTIL_METRICS = {"dev": (promql.UTIL_DEV,), "prof": (promql.UTIL_PROF,), "auto": (promql.UTIL_DEV, promql.UTIL_PROF)}


@dataclass
class Discovered:
    """What the fetch needs of the window's series, gathered a chunk at a time
    (`discover`) so that no chunk's label sets outlive it."""

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
        """One chunk's label sets (`series`), reduced to the above."""
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


def series(client: PrometheusClient, queries: promql.GrainQueries, concurrency: int, metrics: list[str],
           start: int, end: int) -> dict[str, list[dict[str, str]]]:
    """Label sets of each metric's series in [start, end], the requests sent side by side."""
    with ThreadPoolExecutor(concurrency) as pool:
        found = pool.map(lambda m: client.series(queries.selector_for(m), start, end), metrics)
        return dict(zip(metrics, found))


def discover(client: PrometheusClient, queries: promql.GrainQueries, concurrency: int,
             windows: list[tuple[int, int]], util_metrics: tuple[str, ...], start: int, end: int,
             attribution: Attribution) -> tuple[Discovered, int]:
    """The window's series a chunk (`windows`) at a time, each chunk's answers reduced at once
    to what the fetch needs and their pods and job-info put into `attribution`: a month
    of a large fleet holds hundreds of thousands of label sets, a chunk a few thousand.
    The union of the chunks' answers is the window's, so nothing read differs. Returns what
    was found and the number of requests sent."""
    seen = Discovered(util_metrics)
    requests = 0
    for a, b in windows or [(start, end)]:  # (none: a window that has not begun)
        metrics = [*util_metrics, promql.POD_LABELS, promql.CONTAINER_INFO, promql.JOB_INFO]
        requests += len(metrics)
        found = series(client, queries, concurrency, metrics, a, b)
        seen.add(found)
        attribution.add_pod_labels(found[promql.POD_LABELS])
        attribution.add_container_info(found[promql.CONTAINER_INFO])
        attribution.add_job_info(found[promql.JOB_INFO])
        del found
    attribution.exported_jobs = frozenset(seen.exported)
    return seen, requests
