"""Monthly chargeback reports: one for the department admins, one per project, and the
month's other documents.

    render_reports(config, "2026-10", audiences=["all"], formats=FORMATS)

writes into `<report_dir>/2026-10/`: `admin.html`/`admin.pdf` (every project side by side)
and `project-<slug>.html`/`.pdf` per project, which show that project's own jobs and users
and the cluster only as its share (formats html, pdf), with `project-<slug>.csv` beside
them: the project's job table (every job of the month, jobs.py), written whenever the
project's report is, in html or pdf; `summary.html`, the one-page summary
(yolocost.summary; format summary); `finance-2026-10.csv`, the finance CSV
(yolocost.finance, the same bytes as `yolocost export finance`; format csv); and
`index.html`, which lists the folder's files with the month's coverage and total (index.py;
format index). Every file of a run is written into a staging folder first and moved into
place only when all of them are complete. The sections are listed once (sections.py: each
section's reader, charts, audiences and template); their data come from the marts only
(data.py), the figures from plotly (charts.py); the HTML inlines plotly.js once (html.py), the PDF
carries the same figures drawn again by matplotlib as vector SVG (paper.py), printed by
WeasyPrint (pdf.py): no browser. The pages
are Jinja templates (reports/templates/: report.html, sections/*.html, style.css,
print.css, charts.js, tables.js), each of which a user's templates folder may override by file name
(and extend: `{% extends "yolocost/report.html" %}` names the shipped one; yolocost.templating).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import os
import re
import shutil
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from .. import db, months
from .. import finance, summary
from ..atomic import replacing
from ..config import Config
from ..errors import YolocostError
from ..outputs import cannot_write, move_into_own_folder, own_folder, refuse_folder_in_the_way
from ..templating import environment, template_errors
from . import charts, data, jobs, listing, paper, sections
from . import html as html_out
from . import index as month_index
from .notes import month_notes

Progress = Callable[[str], None]
# html, pdf: the admin and project reports; summary: summary.html; csv: the finance CSV;
# index: index.html, the month folder's list of files
FORMATS = ("html", "pdf", "summary", "csv", "index")
REPORT_FORMATS = ("html", "pdf")

# (id, title) of each audience's sections in page order (sections.SECTIONS)
ADMIN_SECTIONS = sections.titles(sections.ADMIN)
PROJECT_SECTIONS = sections.titles(sections.PROJECT)


@dataclass(frozen=True)
class Audience:
    """Who a report is for: the admins (project None) or one project."""

    project: str | None
    slug: str = "admin"

    @property
    def stem(self) -> str:
        return "admin" if self.project is None else f"project-{self.slug}"

    @property
    def label(self) -> str:
        return "admin" if self.project is None else f"project {self.project}"


@dataclass
class ReportResult:
    month: str
    folder: Path
    files: list[Path] = field(default_factory=list)
    audiences: list[Audience] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    html_seconds: float = 0.0
    pdf_seconds: float = 0.0
    charts: int = 0
    removed: list[Path] = field(default_factory=list)  # stale reports of projects no longer in the month
    finance: finance.FinanceExport | None = None  # the finance CSV written (format csv)


# --------------------------------------------------------------------------- names


_SAFE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?")


def _hash(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def slug(name: str) -> str:
    """A file-name-safe ASCII slug, the same for the same name in every run.

    A name that already is a safe lower-case slug is kept as it is; any other name gets a
    short hash of the full name, after what ASCII it has ('Drone Survey' ->
    'drone-survey-1a2b3c4d', '视觉质检' -> '5f3e...'), so two names never share a slug."""
    if _SAFE.fullmatch(name) and ".." not in name:
        return name
    ascii_part = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    ascii_part = re.sub(r"[^a-z0-9]+", "-", ascii_part).strip("-")[:40].strip("-")
    return f"{ascii_part}-{_hash(name)}" if ascii_part else _hash(name)


def project_slugs(names: Iterable[str]) -> dict[str, str]:
    """Slugs for a month's projects; a (very unlikely) clash falls back to the full hash."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in sorted(set(names)):
        s = slug(name)
        if s in seen:
            s = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
        seen[s] = name
        out[name] = s
    return out


