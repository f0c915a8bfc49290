"""`yolocost bench matrix FILE.toml`: several benchmark runs one after another, one set of labels.

The leaderboard in one command. Each run trains in a fresh Python process (Ultralytics reads
its offline switches at import, and each run's caches live in its own folder); a run that
fails does not stop the others, and rerunning the file skips finished runs and resumes
unfinished ones. The format (paths are relative to the file):

    job_prefix = "lb-2026-11"            # job id of a run: <job_prefix>-<name>
    [labels]                             # the same for every run
    project = "vision"
    user = "alice"
    image_tag = "train-yolov8-nano-cu121"
    image_digest = "sha256:..."
    [defaults]                           # any run key, for every run
    epochs = 30
    device = "0"
    [[run]]
    name = "v8n"                         # default: the model yaml's stem
    model = "yolov8n.yaml"
    [[run]]
    model = "yolo11n.yaml"
    train_args = { patience = 5 }
"""

from __future__ import annotations

import multiprocessing
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..errors import YolocostError
from . import offline
from ..runrecord import RunRecord
from .runner import BenchOptions, check_options, run_bench

Progress = Callable[[str], None]
LABEL_KEYS = ("project", "user", "image_tag", "image_digest")
# run key -> type it must have
RUN_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str, "model": str, "model_type": str, "data": str, "epochs": int, "imgsz": int, "batch": int,
    "device": (str, int), "out": str, "metrics_addr": str, "metrics_port": int, "gpu_sampler": bool,
    "images": int, "seed": int, "linger": (int, float), "train_args": dict,
}


@dataclass(frozen=True)
class MatrixRun:
    job_id: str
    model: str
    status: str  # finished | skipped (finished before) | failed
    record: RunRecord | None


def load_matrix(path: Path) -> list[BenchOptions]:
    """The runs of a matrix file as BenchOptions; any unknown key or wrong type is one error line."""
    from ..config import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise YolocostError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise YolocostError(f"{path}: not valid TOML: {exc}") from None
    fail = lambda key, what: YolocostError(f"{path}: {key}: {what}")  # noqa: E731
    _no_unknown(data, {"job_prefix", "labels", "defaults", "run"}, "", fail)
    prefix = data.get("job_prefix", "")
    labels = data.get("labels", {})
    defaults = data.get("defaults", {})
    runs = data.get("run", [])
    if not isinstance(prefix, str) or not isinstance(labels, dict) or not isinstance(defaults, dict):
        raise fail("job_prefix/labels/defaults", "job_prefix is a string, [labels] and [defaults] are tables")
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise fail("run", "give at least one [[run]] table")
    _no_unknown(labels, set(LABEL_KEYS), "labels", fail)
    _no_unknown(defaults, set(RUN_KEYS) - {"name"}, "defaults", fail)
    out, seen = [], set()
    for n, run in enumerate(runs):
        key = f"run[{n}]"
        _no_unknown(run, set(RUN_KEYS), key, fail)
        merged = {**defaults, **run}
        for name, value in {**labels, **merged}.items():
            want = RUN_KEYS.get(name, str)
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise fail(f"{key}.{name}", f"has the wrong type ({type(value).__name__})")
        if "model" not in merged:
            raise fail(f"{key}.model", "missing (a model yaml such as yolov8n.yaml)")
        name = merged.pop("name", Path(merged["model"]).stem)
        job_id = f"{prefix}-{name}" if prefix else name
        if job_id in seen:
            raise fail(key, f"job id {job_id} appears twice (give each run its own name)")
        seen.add(job_id)
        for rel in ("data", "out"):
            if rel in merged:
                merged[rel] = (path.parent / merged[rel]).resolve()
        if "device" in merged:
            merged["device"] = str(merged["device"])
        opts = BenchOptions(job_id=job_id, **labels, **merged)
        try:
            check_options(opts)
        except YolocostError as exc:
            raise fail(key, str(exc)) from None
        out.append(opts)
    return out


def _no_unknown(table: dict, allowed: set[str], where: str, fail) -> None:
    for key in table:
        if key not in allowed:
            raise fail(f"{where}.{key}" if where else key, f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _child(opts: BenchOptions) -> None:
    """One run in its own process: progress and a one-line error on stderr, exit status as the CLI's."""
    say = lambda message: print(f"yolocost: {message}", file=sys.stderr, flush=True)  # noqa: E731
    try:
        run_bench(opts, say)
    except YolocostError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


def run_matrix(path: Path, progress: Progress = lambda _: None, **overrides: Any) -> list[MatrixRun]:
    """Run every config of the file in order; `overrides` (e.g. out=..., metrics_port=...) apply to all."""
    runs = [replace(o, **overrides) for o in load_matrix(path)]
    offline.require_extra()  # before any run folder: a core install writes nothing
    spawn = multiprocessing.get_context("spawn")
    done = []
    for n, opts in enumerate(runs, start=1):
        try:
            record = RunRecord.load(opts.run_dir())
        except YolocostError as exc:  # one damaged run folder does not stop the others
            progress(f"[{n}/{len(runs)}] {opts.job_id}: {exc}")
            done.append(MatrixRun(opts.job_id, opts.model, "failed", None))
            continue
        if record is not None and record.finished:
            progress(f"[{n}/{len(runs)}] {opts.job_id}: finished before, skipped")
            done.append(MatrixRun(opts.job_id, opts.model, "skipped (finished before)", record))
            continue
        progress(f"[{n}/{len(runs)}] {opts.job_id}: {opts.model}")
        child = spawn.Process(target=_child, args=(opts,), name=f"bench-{opts.job_id}")
        child.start()
        child.join()
        if child.exitcode == 130:
            raise KeyboardInterrupt
        try:
            record = RunRecord.load(opts.run_dir())
        except YolocostError:
            record = None
        ok = child.exitcode == 0 and record is not None and record.finished
        done.append(MatrixRun(opts.job_id, opts.model, "finished" if ok else "failed", record))
    return done
