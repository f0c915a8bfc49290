"""`yolocost bench`: the reference Ultralytics benchmark runner."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from ..errors import YolocostError
from .options import Amount
from .state import State, pass_state


@click.group(name="bench")
def bench_group():
    """The reference Ultralytics benchmark runner (needs `pip install 'yolocost[bench]'`)."""


@bench_group.command("run")
@click.option("--job-id", required=True, help="Job id; rerunning an unfinished one resumes it from its last.pt.")
@click.option("--model", default="yolov8n.yaml", show_default=True, help="Ultralytics model yaml (yolo11n.yaml, ...).")
@click.option("--data", type=click.Path(exists=True, dir_okay=False), help="Data yaml (default: a synthetic dataset).")
@click.option("--project", default="", help="Project label.")
@click.option("--user", default="", help="User label.")
@click.option("--model-type", help="Model type label (default: the model yaml's stem).")
@click.option("--image-tag", default="", help="Container image tag label.")
@click.option("--image-digest", default="", help="Container image digest label (sha256:...).")
@click.option("--epochs", type=click.IntRange(1), default=10, show_default=True)
@click.option("--imgsz", type=click.IntRange(32), default=640, show_default=True, help="Image size.")
@click.option("--batch", type=click.IntRange(1), default=16, show_default=True)
@click.option("--device", help="Ultralytics device: cpu, 0, cuda:1 (one device; default: Ultralytics' choice).")
@click.option("--out", "out_dir", default="bench-runs", show_default=True, type=click.Path(file_okay=False),
              help="Folder of run folders; this run's is OUT/JOB_ID.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=9450, show_default=True,
              help="Port of the Prometheus endpoint (0: none).")
@click.option("--metrics-addr", default="0.0.0.0", show_default=True, help="Address the endpoint listens on.")
@click.option("--gpu-sampler", is_flag=True, help="Also serve the run's GPUs from NVML under dcgm-exporter names.")
@click.option("--images", type=click.IntRange(1), default=128, show_default=True,
              help="Training images of the synthetic dataset.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the dataset and the training.")
@click.option("--linger", type=click.FloatRange(0), default=60.0, show_default=True,
              help="Seconds the final results stay served after training.")
@click.option("--train-arg", "train_arg", multiple=True, metavar="KEY=VALUE",
              help="Further Ultralytics train argument, e.g. patience=5 (repeatable).")
@click.option("--verbose", is_flag=True, help="Show Ultralytics' own log (on stderr).")
@click.option("--stop-after-epoch", type=click.IntRange(1), hidden=True,
              help="Tests: kill the process after this epoch, as a preempted job.")
@click.option("--max-cost", type=Amount(), metavar="AMOUNT",
              help="Refuse to start when the upper estimate of the run's cost (see `yolocost estimate`) is above "
                   "AMOUNT, or when there is no estimate (no database, no comparable run).")
@pass_state
def bench_run(state: State, job_id, model, data, project, user, model_type, image_tag, image_digest, epochs, imgsz,
              batch, device, out_dir, metrics_port, metrics_addr, gpu_sampler, images, seed, linger, train_arg,
              verbose, stop_after_epoch, max_cost):
    """Train a YOLO model with job labels, serving its metrics for Prometheus.

    Offline: touches no network and writes only into OUT/JOB_ID (Ultralytics' run folder
    with results.csv, args.yaml and weights, the run record yolocost-run.json, the
    synthetic dataset and caches). The GPUs it holds come from CUDA_VISIBLE_DEVICES (UUIDs
    as a scheduler sets them, or indices resolved through NVML). Epochs go to stderr, the
    result to stdout.

    Where the configured database exists, one line on stderr first gives the estimate of
    the run's cost from comparable finished runs (`yolocost estimate`); --max-cost refuses
    to start when its upper end is above the amount.

    \b
    Example:
      yolocost bench run --job-id lb-v8n --model yolov8n.yaml --project vision --user alice \\
          --image-tag train-yolov8-nano-cu121 --epochs 30 --device 0 --gpu-sampler
    """
    from ..estimate import Request, before_run

    before_run(state.config, Request(model_type=model_type or Path(model).stem, image_tag=image_tag or None, gpus=1,
                                     epochs=epochs, imgsz=imgsz, batch=batch, project=project or None),
               max_cost, dt.datetime.now(dt.timezone.utc), state.log)
    from ..bench.metrics import served_label_names
    from ..bench.runner import BenchOptions, parse_train_args, run_bench

    opts = BenchOptions(
        job_id=job_id, model=model, data=Path(data) if data else None, project=project, user=user,
        model_type=model_type, image_tag=image_tag, image_digest=image_digest, epochs=epochs, imgsz=imgsz,
        batch=batch, device=device, out=Path(out_dir), metrics_addr=metrics_addr, metrics_port=metrics_port,
        gpu_sampler=gpu_sampler, images=images, seed=seed, linger=linger, train_args=parse_train_args(train_arg),
        verbose=verbose, stop_after_epoch=stop_after_epoch, label_names=served_label_names(state.config.labels),
    )
    record, run_dir = run_bench(opts, state.log)
    click.echo(f"job {record.job_id} finished: {_maps(record)} (best epoch {(record.results or {}).get('best_epoch')}), "
               f"{len(record.attempts)} attempt(s); run folder {run_dir}")


def _maps(record) -> str:
    r = (record.results if record else None) or {}
    return " ".join(f"{name} {r[key]:.4f}" if r.get(key) is not None else f"{name} -"
                    for name, key in (("mAP50", "map50"), ("mAP50-95", "map50_95")))


@bench_group.command("matrix")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Folder of run folders (overrides the file).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), help="Endpoint port for every run (overrides the file).")
@pass_state
def bench_matrix(state: State, file, out_dir, metrics_port):
    """Run a TOML list of benchmark configs one after another with one set of labels.

    Finished runs are skipped and unfinished ones resumed, so rerunning the file completes
    the leaderboard. The format is in the README (section Benchmark runner).

    \b
    Example:
      yolocost bench matrix leaderboard.toml
    """
    from ..bench.matrix import run_matrix
    from ..bench.metrics import served_label_names

    overrides = {k: v for k, v in {"out": Path(out_dir) if out_dir else None, "metrics_port": metrics_port}.items()
                 if v is not None}
    overrides["label_names"] = served_label_names(state.config.labels)
    runs = run_matrix(Path(file), state.log, **overrides)
    for run in runs:
        attempts = len(run.record.attempts) if run.record else 0
        click.echo(f"{run.job_id:32} {run.model:16} {run.status:26} {_maps(run.record)}  attempts {attempts}")
    failed = [r.job_id for r in runs if r.status == "failed"]
    if failed:
        raise YolocostError(f"{len(failed)} of {len(runs)} run(s) failed: {', '.join(failed)}")


COMMANDS = (bench_group,)