def parse_formats(spec: str | Sequence[str]) -> list[str]:
    """The formats of a comma-separated list (or a sequence) of FORMATS names or 'all', in
    FORMATS order, deduplicated."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    wanted: set[str] = set()
    for item in (i.strip().lower() for i in items):
        if item == "all":
            wanted.update(FORMATS)
        elif item in FORMATS:
            wanted.add(item)
        else:
            raise YolocostError(f"--format: {item!r} is not one of {', '.join(FORMATS)} or all")
    if not wanted:
        raise YolocostError(f"--format: give one or more of {', '.join(FORMATS)}, or all")
    return [f for f in FORMATS if f in wanted]


def resolve_audiences(specs: Sequence[str], projects: Sequence[str], month: str) -> list[Audience]:
    """'all' (admin and every project), 'admin' or 'project:NAME', in that order, deduplicated."""
    slugs = project_slugs(projects)
    wanted: list[Audience] = []
    for spec in specs or ("all",):
        if spec == "all":
            items = [Audience(None)] + [Audience(p, slugs[p]) for p in projects]
        elif spec == "admin":
            items = [Audience(None)]
        elif spec.startswith("project:"):
            name = spec[len("project:"):]
            if name not in slugs:
                raise YolocostError(f"--audience: no project {name!r} held a GPU in {month}")
            items = [Audience(name, slugs[name])]
        else:
            raise YolocostError(f"--audience: {spec!r} is not admin, project:NAME or all")
        wanted += [a for a in items if a not in wanted]
    return wanted


# --------------------------------------------------------------------------- rendering


def _write(path: Path, content: str | bytes) -> Path:
    """Write next to the target and rename, so a reader never sees half a report."""
    with replacing(path) as tmp:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content, encoding="utf-8")
    return path


def _context(config: Config, month: str, audience: Audience, report: dict) -> dict:
    admin = audience.project is None
    return {
        "month": month,
        "previous_month": data.previous_month(month),
        "audience": {"admin": admin, "project": audience.project,
                     "title": "All projects" if admin else audience.project,
                     "csv": None if admin else f"{audience.stem}.csv"},
        "sections": [{"id": s.id, "title": s.title, "template": s.template}
                     for s in sections.shown_to(sections.ADMIN if admin else sections.PROJECT)],
        "cluster_name": config.cluster,
        "currency": config.currency,
        "timezone": config.timezone,
        "thresholds": config.thresholds,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "top": data.TOP,
        "leaderboard_ends": charts.LEADERBOARD_ENDS,  # the PDF prints the best and the worst this many
        "long_table": listing.LONG, "listed": listing.listed,  # a longer table prints as aligned text
        "r": report,
    }


def _report_done(paths: Iterable[Path], result: ReportResult, progress: Progress) -> None:
    for path in paths:
        result.files.append(path)
        progress(f"rendered {path.name}")


def preflight(config: Config, formats: Sequence[str] | str = FORMATS,
              templates_dir: Path | None = None) -> tuple[list[str], Path | None]:
    """Check everything rendering needs before anything is written (or, for `monthly`, before
    the ingest): the formats, the templates folder, the output folder, WeasyPrint and
    matplotlib for PDFs. Returns the formats and the templates folder."""
    formats = parse_formats(formats)
    templates = Path(templates_dir) if templates_dir else config.templates_dir
    if templates is not None and not Path(templates).is_dir():
        raise YolocostError(f"{templates}: templates folder not found")
    _check_writable(Path(config.report_dir))
    if "pdf" in formats:  # fail before writing anything
        from . import pdf

        pdf.check_weasyprint()
    return formats, templates


def _check_writable(folder: Path) -> None:
    """The folder, or the nearest part of its path that exists, is a folder we may write in
    (checked without creating anything: a refused run writes nothing)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        what = "is not a folder" if not existing.is_dir() else "is not writable"
        raise YolocostError(f"{folder}: cannot write reports there ({existing} {what})")


