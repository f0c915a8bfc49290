"""A simple first-come scheduler: each job waits for enough free GPUs on one host of its kind.

Jobs are placed in submit order on the host where they can start first (lowest host number
on a tie, so the last hosts of a kind stay lightly used), on that host's longest-free GPUs.
No job runs across a host's downtime; a job that cannot start inside the window is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fleet import Host
from .incidents import Incidents
from .jobs import JobSpec
from .window import Window


@dataclass(frozen=True)
class Placement:
    spec: JobSpec
    host: Host
    gpu_indices: tuple[int, ...]
    start: int  # sample index
    samples: int  # full length; the window may cut it


def schedule(specs: list[JobSpec], hosts: list[Host], incidents: Incidents, window: Window) -> list[Placement]:
    by_kind: dict[str, list[Host]] = {}
    for h in hosts:
        by_kind.setdefault(h.kind.key, []).append(h)
    free = {k: np.zeros((len(hs), hs[0].kind.gpus_per_host), dtype=np.int64) for k, hs in by_kind.items()}
    down = {k: [incidents.down_samples(window, h.name) for h in hs] for k, hs in by_kind.items()}
    placed = []
    for spec in specs:
        kind = spec.kind.key
        table = free[kind]
        g = spec.gpu_request
        starts = np.maximum(np.sort(table, axis=1)[:, g - 1], spec.submit)
        for i, ranges in enumerate(down[kind]):
            for d0, d1 in ranges:
                t = int(starts[i])
                if t < d1 and t + spec.duration_at(t) > d0:
                    starts[i] = d1
        i = int(np.argmin(starts))
        start = int(starts[i])
        if start >= window.n_samples:
            continue
        chosen = np.sort(np.argsort(table[i], kind="stable")[:g])
        samples = spec.duration_at(start)
        table[i, chosen] = start + samples
        placed.append(Placement(spec, by_kind[kind][i], tuple(int(c) for c in chosen), start, samples))
    placed.sort(key=lambda p: (p.start, p.spec.key))
    return placed
