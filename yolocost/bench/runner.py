"""`yolocost bench run`: one labeled, resumable, offline Ultralytics training with metrics.

The run folder `<out>/<job_id>/` is Ultralytics' own (results.csv, args.yaml, weights/) plus
the JSON run record, the synthetic dataset when no data yaml is given, and the caches the
offline switches point there. Rerunning a job id resumes from weights/last.pt and counts one
more attempt in the record; the job-info series is served during every attempt, so the GPU
time of repeated work is charged to the job like any other.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import db
from ..errors import YolocostError
from ..results_import import MAP50, MAP50_95, best_row, epoch_values, read_results_csv
from . import dataset, offline
from .gpus import held_gpus
from .metrics import JobMetrics
from .nvml import DcgmCollector, Nvml, NvmlUnavailable
from ..runrecord import RECORD_NAME, Attempt, RunRecord, iso, now, parse_time

Progress = Callable[[str], None]
JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
DEFAULT_PORT = 9450
RESUMABLE = ("workers", "cache", "patience", "val", "plots", "save_period")


@dataclass(frozen=True)
class BenchOptions:
    """What one benchmark run trains, how it is labeled and where it reports."""

    job_id: str
    model: str = "yolov8n.yaml"
    data: Path | None = None  # None: generate the synthetic dataset
    project: str = ""
    user: str = ""
    model_type: str | None = None  # None: the model yaml's stem (yolov8n)
    image_tag: str = ""
    image_digest: str = ""
    epochs: int = 10
    imgsz: int = 640
    batch: int = 16
    device: str | None = None  # Ultralytics' device string: cpu, 0, cuda:1 (one device); None = its default
    out: Path = Path("bench-runs")
    metrics_addr: str = "0.0.0.0"
    metrics_port: int = DEFAULT_PORT  # 0: no endpoint
    gpu_sampler: bool = False
    images: int = 128  # synthetic training images (validation: a quarter, at least 8)
    seed: int = 0
    linger: float = 60.0  # seconds the final results stay served after training
    train_args: dict[str, Any] = field(default_factory=dict)  # further Ultralytics train arguments
    label_names: dict[str, str] = field(default_factory=dict)  # job dimension -> label it is served as
    verbose: bool = False
    stop_after_epoch: int | None = None  # tests: SIGKILL itself after this epoch, as a preempted job

    @property
    def labels(self) -> dict[str, str]:
        model_type = self.model_type or Path(self.model).stem
        return {"project": self.project, "user": self.user, "model_type": model_type,
                "image_tag": self.image_tag, "image_digest": self.image_digest}

    def run_dir(self) -> Path:
        return (Path(self.out) / self.job_id).resolve()


def check_options(opts: BenchOptions) -> None:
    if not JOB_ID.fullmatch(opts.job_id):
        raise YolocostError(f"job id {opts.job_id!r} must be letters, digits, '.', '_' or '-' (it names the run folder)")
    for name in ("epochs", "imgsz", "batch"):
        if getattr(opts, name) < 1:
            raise YolocostError(f"--{name} must be at least 1")
    if opts.device and "," in opts.device.strip(","):
        raise YolocostError(f"--device {opts.device}: one device per job (multi-GPU DDP training is not supported "
                            "by the runner); run one job per GPU")
    suffix = Path(opts.model).suffix.lower()
    if suffix not in (".yaml", ".yml") and not Path(opts.model).is_file():
        raise YolocostError(f"--model {opts.model}: give a model yaml (yolov8n.yaml, ...) or a local weights file; "
                            "the runner is offline and downloads nothing")
    if "amp" in opts.train_args and opts.train_args["amp"] not in (False, "false", "False"):
        raise YolocostError("amp stays off: Ultralytics' AMP check downloads weights, which an offline run cannot")
    reserved = {"data", "epochs", "imgsz", "batch", "device", "project", "name", "exist_ok", "resume", "model"}
    clash = sorted(reserved & set(opts.train_args))
    if clash:
        raise YolocostError(f"train argument(s) {', '.join(clash)} have options of their own")


def parse_train_args(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs; a value is read as a TOML value where it is one (4, 0.01, true), else text."""
    from ..config import tomllib

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[a-z_][a-z0-9_]*", key.strip()):
            raise YolocostError(f"--train-arg {item!r} is not KEY=VALUE (an Ultralytics train argument)")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value.strip()
    return out