def render_reports(
    config: Config,
    month: str,
    audiences: Sequence[str] = ("all",),
    formats: Sequence[str] | str = FORMATS,
    templates_dir: Path | None = None,
    progress: Progress = lambda _: None,
) -> ReportResult:
    """Render the month's documents in the formats (the reports for the audiences); returns
    what was written."""
    data.check_month(month)
    formats, templates = preflight(config, formats, templates_dir)
    with contextlib.ExitStack() as printing:  # the PDF printer's worker processes, once started
        return _render_all(config, month, audiences, formats, templates, progress, printing)


def _start_printer(printing: contextlib.ExitStack, pages: int):
    """The PDF printer for `pages` PDFs, its worker processes started now: they load WeasyPrint
    and matplotlib while this process reads the marts. One PDF is printed here: a worker would
    load them too, and a second would load them for nothing."""
    from . import pdf

    return printing.enter_context(pdf.Printer(workers=min(pdf.PRINT_WORKERS, pages)))


def _render_all(config: Config, month: str, audiences: Sequence[str], formats: list[str],
                templates: Path | None, progress: Progress, printing: contextlib.ExitStack) -> ReportResult:
    wants_reports = any(f in REPORT_FORMATS for f in formats)
    con = db.connect(config.database, read_only=True)
    try:
        with db.models_needed("the report"):  # a database of an older version
            known = data.months_with_data(con)
            if month not in known:
                have = f" (months with data: {', '.join(known)})" if known else " (it holds no usage)"
                raise YolocostError(f"{config.database}: no data for {month}{have}")
            built = months.as_built(con, config, month)  # a stale month is refused; an archived one shown as built
            config = built.config
            if built.note:
                progress(f"note: {built.note}")
            projects = data.month_projects(con, month)
            chosen = resolve_audiences(list(audiences), projects, month)
            printer = _start_printer(printing, len(chosen)) if "pdf" in formats else None
            reports = {}
            for audience in chosen if wants_reports else ():
                progress(f"reading the marts for the {audience.label} report")
                reports[audience] = sections.collect(con, month, audience.project, timezone=config.timezone,
                                                     grain_seconds=config.grain_seconds, currency=config.currency)
            extras = _read_extras(con, config, month, formats, progress)
            notes = month_notes(con, config, month)  # what the bill was made without: every report says it
            for report in reports.values():
                report["notes"] = notes
    finally:
        con.close()

    folder = Path(config.report_dir) / month
    try:
        own_folder(folder, config.reports_private)
    except OSError as exc:
        raise YolocostError(f"{folder}: cannot create the month's reports folder: {exc.strerror}") from None
    env = environment(templates, config.currency)
    with template_errors(templates):  # a template that does not parse stops the run before any work
        page = env.get_template("report.html") if wants_reports else None
        pages = {name: env.get_template(name) for name, fmt in _EXTRA_PAGES if fmt in formats}
    result = ReportResult(month, folder, audiences=chosen if wants_reports else [], formats=formats)
    started = time.monotonic()
    figures = {a: sections.figures(reports[a], config.currency, a.project) for a in reports}
    result.charts = sum(len(f) for f in figures.values())
    if wants_reports:
        progress(f"built {result.charts} charts in {time.monotonic() - started:.1f} s")

    with output_errors(folder), staging_folder(folder) as staging:
        with template_errors(templates):
            if wants_reports:
                _render(config, month, chosen, formats, reports, figures, page, staging, result, progress, printer)
            _render_extras(month, formats, extras, pages, folder, staging, projects, result, progress)
        result.files = _move_into_place(result.files, folder, progress, config.reports_private)
        result.removed = _remove_stale(folder, projects, month, progress)
    if result.finance is not None:
        result.finance = dataclasses.replace(result.finance, path=folder / result.finance.path.name)
    return result


# --------------------------------------------------------------------------- the month's other documents

