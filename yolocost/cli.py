"""The `yolocost` command: a thin click layer over the library.

Each command parses its options, calls the library and turns a YolocostError into
`error: <one line>` on stderr with exit status 2. Logs and progress go to stderr,
results to files or stdout. Messages never decide the exit status: a stderr that cannot be
written (a full log disk, a reader gone, a closed descriptor) loses them and the run goes
on, as does a stdout that carries only the closing lines of a command whose work is files.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from . import __version__, interrupts
from .errors import YolocostError


@dataclass
class State:
    config_path: str | None
    database: str | None
    quiet: bool
    debug: bool
    _config: object = None

    @property
    def config(self):
        """The loaded config (lazily: `--help` and `demo` need none), with --db applied."""
        if self._config is None:
            from .config import load_config

            config = load_config(self.config_path)
            self._config = config.with_database(Path(self.database)) if self.database else config
        return self._config

    def log(self, message: str) -> None:
        if not self.quiet:
            to_stderr(f"yolocost: {message}")


def to_stderr(line: str) -> None:
    """Write a message line to stderr. A stderr that cannot take it (a full disk, a reader
    gone, a closed descriptor) loses the line, never the run: the exit status says whether
    the work was done, and a message about the lost message would have nowhere to go."""
    try:
        click.echo(line, err=True)
    except (OSError, ValueError):  # ValueError: a closed file object
        _discard(sys.stderr)


def _summary(text: str) -> None:
    """The closing lines of a command whose work is its files (report, export finance,
    monthly, demo): a stdout that cannot take them loses them, as stderr loses progress, and the
    status says the files were written. A command whose result is stdout (query) ends with
    status 2 instead (_exit_closed_pipe)."""
    try:
        click.echo(text)
    except (OSError, ValueError):
        _discard(sys.stdout)


def _discard(stream) -> None:
    """Point the stream's descriptor at /dev/null, so that later writes and the flush at exit
    (which would fail again, and make Python exit 120) succeed; what it still buffers goes
    there too. A stream without a descriptor (a test runner's) is left as it is."""
    import os

    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def _hold_standard_descriptors() -> None:
    """A standard descriptor closed at start (`2>&-`) gets /dev/null: otherwise the next file
    opened (the database, a report) would take its number, and a line meant for stderr could
    land in that file."""
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)


class Group(click.Group):
    """Maps library errors to one line and an exit status instead of a traceback."""

    def main(self, *args, **kwargs):
        """Ctrl-C anywhere, even before a command runs or after click has turned it into
        its own Abort, ends with `error: interrupted` and status 130."""
        _hold_standard_descriptors()
        previous = interrupts.install()
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:
            if interrupts.received() and exc.code != interrupts.EXIT_STATUS:
                interrupts.report()
                raise SystemExit(interrupts.EXIT_STATUS) from None
            raise
        finally:
            interrupts.restore(previous)

    def invoke(self, ctx: click.Context):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return result
        except YolocostError as exc:
            if interrupts.received():  # the error is the interrupt's doing (a cancelled query, ...)
                _exit_interrupted(ctx)
            to_stderr(f"error: {exc}")
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            _exit_interrupted(ctx)
        except BrokenPipeError:
            _exit_closed_pipe(ctx)
        except Exception as exc:  # anything unforeseen: still one line, unless --debug
            if interrupts.received():  # DuckDB and thread pools turn Ctrl-C into other exceptions
                _exit_interrupted(ctx)
            state = ctx.find_object(State)
            if state is not None and state.debug:
                raise
            memory = _out_of_memory(exc)
            if memory:
                to_stderr(f"error: {memory}")
                ctx.exit(2)
            to_stderr(_unexpected(exc))
            ctx.exit(1)


def _out_of_memory(exc: BaseException) -> str | None:
    """DuckDB's out-of-memory as one line (None for anything else); yolocost.db, and DuckDB
    with it, is imported only for an error of DuckDB's own."""
    if not type(exc).__module__.lstrip("_").startswith("duckdb"):
        return None
    from .db import out_of_memory

    return out_of_memory(exc)


def _unexpected(exc: BaseException) -> str:
    """The catch-all's line for a genuine bug: the exception's type only. Its text can carry
    anything (a header value, a line of a token file), so it is shown with --debug only."""
    return f"error: unexpected {type(exc).__name__} (a bug in yolocost; rerun with --debug for the details)"


