"""`yolocost demo`: build a database and the month's reports from the bundled sample month."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .config import load_config
from .errors import YolocostError
from .load import load_parquet_dir
from .resources import shipped_dir

DEMO_MONTH = "2026-10"


@dataclass(frozen=True)
class DemoResult:
    folder: Path
    config: Path
    database: Path
    summary: Path
    usage_rows: int
    jobs: int
    reports: list[Path] = field(default_factory=list)
    report_folder: Path | None = None
    pdf_skipped: str | None = None  # why the demo wrote no PDF, if it did not
    index: Path | None = None  # the month folder's index.html


def run_demo(out_dir: Path, progress: Callable[[str], None] = lambda _: None, force: bool = False) -> DemoResult:
    """Copy the demo config into `out_dir`, load the sample month into a fresh database
    there (replacing an earlier demo database only once the new one is complete) and
    render the month's reports, summary, finance CSV and index: the reports as HTML always,
    PDF too where WeasyPrint and Pango are installed (`make demo` installs them); without
    them the demo says why and still succeeds. A folder that is not empty is refused unless `force` says that
    the demo's own files in it (config, database, reports) may be replaced."""
    from .report import FORMATS, render_reports
    from .report.pdf import check_weasyprint

    sample = shipped_dir("sample_data")
    out_dir = Path(out_dir).resolve()
    check_demo_folder(out_dir, force)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise YolocostError(f"{out_dir}: cannot create the demo folder: {exc.strerror}") from None
    config_path = out_dir / "yolocost.toml"
    shutil.copyfile(sample / "yolocost.toml", config_path)
    config = load_config(config_path)

    final_db = config.database
    building = final_db.with_name(final_db.name + ".building")
    for stale in (building, building.with_name(building.name + ".wal")):
        stale.unlink(missing_ok=True)
    progress(f"loading the sample month from {sample.name}/")
    loaded = load_parquet_dir(config.with_database(building), sample, progress)
    building.replace(final_db)
    final_db.with_name(final_db.name + ".wal").unlink(missing_ok=True)

    formats, skipped = list(FORMATS), None
    try:
        check_weasyprint()
    except YolocostError as exc:
        formats, skipped = [f for f in FORMATS if f != "pdf"], str(exc)
        progress(f"HTML reports only: {skipped}")
    kinds = " and ".join(f.upper() for f in formats if f in ("html", "pdf"))
    progress(f"rendering the {DEMO_MONTH} reports ({kinds}), summary, finance CSV and index")
    result = render_reports(config, DEMO_MONTH, ["all"], formats, progress=progress)
    return DemoResult(out_dir, config_path, final_db, result.folder / "summary.html", loaded.usage_rows, loaded.jobs,
                      list(result.files), result.folder, skipped, result.folder / "index.html")


def check_demo_folder(out_dir: Path, force: bool) -> None:
    """Refuse a folder that already holds files (an earlier demo, or anything else) unless
    `force`: the demo would overwrite its yolocost.toml, database and reports."""
    if out_dir.exists() and not out_dir.is_dir():
        raise YolocostError(f"{out_dir}: is a file, not a folder")
    try:
        entries = sorted(p.name for p in out_dir.iterdir()) if out_dir.is_dir() else []
    except OSError as exc:
        raise YolocostError(f"{out_dir}: cannot read the demo folder: {exc.strerror}") from None
    if entries and not force:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise YolocostError(f"{out_dir}: folder is not empty ({shown}); give --force to replace the demo's "
                            "config, database and reports there, or choose another --out")
