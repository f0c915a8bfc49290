"""What a load or an ingest may replace (docs/raw-tables.md, "What a load or ingest replaces").

The incoming usage rows (`incoming_gpu_usage`: a temp table, or an ingest's view of its
scratch files) replace the stored usage rows of the config's cluster in one window [start,
end). Before anything is deleted they are checked here, in DuckDB, set-based (a month of
1,000 GPUs is about 9 million rows):

* the database's rows are of the config's cluster and grain (one cluster per database);
* every incoming row is of the config's cluster, inside the window and not in the future;
* a load without an explicit window takes the span of its rows, which must have no hole
  (an hour or more without rows) where the database holds rows;
* every GPU-interval (GPU x grain interval) the database holds for the cluster in the window
  is among the incoming rows too. One that is not would be deleted and not put back: that
  stops the command, naming what would be lost, unless the caller says the loss is intended.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable

import duckdb

from .config import Config
from .db import check_grain, check_stored_cluster, one_row
from .errors import DataError, YolocostError
from .sqltext import literal

UTC = dt.timezone.utc
HOLE_SECONDS = 3600  # a span with no row of any GPU for this long has a hole (an outage of minutes has not)
NAMED = 3  # GPUs and hosts named in a message: the first few in sort order


def _at(t: dt.datetime) -> str:
    """An instant as messages show it: UTC to the minute."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def at_epoch(epoch: float) -> str:
    """Unix seconds as messages show an instant (see `_at`)."""
    return _at(dt.datetime.fromtimestamp(epoch, UTC))


def check_window(config: Config, start: dt.datetime, end: dt.datetime, flag: str) -> None:
    """A window given on the command line: on the grain, and not empty."""
    grain = config.grain_seconds
    if int(start.timestamp()) % grain or int(end.timestamp()) % grain or start.microsecond or end.microsecond:
        raise YolocostError(f"{flag} must start and end on the {grain} s grain, got {_at(start)} to {_at(end)}")
    if end <= start:
        raise YolocostError(f"{flag} is empty: its end ({_at(end)}) must be after its start ({_at(start)})")


