"""Load raw tables from Parquet files (the sample month, a generated month, an export).

A load is one transaction: it checks the incoming rows, replaces the window they cover
(the cluster's usage rows in that time window, job/progress/result rows of those job ids),
rebuilds the models and refuses data that would make a figure wrong (NaN, duplicates, a GPU
model with no price) or delete stored usage the files do not hold (coverage.py). On any
error the database keeps its previous state.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

from . import coverage, db, ledger, models, months
from .sqltext import literal
from .config import Config
from .errors import DataError, YolocostError

Progress = Callable[[str], None]

# raw table -> (Parquet file name, whether a load needs it)
RAW_FILES = {
    "gpu_usage": ("gpu_usage.parquet", True),
    "jobs": ("jobs.parquet", False),
    "training_progress": ("training_progress.parquet", False),
    "job_results": ("job_results.parquet", False),
}


@dataclass(frozen=True)
class LoadResult:
    usage_rows: int
    jobs: int
    window_start: dt.datetime | None
    window_end: dt.datetime | None


def load_parquet_dir(config: Config, directory: Path, progress: Progress = lambda _: None, *,
                     window: tuple[dt.datetime, dt.datetime] | None = None, allow_loss: bool = False,
                     now: dt.datetime | None = None) -> LoadResult:
    """Load the raw Parquet files found in `directory` into the configured database.

    The usage rows replace the cluster's usage in `window` (default: the span of the rows,
    which must have no hole); stored GPU-intervals of it that the files do not hold stop the
    load unless `allow_loss` (see coverage.py)."""
    directory = Path(directory)
    if not (directory / RAW_FILES["gpu_usage"][0]).is_file():
        raise DataError(f"{directory}: no {RAW_FILES['gpu_usage'][0]} found (not a raw data folder)")
    if window is not None:
        coverage.check_window(config, *window, "--window")
    with db.writing(config.database, config.memory_limit) as con:
        result = _load(con, config, directory, progress, window=window, allow_loss=allow_loss, now=now)
        rebuild(con, config, touched(config, result.window_start, result.window_end), progress)
    return result


def touched(config: Config, start: dt.datetime | None, end: dt.datetime | None) -> list[str]:
    """The months whose usage rows a write of [start, end) replaced (none: an empty load)."""
    return [] if start is None or end is None else months.months_between(config, start, end)


def rebuild_database(config: Config, month: str | None = None,
                     progress: Progress = lambda _: None) -> months.Plan:
    """Rebuild the models of the configured database from its raw tables (after a price
    change): one month, or every month that still has usage rows (archived months are kept)."""
    with db.writing(config.database, config.memory_limit) as con:
        if month is not None:
            kept = months.archived(con)
            if month in kept:
                raise DataError(f"{month} is archived (its usage rows were pruned on {kept[month]:%Y-%m-%d}); "
                                "its figures stay as they were built")
            if not months.has_rows(con, config, month):
                raise DataError(f"the database holds no usage rows for {month}: nothing to build")
        return rebuild(con, config, None if month is None else [month], progress)


def rebuild(con: duckdb.DuckDBPyConnection, config: Config, touched_months: list[str] | None,
            progress: Progress = lambda _: None) -> months.Plan:
    """Write the config's settings and prices, rebuild the months the write touched (None:
    every month with usage rows) and those whose settings or prices changed, check prices,
    round the months' cents, and note what was built."""
    months.check_settings(con, config)
    months.keep_jobs(con, list(months.archived(con)))  # before the build replaces what they read
    db.write_settings(con, config)
    plan = months.plan(con, config, touched_months)
    progress(f"building models for {_listed(plan.months)}")
    models.build(con, plan.months, plan.windows, after_pricing=lambda c: check_priced(c, config))
    ledger.build(con, config.unallocated_policy, config.currency, plan.months, progress)
    months.record(con, config, plan.months)
    return plan


def _listed(names: list[str]) -> str:
    if not names:
        return "no month"
    return names[0] if len(names) == 1 else f"{len(names)} months ({names[0]} to {names[-1]})"