def _exit_interrupted(ctx: click.Context):
    """Ctrl-C: one line and the shell's status for SIGINT (128 + 2)."""
    interrupts.report()
    ctx.exit(interrupts.EXIT_STATUS)


def _exit_closed_pipe(ctx: click.Context):
    """The reader of stdout went away (`yolocost query ... | head -1`): the output is not
    complete, which a cron job must be able to tell, so one line and status 2. As the Python
    docs' note on SIGPIPE advises, stdout then points at /dev/null so that the exit flush does
    not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test runner's)
        pass
    to_stderr("error: standard output was closed before all of the output was written "
              "(its reader, such as `head`, left early)")
    ctx.exit(YolocostError.exit_code)


pass_state = click.make_pass_decorator(State)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--config", "config_path", metavar="FILE",
              help="Config file (default: $YOLOCOST_CONFIG, else ./yolocost.toml).")
@click.option("--db", "database", metavar="FILE", help="DuckDB file, overriding [database] path.")
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
@click.option("--debug", is_flag=True, help="Show a traceback for unexpected errors.")
@click.version_option(__version__, prog_name="yolocost")
@click.pass_context
def main(ctx: click.Context, config_path, database, quiet, debug):
    """GPU cost accounting for YOLO training on shared clusters.

    Pulls DCGM GPU metrics and job labels into DuckDB, computes GPU-hours, cost,
    effective compute density, idle waste and cost per mAP point per job, project,
    user, GPU model and image tag.

    \b
    Example:
      yolocost demo                      # the bundled sample month, no Prometheus
      yolocost query top_idle_wasters --param month=2026-10
    """
    ctx.obj = State(config_path, database, quiet, debug)


@main.command()
@click.option("--out", "out_dir", default="yolocost-demo", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the demo config, database and summary.")
@click.option("--force", is_flag=True,
              help="Use a folder that is not empty, replacing the demo's config, database and reports there.")
@pass_state
def demo(state: State, out_dir, force):
    """Build a database, a summary and the reports from the bundled sample month.

    Needs no Prometheus: loads sample_data/ (a synthetic 48-GPU cluster, October 2026)
    into OUT/yolocost.duckdb and writes OUT/reports/2026-10/: the admin and per-project
    reports as HTML and PDF (PDF where WeasyPrint and Pango are installed), summary.html, the finance CSV
    and index.html, which lists them.
    A folder that is not empty is refused unless --force is given.

    \b
    Example:
      yolocost demo --out /tmp/yc && cd /tmp/yc && yolocost queries
    """
    import time

    from .demo import run_demo

    started = time.monotonic()
    result = run_demo(Path(out_dir), state.log, force=force)
    state.log(f"done in {time.monotonic() - started:.1f} s")
    kinds = " and ".join(k for k in ("HTML", "PDF") if any(p.suffix == f".{k.lower()}" for p in result.reports))
    projects = len({p.stem for p in result.reports if p.stem.startswith("project-") and p.suffix != ".csv"})
    _summary("\n".join([
        f"Demo ready in {result.folder}",
        f"  config:   {result.config}",
        f"  database: {result.database}  ({result.usage_rows:,} usage rows, {result.jobs} jobs)",
        f"  summary:  {result.summary}",
        f"  index:    {result.index}",
        f"  reports:  {result.report_folder}/  (admin and {projects} project reports as {kinds})",
        *([f"  no PDF:   {result.pdf_skipped}"] if result.pdf_skipped else []),
        "Try:",
        f"  cd {result.folder}",
        "  yolocost queries",
        "  yolocost query most_expensive_jobs --param month=2026-10",
        "  duckdb -readonly yolocost.duckdb 'FROM mart_project_month'",
    ]))


@main.command()
@click.option("--month", metavar="YYYY-MM", help="Calendar month in the configured time zone.")
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
    from .ingest import ingest as run_ingest, month_window, parse_instant

    config = state.config
    if month and (start or end):
        raise YolocostError("give either --month or --start/--end, not both")
    if month:
        window = month_window(config, month)
    elif start and end:
        window = parse_instant(start, config, "--start"), parse_instant(end, config, "--end")
    else:
        raise YolocostError("give the window: --month YYYY-MM, or --start and --end")
    result = run_ingest(config, *window, progress=state.log, allow_loss=allow_loss, allow_uncounted=allow_uncounted)
    state.log(f"{result.requests} requests to Prometheus, {result.chunks_split} chunk(s) split")
    click.echo(
        f"Ingested {result.start:%Y-%m-%d %H:%M} to {result.end:%Y-%m-%d %H:%M} UTC into {config.database}: "
        f"{result.usage_rows:,} usage rows, {result.jobs} jobs, {result.epochs} epochs"
    )


@main.command()
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
    from .ingest import parse_instant
    from .load import load_parquet_dir

    replaced = None
    if window:
        replaced = (parse_instant(window[0], state.config, "--window START"),
                    parse_instant(window[1], state.config, "--window END"))
    result = load_parquet_dir(state.config, Path(directory), state.log, window=replaced, allow_loss=allow_loss)
    click.echo(f"loaded {result.usage_rows:,} usage rows and {result.jobs} jobs into {state.config.database}")


@main.command()
@click.option("--month", metavar="YYYY-MM", help="Rebuild this month only (configured time zone).")
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
    from .ingest import month_window
    from .load import rebuild_database

    _require_database(state.config)
    if month is not None:
        month_window(state.config, month)  # checks the spelling
    plan = rebuild_database(state.config, month, state.log)
    built = ", ".join(plan.months) if len(plan.months) <= 3 else f"{len(plan.months)} months, " \
        f"{plan.months[0]} to {plan.months[-1]}"
    kept = f"; kept {len(plan.archived)} archived month(s)" if plan.archived else ""
    click.echo(f"rebuilt the models in {state.config.database} ({built or 'no month with usage rows'}){kept}")


@main.command()
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
    from .ingest import parse_instant
    from .months import prune_database

    _require_database(state.config)
    now = dt.datetime.now(dt.timezone.utc)
    when = now if as_of is None else parse_instant(as_of, state.config, "--as-of")
    if when > now:
        raise YolocostError(f"--as-of {as_of} is in the future: retention counts back from a time that has come")
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


# --------------------------------------------------------------------------- estimate


def _whole(value: str | None, option: str) -> int | None:
    """A whole number above 0 given as text: anything else is one line and exit status 2."""
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        raise YolocostError(f"{option}: {value!r} is not a whole number above 0")
    return number


def _label(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    if not value.strip():
        raise YolocostError(f"{option}: empty (leave the option out instead)")
    return value


class _OneLineCommand(click.Command):
    """A command whose usage errors (an unknown option, a missing value) are the one line
    and exit status 2 of any bad input, not click's usage text: a submission hook reads it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise YolocostError(f"{ctx.info_name}: {exc.format_message()}") from None