def train_args(opts: BenchOptions, run_dir: Path, data: Path) -> dict[str, Any]:
    """Ultralytics train() arguments: the run folder is <out>/<job_id>, amp is off (offline)."""
    return {"data": str(data), "epochs": opts.epochs, "imgsz": opts.imgsz, "batch": opts.batch,
            "device": opts.device, "project": str(run_dir.parent), "name": run_dir.name, "exist_ok": True,
            "seed": opts.seed, "plots": False, **opts.train_args, "amp": False}


class _NvmlOnce:
    """NVML opened at most once per run, on first need; the failure is remembered too."""

    def __init__(self) -> None:
        self.session: Nvml | None = None
        self.error: NvmlUnavailable | None = None

    def get(self) -> Nvml:
        if self.session is None and self.error is None:
            try:
                self.session = Nvml.open()
            except NvmlUnavailable as exc:
                self.error = exc
        if self.error is not None:
            raise self.error
        assert self.session is not None
        return self.session

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


@contextlib.contextmanager
def _sigterm_interrupts():
    """A scheduler's SIGTERM ends the attempt like Ctrl-C, so the record says it was interrupted."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_bench(opts: BenchOptions, progress: Progress = lambda _: None) -> tuple[RunRecord, Path]:
    """Train (or resume) the job; returns its finished record and run folder."""
    check_options(opts)
    offline.require_extra()  # before the run folder: a core install writes nothing
    run_dir = opts.run_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    # two processes on one job id (a retried pod while the old one still runs) would share a
    # folder and a record: the second is refused
    with db.exclusive(run_dir / RECORD_NAME, f"bench run of job {opts.job_id}"):
        return _run_locked(opts, run_dir, progress)


def _run_locked(opts: BenchOptions, run_dir: Path, progress: Progress) -> tuple[RunRecord, Path]:
    record = RunRecord.load(run_dir)
    if record is not None and record.finished:
        raise YolocostError(f"job {opts.job_id} finished at {record.end_time} ({run_dir}); give a new --job-id")
    last_pt = run_dir / "weights" / "last.pt"
    nvml = _NvmlOnce()
    metrics: JobMetrics | None = None
    hostname = socket.gethostname()
    try:
        gpus, notes = held_gpus(opts.device, nvml.get)
        for note in notes:
            progress(note)
        data = opts.data.resolve() if opts.data else dataset.generate(
            run_dir / "dataset", opts.images, max(8, opts.images // 4), opts.imgsz, opts.seed).data_yaml
        # import torch before the attempt starts serving: loading its libraries holds the GIL
        # for seconds, which would leave the endpoint silent and cost the job scrapes
        yolo = offline.prepare(run_dir, opts.verbose).YOLO
        _check_inputs(opts, data)
        metrics = JobMetrics(opts.job_id, opts.label_names)
        if opts.metrics_port:  # bound before an attempt counts: a port in use stops the run here
            metrics.serve(opts.metrics_addr, opts.metrics_port)
        state = _checkpoint_state(last_pt) if record is not None else "none"
        record, attempt = _start_attempt(opts, record, data, hostname, gpus, state, progress)
        record.save(run_dir)
        progress(f"job {opts.job_id}: attempt {attempt.number}, " + {
            "resume": f"resuming from {last_pt}",
            "trained": "training had finished: validating the best weights",
        }.get(state, f"training {record.model} from scratch") + f", GPUs held: {', '.join(g.uuid for g in gpus) or 'none'}")
        with _Reporting(opts, record, attempt, run_dir, metrics, progress) as report, _sigterm_interrupts():
            started = parse_time(record.start_time)
            assert started is not None  # set when the attempt began
            report.metrics.hold({**record.labels, "epochs": str(record.epochs), "imgsz": str(record.imgsz),
                                 "batch": str(record.batch)}, gpus, hostname, started)
            if opts.gpu_sampler:
                report.sample_gpus(gpus, nvml, hostname)
            report.republish()
            if state == "trained":
                report.finish(_validate_best(yolo, opts, record, run_dir, data))
            else:
                trainer = _train(yolo, opts, record, run_dir, data, last_pt if state == "resume" else None, report)
                report.finish(trainer.metrics or {})
    finally:
        if metrics is not None:
            metrics.close()
        nvml.close()
    return record, run_dir


def _check_inputs(opts: BenchOptions, data: Path) -> None:
    """The model yaml and the dataset exist here, before an attempt is counted: Ultralytics
    would otherwise try to download what is missing (and fail offline, late, with a traceback)."""
    from ultralytics.data.utils import check_det_dataset
    from ultralytics.nn.tasks import yaml_model_load  # resolves yolov8n.yaml to yolov8.yaml at scale n

    checks = [(f"--model {opts.model}", lambda: yaml_model_load(opts.model))] if Path(opts.model).suffix.lower() in (
        ".yaml", ".yml") else []
    checks.append((f"data {data}", lambda: check_det_dataset(str(data), autodownload=False)))
    for what, check in checks:
        try:
            check()
        except Exception as exc:  # Ultralytics raises FileNotFoundError, SyntaxError, TypeError, ...
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise YolocostError(f"{what}: {first}") from None


def _checkpoint_state(last_pt: Path) -> str:
    """What an earlier attempt left: "none" (no last.pt: train from scratch), "resume" (epochs
    left to train) or "trained" (all epochs done; killed before or during the final validation,
    when Ultralytics has already stripped last.pt for keeps)."""
    if not last_pt.is_file():
        return "none"
    import torch

    try:
        ckpt = torch.load(last_pt, map_location="cpu", weights_only=False)
        epoch, epochs = int(ckpt.get("epoch", -1)), int((ckpt.get("train_args") or {}).get("epochs", 0))
    except Exception as exc:  # a truncated or foreign file
        raise YolocostError(f"{last_pt} cannot be read ({type(exc).__name__}); delete it to train the job again "
                            "from scratch") from None
    return "trained" if epoch < 0 or epoch + 1 >= epochs else "resume"


def _start_attempt(opts: BenchOptions, record: RunRecord | None, data: Path, hostname: str, gpus, state: str,
                   progress: Progress) -> tuple[RunRecord, Attempt]:
    """The job's record with one more attempt. Resuming (or finishing) keeps the recorded model,
    epochs and labels; training from scratch takes this run's options and forgets the epochs
    an earlier attempt finished (without last.pt they are trained again)."""
    fresh = RunRecord(job_id=opts.job_id, labels=opts.labels, model=opts.model,
                      data=str(data) if opts.data else f"synthetic:{opts.seed}", epochs=opts.epochs,
                      imgsz=opts.imgsz, batch=opts.batch, device=opts.device, hostname=hostname)
    if record is None:
        record = fresh
    elif state == "none":
        progress(f"job {opts.job_id}: no weights/last.pt from the earlier attempt(s): training again from scratch")
        fresh.attempts, fresh.start_time = record.attempts, record.start_time
        record = fresh
    elif record.labels != opts.labels or (record.model, record.epochs) != (opts.model, opts.epochs):
        progress(f"job {opts.job_id} exists: keeping its recorded model, epochs and labels")
    for old in record.attempts:
        if old.status == "running":  # killed without a word: a preempted job
            old.status = "interrupted"
    record.hostname, record.gpus = hostname, [asdict(g) for g in gpus]
    attempt = Attempt(number=len(record.attempts) + 1, started_at=iso(now()))
    record.attempts.append(attempt)
    record.start_time = record.start_time or attempt.started_at
    record.status = "running"
    return record, attempt


def _train(yolo, opts: BenchOptions, record: RunRecord, run_dir: Path, data: Path, last_pt: Path | None,
           report: "_Reporting"):
    """Train (or resume) with our callbacks; `yolo` is ultralytics.YOLO, imported offline."""
    model = yolo(str(last_pt) if last_pt else record.model)
    for event in ("on_train_start", "on_model_save", "on_fit_epoch_end"):
        model.add_callback(event, getattr(report, event))
    if last_pt:
        # a resumed run keeps its checkpoint's arguments; Ultralytics lets these few change,
        # and takes the data yaml given (a checkpoint's own path may be gone)
        model.train(resume=True, data=str(data), device=opts.device,
                    **{k: v for k, v in opts.train_args.items() if k in RESUMABLE})
    else:
        model.train(**train_args(opts, run_dir, data))
    return model.trainer


def _validate_best(yolo, opts: BenchOptions, record: RunRecord, run_dir: Path, data: Path) -> dict[str, Any]:
    """The final validation of a run whose epochs were all trained by an earlier attempt."""
    weights = run_dir / "weights"
    best = weights / "best.pt" if (weights / "best.pt").is_file() else weights / "last.pt"
    metrics = yolo(str(best)).val(data=str(data), imgsz=record.imgsz, batch=record.batch, device=opts.device,
                                  project=str(run_dir), name="final-val", exist_ok=True, plots=False)
    return dict(metrics.results_dict)


class _Reporting:
    """Ultralytics callbacks -> record, metrics and progress lines; records how an attempt ends."""

    def __init__(self, opts: BenchOptions, record: RunRecord, attempt: Attempt, run_dir: Path, metrics: JobMetrics,
                 progress: Progress):
        self.opts, self.record, self.attempt, self.run_dir, self.say = opts, record, attempt, run_dir, progress
        self.metrics = metrics
        self.started = time.monotonic()

    def __enter__(self) -> "_Reporting":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is not None and not self.record.finished:  # (a finished run may be stopped while it lingers)
            self.attempt.status = "interrupted" if issubclass(kind, KeyboardInterrupt) else "failed"
            self.attempt.ended_at = iso(now())
            self.record.status = self.attempt.status
            self.record.save(self.run_dir)

    def sample_gpus(self, gpus, nvml: _NvmlOnce, hostname: str) -> None:
        try:
            session = nvml.get()
        except NvmlUnavailable as exc:
            self.say(f"--gpu-sampler: {exc}; serving no DCGM metrics, training goes on")
            return
        if not gpus:
            self.say("--gpu-sampler: this run holds no GPU; serving no DCGM metrics")
            return
        self.metrics.add_collector(DcgmCollector(lambda: session.read(gpus), hostname, warn=self.say))

    def _rows(self) -> list[dict]:
        path = self.run_dir / "results.csv"
        return read_results_csv(path) if path.is_file() else []

    def republish(self) -> None:
        """A resumed run serves the epochs its earlier attempts finished, with their end times."""
        for row in self._rows():
            ended = self.record.epoch_ended(row["epoch"])
            if ended is not None:
                self.metrics.epoch(row["epoch"], ended, epoch_values(row))

    # ---- Ultralytics callbacks
    def on_train_start(self, trainer) -> None:
        self.attempt.start_epoch = trainer.start_epoch + 1
        self.record.save(self.run_dir)

    def on_model_save(self, trainer) -> None:
        if trainer.best_fitness == trainer.fitness:  # best.pt was just written
            self.record.best_epoch = trainer.epoch + 1

    def on_fit_epoch_end(self, trainer) -> None:
        """Publish the epochs results.csv gained. Fires once more after the final validation,
        which adds no row: nothing happens then."""
        for row in self._rows():
            epoch = row["epoch"]
            if str(epoch) in self.record.epoch_end_times:
                continue
            ended = now()
            self.record.epoch_end_times[str(epoch)] = iso(ended)
            self.attempt.last_epoch = epoch
            self.record.save(self.run_dir)
            values = epoch_values(row)
            self.metrics.epoch(epoch, ended, values)
            shown = " ".join(f"{k.split('/')[-1].replace('(B)', '')} {v:.4g}" for k, v in values.items()
                             if v is not None and (k.startswith("train/") or k in (MAP50, MAP50_95)))
            self.say(f"epoch {epoch}/{self.record.epochs}: {shown} ({time.monotonic() - self.started:.1f} s)")
            if self.opts.stop_after_epoch == epoch:
                os.kill(os.getpid(), signal.SIGKILL)

    def finish(self, final: dict[str, Any]) -> None:
        """Final validation of the best weights into the record and the metrics; then linger."""
        rows = self._rows()
        best = self.record.best_epoch or (best_row(rows) or {}).get("epoch")
        results = {"map50": final.get(MAP50), "map50_95": final.get(MAP50_95), "best_epoch": best}
        ended = now()
        self.record.results = {k: (float(v) if k != "best_epoch" else v) if v is not None else None
                               for k, v in results.items()}
        self.record.end_time = self.attempt.ended_at = iso(ended)
        self.record.status = self.attempt.status = "finished"
        self.record.save(self.run_dir)
        self.metrics.finish(ended, self.record.results)
        if self.opts.metrics_port and self.opts.linger > 0:
            self.say(f"serving the final results on port {self.opts.metrics_port} for {self.opts.linger:g} s "
                     "(--linger) so Prometheus scrapes them")
            time.sleep(self.opts.linger)