def _stage(con: duckdb.DuckDBPyConnection, table: str, path: Path) -> None:
    """Read a Parquet file into a temp table shaped like the raw table; bad casts are errors."""
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall())
    try:
        present = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                                   [str(path)]).fetchall())
    except duckdb.Error as exc:
        raise DataError(f"{path}: not a readable Parquet file: {str(exc).splitlines()[0]}") from None
    missing = [c for c in _REQUIRED[table] if c not in present]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
    unknown = sorted(set(present) - set(types))
    if unknown:  # a misspelt optional column would otherwise load as all NULL, silently
        raise DataError(f"{path}: unknown column(s) {', '.join(unknown)} (a {table} file has {', '.join(types)})")
    _check_text_columns(path, types, present)
    cast = {c: f"TRY_CAST({_q(c)} AS {t})" for c, t in types.items() if c in present}
    not_null = [c for c in _REQUIRED[table] if c not in _NULLABLE.get(table, ())]
    # one scan: values a cast would lose, then required values that are null (or lost)
    checks = [(c, f"{_q(c)} IS NOT NULL AND {cast[c]} IS NULL",
               "holds {n} value(s) that are not a valid {t} (NaN, infinite or out of range)") for c in cast]
    checks += [(c, f"{cast[c]} IS NULL", "is missing (null/NaN) or not a valid {t} in {n} row(s)") for c in not_null]
    counts = db.one_row(con.execute(
        "SELECT " + ", ".join(f"count(*) FILTER (WHERE {cond})" for _, cond, _ in checks) + " FROM read_parquet(?)",
        [str(path)],
    ))
    for (c, _, what), n in zip(checks, counts):
        if n:
            raise DataError(f"{path}: {c} " + what.format(n=n, t=types[c]))
    select = ", ".join(f"{cast[c]} AS {_q(c)}" if c in cast else f"CAST(NULL AS {t}) AS {_q(c)}" for c, t in types.items())
    con.execute(f"CREATE OR REPLACE TEMP TABLE incoming_{table} AS SELECT {select} FROM read_parquet(?)", [str(path)])


def _check_text_columns(path: Path, types: dict[str, str], present: dict[str, str]) -> None:
    """A text column must hold strings, or whole numbers (ids, which read as their digits; an
    all-null column reads as INTEGER too): a BLOB would load as escaped bytes (`\\xFF\\xFEbad`),
    a float, date or list as its printed form."""
    for column, kind in present.items():
        if types.get(column) == "VARCHAR" and kind != "VARCHAR" and kind not in _WHOLE_NUMBERS:
            raise DataError(f"{path}: {column} is a {kind} column; it must hold text (strings)")


