"""The whole simulated month before any output: window, fleet, incidents and placed jobs.

Both the raw tables and any other rendering of the same samples (for example OpenMetrics
for a Prometheus backfill) start from a MonthPlan, so they describe the same cluster.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .constants import SAMPLE_SECONDS
from .fleet import KINDS, Host, build_fleet
from .incidents import Incidents, plan_incidents
from .jobs import draw_jobs
from .labels import Labels, assign_labels
from .prices import DEMO_ENERGY_PRICES, DEMO_PRICES, Segment, segments
from .rng import stream
from .samples import GpuSamples, JobRun, host_samples
from .scheduler import schedule
from .timeline import build_timeline
from .training import Curves, training_curves
from .window import Window


@dataclass(frozen=True)
class PlannedJob:
    code: int  # position in job-id order; the owner code in samples
    job_id: str
    run: JobRun
    labels: Labels
    curves: Curves
    reported: int  # epochs that ended inside the window
    epoch_ts: np.ndarray  # epoch seconds at which those epochs ended
    end_time: int | None  # epoch seconds; None while still running at the window end

    @property
    def finished(self) -> bool:
        return self.end_time is not None and self.reported > 0


@dataclass(frozen=True)
class MonthPlan:
    seed: int
    window: Window
    hosts: list[Host]
    incidents: Incidents
    segments: list[Segment]
    jobs: list[PlannedJob]

    def host_samples(self, host: Host) -> Iterator[GpuSamples]:
        """The samples of each GPU of a host, in GPU index order."""
        return host_samples(self.seed, self.window, host, self.runs_by_host.get(host.name, []), self.incidents)

    @functools.cached_property
    def runs_by_host(self) -> dict[str, list]:
        """Each host's runs in plan order, grouped once (not a scan of every job per host:
        that grew with hosts x jobs, a minute at 10,000 GPUs)."""
        grouped: dict[str, list] = {}
        for j in self.jobs:
            grouped.setdefault(j.run.placement.host.name, []).append(j.run)
        return grouped


def plan_month(seed: int, month: str, timezone: str, scale: float, zombies: int = 0) -> MonthPlan:
    window = Window.for_month(month, timezone)
    hosts = build_fleet(seed, scale)
    incidents = plan_incidents(hosts, window)
    segs = segments(window, DEMO_PRICES, DEMO_ENERGY_PRICES, [k.name for k in KINDS])
    placed = schedule(draw_jobs(seed, window, hosts, scale, zombies), hosts, incidents, window)
    labels = assign_labels(seed, [p.spec for p in placed])
    n = window.n_samples
    jobs = []
    for code, (p, lab) in enumerate(zip(placed, labels)):
        tl = build_timeline(p.spec, p.start)
        ends = p.start + tl.epoch_end
        reported = int((ends <= n).sum())
        early = stream(seed, "epoch-ts", p.spec.key).integers(1, SAMPLE_SECONDS, len(ends))
        epoch_ts = window.start + ends[:reported] * SAMPLE_SECONDS - early[:reported]
        end = p.start + p.samples
        jobs.append(PlannedJob(
            code, f"job-{code + 1:06d}", JobRun(code, p, tl), lab, training_curves(seed, p.spec, tl.epoch_slow),
            reported, epoch_ts.astype(np.int64), window.instant(end) if end <= n else None,
        ))
    return MonthPlan(seed, window, hosts, incidents, segs, jobs)
