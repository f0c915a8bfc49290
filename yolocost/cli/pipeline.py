"""Commands that run the whole chain in one go: monthly (the cron job) and demo (the bundled
sample month)."""

from __future__ import annotations

from pathlib import Path

import click

from .options import month_option
from .state import State, pass_state
from .streams import summary


@click.command()
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

    from ..demo import run_demo

    started = time.monotonic()
    result = run_demo(Path(out_dir), state.log, force=force)
    state.log(f"done in {time.monotonic() - started:.1f} s")
    kinds = " and ".join(k for k in ("HTML", "PDF") if any(p.suffix == f".{k.lower()}" for p in result.reports))
    projects = len({p.stem for p in result.reports if p.stem.startswith("project-") and p.suffix != ".csv"})
    summary("\n".join([
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


@click.command()
@month_option(help="Month to run (default: the previous full month, local time).")
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
    from ..monthly import run_monthly

    result = run_monthly(state.config, month, formats, state.log, allow_uncounted=allow_uncounted)
    csv = (f"finance CSV {result.finance.path} (total {result.finance.total} {result.finance.currency})"
           if result.finance is not None else "no finance CSV (--format has no csv)")
    pruned = (f"; archived {', '.join(m.month for m in result.pruned.months)} (usage rows pruned)"
              if result.pruned.months else "")
    summary(f"{result.month}: {result.ingest.usage_rows:,} usage rows ingested, "
            f"{len(result.reports.files)} file(s) in {result.reports.folder}, {csv}{pruned}")


COMMANDS = (demo, monthly)
