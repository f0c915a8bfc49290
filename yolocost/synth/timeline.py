"""A placed job's phases in sample order, and when each of its epochs ended.

Phases: data loading, steady training with a validation dip at the end of every epoch, an
optional stall (snapped to the grain so whole grain intervals are low) and the convergence
tail (final validation on the best weights, plots, export); a zombie job (jobs.Zombie) holds
its GPUs idle instead of training on, or after its tail.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constants import SAMPLES_PER_GRAIN
from .jobs import JobSpec

LOAD, STEADY, DIP, STALL, TAIL, ZOMBIE = 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class Timeline:
    codes: np.ndarray  # phase of each run
    lengths: np.ndarray  # samples of each run
    epoch_end: np.ndarray  # per epoch: sample offset (from the job start) at which it ended, exclusive
    epoch_slow: np.ndarray  # per epoch: reported during a stall
    stall: tuple[int, int] | None  # [start, end) offsets of the stall
    zombie_start: int | None = None  # offset at which a zombie job stops working (it ends with the job)

    @property
    def samples(self) -> int:
        return int(self.lengths.sum())

    def phases(self, count: int | None = None) -> np.ndarray:
        """Phase code per sample (the first `count` samples)."""
        out = np.repeat(self.codes.astype(np.uint8), self.lengths)
        return out if count is None else out[:count]


def build_timeline(spec: JobSpec, start: int) -> Timeline:
    runs: list[tuple[int, int]] = [(LOAD, spec.load_samples)]
    ends, slow = [], []
    offset = spec.load_samples
    stall = None
    st = spec.stall

    def add(code: int, n: int) -> None:
        nonlocal offset
        if n > 0:
            runs.append((code, n))
            offset += n

    def begin_stall() -> None:
        nonlocal stall
        assert st is not None
        add(STEADY, -(start + offset) % SAMPLES_PER_GRAIN)
        stall = (offset, offset + st.samples)

    z = spec.zombie
    last = spec.epochs if z is None or z.kind == "finished" else z.after_epoch
    e = 0
    while e < last:
        if st is not None and e == st.after_epoch and st.kind in ("hang", "slow"):
            begin_stall()
            assert stall is not None
            if st.kind == "slow":
                for j in range(st.slow_epochs):
                    ends.append(stall[0] + round((j + 1) * st.samples / (st.slow_epochs + 1)))
                    slow.append(True)
                e += st.slow_epochs
            add(STALL, st.samples)
            if st.kind == "slow":
                continue
        length, dip = int(spec.epoch_samples[e]), int(spec.dip_samples[e])
        add(STEADY, length - dip)
        add(DIP, dip)
        ends.append(offset)
        slow.append(False)
        e += 1
    if st is not None and st.kind == "final":
        begin_stall()
        add(STALL, st.samples)
    if z is None or z.kind == "finished":
        add(TAIL, spec.tail_samples)
    zombie = None
    if z is not None:
        zombie = offset
        add(ZOMBIE, z.samples)
    codes, lengths = zip(*runs)
    tl = Timeline(np.array(codes, np.uint8), np.array(lengths, np.int64), np.array(ends, np.int64),
                  np.array(slow, bool), stall, zombie)
    assert tl.samples == spec.duration_at(start), (spec.key, tl.samples, spec.duration_at(start))
    return tl
