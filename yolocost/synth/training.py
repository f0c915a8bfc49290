"""Per-epoch training metrics of a job: losses that fall and flatten, mAP that rises.

Each loss component falls by positive steps that follow an exponential (so the total never
increases); epochs reported during a stall change it by almost nothing. The final mAP of
the best epoch depends on the model size (n < s < m < l).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import yolo
from .jobs import JobSpec
from .rng import stream

LOSS_METRICS = ("train/box_loss", "train/cls_loss", "train/dfl_loss")
MAP50, MAP50_95 = "metrics/mAP50(B)", "metrics/mAP50-95(B)"


@dataclass(frozen=True)
class Curves:
    losses: np.ndarray  # (epochs, 3): box, cls, dfl
    map50: np.ndarray
    map50_95: np.ndarray

    @property
    def best_epoch(self) -> int:
        """1-based epoch with the best Ultralytics fitness (0.1 mAP50 + 0.9 mAP50-95)."""
        return int(np.argmax(0.1 * self.map50 + 0.9 * self.map50_95)) + 1

    def total_loss(self) -> np.ndarray:
        return self.losses[:, 0] + self.losses[:, 1] + self.losses[:, 2]


def training_curves(seed: int, spec: JobSpec, epoch_slow: np.ndarray) -> Curves:
    rng = stream(seed, "curves", spec.key)
    size = yolo.size(spec.model_type)
    n = len(epoch_slow)
    normal = ~epoch_slow
    progress = np.cumsum(normal.astype(float))  # slow epochs make no progress
    total = max(1.0, progress[-1]) if n else 1.0
    tau = total * rng.uniform(0.16, 0.28)
    start = np.array(size.loss_start) * rng.uniform(0.95, 1.05, 3)
    floor = np.array(size.loss_floor) * rng.uniform(0.95, 1.05, 3)
    base = floor + (start - floor) * np.exp(-np.concatenate([[0.0], progress])[:, None] / tau)
    steps = (base[:-1] - base[1:]) * rng.uniform(0.6, 1.4, (n, 3))
    steps[epoch_slow] = 0.0
    steps[epoch_slow, 0] = 1e-5 * rng.integers(0, 2, int(epoch_slow.sum()))
    losses = np.round(start - np.cumsum(steps, axis=0), 5)

    m50 = size.map50 + yolo.FAMILY_MAP_BONUS[yolo.family(spec.model_type)] + rng.normal(0, 0.015)
    m50 -= 0.02 if spec.epochs < 50 else 0.0
    m5095 = m50 * size.map50_95 / size.map50 + rng.normal(0, 0.008)
    tau_map = total * rng.uniform(0.12, 0.22)
    rise = 1.0 - 0.92 * np.exp(-progress / tau_map)
    map50 = m50 * rise + rng.normal(0, 0.004, n)
    map5095 = m5095 * rise + rng.normal(0, 0.003, n)
    for i in np.flatnonzero(epoch_slow):  # a stalled run validates to the same numbers
        if i > 0:
            map50[i] = map50[i - 1] + rng.normal(0, 0.0003)
            map5095[i] = map5095[i - 1] + rng.normal(0, 0.0002)
    return Curves(losses, np.round(np.clip(map50, 0, 1), 5), np.round(np.clip(map5095, 0, 1), 5))
