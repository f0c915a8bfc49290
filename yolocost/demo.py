"""`yolocost demo`: build a database and a first summary from the bundled sample month."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import load_config
from .load import load_parquet_dir
from .resources import shipped_dir
from .summary import write_summary

DEMO_MONTH = "2026-10"


@dataclass(frozen=True)
class DemoResult:
    folder: Path
    config: Path
    database: Path
    summary: Path
    usage_rows: int
    jobs: int


def run_demo(out_dir: Path, progress: Callable[[str], None] = lambda _: None) -> DemoResult:
    """Copy the demo config into `out_dir`, load the sample month into a fresh database
    there (replacing an earlier demo database only once the new one is complete) and
    render the month's summary."""
    sample = shipped_dir("sample_data")
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
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

    progress(f"rendering the {DEMO_MONTH} summary")
    summary = write_summary(config, DEMO_MONTH, config.report_dir / DEMO_MONTH / "summary.html")
    return DemoResult(out_dir, config_path, final_db, summary, loaded.usage_rows, loaded.jobs)
