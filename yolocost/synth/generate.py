"""Generate a synthetic cluster month: the four raw Parquet tables and ground_truth.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa

from . import tables
from .constants import DEMO_CLUSTER, DEMO_MONTH, DEMO_SEED, DEMO_TIMEZONE, SAMPLE_SECONDS
from .fleet import Host
from .grain import GrainRows, grain_rows
from .plan import PlannedJob, plan_month
from .samples import NO_OWNER
from .training import LOSS_METRICS, MAP50, MAP50_95
from .truth import TruthBuilder, ground_truth
from .window import iso_utc
from .window import Window
from .yolo import IMGSZ

FILES = {
    "gpu_usage": "gpu_usage.parquet",
    "jobs": "jobs.parquet",
    "training_progress": "training_progress.parquet",
    "job_results": "job_results.parquet",
    "ground_truth": "ground_truth.json",
}
METRICS = LOSS_METRICS + (MAP50, MAP50_95)


@dataclass(frozen=True)
class GenerateResult:
    """What was written, with the ground truth as a dict."""

    out_dir: Path
    files: dict[str, Path]
    gpus: int
    jobs: int
    usage_rows: int
    stalled_job_ids: tuple[str, ...]  # jobs given a stall on purpose
    ground_truth: dict

    @property
    def breaker_job_ids(self) -> tuple[str, ...]:
        return tuple(sorted({b["job_id"] for b in self.ground_truth["breakers"]}))


def _usage_table(cluster: str, host: Host, parts: list[tuple[int, GrainRows]], job_ids: np.ndarray) -> pa.Table:
    gpu_index = np.concatenate([np.full(len(r), i, np.int32) for i, r in parts])
    uuid = np.concatenate([np.full(len(r), host.gpus[i].uuid, object) for i, r in parts])
    cat = lambda name: np.concatenate([getattr(r, name) for _, r in parts])  # noqa: E731
    n = len(gpu_index)
    owner = cat("owner")
    return pa.Table.from_arrays(
        [
            tables.timestamps_np(cat("interval_start")),
            pa.array(np.full(n, cluster, object), pa.string()),
            pa.array(np.full(n, host.name, object), pa.string()),
            pa.array(uuid, pa.string()),
            pa.array(gpu_index, pa.int32()),
            pa.array(np.full(n, host.kind.name, object), pa.string()),
            pa.nulls(n, pa.string()),
            pa.array(job_ids[owner], pa.string()),  # NO_OWNER (-1) picks the trailing None
            pa.array(cat("seconds_present"), pa.int32()),
            pa.array(cat("util_mean"), pa.float64()),
            pa.array(cat("seconds_busy"), pa.int32()),
            pa.array(cat("seconds_idle"), pa.int32()),
            pa.array(cat("mem_peak_mib"), pa.float64()),
            pa.array(cat("power_mean_w"), pa.float64()),
            pa.array(cat("energy_mj"), pa.int64()),
        ],
        schema=tables.GPU_USAGE,
    )


def _jobs_table(cluster: str, jobs: list[PlannedJob], window: Window) -> pa.Table:
    rows: dict[str, list] = {name: [] for name in tables.JOBS.names}
    for j in jobs:
        p, lab = j.run.placement, j.labels
        rows["job_id"].append(j.job_id)
        rows["cluster"].append(cluster)
        rows["project"].append(lab.project)
        rows["user_name"].append(lab.user)
        rows["model_type"].append(p.spec.model_type)
        rows["image_tag"].append(lab.image_tag)
        rows["image_digest"].append(lab.image_digest)
        rows["gpu_request"].append(p.spec.gpu_request)
        rows["gpu_model"].append(p.host.kind.name)
        rows["start_time"].append(window.instant(p.start))
        rows["end_time"].append(j.end_time)
        rows["epochs"].append(p.spec.epochs)
        rows["imgsz"].append(IMGSZ)
        rows["batch"].append(p.spec.batch)
    arrays = [
        tables.timestamps(rows[f.name]) if f.type == tables.TS else pa.array(rows[f.name], f.type)
        for f in tables.JOBS
    ]
    return pa.Table.from_arrays(arrays, schema=tables.JOBS)


def _progress_tables(jobs: list[PlannedJob], chunk: int = 500):
    """training_progress in job-id, epoch, metric order, a few hundred jobs at a time."""
    order = np.argsort(np.array(METRICS, object))  # metric names ascending within an epoch
    names = np.array(METRICS, object)[order]
    for first in range(0, len(jobs), chunk):
        ids, ts, epoch, value = [], [], [], []
        for j in jobs[first : first + chunk]:
            k = j.reported
            if not k:
                continue
            c = j.curves
            values = np.column_stack([c.losses[:k], c.map50[:k], c.map50_95[:k]])[:, order]
            ids.append(np.full(k * len(METRICS), j.job_id, object))
            ts.append(np.repeat(j.epoch_ts, len(METRICS)))
            epoch.append(np.repeat(np.arange(1, k + 1, dtype=np.int32), len(METRICS)))
            value.append(values.reshape(-1))
        if not ids:
            continue
        rows = sum(len(v) for v in value)
        yield pa.Table.from_arrays(
            [
                pa.array(np.concatenate(ids), pa.string()),
                tables.timestamps_np(np.concatenate(ts)),
                pa.array(np.concatenate(epoch), pa.int32()),
                pa.array(np.tile(names, rows // len(METRICS)), pa.string()),
                pa.array(np.concatenate(value), pa.float64()),
            ],
            schema=tables.TRAINING_PROGRESS,
        )


def _killed(j: PlannedJob) -> bool:
    """A zombie killed before it finished training writes no results."""
    z = j.run.placement.spec.zombie
    return z is not None and z.kind != "finished"


def zombie_truth(jobs: list[PlannedJob], window: Window) -> list[dict]:
    """The planted zombie jobs: when each stopped working (its GPUs idle, no progress from then
    on) and when it let its GPUs go (None: after the window), in UTC."""
    out = []
    for j in jobs:
        z, tl, p = j.run.placement.spec.zombie, j.run.timeline, j.run.placement
        if z is None:
            continue
        assert tl.zombie_start is not None  # a zombie job's timeline has one
        out.append({"job_id": j.job_id, "kind": z.kind, "after_epoch": z.after_epoch,
                    "idle_from": iso_utc(window.instant(p.start + tl.zombie_start)),
                    "until": None if j.end_time is None else iso_utc(j.end_time),
                    "gpus": p.spec.gpu_request, "hours": round(z.samples * SAMPLE_SECONDS / 3600, 3)})
    return out


def _results_table(jobs: list[PlannedJob]) -> pa.Table:
    done = [j for j in jobs if j.finished and not _killed(j)]
    best = [j.curves.best_epoch for j in done]
    return pa.Table.from_arrays(
        [
            pa.array([j.job_id for j in done], pa.string()),
            pa.array([float(j.curves.map50[b - 1]) for j, b in zip(done, best)], pa.float64()),
            pa.array([float(j.curves.map50_95[b - 1]) for j, b in zip(done, best)], pa.float64()),
            pa.array(best, pa.int32()),
        ],
        schema=tables.JOB_RESULTS,
    )


MAX_SCALE = 250  # 250 x the demo fleet: 12,000 GPUs (210 gives the 10,000-GPU benchmark month)


def check_arguments(month: str, timezone: str, scale: float) -> None:
    """The month, time zone and scale as a user gives them; a bad one is a one-line error."""
    import math
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from ..errors import YolocostError
    from ..monthstr import Month, is_month

    if not is_month(month) or not 1971 <= Month.parse(month).year <= 9998:
        raise YolocostError(f"--month must be a month YYYY-MM from 1971-01 to 9998-12, got {month!r}")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise YolocostError(f"--timezone: unknown time zone {timezone!r} (an IANA name such as Europe/Berlin)") from None
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale <= MAX_SCALE):
        raise YolocostError(f"--scale must be a number above 0 and at most {MAX_SCALE}, got {scale!r}")
    try:
        Window.for_month(month, timezone)
    except ValueError as exc:  # local midnight off the grain (a zone with an odd offset)
        raise YolocostError(f"--timezone: {exc}") from None


def generate(
    out_dir,
    *,
    seed: int = DEMO_SEED,
    month: str = DEMO_MONTH,
    timezone: str = DEMO_TIMEZONE,
    cluster: str = DEMO_CLUSTER,
    scale: float = 1.0,
    progress: Callable[[str], None] | None = None,
    zombies: int = 0,
) -> GenerateResult:
    """Write a deterministic synthetic month (raw tables and ground truth) into `out_dir`.
    `zombies`: make that many jobs zombies (jobs.Zombie; the demo month has none); the ground
    truth lists them under incidents.zombies."""
    say = progress or (lambda _msg: None)
    check_arguments(month, timezone, scale)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_month(seed, month, timezone, scale, zombies)
    window, hosts, jobs = plan.window, plan.hosts, plan.jobs
    say(f"planned {len(jobs)} jobs for {sum(len(h.gpus) for h in hosts)} GPUs on {len(hosts)} hosts")
    job_ids = np.array([j.job_id for j in jobs] + [None], dtype=object)
    assert job_ids[NO_OWNER] is None

    truth = TruthBuilder(window, plan.segments, jobs)

    files = {k: out / v for k, v in FILES.items()}
    writer = tables.StreamWriter(files["gpu_usage"], tables.GPU_USAGE)
    try:
        for n, host in enumerate(hosts, 1):
            say(f"samples and grain rows: {host.name} ({n}/{len(hosts)})")
            parts = []
            for s in plan.host_samples(host):
                parts.append((s.gpu.index, grain_rows(s, window.start)))
                truth.add(s)
            writer.write(_usage_table(cluster, host, parts, job_ids))
    finally:
        writer.close()
    say("writing jobs, training progress and results")
    tables.write(files["jobs"], _jobs_table(cluster, jobs, window))
    progress_writer = tables.StreamWriter(files["training_progress"], tables.TRAINING_PROGRESS)
    try:
        for part in _progress_tables(jobs):
            progress_writer.write(part)
    finally:
        progress_writer.close()
    tables.write(files["job_results"], _results_table(jobs))

    say("computing the ground truth")
    gt = ground_truth(plan, truth, cluster, scale)
    if zombies:
        gt["incidents"]["zombies"] = zombie_truth(jobs, window)
    files["ground_truth"].write_text(json.dumps(gt, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    stalled = tuple(j.job_id for j in jobs if j.run.placement.spec.stall is not None)
    say(f"wrote {writer.rows:,} usage rows, {len(jobs)} jobs")
    return GenerateResult(out, files, sum(len(h.gpus) for h in hosts), len(jobs), writer.rows, stalled, gt)
