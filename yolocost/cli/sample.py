"""`yolocost sample`: synthetic cluster data with ground truth."""

from __future__ import annotations

from pathlib import Path

import click

from .options import month_option
from .state import State, pass_state


@click.group()
def sample():
    """Synthetic cluster data with ground truth, for demos, tests and benchmarks."""


@sample.command("generate")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write into.")
@click.option("--seed", type=int, default=None, help="Random seed (default: the demo seed).")
@month_option(help="Month to generate (default: 2026-10).")
@click.option("--timezone", default=None, help="Cluster time zone (default: Europe/Berlin).")
@click.option("--scale", type=float, default=1.0, show_default=True, help="Multiply GPUs and jobs (above 0, at most 250; 21 ≈ 1,000 GPUs, 210 ≈ 10,000).")
@click.option("--zombies", type=click.IntRange(0, 1000), default=0, show_default=True,
              help="Plant this many zombie jobs (idle GPUs, no progress; listed in the ground truth's incidents).")
@pass_state
def sample_generate(state: State, out_dir, seed, month, timezone, scale, zombies):
    """Generate a synthetic cluster month: raw Parquet tables and ground_truth.json.

    Deterministic for a seed: the bundled sample_data/ is `--seed` default, month 2026-10.

    \b
    Example:
      yolocost sample generate --out /tmp/month --scale 2
      yolocost --db /tmp/month.duckdb --config sample_data/yolocost.toml load /tmp/month
    """
    from .. import synth

    kwargs = {k: v for k, v in {"seed": seed, "month": month, "timezone": timezone}.items() if v is not None}
    synth.generate(Path(out_dir), scale=scale, progress=state.log, zombies=zombies, **kwargs)
    click.echo(f"wrote the synthetic month to {out_dir}")


@sample.command("prometheus")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write into.")
@click.option("--seed", type=int, default=None, help="Random seed (default: the demo seed).")
@click.option("--start-day", type=click.IntRange(0, 27), default=None,
              help="First day of the window, counted from the 1st of October 2026 (default: 16).")
@click.option("--days", type=click.IntRange(1, 14), default=3, show_default=True, help="Length of the window.")
@pass_state
def sample_prometheus(state: State, out_dir, seed, start_day, days):
    """Write a synthetic cluster window as OpenMetrics for a Prometheus backfill.

    The same cluster as the sample month, with dcgm-exporter and kube-state-metrics label
    sets in every attribution mode (Kubernetes in three spellings, copied pod labels, Slurm,
    yolocost_job_info), a MIG GPU, a shared GPU, a counter reset and scrape gaps. Next to
    metrics.om: the raw tables a correct ingest produces, a yolocost.toml and scenario.json.

    \b
    Example:
      yolocost sample prometheus --out /tmp/prom-sample
      promtool tsdb create-blocks-from openmetrics --max-block-duration=24h \\
          /tmp/prom-sample/metrics.om /tmp/prom-data
    """
    from .. import synth

    kwargs = {k: v for k, v in {"seed": seed, "start_day": start_day}.items() if v is not None}
    result = synth.write_prometheus_sample(Path(out_dir), days=days, progress=state.log, **kwargs)
    click.echo(f"wrote {result.samples:,} samples of {result.series:,} series to {result.files['metrics']}")


COMMANDS = (sample,)