_WHOLE_NUMBERS = {f"{u}{t}" for u in ("", "U") for t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")}

_REQUIRED = {
    "gpu_usage": ("interval_start", "cluster", "hostname", "gpu_uuid", "gpu_model", "job_id",
                  "seconds_present", "util_mean", "seconds_busy", "seconds_idle"),
    "jobs": ("job_id",),
    "training_progress": ("job_id", "ts", "epoch", "metric", "value"),
    "job_results": ("job_id",),
}
_NULLABLE = {"gpu_usage": ("job_id",), "training_progress": ("value",)}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _load(con: duckdb.DuckDBPyConnection, config: Config, directory: Path, progress: Progress, *,
          window: tuple[dt.datetime, dt.datetime] | None = None, allow_loss: bool = False,
          now: dt.datetime | None = None) -> LoadResult:
    staged = []
    for table, (name, required) in RAW_FILES.items():
        path = directory / name
        if path.is_file():
            progress(f"reading {name}")
            _stage(con, table, path)
            staged.append(table)
    def where(table: str) -> str:
        return str(directory / RAW_FILES[table][0])

    _check_usage(con, config, where("gpu_usage"))  # bad rows first: a misaligned file is not a loss
    _check_side_tables(con, where, staged)
    start, end = _replaced_window(con, config, directory, window, allow_loss, now, progress)
    return replace_window(
        con, config, staged, start, end, source=f"parquet:{directory.name}",
        where=where, progress=progress, checked=True,
    )


def _replaced_window(con: duckdb.DuckDBPyConnection, config: Config, directory: Path,
                     window: tuple[dt.datetime, dt.datetime] | None, allow_loss: bool, now: dt.datetime | None,
                     progress: Progress) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The window the staged usage rows replace (`window`, else their span without holes),
    once they are known to be the cluster's, inside it, and to lose no stored GPU-interval."""
    where = str(directory / RAW_FILES["gpu_usage"][0])
    coverage.check_database(con, config)
    coverage.check_cluster(con, config, where)
    # the ignore: mypy cannot star a union of 2-tuples (a window, or no ends)
    coverage.check_times(con, config, *(window or (None, None)), where, now)  # type: ignore[call-arg]
    start, end = window or coverage.data_span(con, config, where)
    if start is not None:
        assert end is not None  # a window has both ends or neither
        coverage.check_nothing_lost(
            con, config, start, end, lacking=f"{where} holds no rows for", allow_loss=allow_loss, progress=progress,
            advice="Load files that hold them, or give the window they replace with --window START END",
        )
    return start, end


def replace_window(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    staged: list[str],
    start: dt.datetime | None,
    end: dt.datetime | None,
    *,
    source: str,
    where: Callable[[str], str],
    progress: Progress,
    progress_by_window: bool = False,
    checked: bool = False,
) -> LoadResult:
    """Check the staged `incoming_<table>` rows, then make them the window's contents.

    The config's cluster's usage rows in [start, end) are replaced (the callers have checked
    that this loses no stored GPU-interval, or were told to allow it); job and result rows by
    job id; progress rows by job id (a file holds whole jobs) or, for an ingest, the incoming
    jobs' rows by epoch end time in the window. `checked`: the caller has run the row checks already."""
    if not checked:
        _check_usage(con, config, where("gpu_usage"))
        _check_side_tables(con, where, staged)
    rows = db.one_row(con.execute("SELECT count(*) FROM incoming_gpu_usage"))[0]
    months.check_not_archived(con, config, start, end, where("gpu_usage"))
    if start is not None:
        progress(f"replacing {rows:,} usage rows from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC")
        con.execute(f"DELETE FROM gpu_usage WHERE interval_start >= {literal(start)} "
                    f"AND interval_start < {literal(end)} AND cluster = {literal(config.cluster)}")
    con.execute("INSERT INTO gpu_usage SELECT * FROM incoming_gpu_usage")
    for table in ("jobs", "training_progress", "job_results"):
        if table not in staged:
            continue
        if table == "training_progress" and progress_by_window:
            # the incoming jobs' epochs of the window: another job's progress (imported from its
            # run folder, or gone from the server) is not this ingest's to delete
            con.execute(f"DELETE FROM training_progress WHERE ts >= {literal(start)} AND ts < {literal(end)} "
                        "AND job_id IN (SELECT job_id FROM incoming_training_progress)")
        else:
            con.execute(f"DELETE FROM {table} WHERE job_id IN (SELECT job_id FROM incoming_{table})")
        con.execute(f"INSERT INTO {table} SELECT * FROM incoming_{table}")
    jobs = db.one_row(con.execute("SELECT count(*) FROM incoming_jobs"))[0] if "jobs" in staged else 0
    con.execute(f"INSERT INTO loads VALUES (now(), {literal(source)}, {literal(start)}, {literal(end)}, {rows})")
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary").fetchall()}
    for table in staged:  # an ingest stages its usage rows as a view of its scratch files
        con.execute(f"DROP {'VIEW' if f'incoming_{table}' in views else 'TABLE'} incoming_{table}")
    return LoadResult(rows, jobs, start, end)


def _first(con: duckdb.DuckDBPyConnection, sql: str) -> tuple | None:
    return con.execute(sql).fetchone()


def _check_usage(con: duckdb.DuckDBPyConnection, config: Config, path: str) -> None:
    """Refuse usage rows that would silently give a wrong number."""
    grain = config.grain_seconds
    most = grain + config.prometheus.scrape_interval_seconds  # a scrape stamped late past the end counts next
    checks = [
        ("util_mean is NaN or outside 0-100",
         "isnan(util_mean) OR util_mean < 0 OR util_mean > 100"),
        (f"seconds_present outside 0-{most} (the grain and one scrape interval)",
         f"seconds_present < 0 OR seconds_present > {most}"),
        ("seconds_busy or seconds_idle negative or above seconds_present",
         "seconds_busy < 0 OR seconds_idle < 0 OR seconds_busy > seconds_present OR seconds_idle > seconds_present "
         "OR seconds_busy + seconds_idle > seconds_present"),
        ("mig_profile not a MIG profile such as 3g.40gb",
         "mig_profile IS NOT NULL AND NOT regexp_full_match(mig_profile, '[0-9]+g\\.[0-9]+gb(\\+[a-z]+)*')"),
        ("mem_peak_mib, power_mean_w or energy_mj is NaN or negative",
         "isnan(mem_peak_mib) OR isnan(power_mean_w) OR mem_peak_mib < 0 OR power_mean_w < 0 OR energy_mj < 0"),
        (f"interval_start not on the {grain} s grain",
         f"epoch_us(interval_start) % {grain * 1_000_000} <> 0"),
    ]
    for what, condition in checks:
        row = _first(
            con,
            f"SELECT count(*) OVER (), gpu_uuid, interval_start FROM incoming_gpu_usage WHERE {condition} "
            "ORDER BY interval_start, gpu_uuid LIMIT 1",
        )
        if row:
            raise DataError(f"{path}: {what} in {row[0]} row(s), first GPU {row[1]} at {row[2]:%Y-%m-%dT%H:%MZ}")
    row = _first(
        con,
        "SELECT gpu_uuid, interval_start, coalesce(job_id, '(unallocated)'), count(*) FROM incoming_gpu_usage "
        "GROUP BY ALL HAVING count(*) > 1 ORDER BY interval_start, gpu_uuid LIMIT 1",
    )
    if row:
        raise DataError(
            f"{path}: duplicate rows for GPU {row[0]}, owner {row[2]} at {row[1]:%Y-%m-%dT%H:%MZ} "
            f"({row[3]} copies); each GPU x owner x interval must appear once"
        )
    row = _first(
        con,
        "SELECT gpu_uuid, interval_start, sum(seconds_present) FROM incoming_gpu_usage "
        f"GROUP BY ALL HAVING sum(seconds_present) > {most} ORDER BY interval_start, gpu_uuid LIMIT 1",
    )
    if row:
        raise DataError(
            f"{path}: GPU {row[0]} at {row[1]:%Y-%m-%dT%H:%MZ} has {row[2]} s of owners in a {grain} s interval "
            f"(at most {most} s: the interval and one scrape interval stamped late past its end)"
        )


# (raw table, query for the first offending row, what is wrong with it)
_SIDE_TABLE_CHECKS = (
    ("jobs", "SELECT job_id, count(*) FROM incoming_jobs GROUP BY ALL HAVING count(*) > 1",
     lambda r: f"duplicate rows for job {r[0]}"),
    ("jobs", "SELECT job_id, project FROM incoming_jobs WHERE project IN ('(unlabeled)', '(unallocated)')",
     lambda r: f"job {r[0]}: project {r[1]!r} is a reserved bucket name"),
    ("job_results", "SELECT job_id, count(*) FROM incoming_job_results GROUP BY ALL HAVING count(*) > 1",
     lambda r: f"duplicate rows for job {r[0]}"),
    ("job_results", "SELECT job_id FROM incoming_job_results WHERE isnan(map50) OR isnan(map50_95) "
     "OR map50 NOT BETWEEN 0 AND 1 OR map50_95 NOT BETWEEN 0 AND 1 OR best_epoch < 0",
     lambda r: f"job {r[0]}: map50 and map50_95 must be fractions between 0 and 1 (not NaN, not percent)"),
    ("training_progress", "SELECT job_id, epoch, metric, count(*) FROM incoming_training_progress "
     "GROUP BY ALL HAVING count(*) > 1",
     lambda r: f"duplicate rows for job {r[0]} epoch {r[1]} metric {r[2]}"),
    ("training_progress", "SELECT job_id, epoch FROM incoming_training_progress WHERE isnan(value)",
     lambda r: f"NaN value for job {r[0]} epoch {r[1]}"),
)


def _check_side_tables(con: duckdb.DuckDBPyConnection, where: Callable[[str], str], staged: list[str]) -> None:
    """Refuse duplicate, NaN or out-of-range rows in the job, result and progress files."""
    for table, sql, what in _SIDE_TABLE_CHECKS:
        if table in staged:
            row = _first(con, sql + " LIMIT 1")
            if row:
                raise DataError(f"{where(table)}: {what(row)}")


def check_priced(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Every GPU-second must have a price: an unpriced model is an error, never a silent 0."""
    row = _first(
        con,
        "SELECT price_key, min(interval_start) FROM int_usage_priced WHERE price_id IS NULL "
        "GROUP BY price_key ORDER BY 2 LIMIT 1",
    )
    if row:
        where = config.source or "the config"
        raise YolocostError(
            f"{where}: prices: no price for GPU model {row[0]!r} in effect at {row[1]:%Y-%m-%dT%H:%MZ}; "
            "add a [[prices]] entry for it or set [pricing] default_price_per_gpu_hour"
        )
