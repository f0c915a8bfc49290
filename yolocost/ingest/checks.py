"""Checks around the fetch: what would make the window's figures wrong stops the ingest.

Before the fetch, a window in an archived month; after it, a scrape slower than configured
and stored GPU-intervals the server did not return (coverage.py). Each names what is wrong.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Callable

import duckdb

from .. import coverage, db, months
from ..config import Config
from ..errors import DataError

Progress = Callable[[str], None]


def check_not_archived(config: Config, start: dt.datetime, end: dt.datetime) -> None:
    """Refuse a window in an archived month before anything is fetched (the write checks it
    again, as every load does: months.check_not_archived)."""
    if not Path(config.database).is_file():
        return
    con = db.connect(config.database, read_only=True)
    try:
        if months.has_table(con, "month_builds"):
            months.check_not_archived(con, config, start, end, "the window")
    finally:
        con.close()


def check_nothing_lost(con: duckdb.DuckDBPyConnection, start: dt.datetime, end: dt.datetime, where: str,
                       progress: Progress, *, config: Config, now: dt.datetime | None = None,
                       allow_loss: bool = False) -> None:
    """Replacing the window must not delete stored GPU-intervals that Prometheus did not return
    (its retention is shorter than the window, an outage, a selector or another server that
    leaves GPUs or hosts out): refuse, naming them, unless `allow_loss`. A window whose first
    part Prometheus does not hold, and the database neither, is said."""
    coverage.check_database(con, config)
    coverage.check_times(con, config, start, end, f"Prometheus at {where}", now)
    coverage.check_nothing_lost(
        con, config, start, end, lacking=f"Prometheus at {where} returned no samples for", allow_loss=allow_loss,
        progress=progress, advice="Is its retention shorter than the window, or does [prometheus] selector leave "
        "them out? Ingest a window it still holds",
    )
    earliest = db.one_row(con.execute("SELECT min(interval_start) FROM incoming_gpu_usage"))[0]
    if earliest is None:
        progress(f"warning: Prometheus at {where} holds no GPU samples in the window")
    elif earliest > start + dt.timedelta(hours=1):
        progress(f"warning: Prometheus at {where} holds no GPU samples from {start:%Y-%m-%d %H:%M} to "
                 f"{earliest:%Y-%m-%d %H:%M} UTC: the window's figures start there")


def check_scrape_interval(gpu_intervals: int, most: float, config: Config, where: str) -> None:
    """A slower scrape than configured leaves every interval short of samples and would
    undercount present seconds: refuse it. (A faster one is harmless: one sample per
    scrape-interval step counts.) Judged from the fetched rows: in a window with a dozen
    GPU-intervals or more, some GPU is present for a whole interval. A backstop for windows
    where the store probe found no samples to measure the interval on (storeprobe.py).
    `gpu_intervals`: how many GPU-intervals the window has rows for; `most`: the most seconds
    of one (`Spill` counts both)."""
    scrape, grain = config.prometheus.scrape_interval_seconds, config.grain_seconds
    if gpu_intervals >= 12 and most < grain - scrape:
        raise DataError(
            f"no GPU at {where} has more than {float(most):g} s of samples in any {grain} s interval: "
            f"dcgm-exporter is scraped less often than [prometheus] scrape_interval_seconds = {scrape}; "
            "set it to the scrape interval"
        )