_EXTRA_PAGES = (("summary.html", "summary"), (month_index.INDEX, "index"))


def _read_extras(con, config: Config, month: str, formats: Sequence[str], progress: Progress) -> dict:
    """What the summary, the finance CSV and the index need from the database, read up front
    (the files are written with the reports, after the connection is closed)."""
    extras: dict = {}
    if "summary" in formats:
        progress("reading the ledger for the summary")
        extras["summary"] = summary.summary_context(con, config, month)
    if "csv" in formats:
        progress("rounding the finance CSV")
        extras["csv"] = finance.finance_csv(con, month, finance.default_path(config, month), config.focus_version)
    if "index" in formats:
        totals = summary.ledger_month(con, month)
        extras["index"] = {
            "month": month,
            "cluster_name": config.cluster,
            "currency": config.currency,
            "total": totals["total"] if totals else None,
            "coverage": month_index.coverage(con, month, config.timezone, config.grain_seconds),
            "timezone": config.timezone,
        }
    return extras


def _render_extras(month: str, formats: Sequence[str], extras: dict, pages: dict, folder: Path, staging: Path,
                   projects: Sequence[str], result: ReportResult, progress: Progress) -> None:
    """Write summary.html, the finance CSV and, last, index.html (which lists the others and
    what the month folder already holds) into the staging folder."""
    if "summary" in formats:
        _report_done([_write(staging / "summary.html", pages["summary.html"].render(**extras["summary"]))],
                     result, progress)
    if "csv" in formats:
        text, export = extras["csv"]
        _report_done([_write(staging / export.path.name, text.encode("utf-8"))], result, progress)
        result.finance = export
        if export.warning:
            progress(f"warning: {export.warning}")
    if "index" in formats:
        slugs = project_slugs(projects)
        files = month_index.month_files(folder, result.files, slugs.values(), month)
        text = pages[month_index.INDEX].render(
            **extras["index"], **month_index.listing(month, files, slugs),
            generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        _report_done([_write(staging / month_index.INDEX, text)], result, progress)


# --------------------------------------------------------------------------- writing the set
#
# A month's set is rendered into a hidden folder inside the month folder and moved into place
# only once every file of it is complete: a failure part way (disk full, a template error, a
# browser that dies) leaves the month folder as it was, with no temporary file behind.


@contextlib.contextmanager
def staging_folder(folder: Path) -> Iterator[Path]:
    """A hidden `.report-XXXX.tmp` folder in `folder` (same file system: the moves are
    renames), removed with whatever is left in it when the block ends."""
    staging = Path(tempfile.mkdtemp(prefix=".report-", suffix=".tmp", dir=folder))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def output_errors(folder: Path) -> Iterator[None]:
    """An OSError while writing the month's files (disk full, read-only file system, ...) as
    the one line `<month folder>: cannot write: <reason>`."""
    try:
        yield
    except OSError as exc:
        where = exc.filename if exc.filename and not _within(Path(str(exc.filename)), folder) else folder
        raise cannot_write(where, exc) from None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _move_into_place(staged: list[Path], folder: Path, progress: Progress, private: bool = False) -> list[Path]:
    """Move the complete set from the staging folder into `folder`, the month folder, which is
    yolocost's own: each file replaces whatever has its name by a rename (a symlink, a FIFO,
    a device: replaced, never written through, so a planted link cannot make a run overwrite
    the file it points at; see yolocost.outputs). With `private` the files are 0600. Every
    target is checked first, so a folder in the way moves nothing."""
    for path in staged:
        with open(path, "rb") as handle:  # the content on disk before its name is
            os.fsync(handle.fileno())
    targets = [folder / path.name for path in staged]
    for target in targets:
        refuse_folder_in_the_way(target)
    for path, target in zip(staged, targets):
        move_into_own_folder(path, target, private)
        progress(f"wrote {target}")
    return targets


STALE_REPORT = re.compile(r"project-.+\.(?:html|pdf|csv)")
# what a run killed outright (SIGKILL, power loss) left: its staging folder, or the temporary
# file of a report written in place by an earlier version
LEFT_BEHIND = re.compile(r"\.report-.+\.tmp|\.(?:admin|project-.+)\.(?:html|pdf)\.tmp")
LEFT_BEHIND_AGE = 3600.0  # s: older than any run, so never another run's work in progress


def _remove_stale(folder: Path, projects: Sequence[str], month: str, progress: Progress) -> list[Path]:
    """Remove the project reports of projects the month no longer holds (`project-*.html`,
    `.pdf` and `.csv`, names only yolocost gives; other files in the folder are left alone),
    and what runs killed outright left behind over an hour ago."""
    current = {f"project-{s}" for s in project_slugs(projects).values()}
    removed = []
    for path in sorted(folder.iterdir()):
        if STALE_REPORT.fullmatch(path.name) and path.stem not in current and (path.is_symlink() or path.is_file()):
            path.unlink()
            removed.append(path)
            progress(f"removed stale report {path} (no project of that name held a GPU in {month})")
        elif LEFT_BEHIND.fullmatch(path.name) and not path.is_symlink() and _age(path) > LEFT_BEHIND_AGE:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            progress(f"removed {path}, left behind by a report run that was killed")
    return removed


def _age(path: Path) -> float:
    return time.time() - path.stat().st_mtime


def _render(config: Config, month: str, chosen, formats, reports, figures, page, folder: Path,
            result: "ReportResult", progress: Callable[[str], None], printer) -> None:
    """Write each audience's HTML and PDF files, and each project's job CSV (whatever the formats).

    The PDFs go to the printer's worker processes first; the HTML pages are rendered here
    while they print."""
    try:
        _render_pages(config, month, chosen, formats, reports, figures, page, folder, result, progress, printer)
    finally:  # no worker writes into the staging folder once this returns, even after an error
        if printer is not None:
            printer.close()
    for audience in chosen:
        if audience.project is not None:
            table = jobs.to_csv(reports[audience]["jobs"])
            _report_done([_write(folder / f"{audience.stem}.csv", table)], result, progress)


def _render_pages(config: Config, month: str, chosen, formats, reports, figures, page, folder: Path,
                  result: "ReportResult", progress: Callable[[str], None], printer) -> None:
    if printer is not None:
        from . import pdf

        pdf_started = time.monotonic()
        progress(f"drawing {result.charts} charts with matplotlib and printing the PDFs in "
                 f"{printer.workers} process(es)")
        for audience in chosen:
            printed = {n: paper.description(f) for n, f in figures[audience].items() if n not in charts.HTML_ONLY}
            text = page.render(
                **_context(config, month, audience, reports[audience]), fmt="pdf",
                chart=lambda name, printed=printed: pdf.chart_slot(name) if name in printed else "",
                has_chart=lambda name, printed=printed: name in printed,
                plotly_js="",
            )
            printer.submit(text, folder / f"{audience.stem}.pdf", printed)
            _report_done(printer.done(), result, progress)

    if "html" in formats:
        started = time.monotonic()
        for audience in chosen:
            figs = figures[audience]
            text = page.render(
                **_context(config, month, audience, reports[audience]), fmt="html",
                chart=lambda name, figs=figs: html_out.chart_markup(name, figs[name]) if name in figs else "",
                has_chart=lambda name, figs=figs: name in figs,
                plotly_js=html_out.plotly_js(), chart_template=html_out.chart_template(),
            )
            _report_done([_write(folder / f"{audience.stem}.html", text)], result, progress)
            if printer is not None:
                _report_done(printer.done(), result, progress)
        result.html_seconds = time.monotonic() - started

    if printer is not None:
        _report_done(printer.done(wait=True), result, progress)
        progress(f"charts drawn in {printer.chart_seconds:.1f} s, WeasyPrint {printer.seconds:.1f} s of work "
                 f"in {printer.workers} process(es)")
        result.pdf_seconds = time.monotonic() - pdf_started
