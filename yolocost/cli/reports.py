"""Commands that write a month's documents: report (reports, summary, finance CSV, index) and
export finance."""

from __future__ import annotations

from pathlib import Path

import click

from .options import month_option, output_option, refuse_folder
from .state import State, pass_state, require_database
from .streams import summary, to_stderr


@click.command()
@month_option(required=True)
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
    from ..report import render_reports

    require_database(state.config)
    result = render_reports(state.config, month, audiences, formats,
                            Path(templates_dir) if templates_dir else None, state.log)
    times = [f"{kind} in {secs:.1f} s" for kind, secs in (("HTML", result.html_seconds), ("PDF", result.pdf_seconds))
             if kind.lower() in result.formats]
    state.log(f"{result.charts} charts; " + ", ".join(times))
    if result.finance is not None and result.finance.warning:
        to_stderr(f"warning: {result.finance.warning}")
    summary("\n".join([f"wrote {len(result.files)} file(s) for {result.month} into {result.folder}",
                       *(f"  {path}" for path in result.files)]))


@click.group(name="export")
def export():
    """Exports for other tools: the finance CSV in FOCUS columns.

    \b
    Example:
      yolocost export finance --month 2026-10
    """


@export.command("finance")
@month_option(required=True)
@output_option(aliases=("--out",),  # the earlier spelling, still accepted
               help="CSV file (default: <reports output_dir>/YYYY-MM/finance-YYYY-MM.csv, where whatever has the "
                    "name is replaced); replaced atomically, a symlink written through, a device such as "
                    "/dev/stdout written in place.")
@click.option("--focus-version", metavar="1.2|1.3",
              help="FOCUS version of the columns (default: [reports] focus_version, else 1.2): 1.3 adds the "
                   "providers' split and splits each GPU model's capacity of a day over the projects in "
                   "FOCUS's allocation columns (docs/finance-csv.md).")
@pass_state
def export_finance(state: State, month, output, focus_version):
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
    from ..finance import check_focus_version
    from ..finance import export_finance as run_export
    from ..outputs import is_stdout

    if focus_version is not None:
        check_focus_version(focus_version)
    if output:
        refuse_folder(output)
    require_database(state.config)
    result = run_export(state.config, month, Path(output) if output else None, focus_version)
    if result.warning:
        to_stderr(f"warning: {result.warning}")
    # with `-o /dev/stdout` the CSV is the output: the summary line goes to stderr
    line = f"wrote {result.rows} rows to {result.path} (BilledCost total {result.total} {result.currency})"
    (to_stderr if output is not None and is_stdout(output) else summary)(line)


COMMANDS = (report, export)
