"""Months as the unit of building and keeping: which months a write rebuilds, and retention.

Every month with usage rows has a row in `month_builds`: when its models were built, from
how many usage rows, and a fingerprint of what its figures depend on besides those rows (the
model definitions, the settings, the prices in effect before its end). A write (load,
ingest, build) rebuilds the months whose rows it replaced and the months whose fingerprint
no longer matches the config, and no other: month N's work neither reads nor changes month
N-2.

Retention (`[ingest] retention_days`): once a month is wholly older than that and its models
are built from exactly the usage rows it holds, `prune` deletes those rows and the
intermediate tables of their size (int_usage_priced, int_usage_gpu_day, int_job_intervals)
and marks the month archived. Its marts and ledger rows stay as they are: they are the
archive, and every report, finance CSV and named query of the month reads them alone. An
archived month is never rebuilt, and a load or ingest into it is refused.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Callable
from zoneinfo import ZoneInfo

import duckdb

from .config import Config
from .errors import DataError, YolocostError
from .resources import SQL_DIR
from .sqltext import literal

Progress = Callable[[str], None]
UTC = dt.timezone.utc
# the tables of the usage rows' size that prune empties for an archived month (raw first)
PRUNED = ("gpu_usage", "int_usage_priced", "int_usage_gpu_day", "int_job_intervals")


def window(config: Config, month: str) -> tuple[dt.datetime, dt.datetime]:
    """[first, next first) of a month in the configured time zone, as UTC instants."""
    tz = ZoneInfo(config.timezone)
    y, m = int(month[:4]), int(month[5:])
    start = dt.datetime(y, m, 1, tzinfo=tz)
    end = dt.datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


def months_between(config: Config, start: dt.datetime, end: dt.datetime) -> list[str]:
    """The local months that [start, end) overlaps, in order."""
    tz = ZoneInfo(config.timezone)
    first, last = start.astimezone(tz), (end - dt.timedelta(microseconds=1)).astimezone(tz)
    out, y, m = [], first.year, first.month
    while (y, m) <= (last.year, last.month):
        out.append(f"{y:04d}-{m:02d}")
        y, m = y + (m == 12), m % 12 + 1
    return out


@functools.lru_cache(maxsize=1)
def _models_fingerprint() -> str:
    """What the model definitions are: their SQL text (a new version rebuilds every month it can)."""
    import hashlib

    from . import ledger

    digest = hashlib.sha256(ledger.VERSION.encode())
    for path in sorted(SQL_DIR.glob("*/*.sql")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def fingerprint(config: Config, month: str) -> str:
    """What a month's figures depend on besides its usage rows: the model definitions, the
    settings, and every price and energy price that took effect before the month's end (a
    later price cannot touch it)."""
    import hashlib

    from . import db

    end = window(config, month)[1].astimezone(ZoneInfo(config.timezone)).date()
    parts = [_models_fingerprint(), literal(repr(db.settings_row(config)))]
    parts += sorted(repr(tuple(map(literal, p))) for p in db.price_rows(config) if p[1] < end)
    parts += sorted(repr(tuple(map(literal, e))) for e in db.energy_price_rows(config) if e[0] < end)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _fingerprints(config: Config, months: list[str]) -> dict[str, str]:
    return {m: fingerprint(config, m) for m in months}


@dataclass(frozen=True)
class Plan:
    """What a build rebuilds: months and the UTC windows of their rows."""

    months: list[str]
    windows: list[tuple[dt.datetime, dt.datetime]]
    archived: list[str]  # months kept as archived (not rebuilt)


def archived(con: duckdb.DuckDBPyConnection) -> dict[str, dt.datetime]:
    return dict(con.execute("SELECT month, archived_at FROM month_builds WHERE archived_at IS NOT NULL "
                            "ORDER BY month").fetchall())


def check_not_archived(con: duckdb.DuckDBPyConnection, config: Config, start: dt.datetime | None,
                       end: dt.datetime | None, what: str) -> None:
    """Refuse a write of usage rows into an archived month: its figures are final."""
    if start is None:
        return
    kept = archived(con)
    hit = [m for m in months_between(config, start, end) if m in kept]
    if hit:
        raise DataError(
            f"{what}: {hit[0]} is archived (its usage rows were pruned on {kept[hit[0]]:%Y-%m-%d}); its figures are "
            "final and are not replaced; load or ingest only months after the last archived one")


def check_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Refuse a time zone or currency other than the archived months were built in: their
    months and cents could not be cut again (call before write_settings)."""
    kept = archived(con)
    row = con.execute("SELECT timezone, currency FROM settings LIMIT 1").fetchone()
    if not kept or row is None:
        return
    for name, stored, wanted in (("timezone", row[0], config.timezone), ("currency", row[1], config.currency)):
        if stored != wanted:
            raise YolocostError(
                f"{config.source or 'the config'}: {name} is {wanted!r}, but the database holds archived months "
                f"({min(kept)} to {max(kept)}) built in {stored!r}; their figures cannot be recomputed: keep {stored!r}")


