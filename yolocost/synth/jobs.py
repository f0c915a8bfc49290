"""The workload: training jobs drawn for each GPU kind until they ask for its target load.

A job's shape is fixed here in samples (data loading, epochs with validation dips, an
optional stall, the convergence tail); where and when it runs is the scheduler's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import yolo
from .constants import SAMPLES_PER_GRAIN
from .fleet import KIND_BY_KEY, KINDS, GpuKind, Host
from .rng import stream
from .window import Window

HOUR = 3600 // 30  # samples per hour (30 s samples)
MIN_EPOCH = 20  # samples: keeps a validation dip from dragging a whole grain interval low
MAX_TRAIN = 66 * HOUR


@dataclass(frozen=True)
class Stall:
    """A stretch of low utilization with a flat loss (what a breaker should catch).

    kind: 'hang' (no epochs, then training resumes), 'slow' (a few epochs with a flat loss,
    then normal epochs resume) or 'final' (after the last epoch, then the tail and the end).
    The stall starts at the first grain boundary at or after epoch `after_epoch` ends.
    """

    kind: str
    after_epoch: int
    samples: int  # a multiple of the grain
    slow_epochs: int = 0


@dataclass(frozen=True)
class Zombie:
    """A job that keeps holding its GPUs at almost 0 % with no training progress until someone
    kills it (what idle reclaim should release), `samples` long:

    kind: 'stuck_start' (after loading its data it never trains: a hung data mount or a
    deadlocked rank; no epoch at all), 'hung' (after epoch `after_epoch` ends it stops: a dead
    data-loader worker; no later epoch) or 'finished' (after its last epoch and the final
    validation the pod stays up: a debugging `sleep`, a notebook left open)."""

    kind: str
    after_epoch: int
    samples: int


@dataclass
class JobSpec:
    key: int  # draw order; names this job's random streams
    kind: GpuKind
    gpu_request: int
    model_type: str
    batch: int
    epochs: int
    submit: int  # sample index
    load_samples: int
    epoch_samples: np.ndarray  # per epoch (slow stall epochs take their length from the stall)
    dip_samples: np.ndarray  # validation samples at the end of each epoch
    tail_samples: int
    dataset_factor: float
    stall: Stall | None = None
    zombie: Zombie | None = None
    role: str = "normal"
    extra: dict = field(default_factory=dict)

    def stall_offset(self) -> int:
        """Samples from the job start to the end of the epoch the stall follows."""
        assert self.stall is not None
        return self.load_samples + int(self.epoch_samples[: self.stall.after_epoch].sum())

    def duration_at(self, start: int) -> int:
        """Length in samples when it starts at sample `start` (stalls snap to the grain)."""
        n = self.load_samples + int(self.epoch_samples.sum()) + self.tail_samples
        z = self.zombie
        if z is not None:  # never together with a stall
            if z.kind == "finished":
                return n + z.samples
            return self.load_samples + int(self.epoch_samples[: z.after_epoch].sum()) + z.samples
        if self.stall is None:
            return n
        s = self.stall
        k = s.after_epoch
        n -= int(self.epoch_samples[k : k + s.slow_epochs].sum())
        at = start + self.stall_offset()
        gap = -at % SAMPLES_PER_GRAIN
        return n + gap + s.samples


def _choice(rng: np.random.Generator, table) -> Any:  # a key of the table
    items = list(table.items()) if isinstance(table, dict) else list(table)
    weights = np.array([w for _, w in items], dtype=float)
    return items[int(rng.choice(len(items), p=weights / weights.sum()))][0]


def _shape(rng: np.random.Generator, kind: GpuKind, g: int, model_type: str, epochs: int | None,
           epoch_len: int | None) -> dict:
    size = yolo.size(model_type)
    factor = float(np.exp(rng.uniform(np.log(0.35), np.log(2.2))))
    if epoch_len is None:
        minutes = size.epoch_minutes * yolo.FAMILY_TIME[yolo.family(model_type)] * factor / g**0.85 / kind.speed
        epoch_len = int(np.clip(round(minutes * 2), MIN_EPOCH, 180))
    if epochs is None:
        epochs = int(_choice(rng, {30: 1, 50: 2, 60: 1, 80: 2, 100: 3, 120: 1, 150: 2, 200: 1, 300: 1}))
        epochs = max(12, min(epochs, MAX_TRAIN // epoch_len))
    lengths = np.maximum(epoch_len + rng.integers(-1, 2, epochs), MIN_EPOCH)
    return dict(
        epochs=epochs,
        load_samples=int(rng.integers(10, 41)),
        epoch_samples=lengths.astype(np.int64),
        dip_samples=rng.integers(1, 4, epochs).astype(np.int64),
        tail_samples=int(rng.integers(20, 161)),
        dataset_factor=round(factor, 4),
    )


def _draw(seed: int, key: int, kind: GpuKind, submit: int = 0) -> JobSpec:
    rng = stream(seed, "job", key)
    g = int(_choice(rng, kind.requests))
    model_type = str(_choice(rng, yolo.MODEL_TYPES))
    batch = int(rng.choice(yolo.size(model_type).batches))
    shape = _shape(rng, kind, g, model_type, None, None)
    return JobSpec(key, kind, g, model_type, batch, submit=submit, **shape)


def _anchor(seed: int, key: int, kind: str, g: int, model_type: str, batch: int, submit: int, epochs: int,
            epoch_len: int, role: str) -> JobSpec:
    rng = stream(seed, "job", key)
    shape = _shape(rng, KIND_BY_KEY[kind], g, model_type, epochs, epoch_len)
    return JobSpec(key, KIND_BY_KEY[kind], g, model_type, batch, submit=submit, role=role, **shape)


def _anchors(seed: int, window: Window) -> list[JobSpec]:
    """Jobs that make sure the month's edges are crossed whatever the random draw."""
    long_submit = window.sample_at(window.start + 3 * 3600)
    long_samples = window.sample_at(window.month_end + 14 * 3600) - long_submit
    return [
        # one small model trained all month long on one A10G: starts before the month, ends after it
        _anchor(seed, 0, "a10g", 1, "yolov8n", 32, long_submit, (long_samples - 100) // 120, 120, "month-long"),
        _anchor(seed, 1, "a100", 4, "yolo11m", 32, window.sample_at(window.start + 16 * 3600), 40, 50,
                "month-start"),
        _anchor(seed, 2, "v100", 1, "yolov8s", 16, window.sample_at(window.month_end - 10 * 3600), 60, 40,
                "month-end"),
    ]


def _add_stalls(seed: int, specs: list[JobSpec], window: Window, count: int) -> None:
    rng = stream(seed, "stalls")
    lo, hi = window.sample_at(window.month_start + 2 * 86400), window.sample_at(window.month_end - 6 * 86400)
    pool = [s for s in specs if s.role == "normal" and s.epochs >= 12 and lo <= s.submit < hi]
    picked = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    for n, i in enumerate(sorted(int(i) for i in picked)):
        spec = pool[i]
        kind = ("hang", "slow", "final")[n % 3]
        samples = int(rng.integers(36, 97)) * SAMPLES_PER_GRAIN  # 3 to 8 hours
        if kind == "final":
            spec.stall = Stall(kind, spec.epochs, samples)
            continue
        after = int(rng.integers(max(3, spec.epochs // 4), 3 * spec.epochs // 4 + 1))
        slow = 0
        if kind == "slow":
            slow = int(min(max(2, samples // 170), spec.epochs - after - 1))
        spec.stall = Stall(kind, after, samples, slow)


ZOMBIE_KINDS = ("stuck_start", "hung", "finished")


def _add_zombies(seed: int, specs: list[JobSpec], window: Window, count: int) -> None:
    """Make `count` normal jobs without a stall zombies (kinds in turn), each 2 to 12 hours."""
    rng = stream(seed, "zombies")
    lo, hi = window.sample_at(window.month_start + 86400), window.sample_at(window.month_end - 4 * 86400)
    pool = [s for s in specs if s.role == "normal" and s.stall is None and s.epochs >= 12 and lo <= s.submit < hi]
    picked = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    for n, i in enumerate(sorted(int(i) for i in picked)):
        spec = pool[i]
        kind = ZOMBIE_KINDS[n % len(ZOMBIE_KINDS)]
        samples = int(rng.integers(2 * HOUR, 12 * HOUR + 1))
        after = {"stuck_start": 0, "finished": spec.epochs}.get(kind)
        if after is None:
            after = int(rng.integers(2, spec.epochs - 1))
        spec.zombie = Zombie(kind, after, samples)


def draw_jobs(seed: int, window: Window, hosts: list[Host], scale: float, zombies: int = 0) -> list[JobSpec]:
    """Anchors plus random jobs per GPU kind up to its target load, with a few stalled jobs,
    and `zombies` zombie jobs (none in the demo month)."""
    specs = _anchors(seed, window)
    key = len(specs)
    n = window.n_samples
    for kind in KINDS:
        gpus = sum(len(h.gpus) for h in hosts if h.kind.key == kind.key)
        budget = kind.target_load * gpus * n
        asked = sum(s.gpu_request * s.duration_at(0) for s in specs if s.kind.key == kind.key)
        drawn = []
        while asked < budget:
            spec = _draw(seed, key, kind)
            key += 1
            asked += spec.gpu_request * spec.duration_at(0)
            drawn.append(spec)
        submits = np.sort(stream(seed, "submit", kind.key).integers(0, n - HOUR, len(drawn)))
        for spec, submit in zip(drawn, submits):
            spec.submit = int(submit)
        specs.extend(drawn)
    _add_stalls(seed, specs, window, max(3, round(5 * scale)))
    if zombies:
        _add_zombies(seed, specs, window, zombies)
    specs.sort(key=lambda s: (s.submit, s.key))
    return specs