def check_database(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """The stored rows fit the config: cut at its grain (db.check_grain; a changed grain
    misses every stored interval, so name that cause, not a loss) and of its cluster
    (db.check_stored_cluster)."""
    check_grain(con, config)
    check_stored_cluster(con, config)


def check_cluster(con: duckdb.DuckDBPyConnection, config: Config, where: str) -> None:
    """Rows of another cluster would be stored under it while this cluster's window is replaced:
    refuse them, naming the value and how many rows carry it."""
    row = con.execute("""
        SELECT cluster, count(*), sum(count(*)) OVER (), count(*) OVER () FROM incoming_gpu_usage
        WHERE cluster IS DISTINCT FROM ? GROUP BY cluster ORDER BY count(*) DESC, cluster LIMIT 1
    """, [config.cluster]).fetchone()
    if row:
        value, n, total, values = row
        others = f" ({total:,} rows of {values} other cluster values in all)" if values > 1 else ""
        raise DataError(
            f"{where}: {n:,} usage row(s) of cluster {value!r}{others}, but the config's [cluster] name is "
            f"{config.cluster!r}; load each cluster's rows with that cluster's config"
        )


def check_times(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime | None,
                end: dt.datetime | None, where: str, now: dt.datetime | None = None) -> None:
    """No incoming row in the future (after now + a grain), none outside [start, end)."""
    latest = (now or dt.datetime.now(UTC)) + dt.timedelta(seconds=config.grain_seconds)
    n, first, gpu = con.execute(f"""
        SELECT count(*) OVER (), interval_start, gpu_uuid FROM incoming_gpu_usage
        WHERE interval_start > {literal(latest)} ORDER BY interval_start, gpu_uuid LIMIT 1
    """).fetchone() or (0, None, None)
    if n:
        raise DataError(f"{where}: {n:,} usage row(s) in the future (after {_at(latest)}), the first at "
                        f"{_at(first)} (GPU {gpu}); refused")
    if start is None:
        return
    assert end is not None  # a window has both ends or neither
    n, first, last = one_row(con.execute(f"""
        SELECT count(*), min(interval_start), max(interval_start) FROM incoming_gpu_usage
        WHERE interval_start < {literal(start)} OR interval_start >= {literal(end)}
    """))
    if n:
        raise DataError(f"{where}: {n:,} usage row(s) outside the window {_at(start)} to {_at(end)} "
                        f"(from {_at(first)} to {_at(last)}); refused")


def data_span(con: duckdb.DuckDBPyConnection, config: Config, where: str) -> tuple[dt.datetime | None,
                                                                                    dt.datetime | None]:
    """[first, last + grain) of the incoming rows. Refused if it has a hole (an hour or more in
    which no GPU has a row: files of Oct 2 and Oct 29 only, a year shifted by mistake) where the
    database holds usage rows of the cluster: replacing the span would delete them, and which
    window the files mean is then for the user to say (--window)."""
    grain = config.grain_seconds
    start, end = one_row(con.execute(f"SELECT min(interval_start), max(interval_start) + to_seconds({grain}) "
                                     "FROM incoming_gpu_usage"))
    if start is None:
        return None, None
    hole = con.execute(f"""
        WITH holes AS (
            SELECT before + to_seconds({grain}) AS hole_start, interval_start AS hole_end FROM (
                SELECT interval_start, lag(interval_start) OVER (ORDER BY interval_start) AS before
                FROM (SELECT DISTINCT interval_start FROM incoming_gpu_usage)
            ) WHERE interval_start - before >= to_seconds({HOLE_SECONDS + grain})
        )
        SELECT h.hole_start, h.hole_end, count(*), count(*) OVER (), sum(count(*)) OVER ()
        FROM holes AS h JOIN gpu_usage AS s
          ON s.cluster = $cluster AND s.interval_start >= h.hole_start AND s.interval_start < h.hole_end
        GROUP BY h.hole_start, h.hole_end ORDER BY h.hole_end - h.hole_start DESC, h.hole_start LIMIT 1
    """, {"cluster": config.cluster}).fetchone()
    if hole:
        gap_start, gap_end, rows, n, total = hole
        more = f" (the longest of {n} such holes, {total:,} stored rows in all)" if n > 1 else ""
        raise DataError(
            f"{where}: the usage rows span {_at(start)} to {_at(end)} but hold no row of any GPU from "
            f"{_at(gap_start)} to {_at(gap_end)}, where the database holds {rows:,} usage rows{more}; "
            "say which window the files replace with --window START END"
        )
    return start, end


def lost_rows(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime, end: dt.datetime) -> tuple:
    """What replacing the cluster's window would delete and not put back: the stored rows whose
    GPU-interval is not among the incoming rows (one anti-join): (rows, GPUs, hosts, first and
    last interval, GPU-hours, first GPUs, first hosts); rows is 0 if none."""
    return one_row(con.execute(f"""
        WITH lost AS (
            SELECT s.gpu_uuid, s.hostname, s.interval_start, s.seconds_present
            FROM (SELECT * FROM gpu_usage WHERE cluster = {literal(config.cluster)}
                  AND interval_start >= {literal(start)} AND interval_start < {literal(end)}) AS s
            ANTI JOIN incoming_gpu_usage AS i ON i.gpu_uuid = s.gpu_uuid AND i.interval_start = s.interval_start
        )
        SELECT count(*), count(DISTINCT gpu_uuid),
               count(DISTINCT hostname), min(interval_start), max(interval_start),
               hours(coalesce(sum(seconds_present), 0)),
               list_sort(list(DISTINCT gpu_uuid))[1:{NAMED}], list_sort(list(DISTINCT hostname))[1:{NAMED}]
        FROM lost
    """))


def describe_loss(config: Config, lost: tuple) -> str:
    """`lost_rows` in words: rows, GPU-hours, GPUs and hosts (the first by name), time range."""
    rows, gpus, hosts, first, last, hours, gpu_names, host_names = lost

    def named(n: int, what: str, names: list[str]) -> str:
        return f"{n:,} {what}{'s' if n != 1 else ''} ({', '.join(names)}{', ...' if n > len(names) else ''})"

    last_end = last + dt.timedelta(seconds=config.grain_seconds)
    return (f"{rows:,} stored usage row(s) ({float(hours):,.2f} GPU-hours) of {named(gpus, 'GPU', gpu_names)} on "
            f"{named(hosts, 'host', host_names)} from {_at(first)} to {_at(last_end)}")


def check_nothing_lost(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime, end: dt.datetime, *,
                       lacking: str, advice: str, allow_loss: bool, progress: Callable[[str], None]) -> None:
    """Refuse to replace the window if the database holds GPU-intervals of it that the incoming
    rows do not; with `allow_loss` say what is deleted and go on (the window is replaced whole).
    `lacking` opens the message ("the files hold no rows for"), `advice` ends it."""
    lost = lost_rows(con, config, start, end)
    if not lost[0]:
        return
    what = describe_loss(config, lost)
    if allow_loss:
        progress(f"warning: --allow-loss: deleting {what}, which the new data do not hold")
        return
    raise DataError(f"{lacking} {what} in the window {_at(start)} to {_at(end)}; replacing the window would "
                    f"delete them. {advice}, or pass --allow-loss to replace the window as a whole")