@main.command(cls=_OneLineCommand)
@click.option("--model-type", required=True, metavar="TYPE", help="Model type label, e.g. yolov8m (required).")
@click.option("--image-tag", metavar="TAG", help="Container image tag.")
@click.option("--gpu-model", metavar="MODEL", help="GPU model as dcgm names it, e.g. 'NVIDIA A100-SXM4-80GB'.")
@click.option("--gpus", metavar="N", help="GPUs the job requests.")
@click.option("--epochs", metavar="N", help="Epochs to train (comparable runs are scaled to it).")
@click.option("--imgsz", metavar="N", help="Image size (comparable runs are scaled by its square).")
@click.option("--batch", metavar="N", help="Batch size.")
@click.option("--project", metavar="NAME", help="Project label.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
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
    from .estimate import Request, estimate_database, to_json, to_table

    request = Request(model_type=_label(model_type, "--model-type"), image_tag=_label(image_tag, "--image-tag"),
                      gpu_model=_label(gpu_model, "--gpu-model"), gpus=_whole(gpus, "--gpus"),
                      epochs=_whole(epochs, "--epochs"), imgsz=_whole(imgsz, "--imgsz"),
                      batch=_whole(batch, "--batch"), project=_label(project, "--project"))
    result = estimate_database(state.config, request, dt.datetime.now(dt.timezone.utc))
    _write_stdout(to_json(result) if fmt == "json" else to_table(result))


@main.command()
@click.option("--month", required=True, metavar="YYYY-MM", help="Calendar month in the configured time zone.")
@click.option("--audience", "audiences", multiple=True, metavar="WHO", default=("all",), show_default=True,
              help="admin, project:NAME or all (admin and every project); repeatable.")
@click.option("--format", "formats", default="all", show_default=True, metavar="LIST",
              help="Comma-separated: html, pdf (the reports), summary (summary.html), csv (the finance CSV), "
                   "index (index.html), or all. PDF needs WeasyPrint's Pango (apt-get install libpango-1.0-0 "
                   "libpangoft2-1.0-0) and, for Chinese names, fonts-noto-cjk. Each project's "
                   "job CSV is written with its report, in html or pdf.")
@click.option("--templates", "templates_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Your own report templates, overriding the shipped ones by file name "
                   "(default: [reports] templates_dir).")
@pass_state
def report(state: State, month, audiences, formats, templates_dir):
    """Render a month's chargeback reports, summary, finance CSV and index into <output_dir>/YYYY-MM/.

    admin.html/.pdf shows every project side by side for the department admins;
    project-<slug>.html/.pdf shows one project's own jobs and users, and the cluster only
    as the project's share, ending with a table of every job of the month (sortable in the
    HTML, an appendix in the PDF); project-<slug>.csv beside them has the same rows, written
    whenever the project's report is (format html or pdf). The HTML is one self-contained
    file with interactive charts that opens offline; the PDF (A4) carries the same charts as
    vector graphics.
    summary.html is the month on one page; finance-YYYY-MM.csv is the finance CSV (the
    same bytes as `export finance`); index.html lists the folder's files (each project's
    report under its name) with the month's data coverage and total cost. --format picks
    which of them to write (default all). The set is rendered whole before any file is
    replaced (a failure while rendering leaves the earlier files), and the reports of
    projects that held no GPU in the month are removed; other files stay. The month folder
    is yolocost's own: a symlink or other file under the name of one of its files is
    replaced, never written through; [reports] private = true makes it 0700, its files 0600.

    \b
    Examples:
      yolocost report --month 2026-10
      yolocost report --month 2026-10 --audience project:vision --format pdf
      yolocost report --month 2026-10 --format html,summary,csv,index
      yolocost report --month 2026-10 --templates my-templates/
    """
    from .report import render_reports

    _require_database(state.config)
    result = render_reports(state.config, month, audiences, formats,
                            Path(templates_dir) if templates_dir else None, state.log)
    times = [f"{kind} in {secs:.1f} s" for kind, secs in (("HTML", result.html_seconds), ("PDF", result.pdf_seconds))
             if kind.lower() in result.formats]
    state.log(f"{result.charts} charts; " + ", ".join(times))
    if result.finance is not None and result.finance.warning:
        to_stderr(f"warning: {result.finance.warning}")
    _summary("\n".join([f"wrote {len(result.files)} file(s) for {result.month} into {result.folder}",
                        *(f"  {path}" for path in result.files)]))


def _require_database(config) -> None:
    """Commands that read stored data refuse a database file that does not exist, rather
    than creating an empty one (`--db typo.duckdb build`)."""
    from .db import require_database

    require_database(config.database)


def _parse_params(values: tuple[str, ...]) -> dict[str, str]:
    params = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--param")
        params[name.strip()] = value
    return params


class _QueryCommand(click.Command):
    """`yolocost query "-- note ..."`: an argument that starts with a SQL comment is
    the query, not an option (no option starts with `--` and a space)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            sql = [a for a in args if _starts_with_comment(a)]
            args = [a for a in args if not _starts_with_comment(a)] + (["--"] + sql if sql else [])
        return super().parse_args(ctx, args)


def _starts_with_comment(arg: str) -> bool:
    return arg.startswith("--") and (len(arg) == 2 or arg[2].isspace()) and arg != "--"


@main.command(cls=_QueryCommand)
@click.argument("target")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE", help="A query parameter (repeatable).")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(),
              help="Write the result to this file instead of stdout (replaced atomically; a symlink is written "
                   "through, a device such as /dev/stdout written in place).")
@click.option("--write", is_flag=True, help="Open the database read-write (default: read-only).")
@click.option("--queries-dir", type=click.Path(file_okay=False, exists=True), help="Extra folder of named queries.")
@pass_state
def query(state: State, target, params, fmt, output, write, queries_dir):
    """Run a named query from queries/, a .sql file, or a SQL string.

    The database is opened read-only unless --write is given, and the query runs under the
    configured [database] memory_limit (a read-only query cannot SET another). Parameters declared in a query's header
    (`-- param: month VARCHAR: ...`) are bound with --param NAME=VALUE. Timestamps are shown
    in the configured time zone, where the marts cut months and days. A reader that leaves
    early (`| head`) ends the command with one line and status 2: the output is not complete.

    \b
    Examples:
      yolocost query top_idle_wasters --param month=2026-10
      yolocost query my_report.sql -f csv -o out.csv
      yolocost query "SELECT project, cost FROM mart_project_month WHERE month = '2026-10'"
    """
    from . import queries

    if output:
        _refuse_folder(output)
    q = queries.resolve(target, Path(queries_dir) if queries_dir else None)
    _require_database(state.config)
    columns, rows = queries.run(state.config.database, q, _parse_params(params), write=write,
                                timezone=state.config.timezone, memory_limit=state.config.memory_limit,
                                config=state.config)
    text = queries.FORMATTERS[fmt](columns, rows)
    if output:
        from .outputs import write_output

        write_output(output, text if text.endswith("\n") else text + "\n")
        state.log(f"wrote {len(rows)} rows to {output}")
    else:
        _write_stdout(text if text.endswith("\n") else text + "\n")


def _refuse_folder(path: str) -> None:
    """`-o` naming a folder: the output writer's one line, given before the query runs (click's
    own check of the option would print its usage text around it)."""
    if Path(path).is_dir():
        raise YolocostError(f"{path}: is a folder, not a file; give a file path")


def _write_stdout(text: str, chunk: int = 1 << 16) -> None:
    """Write a long result in pieces: a reader that leaves early (`| head -1`) then shows as
    a BrokenPipeError (one big write can lose it and end as if all was read)."""
    for i in range(0, len(text), chunk):
        sys.stdout.write(text[i:i + chunk])
    sys.stdout.flush()


@main.command(name="queries")
@click.option("--queries-dir", type=click.Path(file_okay=False, exists=True), help="Extra folder of named queries.")
def list_queries(queries_dir):
    """List the named queries with their titles and parameters.

    A query file that cannot be read (not UTF-8, a bad header) is skipped with a warning
    naming it; the others are listed and run as usual.

    \b
    Example:
      yolocost queries
    """
    from . import queries

    found, unreadable = queries.scan(Path(queries_dir) if queries_dir else None)
    for problem in unreadable.values():
        to_stderr(f"warning: {problem} (skipped)")
    for q in found:
        params = " ".join(f"{p.name}" + (f"={p.default}" if p.default is not None else "") for p in q.params)
        click.echo(f"{q.name:32} {q.title}" + (f"  [{params}]" if params else ""))


@main.command()
@click.option("--month", required=True, metavar="YYYY-MM", help="Calendar month in the configured time zone.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
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
    from . import whatif as policies

    result = policies.whatif(state.config, month, limit)
    _write_stdout(policies.FORMATS[fmt](result))


@main.group()
def sample():
    """Synthetic cluster data with ground truth, for demos, tests and benchmarks."""


@sample.command("generate")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write into.")
@click.option("--seed", type=int, default=None, help="Random seed (default: the demo seed).")
@click.option("--month", default=None, metavar="YYYY-MM", help="Month to generate (default: 2026-10).")
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
    from . import synth

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
    from . import synth

    kwargs = {k: v for k, v in {"seed": seed, "start_day": start_day}.items() if v is not None}
    result = synth.write_prometheus_sample(Path(out_dir), days=days, progress=state.log, **kwargs)
    click.echo(f"wrote {result.samples:,} samples of {result.series:,} series to {result.files['metrics']}")


@main.group(name="export")
def export_group():
    """Exports for other tools: the finance CSV in FOCUS columns.

    \b
    Example:
      yolocost export finance --month 2026-10
    """


@export_group.command("finance")
@click.option("--month", required=True, metavar="YYYY-MM", help="Calendar month in the configured time zone.")
@click.option("-o", "--out", metavar="PATH",
              help="CSV file (default: <reports output_dir>/YYYY-MM/finance-YYYY-MM.csv, where whatever has the "
                   "name is replaced); replaced atomically, a symlink written through, a device such as /dev/stdout "
                   "written in place.")
@click.option("--focus-version", metavar="1.2|1.3",
              help="FOCUS version of the columns (default: [reports] focus_version, else 1.2): 1.3 adds the "
                   "providers' split and splits each GPU model's capacity of a day over the projects in "
                   "FOCUS's allocation columns (docs/finance-csv.md).")
@pass_state
def export_finance_command(state: State, month, out, focus_version):
    """Write a month's finance CSV in FOCUS columns, one row per day x project x GPU model.

    Rows for unlabeled and unallocated GPU time complete the month, and BilledCost (cents,
    largest-remainder rounding) adds up to the cluster's total and, per project, to the
    totals the reports print. No user or job names. FOCUS 1.2 (the default) names the
    project in SubAccountId; 1.3 writes the same cents as allocated charges of each GPU
    model's daily capacity, the project in AllocatedResourceId.

    \b
    Example:
      yolocost export finance --month 2026-10 -o finance.csv
    """
    from .finance import check_focus_version
    from .finance import export_finance as run_export
    from .outputs import is_stdout

    if focus_version is not None:
        check_focus_version(focus_version)
    if out:
        _refuse_folder(out)
    _require_database(state.config)
    result = run_export(state.config, month, Path(out) if out else None, focus_version)
    if result.warning:
        to_stderr(f"warning: {result.warning}")
    # with `-o /dev/stdout` the CSV is the output: the summary line goes to stderr
    line = f"wrote {result.rows} rows to {result.path} (BilledCost total {result.total} {result.currency})"
    (to_stderr if out is not None and is_stdout(out) else _summary)(line)


@main.command()
@click.option("--month", metavar="YYYY-MM", help="Month to run (default: the previous full month, local time).")
@click.option("--format", "formats", default="all", show_default=True, metavar="LIST",
              help="What to write, as for `report`: html, pdf, summary, csv, index, or all.")
@click.option("--allow-uncounted", is_flag=True, help="As for `ingest`.")
@pass_state
def monthly(state: State, month, formats, allow_uncounted):
    """The monthly cron job: ingest the month, write its reports, summary, finance CSV and index.

    Safe to rerun (every step replaces what the month had); a second run while one is
    going is refused; any failure exits non-zero with the reason on one line. If the
    database holds usage of the month that the server no longer returns, the run stops
    (nothing is deleted; `yolocost ingest --allow-loss` replaces it by hand).

    \b
    Example (crontab, 06:00 on the 1st):
      0 6 1 * *  yolocost --config /etc/yolocost.toml -q monthly
    """
    from .monthly import run_monthly

    result = run_monthly(state.config, month, formats, state.log, allow_uncounted=allow_uncounted)
    csv = (f"finance CSV {result.finance.path} (total {result.finance.total} {result.finance.currency})"
           if result.finance is not None else "no finance CSV (--format has no csv)")
    pruned = (f"; archived {', '.join(m.month for m in result.pruned.months)} (usage rows pruned)"
              if result.pruned.months else "")
    _summary(f"{result.month}: {result.ingest.usage_rows:,} usage rows ingested, "
             f"{len(result.reports.files)} file(s) in {result.reports.folder}, {csv}{pruned}")


@main.group(name="config")
def config_group():
    """Check the configuration."""


@config_group.command("check")
@pass_state
def config_check(state: State):
    """Validate the config file and print what it resolves to (never credentials).

    \b
    Example:
      yolocost --config /etc/yolocost.toml config check
    """
    from .promclient import display_url

    c = state.config
    click.echo(f"config:    {c.source or '(defaults)'}")
    click.echo(f"cluster:   {c.cluster} ({c.timezone}, {c.currency})")
    click.echo(f"database:  {c.database}")
    click.echo(f"grain:     {c.grain_seconds} s, retention {c.retention_days} days")
    click.echo(f"prometheus: {display_url(c.prometheus.url)}" + (" (bearer token set)" if c.prometheus.bearer_token else "")
               + (f" (basic auth as {c.prometheus.username})" if c.prometheus.username else ""))
    click.echo(f"prices:    {len(c.prices)} GPU price entries, {len(c.energy_prices)} energy price entries")


@main.command(name="import-results")
@click.argument("directories", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--replace", is_flag=True,
              help="Replace the training progress, results and labels the database already holds for these jobs.")
@pass_state
def import_results_command(state: State, directories, replace):
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
    from .results_import import import_results

    result = import_results(state.config, [Path(d) for d in directories], state.log, replace=replace)
    click.echo(f"imported {len(result.jobs)} run(s) ({result.epochs} epochs, {result.with_labels} with labels) "
               f"into {state.config.database}: {', '.join(result.jobs)}")


@main.group(name="bench")
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
@click.option("--max-cost", metavar="AMOUNT",
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
    from .estimate import Request

    _bench_estimate(state, Request(model_type=model_type or Path(model).stem, image_tag=image_tag or None,
                                   gpus=1, epochs=epochs, imgsz=imgsz, batch=batch, project=project or None),
                    max_cost)
    from .bench.runner import BenchOptions, parse_train_args, run_bench

    opts = BenchOptions(
        job_id=job_id, model=model, data=Path(data) if data else None, project=project, user=user,
        model_type=model_type, image_tag=image_tag, image_digest=image_digest, epochs=epochs, imgsz=imgsz,
        batch=batch, device=device, out=Path(out_dir), metrics_addr=metrics_addr, metrics_port=metrics_port,
        gpu_sampler=gpu_sampler, images=images, seed=seed, linger=linger, train_args=parse_train_args(train_arg),
        verbose=verbose, stop_after_epoch=stop_after_epoch, label_names=_served_label_names(state),
    )
    record, run_dir = run_bench(opts, state.log)
    click.echo(f"job {record.job_id} finished: {_maps(record)} (best epoch {(record.results or {}).get('best_epoch')}), "
               f"{len(record.attempts)} attempt(s); run folder {run_dir}")


def _bench_estimate(state: State, request, max_cost: str | None) -> None:
    """The estimate's line before a bench run trains, and the --max-cost check: without an
    estimate (no database file, no comparable run, an unreadable database) a run with
    --max-cost is refused, as its cost cannot be checked; one without it trains anyway."""
    from decimal import Decimal, InvalidOperation

    from .estimate import estimate_database, summary_line
    from .money import minor_unit, round_cents

    limit = None
    if max_cost is not None:
        try:
            limit = Decimal(max_cost.strip())
        except InvalidOperation:
            limit = None
        if limit is None or not limit.is_finite() or limit <= 0:
            raise YolocostError(f"--max-cost: {max_cost!r} is not an amount above 0 (e.g. 250 or 99.50)")
    refuse = f"not started (leave out --max-cost {max_cost} to train without the check)"
    config = state.config
    if not config.database.is_file():
        if limit is not None:
            raise YolocostError(f"--max-cost: no database at {config.database} to estimate the cost from; {refuse}")
        return
    try:
        result = estimate_database(config, request, dt.datetime.now(dt.timezone.utc))
    except YolocostError as exc:
        if limit is not None:
            raise YolocostError(f"--max-cost: no estimate ({exc}); {refuse}") from None
        state.log(f"no estimate: {exc}")
        return
    state.log(summary_line(result))
    if limit is None:
        return
    if not result.found:
        raise YolocostError(f"--max-cost: {summary_line(result)}; {refuse}")
    high = round_cents(result.cost.high, minor_unit(result.currency))
    if high > limit:
        raise YolocostError(f"the estimated cost is up to {high} {result.currency}, above --max-cost {max_cost}: "
                            "not started")


def _served_label_names(state: State) -> dict[str, str]:
    """The job-info label names the config's ingest reads ([labels]; defaults without a config),
    checked before any run starts: one that collides with another or with the runner's own
    job-info labels is a one-line error."""
    from .attribution import sanitize
    from .bench.metrics import served_names

    labels = state.config.labels
    names = {dim: sanitize(getattr(labels, dim)) for dim in ("project", "user", "model_type", "image_tag")}
    served_names(names)
    return names


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
    from .bench.matrix import run_matrix

    overrides = {k: v for k, v in {"out": Path(out_dir) if out_dir else None, "metrics_port": metrics_port}.items()
                 if v is not None}
    overrides["label_names"] = _served_label_names(state)
    runs = run_matrix(Path(file), state.log, **overrides)
    for run in runs:
        attempts = len(run.record.attempts) if run.record else 0
        click.echo(f"{run.job_id:32} {run.model:16} {run.status:26} {_maps(run.record)}  attempts {attempts}")
    failed = [r.job_id for r in runs if r.status == "failed"]
    if failed:
        raise YolocostError(f"{len(failed)} of {len(runs)} run(s) failed: {', '.join(failed)}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
