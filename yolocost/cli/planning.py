"""Commands that answer before money is spent: estimate (a run's cost) and whatif (what the
stopping policies would have saved)."""

from __future__ import annotations

import datetime as dt

import click

from .errors import OneLineCommand
from .options import Label, WholeNumber, format_option, month_option
from .state import State, pass_state
from .streams import write_stdout


@click.command(cls=OneLineCommand)
@click.option("--model-type", required=True, type=Label(), metavar="TYPE",
              help="Model type label, e.g. yolov8m (required).")
@click.option("--image-tag", type=Label(), metavar="TAG", help="Container image tag.")
@click.option("--gpu-model", type=Label(), metavar="MODEL",
              help="GPU model as dcgm names it, e.g. 'NVIDIA A100-SXM4-80GB'.")
@click.option("--gpus", type=WholeNumber(), metavar="N", help="GPUs the job requests.")
@click.option("--epochs", type=WholeNumber(), metavar="N", help="Epochs to train (comparable runs are scaled to it).")
@click.option("--imgsz", type=WholeNumber(), metavar="N", help="Image size (comparable runs are scaled by its square).")
@click.option("--batch", type=WholeNumber(), metavar="N", help="Batch size.")
@click.option("--project", type=Label(), metavar="NAME", help="Project label.")
@format_option("table", "json")
@pass_state
def estimate(state: State, model_type, image_tag, gpu_model, gpus, epochs, imgsz, batch, project, fmt):
    """Estimate a run's GPU-hours and cost before it starts, from comparable finished runs.

    Reads the finished jobs of the database (the named query estimate_inputs), takes those
    with the same model type and every option given, widening to the same model type with
    any image tag, then to the same family (yolov8m -> yolov8) while fewer than 3 runs
    compare; scales each to the requested epochs and image size, prices it at today's
    prices, and prints the median with a range that holds 80 % of such runs, what it rests
    on, and the cheapest configuration of the family per mAP50 point. No comparable run:
    a message and exit status 0. -f json is for a submission hook.

    \b
    Example:
      yolocost estimate --model-type yolov8m --gpu-model 'NVIDIA A10G' --gpus 1 --epochs 100
      yolocost estimate --model-type yolo11s --epochs 50 --imgsz 640 -f json
    """
    from ..estimate import Request, estimate_database, to_json, to_table

    request = Request(model_type=model_type, image_tag=image_tag, gpu_model=gpu_model, gpus=gpus, epochs=epochs,
                      imgsz=imgsz, batch=batch, project=project)
    result = estimate_database(state.config, request, dt.datetime.now(dt.timezone.utc))
    write_stdout(to_json(result) if fmt == "json" else to_table(result))


@click.command()
@month_option(required=True)
@format_option("table", "json")
@click.option("--limit", type=int, default=10, show_default=True, help="Jobs listed per policy, most saved first.")
@pass_state
def whatif(state: State, month, fmt, limit):
    """What the stopping policies would have saved in a month, before you enforce them.

    Replays the month's usage at its grain with [policies] idle reclaim (release a job after
    N minutes under U % utilization with no epoch ending, except around validation and
    checkpoints) and the breaker ([thresholds] breaker_*), and shows per policy the
    GPU-hours and money it would have saved, the jobs it would have stopped, and the false
    positives among them (jobs whose loss or mAP50 improved after the stop), per project and
    per job. Figures are exact to one grain; archived months answer from their archive.

    \b
    Examples:
      yolocost whatif --month 2026-10
      yolocost whatif --month 2026-10 -f json --limit 50
    """
    from .. import whatif as policies

    result = policies.whatif(state.config, month, limit)
    write_stdout(policies.FORMATS[fmt](result))


COMMANDS = (estimate, whatif)
