"""Job times: each incoming job's first and last interval over all its usage.

A job's times depend on usage outside the window (earlier and later ingests), so they are
worked out from the stored rows and the incoming ones together, and written to the jobs
after the window is replaced.
"""

from __future__ import annotations

import duckdb

from .. import months
from ..config import Config
from ..db import one_row


def job_times(con: duckdb.DuckDBPyConnection, config: Config, window_start: int, window_end: int) -> None:
    """First and last interval of the incoming jobs over all usage (stored outside the window
    plus incoming); no end while the job still holds a GPU at the end of all data. Of the rows
    before the window only those from the first month an incoming job was billed in are read
    (mart_job_month), so earlier months' rows are not (a month's build reads its own only)."""
    since = window_start
    if months.has_table(con, "mart_job_month"):
        first = one_row(con.execute(
            "SELECT min(month) FROM mart_job_month WHERE job_id IN (SELECT job_id FROM incoming_jobs)"))[0]
        if first is not None:
            since = min(since, int(months.window(config, first)[0].timestamp()))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE incoming_job_times AS
        WITH kept AS (
            SELECT job_id, interval_start FROM gpu_usage
            WHERE interval_start >= to_timestamp({since}) AND interval_start < to_timestamp({window_start})
            UNION ALL SELECT job_id, interval_start FROM gpu_usage WHERE interval_start >= to_timestamp({window_end})
            UNION ALL SELECT job_id, interval_start FROM incoming_gpu_usage
        ),
        data_end AS (SELECT greatest(max(interval_start), to_timestamp({window_end}) - to_seconds({config.grain_seconds}))
                     AS last FROM kept)
        SELECT job_id, min(interval_start) AS first,
               CASE WHEN max(interval_start) >= (SELECT last FROM data_end) THEN NULL
                    ELSE max(interval_start) + to_seconds({config.grain_seconds}) END AS last
        FROM kept WHERE job_id IN (SELECT job_id FROM incoming_jobs)
        GROUP BY job_id
    """)


def set_job_times(con: duckdb.DuckDBPyConnection) -> None:
    """The stored jobs' first and last interval from `incoming_job_times` (`job_times`), once
    the window is replaced."""
    con.execute("""
        UPDATE jobs SET start_time = t.first, end_time = t.last
        FROM incoming_job_times AS t WHERE jobs.job_id = t.job_id
    """)
    con.execute("DROP TABLE incoming_job_times")
