"""`yolocost ingest`: one time window from Prometheus into the raw tables, atomically.

Everything is fetched first (fetcher.py), in a child process (forked.py) whose memory is
gone before the write starts; the usage rows wait in spill files (spill.py), so the fetch
holds a few chunks in memory whatever the window's length. The rows are then written in
one transaction that replaces the window and rebuilds the models. A kill at any point
leaves the database as it was; a lock file keeps a second ingest of the same database out
while one runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass
from typing import Callable

import duckdb

from .. import coverage, db, forked
from ..config import Config
from ..errors import DataError, YolocostError
from ..load import rebuild, replace_window, touched
from ..sqltext import literal
from . import checks, fetcher, staging
from .jobtimes import job_times, set_job_times
from .spill import Spill

Progress = Callable[[str], None]
UTC = dt.timezone.utc


@dataclass(frozen=True)
class IngestResult:
    """What an ingest stored, for the command's summary: the window, its rows, jobs and epochs,
    and the requests it took."""

    start: dt.datetime
    end: dt.datetime
    usage_rows: int
    jobs: int
    epochs: int
    requests: int
    chunks_split: int


def ingest(config: Config, start: dt.datetime, end: dt.datetime, progress: Progress = lambda _: None,
           now: dt.datetime | None = None, lock: bool = True, allow_loss: bool = False,
           allow_uncounted: bool = False) -> IngestResult:
    """Fetch [start, end) from Prometheus and make it the database's contents for that window.

    Stored GPU-intervals of the window that the server does not return stop it unless
    `allow_loss` (coverage.py); samples of shared GPUs that could not be counted, unless
    `allow_uncounted` (`Fetcher._check_uncounted`, fetcher.py). `lock=False` is for a caller that
    already holds the database's lock (`monthly`)."""
    grain = config.grain_seconds
    coverage.check_window(config, start, end, "the window")
    s, e = int(start.timestamp()), int(end.timestamp())
    current = int((now or dt.datetime.now(UTC)).timestamp())
    if s >= current:
        raise YolocostError(f"the window starts in the future ({start:%Y-%m-%d %H:%M} UTC)")
    e_fetch = min(e, (current // grain) * grain)  # the part that has happened
    if e_fetch <= s:
        raise YolocostError(
            f"the window's first {grain} s interval ({start:%Y-%m-%d %H:%M} UTC on) has not ended yet: "
            f"nothing to ingest before {coverage.at_epoch(s + grain)}")
    with db.exclusive(config.database, "ingest") if lock else contextlib.nullcontext(), Spill(config) as spill:
        checks.check_not_archived(config, start, end)  # before the fetch, which may take many minutes
        # in a child process: the heap the fetch leaves is gone before DuckDB's write starts
        fetched = forked.run(lambda say: fetcher.fetch(config, s, e_fetch, spill, say, allow_uncounted), progress,
                             "the ingest's fetch process")
        spill.files = fetched.files
        progress("writing to the database")
        with db.writing(config.database, config.memory_limit) as con:
            rows = spill.stage(con)
            checks.check_nothing_lost(con, start, end, fetched.where, progress, config=config, now=now,
                                      allow_loss=allow_loss)
            jobs = staging.stage_jobs(con, config, fetched.jobs)
            staging.stage(con, "training_progress", fetched.progress)
            staging.stage(con, "job_results", fetched.results)
            epochs = len(set(zip(fetched.progress["job_id"], fetched.progress["epoch"])))
            job_times(con, config, s, e)
            replace_window(
                con, config, ["gpu_usage", "jobs", "training_progress", "job_results"],
                start, end, source=f"prometheus:{fetched.where}", where=lambda t: f"ingest from {fetched.where}",
                progress=progress, progress_by_window=True,
            )
            set_job_times(con)
            _store_notes(con, config, start, end, fetched.notes)
            stored = db.one_row(con.execute(
                f"SELECT count(*) FROM gpu_usage WHERE interval_start >= to_timestamp({s}) "
                f"AND interval_start < to_timestamp({e}) AND cluster = {literal(config.cluster)}"))[0]
            if stored != rows:  # never commit a window that lost rows on the way in
                raise DataError(f"the database kept {stored:,} of the {rows:,} usage rows fetched for the window; "
                                "nothing was changed")
            rebuild(con, config, touched(config, start, end), progress)
    return IngestResult(start, end, rows, jobs, epochs, fetched.requests, fetched.splits)


def _store_notes(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime, end: dt.datetime,
                 notes: list[tuple]) -> None:
    """The window's `ingest_notes` (schema.sql), replacing those inside it: uncounted samples are
    noted per grain interval, so a later ingest of part of the window replaces exactly its own."""
    cluster = literal(config.cluster)
    con.execute(f"DELETE FROM ingest_notes WHERE cluster = {cluster} AND window_start >= {literal(start)} "
                f"AND window_end <= {literal(end)}")
    for a, b, kind, host, gpu, samples, seconds, detail in notes:
        con.execute(f"INSERT INTO ingest_notes VALUES (to_timestamp({int(a)}), to_timestamp({int(b)}), {cluster}, "
                    f"{literal(kind)}, {literal(host)}, {literal(gpu)}, {literal(samples)}, {literal(seconds)}, "
                    f"{literal(detail)})")
