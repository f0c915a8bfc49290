"""`yolocost monthly`: the cron job. Ingest last month, write its reports, summary, finance CSV and
index, then prune usage rows older than the retention (yolocost.months), saying which months
it keeps and why (a partial month is never archived here).

The whole run holds the database's lock, so a second run (or an ingest) waits for nothing
and is refused at once. Each step replaces what an earlier run of the same month wrote, so a
rerun after a failure, or a second run, gives the same files; the CSV is byte-identical.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable
from zoneinfo import ZoneInfo

from . import db, months
from .config import Config
from .finance import FinanceExport
from .ingest import IngestResult, ingest
from .monthstr import Month
from .report import FORMATS, ReportResult, preflight, render_reports
from .windows import month_window

Progress = Callable[[str], None]


@dataclass(frozen=True)
class MonthlyResult:
    month: str
    ingest: IngestResult
    reports: ReportResult
    finance: FinanceExport | None  # the finance CSV `reports` wrote (None: csv not among the formats)
    pruned: months.PruneResult


def last_full_month(config: Config, now: dt.datetime | None = None) -> str:
    """The last calendar month that has ended by `now` (default: now) in the configured time
    zone: the month the cron run bills."""
    local = (now or dt.datetime.now(dt.timezone.utc)).astimezone(ZoneInfo(config.timezone))
    return str(Month.containing(local).previous())


def run_monthly(config: Config, month: str | None = None, formats: str | tuple[str, ...] = FORMATS,
                progress: Progress = lambda _: None, allow_uncounted: bool = False) -> MonthlyResult:
    """Ingest one month (default: the previous one) and write its documents in `formats`
    (yolocost.report.FORMATS: reports, summary, finance CSV, index), under one lock.
    `allow_uncounted` as for `ingest`."""
    month = month or last_full_month(config)
    start, end = month_window(config, month)
    preflight(config, formats)  # a run that cannot render must not ingest first
    with db.exclusive(config.database, f"monthly {month}"):
        progress(f"monthly {month}: ingest")
        ingested = ingest(config, start, end, progress, lock=False, allow_uncounted=allow_uncounted)
        progress(f"monthly {month}: reports")
        reports = render_reports(config, month, ("all",), formats, None, progress)
        progress(f"monthly {month}: prune usage rows older than {config.retention_days} days")
        # a month that cannot be archived yet (built with other prices, say) is kept and named
        pruned = months.prune_database(config, strict=False, progress=progress)
        for why in pruned.skipped:
            progress(f"warning: kept the usage rows of {why}")
        for why in pruned.partial:  # never archived by the cron run: `prune --include-partial` does it
            progress(f"kept the usage rows of {why}")
    return MonthlyResult(month, ingested, reports, reports.finance, pruned)
