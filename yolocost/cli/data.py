"""Commands that fill and keep the database: ingest, load, build, prune, import-results."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from .options import month_option
from .state import State, pass_state, require_database


@click.command()
@month_option()
@click.option("--start", metavar="WHEN", help="Window start (ISO date/time; local time zone unless it has an offset).")
@click.option("--end", metavar="WHEN", help="Window end, exclusive.")
@click.option("--allow-loss", is_flag=True,
              help="Replace the window even if the database holds GPU-intervals of it that the server does not "
                   "return (they are deleted).")
@click.option("--allow-uncounted", is_flag=True,
              help="Bill the window even where samples of shared, MIG or job-info GPUs could not be counted "
                   "(scrapes stamped late; the ingest names the GPUs and how much).")
@pass_state
def ingest(state: State, month, start, end, allow_loss, allow_uncounted):
    """Pull one window of GPU metrics and job labels from Prometheus.

    Aggregates dcgm-exporter series to the grain inside Prometheus, attributes each GPU
    to its Kubernetes pod, Slurm job or yolocost_job_info job, and replaces the window in
    the database in one transaction (a rerun gives the same marts; a killed run changes
    nothing). A second ingest of the same database while one runs is refused. Works with
    any store serving the Prometheus query API (Prometheus 2.x/3.x, VictoriaMetrics,
    Thanos, Mimir): its range bounds and the scrape interval are measured on the window's
    data first, and a scrape interval other than the configured one stops the ingest.

    If the database holds usage of the window for GPUs or intervals the server does not
    return (retention passed, a selector or a server that leaves GPUs or hosts out), the
    ingest stops and names them; --allow-loss replaces the window anyway. Every stored
    sample counts once wherever in its scrape interval it was stamped; where two samples
    of a shared, MIG or job-info GPU fall into one scrape step, the ingest stops and names
    the GPUs; --allow-uncounted bills the window without those samples.

    \b
    Example:
      yolocost ingest --month 2026-10
      yolocost ingest --start 2026-10-01 --end 2026-10-08
    """
    from ..ingest import ingest as run_ingest
    from ..windows import ingest_window

    config = state.config
    window = ingest_window(config, month, start, end)
    result = run_ingest(config, *window, progress=state.log, allow_loss=allow_loss, allow_uncounted=allow_uncounted)
    state.log(f"{result.requests} requests to Prometheus, {result.chunks_split} chunk(s) split")
    click.echo(
        f"Ingested {result.start:%Y-%m-%d %H:%M} to {result.end:%Y-%m-%d %H:%M} UTC into {config.database}: "
        f"{result.usage_rows:,} usage rows, {result.jobs} jobs, {result.epochs} epochs"
    )


@click.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--window", nargs=2, metavar="START END",
              help="The window the files replace (ISO dates/times, local time zone unless given an offset; "
                   "END exclusive). Default: the span of the usage rows, with no hole over stored rows.")
@click.option("--allow-loss", is_flag=True,
              help="Replace the window even if the database holds GPU-intervals of it that the files do not "
                   "(they are deleted).")
@pass_state
def load(state: State, directory, window, allow_loss):
    """Load raw tables from a folder of Parquet files and rebuild the marts.

    The folder holds gpu_usage.parquet and optionally jobs.parquet,
    training_progress.parquet and job_results.parquet (docs/raw-tables.md). The
    cluster's usage in the window is replaced in one transaction; bad rows stop the load
    and leave the database as it was.

    The window is --window, else the span of the usage rows; a span with a hole (an hour
    or more in which no GPU has a row) where the database holds rows is refused (say the
    window). Rows of another cluster, in the future or outside --window are refused. If
    the database holds usage of the window that the files do not (other GPUs, hosts or
    days), the load stops and names it; --allow-loss replaces the window anyway.

    \b
    Example:
      yolocost --config yolocost.toml load exported-window/
      yolocost load --window 2026-10-02 2026-10-03 day-2/
    """
    from ..load import load_parquet_dir
    from ..windows import load_window

    result = load_parquet_dir(state.config, Path(directory), state.log, window=load_window(state.config, window),
                              allow_loss=allow_loss)
    click.echo(f"loaded {result.usage_rows:,} usage rows and {result.jobs} jobs into {state.config.database}")


@click.command()
@month_option(help="Rebuild this month only (configured time zone).")
@pass_state
def build(state: State, month):
    """Rebuild the SQL models from the raw tables (after editing prices, say).

    Without --month, every month that still has usage rows is rebuilt; archived months
    (their usage rows pruned, see `yolocost prune`) keep the figures they were built with.
    Refuses a database file that does not exist (a typo in --db), a month that is archived
    or holds no usage rows, and a config whose [ingest] grain_seconds differs from the
    grain the stored rows were cut at.

    \b
    Example:
      yolocost --config yolocost.toml build
      yolocost build --month 2026-10
    """
    from ..load import rebuild_database
    from ..windows import month_window

    require_database(state.config)
    if month is not None:
        month_window(state.config, month, "--month")  # checks the spelling
    plan = rebuild_database(state.config, month, state.log)
    built = ", ".join(plan.months) if len(plan.months) <= 3 else f"{len(plan.months)} months, " \
        f"{plan.months[0]} to {plan.months[-1]}"
    kept = f"; kept {len(plan.archived)} archived month(s)" if plan.archived else ""
    click.echo(f"rebuilt the models in {state.config.database} ({built or 'no month with usage rows'}){kept}")


@click.command()
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.option("--as-of", "as_of", metavar="DATE", help="Count the retention back from this date or time instead "
              "of now (configured time zone unless it has an offset); it may not be in the future.")
@click.option("--include-partial", is_flag=True, help="Archive a month the database holds only in part too "
              "(mart_month_coverage.partial); the rest of it can then never be loaded.")
@pass_state
def prune(state: State, dry_run, as_of, include_partial):
    """Remove usage rows older than [ingest] retention_days, keeping every figure.

    A month's usage rows (and the intermediate tables of their size) go together, once
    the whole month is older than retention_days (default 90) and its models are built
    from exactly those rows with the config's settings and prices; the month is then
    archived: its marts and ledger rows stay as built, so its reports, finance CSV and
    named queries give the same bytes as before. `yolocost monthly` prunes after it has
    written its month.

    A month the database holds only in part (some of its days were never ingested) is
    kept, and named with how much of it is there: once archived, its missing days could
    never be loaded. Load them first, or archive it as it is with --include-partial.

    \b
    Example:
      yolocost --config yolocost.toml prune --dry-run
      yolocost prune --as-of 2026-11-01
      yolocost prune --include-partial
    """
    from ..months import prune_database
    from ..windows import retention_now

    require_database(state.config)
    when = retention_now(state.config, as_of, dt.datetime.now(dt.timezone.utc))
    result = prune_database(state.config, dry_run=dry_run, now=when, include_partial=include_partial,
                            progress=state.log)
    verb = "would remove" if dry_run else "removed"
    if not result.months and not result.partial:
        click.echo(f"nothing to prune: no month with usage rows ended before {result.cutoff:%Y-%m-%d %H:%M} UTC "
                   f"(retention {state.config.retention_days} days)")
    for m in result.months:
        click.echo(f"{m.month}: {verb} {m.rows['gpu_usage']:,} usage rows ("
                   + ", ".join(f"{t} {n:,}" for t, n in m.rows.items() if t != "gpu_usage") + ")")
    for why in result.partial:
        click.echo(f"kept {why}")


@click.command(name="import-results")
@click.argument("directories", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--replace", is_flag=True,
              help="Replace the training progress, results and labels the database already holds for these jobs.")
@pass_state
def import_results(state: State, directories, replace):
    """Load Ultralytics run folders into the training tables, without Prometheus.

    Each DIR is a `yolocost bench run` folder (results.csv and its run record with labels,
    epoch end times and the final mAP of the best weights) or a plain Ultralytics training
    folder (results.csv only; its job id is the folder name and its result the best epoch).
    Fills training_progress, job_results and, where the labels are known, jobs, in one
    transaction; bad input changes nothing. A job whose training progress or results the
    database already holds (an earlier import, or a folder named like an ingested job) is
    refused unless --replace is given; a job whose labels it holds (who pays for it) keeps
    them unless --replace is given.

    \b
    Example:
      yolocost import-results bench-runs/lb-v8n runs/detect/train3
    """
    from ..results_import import import_results as run_import

    result = run_import(state.config, [Path(d) for d in directories], state.log, replace=replace)
    click.echo(f"imported {len(result.jobs)} run(s) ({result.epochs} epochs, {result.with_labels} with labels) "
               f"into {state.config.database}: {', '.join(result.jobs)}")


COMMANDS = (ingest, load, build, prune, import_results)