def has_rows(con: duckdb.DuckDBPyConnection, config: Config, month: str) -> bool:
    start, end = window(config, month)
    return con.execute(f"SELECT count(*) > 0 FROM gpu_usage WHERE interval_start >= {literal(start)} "
                       f"AND interval_start < {literal(end)}").fetchone()[0]


def raw_months(con: duckdb.DuckDBPyConnection, config: Config) -> list[str]:
    """Every local month the stored usage rows fall in (reads every usage row's time)."""
    return [r[0] for r in con.execute(
        f"SELECT DISTINCT strftime(timezone({literal(config.timezone)}, interval_start), '%Y-%m') AS m "
        "FROM gpu_usage ORDER BY m").fetchall()]


def plan(con: duckdb.DuckDBPyConnection, config: Config, touched: list[str] | None) -> Plan:
    """The months to rebuild: `touched` (the months a write replaced; None: every month with
    usage rows), plus every unarchived month whose fingerprint no longer matches, plus months
    stored models hold that month_builds does not know (a database built by an older version).
    Archived months are never among them."""
    kept = archived(con)
    known = dict(con.execute("SELECT month, fingerprint FROM month_builds WHERE archived_at IS NULL").fetchall())
    wanted = set(raw_months(con, config) if touched is None else touched)
    current = _fingerprints(config, sorted(known))
    wanted |= {m for m, f in known.items() if current.get(m) != f}
    if has_table(con, "mart_month_coverage"):
        wanted |= {r[0] for r in con.execute("SELECT DISTINCT month FROM mart_month_coverage").fetchall()} - set(known)
    months = sorted(wanted - set(kept))
    return Plan(months, [window(config, m) for m in months], sorted(kept))


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the database has the table `name` (in main): a new file has no models yet."""
    return bool(con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database() "
        f"AND table_schema = 'main' AND table_name = {literal(name)}").fetchone()[0])


def record(con: duckdb.DuckDBPyConnection, config: Config, months: list[str]) -> None:
    """Note the built months with their usage row counts and fingerprints; a month left with
    no usage row is forgotten."""
    if not months:
        return
    listed = ", ".join(literal(m) for m in months)
    counts = dict(con.execute(f"SELECT month, count(*) FROM int_usage_priced WHERE month IN ({listed}) "
                              "GROUP BY month").fetchall())
    prints = _fingerprints(config, months)
    con.execute(f"DELETE FROM month_builds WHERE month IN ({listed})")
    rows = [f"({literal(m)}, now(), {literal(prints[m])}, {counts[m]}, NULL)" for m in months if counts.get(m)]
    if rows:
        con.execute(f"INSERT INTO month_builds VALUES {', '.join(rows)}")


# --------------------------------------------------------------------------- retention


@dataclass(frozen=True)
class PrunedMonth:
    month: str
    rows: dict[str, int]  # table -> rows removed (or that would be)


@dataclass(frozen=True)
class PruneResult:
    cutoff: dt.datetime
    months: list[PrunedMonth]
    skipped: list[str]  # why a month older than the cutoff was kept (strict=False)
    dry_run: bool


def prune(con: duckdb.DuckDBPyConnection, config: Config, now: dt.datetime, *, dry_run: bool = False,
          strict: bool = True, progress: Progress = lambda _: None) -> PruneResult:
    """Remove the usage rows (and the tables of their size) of every month that ended more
    than retention_days before `now`, once its models are shown to be built from exactly
    those rows with the config's settings and prices; mark it archived. A month that is not
    is an error (strict) or kept and named in `skipped`."""
    cutoff = now - dt.timedelta(days=config.retention_days)
    old = [m for m in raw_months_before(con, config, cutoff) if window(config, m)[1] <= cutoff]
    built = {m: (f, n) for m, f, n in con.execute(
        "SELECT month, fingerprint, usage_rows FROM month_builds WHERE archived_at IS NULL").fetchall()}
    current = _fingerprints(config, old)
    done, skipped = [], []
    for month in old:
        start, end = window(config, month)
        rows = {t: _count(con, t, month, start, end) for t in PRUNED}
        problem = None
        if month not in built:
            problem = "its models were never built by this version: run `yolocost build --month " + month + "`"
        else:
            fingerprint, usage_rows = built[month]
            if fingerprint != current.get(month):
                problem = (f"it was built with other settings, prices or models than the config's: run `yolocost "
                           f"build --month {month}` first, or prune with the config it was built with")
            elif rows["gpu_usage"] != usage_rows or rows["int_usage_priced"] != usage_rows:
                problem = (f"it holds {rows['gpu_usage']:,} usage rows and its models were built from "
                           f"{usage_rows:,}: run `yolocost build --month {month}` first")
        if problem:
            if strict:
                raise YolocostError(f"cannot prune {month}: {problem}; nothing was removed")
            skipped.append(f"{month}: {problem}")
            continue
        done.append(PrunedMonth(month, rows))
        if dry_run:
            continue
        progress(f"pruning {month}: {rows['gpu_usage']:,} usage rows")
        con.execute(f"DELETE FROM gpu_usage WHERE interval_start >= {literal(start)} "
                    f"AND interval_start < {literal(end)}")
        for table in PRUNED[1:]:
            con.execute(f"DELETE FROM {table} WHERE month = {literal(month)}")
        con.execute(f"UPDATE month_builds SET archived_at = {literal(now)} WHERE month = {literal(month)}")
    return PruneResult(cutoff, done, skipped, dry_run)


def raw_months_before(con: duckdb.DuckDBPyConnection, config: Config, cutoff: dt.datetime) -> list[str]:
    """The local months of the usage rows older than `cutoff` (reads only those rows)."""
    return [r[0] for r in con.execute(
        f"SELECT DISTINCT strftime(timezone({literal(config.timezone)}, interval_start), '%Y-%m') AS m "
        f"FROM gpu_usage WHERE interval_start < {literal(cutoff)} ORDER BY m").fetchall()]


def _count(con: duckdb.DuckDBPyConnection, table: str, month: str, start: dt.datetime, end: dt.datetime) -> int:
    if table == "gpu_usage":
        where = f"interval_start >= {literal(start)} AND interval_start < {literal(end)}"
    elif has_table(con, table):
        where = f"month = {literal(month)}"
    else:
        return 0
    return con.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0]


def prune_database(config: Config, *, dry_run: bool = False, strict: bool = True, now: dt.datetime | None = None,
                   progress: Progress = lambda _: None) -> PruneResult:
    """`yolocost prune`: prune the configured database in one transaction (see prune)."""
    from . import db

    with db.writing(config.database, config.memory_limit) as con:
        return prune(con, config, now or dt.datetime.now(UTC), dry_run=dry_run, strict=strict, progress=progress)
