"""Ground truth, computed straight from the samples and the job list, independently of SQL.

Seconds are integers and money exact fractions (rounded half-even to 12 places only when
written). Energy comes from the true per-sample increments, not from the counter, so a
wrong reading of the counter reset shows up. The breaker follows the product definition at
the grain: per job and interval, util = mean over all its samples; runs of consecutive low
intervals (< 40) lasting >= 2 h whose loss improved by < 0.001 are candidates.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .constants import (BREAKER_LOSS_DELTA, BREAKER_MIN_HOURS, BREAKER_UTIL, BUSY_UTIL, GRAIN_SECONDS,
                        IDLE_UTIL, SAMPLE_SECONDS, SAMPLES_PER_GRAIN, THRESHOLDS)
from .plan import MonthPlan, PlannedJob
from .prices import DEMO_ENERGY_PRICES, DEMO_PRICES, Segment
from .tags import TAG_PATTERN
from .samples import NO_OWNER, GpuSamples
from .window import Window, iso_utc

MJ_PER_KWH = 3_600_000_000
_FIELDS = ("seconds", "busy", "idle", "energy")  # accumulated per (GPU model, owner, segment)


def money(value: Fraction) -> str:
    """A Fraction as a decimal string rounded half-even to 12 places: the ground truth the
    tests compare the marts and the ledger with, so it is computed apart from yolocost.money
    on purpose (how amounts are shown is yolocost.money.Currency's)."""
    q = round(value * 10**12)  # round() on a Fraction rounds half to even
    sign = "-" if q < 0 else ""
    q = abs(q)
    return f"{sign}{q // 10**12}.{q % 10**12:012d}"


class TruthBuilder:
    """Accumulates exact per-owner, per-segment totals GPU by GPU, then builds the figures."""

    def __init__(self, window: Window, segments: list[Segment], jobs: list[PlannedJob]):
        self.window = window
        self.segments = segments
        self.jobs = jobs
        self.epoch_loss = [j.curves.total_loss()[: j.reported].tolist() for j in jobs]
        self.seg_first = np.array([window.sample_at(s.start) for s in segments], np.int64)
        self.acc: dict[tuple[str, int, int], np.ndarray] = {}
        self.mem_peak = np.full(len(jobs), -1, np.int64)
        n = window.n_samples
        self.first_grain, self.grain_util, self.grain_count = [], [], []
        for job in jobs:
            p = job.run.placement
            first, last = p.start // SAMPLES_PER_GRAIN, (min(p.start + p.samples, n) - 1) // SAMPLES_PER_GRAIN
            self.first_grain.append(first)
            self.grain_util.append(np.zeros(last - first + 1, np.int64))
            self.grain_count.append(np.zeros(last - first + 1, np.int64))

    def add(self, s: GpuSamples) -> None:
        """Account one GPU's samples."""
        if not len(s.sample):
            return
        nseg = len(self.segments)
        seg = np.searchsorted(self.seg_first, s.sample, side="right") - 1
        energy = s.energy_increment_mj.copy()
        energy[0] = 0  # the first sample in the window has no earlier sample to measure from
        key = (s.owner.astype(np.int64) + 1) * nseg + seg
        uniq, inv = np.unique(key, return_inverse=True)
        sums = np.zeros((len(uniq), 4), np.int64)
        np.add.at(sums[:, 0], inv, SAMPLE_SECONDS)
        np.add.at(sums[:, 1], inv, np.where(s.util > BUSY_UTIL, SAMPLE_SECONDS, 0))
        np.add.at(sums[:, 2], inv, np.where(s.util < IDLE_UTIL, SAMPLE_SECONDS, 0))
        np.add.at(sums[:, 3], inv, energy)
        model = s.gpu.kind.name
        for k, row in zip(uniq.tolist(), sums):
            slot = (model, k // nseg - 1, k % nseg)
            self.acc[slot] = self.acc.get(slot, 0) + row
        for code in np.unique(s.owner[s.owner != NO_OWNER]).tolist():
            held = s.owner == code
            self.mem_peak[code] = max(self.mem_peak[code], int(s.fb_used_mib[held].max()))
            grain = s.sample[held] // SAMPLES_PER_GRAIN - self.first_grain[code]
            np.add.at(self.grain_util[code], grain, s.util[held].astype(np.int64))
            np.add.at(self.grain_count[code], grain, 1)

    # -- results ------------------------------------------------------------------------------

    def _price(self, model: str, seg: int) -> Fraction:
        return self.segments[seg].gpu_price[model]

    def _breakers(self, code: int) -> list[dict]:
        job = self.jobs[code]
        model = job.run.placement.host.kind.name
        count, util = self.grain_count[code], self.grain_util[code]
        held = np.flatnonzero(count > 0)
        low = held[util[held] < BREAKER_UTIL * count[held]]
        out: list[dict] = []
        if not len(low):
            return out
        cuts = np.flatnonzero(np.diff(low) != 1) + 1
        for run in np.split(low, cuts):
            a = self.window.start + (self.first_grain[code] + int(run[0])) * GRAIN_SECONDS
            b = self.window.start + (self.first_grain[code] + int(run[-1])) * GRAIN_SECONDS
            end = b + GRAIN_SECONDS
            if end - a < BREAKER_MIN_HOURS * 3600:
                continue
            epochs = list(zip(job.epoch_ts.tolist(), self.epoch_loss[code]))
            before = [loss for ts, loss in epochs if ts <= a]
            if not before:
                continue
            after = min([before[-1]] + [loss for ts, loss in epochs if a < ts < end])
            improvement = before[-1] - after
            if not improvement < float(BREAKER_LOSS_DELTA):
                continue
            months: dict[str, list]
            seconds, cost, months = 0, Fraction(0), {}
            for i in run.tolist():
                sample = (self.first_grain[code] + i) * SAMPLES_PER_GRAIN
                seg = int(np.searchsorted(self.seg_first, sample, side="right") - 1)
                sec = int(count[i]) * SAMPLE_SECONDS
                c = Fraction(sec) * self._price(model, seg) / 3600
                seconds, cost = seconds + sec, cost + c
                m = months.setdefault(self.segments[seg].month, [0, Fraction(0)])
                m[0], m[1] = m[0] + sec, m[1] + c
            out.append({
                "job_id": job.job_id,
                "start": iso_utc(a),
                "end": iso_utc(end),
                "hours": (end - a) / 3600,
                "gpu_seconds": seconds,
                "gpu_cost": money(cost),
                "loss_before": round(before[-1], 6),
                "loss_after": round(after, 6),
                "improvement": round(improvement, 6),
                "months": {k: {"gpu_seconds": v[0], "gpu_cost": money(v[1])} for k, v in sorted(months.items())},
            })
        return out

    def result(self) -> dict:
        labels = {code: j.labels for code, j in enumerate(self.jobs)}
        months = {}
        for label, _, _ in self.window.months:
            months[label] = _Month()
        job_months: dict[int, dict[str, _Bucket]] = {}
        for (model, owner, seg), row in sorted(self.acc.items()):
            sec, busy, idle, energy = (int(v) for v in row)
            segment = self.segments[seg]
            cost = Fraction(sec) * segment.gpu_price[model] / 3600
            ecost = Fraction(energy) * segment.energy_price / MJ_PER_KWH
            m = months[segment.month]
            m.add("capacity", sec, cost, busy, idle, energy, ecost)
            m.add(("model", model, "capacity"), sec, cost, busy, idle, energy, ecost)
            if owner == NO_OWNER:
                m.add("unallocated", sec, cost, busy, idle, energy, ecost)
                m.add(("model", model, "unallocated"), sec, cost, busy, idle, energy, ecost)
                continue
            lab = labels[owner]
            m.add("attributed", sec, cost, busy, idle, energy, ecost)
            m.add(("model", model, "attributed"), sec, cost, busy, idle, energy, ecost)
            m.add(("project", lab.project) if lab.project is not None else "unlabeled",
                  sec, cost, busy, idle, energy, ecost)
            m.add(("user", lab.user), sec, cost, busy, idle, energy, ecost)
            m.add(("tag", lab.tag_status), sec, cost, busy, idle, energy, ecost)
            job_months.setdefault(owner, {}).setdefault(segment.month, _Bucket()).add(
                sec, cost, busy, idle, energy, ecost)

        breakers = []
        jobs = {}
        for code, job in enumerate(self.jobs):
            p = job.run.placement
            lab = job.labels
            found = self._breakers(code)
            best = job.curves.best_epoch if job.finished else None
            breakers.extend(found)
            per_month = {k: b.job_dict() for k, b in sorted(job_months.get(code, {}).items())}
            jobs[job.job_id] = {
                "project": lab.project,
                "user": lab.user,
                "model_type": p.spec.model_type,
                "image_tag": lab.image_tag,
                "image_digest": lab.image_digest,
                "tag_status": lab.tag_status,
                "gpu_request": p.spec.gpu_request,
                "gpu_model": p.host.kind.name,
                "hostname": p.host.name,
                "start_time": iso_utc(self.window.instant(p.start)),
                "end_time": iso_utc(job.end_time) if job.end_time is not None else None,
                "seconds_present": sum(v["seconds_present"] for v in per_month.values()),
                "months": per_month,
                "mem_peak_mib": int(self.mem_peak[code]) if self.mem_peak[code] >= 0 else None,
                "epochs_reported": job.reported,
                "map50": float(job.curves.map50[best - 1]) if best else None,
                "map50_95": float(job.curves.map50_95[best - 1]) if best else None,
                "best_epoch": best,
                "breakers": [{k: v for k, v in b.items() if k != "job_id"} for b in found],
            }
        return {
            "months": {label: m.to_dict() for label, m in months.items()},
            "jobs": jobs,
            "breakers": breakers,
        }


class _Bucket:
    """Seconds, money and energy of one owner (or group) in one month."""

    __slots__ = ("seconds", "cost", "busy", "idle", "energy", "ecost")

    def __init__(self):
        self.seconds = self.busy = self.idle = self.energy = 0
        self.cost = self.ecost = Fraction(0)

    def add(self, sec, cost, busy, idle, energy, ecost) -> None:
        self.seconds += sec
        self.cost += cost
        self.busy += busy
        self.idle += idle
        self.energy += energy
        self.ecost += ecost

    def owner_dict(self) -> dict:
        return {
            "seconds": self.seconds,
            "gpu_cost": money(self.cost),
            "busy_seconds": self.busy,
            "idle_seconds": self.idle,
            "energy_mj": self.energy,
            "energy_cost": money(self.ecost),
        }

    def job_dict(self) -> dict:
        return {
            "seconds_present": self.seconds,
            "seconds_busy": self.busy,
            "seconds_idle": self.idle,
            "energy_mj": self.energy,
            "gpu_cost": money(self.cost),
            "energy_cost": money(self.ecost),
        }


class _Month:
    """All buckets of one local calendar month, keyed by what they group."""

    def __init__(self) -> None:
        self.buckets: dict[object, _Bucket] = {}

    def add(self, key, *values) -> None:
        self.buckets.setdefault(key, _Bucket()).add(*values)

    def _get(self, key) -> _Bucket:
        return self.buckets.get(key, _Bucket())

    def _group(self, kind: str) -> dict:
        return {k[1]: b for k, b in sorted(((k, b) for k, b in self.buckets.items()
                                            if isinstance(k, tuple) and k[0] == kind and len(k) == 2),
                                           key=lambda kb: kb[0][1])}

    def to_dict(self) -> dict:
        cap, att, unl, una = (self._get(k) for k in ("capacity", "attributed", "unlabeled", "unallocated"))
        models = sorted({k[1] for k in self.buckets if isinstance(k, tuple) and k[0] == "model"})
        return {
            "capacity_seconds": cap.seconds,
            "attributed_seconds": att.seconds,
            "unlabeled_seconds": unl.seconds,
            "unallocated_seconds": una.seconds,
            "capacity_cost": money(cap.cost),
            "attributed_gpu_cost": money(att.cost),
            "unlabeled_gpu_cost": money(unl.cost),
            "unallocated_gpu_cost": money(una.cost),
            "busy_seconds": cap.busy,
            "idle_seconds": cap.idle,
            "attributed_idle_seconds": att.idle,
            "energy_mj": cap.energy,
            "energy_cost": money(cap.ecost),
            "projects": {k: b.owner_dict() for k, b in self._group("project").items()},
            "unlabeled": unl.owner_dict(),
            "users": {k: b.owner_dict() for k, b in self._group("user").items()},
            "gpu_models": {
                m: {
                    "capacity_seconds": self._get(("model", m, "capacity")).seconds,
                    "attributed_seconds": self._get(("model", m, "attributed")).seconds,
                    "unallocated_seconds": self._get(("model", m, "unallocated")).seconds,
                    "gpu_cost": money(self._get(("model", m, "attributed")).cost),
                    "unallocated_cost": money(self._get(("model", m, "unallocated")).cost),
                    "capacity_cost": money(self._get(("model", m, "capacity")).cost),
                }
                for m in models
            },
            "tag_status": {k: {"seconds": b.seconds, "gpu_cost": money(b.cost)}
                           for k, b in self._group("tag").items()},
        }


def ground_truth(plan: MonthPlan, builder: TruthBuilder, cluster: str, scale: float) -> dict:
    """The whole ground_truth.json document: parameters, fleet, incidents and the figures."""
    window = plan.window
    return {
        "seed": plan.seed,
        "month": window.month,
        "timezone": window.timezone,
        "cluster": cluster,
        "scale": scale,
        "window_start": iso_utc(window.start),
        "window_end": iso_utc(window.end),
        "sample_seconds": SAMPLE_SECONDS,
        "grain_seconds": GRAIN_SECONDS,
        "thresholds": dict(THRESHOLDS),
        "tag_pattern": TAG_PATTERN,
        "prices": [dict(p) for p in DEMO_PRICES],
        "energy_prices": [dict(p) for p in DEMO_ENERGY_PRICES],
        "fleet": [
            {"hostname": h.name, "gpu_model": h.kind.name, "gpu_memory_mib": h.kind.memory_mib,
             "gpus": [g.uuid for g in h.gpus]}
            for h in plan.hosts
        ],
        "incidents": {
            "downtime": [{"hostname": d.hostname, "start": iso_utc(d.start), "end": iso_utc(d.end)}
                         for d in plan.incidents.downtime],
            "energy_resets": [{"gpu_uuid": r.gpu.uuid, "hostname": r.gpu.hostname, "gpu_index": r.gpu.index,
                               "at": iso_utc(r.at)} for r in plan.incidents.resets],
        },
        **builder.result(),
    }
