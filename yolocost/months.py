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
archive, and every report, finance CSV and named query of the month reads them alone; what
it shows of its jobs' whole-job figures (mart_job_by_month, from tables of all months) is
copied into archived_job_by_month, so that later labels, results or usage of those jobs
change the open months only. An archived month is never rebuilt, and a load or ingest into
it is refused. A month the database holds only in part is not archived unless asked: its
missing days could never be loaded afterwards.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable
from zoneinfo import ZoneInfo

import duckdb

from .config import Config
from .db import one_row
from .errors import DataError, YolocostError
from .monthstr import Month
from .resources import SQL_DIR
from .sqltext import literal

Progress = Callable[[str], None]
UTC = dt.timezone.utc
# the tables of the usage rows' size that prune empties for an archived month (raw first)
PRUNED = ("gpu_usage", "int_usage_priced", "int_usage_gpu_day", "int_job_intervals")


def window(config: Config, month: str) -> tuple[dt.datetime, dt.datetime]:
    """[first, next first) of a month in the configured time zone, as UTC instants."""
    return local_window(month, ZoneInfo(config.timezone))


def local_window(month: str, tz: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    """[first, next first) of a month in time zone `tz`, as UTC instants."""
    first = Month.parse(month, "month")
    start, end = (dt.datetime(m.year, m.month, 1, tzinfo=tz) for m in (first, first.next()))
    return start.astimezone(UTC), end.astimezone(UTC)


def months_between(config: Config, start: dt.datetime, end: dt.datetime) -> list[str]:
    """The local months that [start, end) overlaps, in order."""
    tz = ZoneInfo(config.timezone)
    first, last = start.astimezone(tz), (end - dt.timedelta(microseconds=1)).astimezone(tz)
    out, month = [], Month.containing(first)
    while month <= Month.containing(last):
        out.append(str(month))
        month = month.next()
    return out


@functools.lru_cache(maxsize=1)
def _models_fingerprint() -> str:
    """What the model definitions are: their SQL text and that of the macros they call
    (sql/macros.sql); a new version rebuilds every month it can."""
    import hashlib

    from . import ledger

    digest = hashlib.sha256(ledger.VERSION.encode())
    for path in [*sorted(SQL_DIR.glob("*/*.sql")), SQL_DIR / "macros.sql"]:
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
    assert end is not None  # a window has both ends or neither
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
    return one_row(con.execute(f"SELECT count(*) > 0 FROM gpu_usage WHERE interval_start >= {literal(start)} "
                               f"AND interval_start < {literal(end)}"))[0]


def raw_months(con: duckdb.DuckDBPyConnection, config: Config) -> list[str]:
    """Every local month the stored usage rows fall in (reads every usage row's time)."""
    return _local_months(con, config, "true")


def _local_months(con: duckdb.DuckDBPyConnection, config: Config, where: str) -> list[str]:
    """The local months of the usage rows `where` holds: the time zone converted once per
    distinct interval, not per row (about 2.5 CPU-s per 10 million rows on DuckDB 1.5)."""
    return [r[0] for r in con.execute(
        f"SELECT DISTINCT strftime(timezone({literal(config.timezone)}, interval_start), '%Y-%m') AS m "
        f"FROM (SELECT DISTINCT interval_start FROM gpu_usage WHERE {where}) ORDER BY m").fetchall()]


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
    return bool(one_row(con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database() "
        f"AND table_schema = 'main' AND table_name = {literal(name)}"))[0])


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
    rows = [f"({literal(m)}, now(), {literal(prints[m])}, {counts[m]}, NULL, {literal(built_with(config, m))})"
            for m in months if counts.get(m)]
    if rows:
        con.execute("INSERT INTO month_builds (month, built_at, fingerprint, usage_rows, archived_at, built_with) "
                    f"VALUES {', '.join(rows)}")


# --------------------------------------------------------------------------- reading a month as built

# each settings column as the config key it comes from, and what its stored value is divided by
_SETTING_KEYS = {
    "cluster": ("cluster.name", 1), "timezone": ("cluster.timezone", 1), "currency": ("cluster.currency", 1),
    "grain_seconds": ("ingest.grain_seconds", 1), "busy_util_percent": ("thresholds.busy_util_percent", 1),
    "idle_util_percent": ("thresholds.idle_util_percent", 1),
    "breaker_util_percent": ("thresholds.breaker_util_percent", 1),
    "breaker_loss_delta": ("thresholds.breaker_loss_delta", 1),
    "breaker_min_seconds": ("thresholds.breaker_min_hours", 3600), "tag_pattern": ("tag_policy.pattern", 1),
    "unallocated_policy": ("allocation.unallocated", 1), "idle_reclaim_seconds": ("policies.idle_reclaim_minutes", 60),
    "idle_reclaim_util_percent": ("policies.idle_reclaim_util_percent", 1),
    "idle_reclaim_protect_seconds": ("policies.idle_reclaim_protect_minutes", 60),
    "idle_reclaim_grace_seconds": ("policies.idle_reclaim_startup_grace_minutes", 60),
}
MODELS = "model definitions"


def _doc(settings: dict, prices: list[tuple], energy: list[tuple], models: str | None) -> dict:
    return {"models": models, "settings": settings,
            "prices": sorted([m, str(d), _number(p)] for m, d, p in prices),
            "energy_prices": sorted([str(d), _number(p)] for d, p in energy)}


def built_with(config: Config, month: str) -> str:
    """What the month's fingerprint covers, readable (JSON, kept in month_builds.built_with): the
    settings, the prices and energy prices in effect before the month's end, and the version of
    the model definitions. A read names from it what changed since the build, and shows an
    archived month with the settings it was built with."""
    from . import db

    end = window(config, month)[1].astimezone(ZoneInfo(config.timezone)).date()
    doc = _doc(dict(zip(db.SETTINGS_COLUMNS, db.settings_row(config))),
               [p for p in db.price_rows(config) if p[1] < end],
               [e for e in db.energy_price_rows(config) if e[0] < end], _models_fingerprint())
    return json.dumps(doc, sort_keys=True)


def _stored_doc(con: duckdb.DuckDBPyConnection, month: str) -> dict | None:
    """What the stored settings and price tables say, for a month recorded without built_with
    (an older yolocost): every build writes them and rebuilds each unarchived month that no
    longer matches, so they are what such a month was built with (the models' version unknown)."""
    cur = con.execute("SELECT * FROM settings LIMIT 1")
    row = cur.fetchone()
    if row is None:
        return None
    settings = dict(zip([d[0] for d in cur.description], row))
    end = Month.parse(month).next().first_day  # local dates: the month's end in the stored time zone
    prices = con.execute("SELECT gpu_model, effective_from, price_per_gpu_hour FROM prices").fetchall()
    energy = con.execute("SELECT effective_from, price_per_kwh FROM energy_prices").fetchall()
    return _doc(settings, [p for p in prices if p[1] < end], [e for e in energy if e[0] < end], None)


def _number(value) -> str:
    """A number as plain text, the same whatever its type: 70, 70.0 and 70.000000 read `70`."""
    return format(Decimal(str(value)).normalize(), "f")


def _setting_texts(settings: dict) -> dict[str, str]:
    """Settings columns as config keys with readable values (hours and minutes as configured)."""
    out = {}
    for column, value in settings.items():
        if column in _SETTING_KEYS and value is not None:
            key, scale = _SETTING_KEYS[column]
            out[key] = repr(value) if isinstance(value, str) else _number(Decimal(str(value)) / scale)
    return out


def _parts(doc: dict) -> dict[str, str]:
    """The doc as named parts with readable values, to compare a build with the config."""
    out = _setting_texts(doc["settings"])
    for model, start, price in doc["prices"]:
        since = "" if start == "1970-01-01" else f" from {start}"  # an entry without effective_from
        out["pricing.default_price_per_gpu_hour" if model == "*" else f"price of {model}{since}"] = price
    for start, price in doc["energy_prices"]:
        out[f"energy price from {start}"] = price
    if doc["models"] is not None:
        out[MODELS] = doc["models"]
    return out


def _changes(built: dict, config: Config, month: str) -> list[tuple[str, str]]:
    """(part, what changed) for each part the config gives otherwise than the build had it."""
    then, now = _parts(built), _parts(json.loads(built_with(config, month)))
    if built["models"] is None:
        now.pop(MODELS)
    out = []
    for key in sorted(then.keys() | now.keys(), key=lambda k: (k == MODELS, k)):
        if then.get(key) == now.get(key):
            continue
        if key == MODELS:
            out.append((key, "other model definitions (another yolocost version)"))
        elif key not in then and key in now:  # a setting yolocost has gained since the build
            out.append((key, f"no {key}, a setting added since (now {now[key]})"))
        else:
            out.append((key, f"{key} {then.get(key, 'unset')} (the config: {now.get(key, 'unset')})"))
    return out


def _upgrade_only(changes: list[tuple[str, str]]) -> bool:
    """Whether the month differs only by what a newer yolocost brings (model definitions,
    settings it has added): no config it was built with would read it, only a rebuild."""
    return bool(changes) and all(key == MODELS or text.startswith("no ") for key, text in changes)


def _build_row(con: duckdb.DuckDBPyConnection, month: str) -> tuple | None:
    """(fingerprint, archived_at, built_with doc or None) of the month's build; None: not recorded."""
    if not has_table(con, "month_builds"):
        return None
    kept = "built_with" if has_column(con, "month_builds", "built_with") else "NULL"
    row = con.execute(f"SELECT fingerprint, archived_at, {kept} FROM month_builds WHERE month = {literal(month)}"
                      ).fetchone()
    return None if row is None else (row[0], row[1], json.loads(row[2]) if row[2] else None)


def has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether `table` has `column` (a database built by an older yolocost may lack it)."""
    return bool(one_row(con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_catalog = current_database() AND "
        f"table_schema = 'main' AND table_name = {literal(table)} AND column_name = {literal(column)}"))[0])


def stale(con: duckdb.DuckDBPyConnection, config: Config, month: str) -> list[tuple[str, str]] | None:
    """None when the month's stored figures are those the config gives (its fingerprint
    matches, it is archived, or no build of it is recorded); else what changed since it was
    built, as (part, description), empty when the parts cannot tell."""
    row = _build_row(con, month)
    if row is None or row[1] is not None or row[0] == fingerprint(config, month):
        return None
    built = row[2] or _stored_doc(con, month)
    return [] if built is None else _changes(built, config, month)


def _listed_changes(changes: list[tuple[str, str]]) -> str:
    if not changes:
        return "other settings, prices or model definitions than the config's"
    shown = "; ".join(text for _, text in changes[:3])
    return shown + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")


@dataclass(frozen=True)
class AsBuilt:
    """How a read shows a month: the config with the settings its figures were built with."""

    config: Config
    note: str | None = None  # an archived month shown with settings other than the config's


def as_built(con: duckdb.DuckDBPyConnection, config: Config, month: str) -> AsBuilt:
    """Check, before a read shows `month`, that its stored figures are what the config gives:
    a month built with other prices, settings or models is refused (rebuilding is a write, not
    a read's business), naming what changed. An archived month is final, not stale: it is shown
    with the settings and currency it was built in, whatever the config says now."""
    row = _build_row(con, month)
    if row is not None and row[1] is not None:
        return _archived(con, config, month, row[1], row[2])
    changes = stale(con, config, month)
    if changes is None:
        return AsBuilt(config)
    if _upgrade_only(changes):
        raise DataError(f"{month} was built by an older yolocost ({_listed_changes(changes)}): its stored figures "
                        f"are stale; run `yolocost build --month {month}` to rebuild it")
    raise DataError(f"{month} was built with {_listed_changes(changes)}: its stored figures are stale; run "
                    f"`yolocost build --month {month}` to rebuild it, or use the config it was built with")


def check_history(con: duckdb.DuckDBPyConnection, config: Config, what: str) -> None:
    """Refuse a read of every month's jobs (`what`) while an unarchived month was built with other
    settings or models than the config's; prices do not count (the reader prices with the config's)."""
    if not has_table(con, "month_builds"):
        return
    for (month,) in con.execute("SELECT month FROM month_builds WHERE archived_at IS NULL ORDER BY month").fetchall():
        changes = stale(con, config, month)
        if changes is None:
            continue
        kept = [c for c in changes if not c[0].startswith(("price of", "energy price", "pricing."))]
        if kept or not changes:
            raise DataError(f"{what}: {month} was built with {_listed_changes(kept)}: its stored figures are "
                            f"stale; run `yolocost build` to rebuild it, or use the config it was built with")


def _archived(con: duckdb.DuckDBPyConnection, config: Config, month: str, at: dt.datetime,
              doc: dict | None) -> AsBuilt:
    """The config with an archived month's own settings: all of them where its build recorded
    them, else the time zone and currency (which no build may change while it is archived)."""
    from . import db

    exact = doc is not None
    doc = doc or _stored_doc(con, month)
    if doc is None:
        return AsBuilt(config)
    s = {k: v for k, v in doc["settings"].items() if v is not None}
    if not exact:
        s = {k: v for k, v in s.items() if k in ("timezone", "currency")}
    built = _with_settings(config, s)
    now = _setting_texts(dict(zip(db.SETTINGS_COLUMNS, db.settings_row(config))))
    differ = [f"{k} {v}" for k, v in _setting_texts(s).items() if now.get(k) != v]
    if not differ:
        return AsBuilt(built)
    return AsBuilt(built, f"{month} is archived (its usage rows were pruned on {at:%Y-%m-%d}): shown as built, with "
                          f"{', '.join(differ)} (the config says otherwise); its figures are final")


def _with_settings(config: Config, s: dict) -> Config:
    """`config` with the settings columns in `s` (a month's build) in place of its own."""
    import dataclasses

    t, p = config.thresholds, config.policies
    thresholds = dataclasses.replace(
        t, busy_util_percent=s.get("busy_util_percent", t.busy_util_percent),
        idle_util_percent=s.get("idle_util_percent", t.idle_util_percent),
        breaker_util_percent=s.get("breaker_util_percent", t.breaker_util_percent),
        breaker_loss_delta=s.get("breaker_loss_delta", t.breaker_loss_delta),
        breaker_min_hours=s["breaker_min_seconds"] / 3600 if "breaker_min_seconds" in s else t.breaker_min_hours)
    policies = dataclasses.replace(
        p, idle_reclaim_minutes=s["idle_reclaim_seconds"] / 60 if "idle_reclaim_seconds" in s else p.idle_reclaim_minutes,
        idle_reclaim_util_percent=s.get("idle_reclaim_util_percent", p.idle_reclaim_util_percent),
        idle_reclaim_protect_minutes=(s["idle_reclaim_protect_seconds"] / 60 if "idle_reclaim_protect_seconds" in s
                                      else p.idle_reclaim_protect_minutes),
        idle_reclaim_startup_grace_minutes=(s["idle_reclaim_grace_seconds"] / 60 if "idle_reclaim_grace_seconds" in s
                                            else p.idle_reclaim_startup_grace_minutes))
    return dataclasses.replace(
        config, cluster=s.get("cluster", config.cluster), timezone=s.get("timezone", config.timezone),
        currency=s.get("currency", config.currency), grain_seconds=s.get("grain_seconds", config.grain_seconds),
        tag_pattern=s.get("tag_pattern", config.tag_pattern),
        unallocated_policy=s.get("unallocated_policy", config.unallocated_policy),
        thresholds=thresholds, policies=policies)


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
    partial: list[str] = field(default_factory=list)  # partial months kept, and why


def partial_months(con: duckdb.DuckDBPyConnection, wanted: list[str]) -> dict[str, str]:
    """Why each of `wanted` that the database holds only in part (mart_month_coverage.partial)
    is not archived: its missing intervals could never be loaded afterwards."""
    if not wanted or not has_table(con, "mart_month_coverage"):
        return {}
    listed = ", ".join(literal(m) for m in wanted)
    return {m: (f"{m}: partial, it holds {n:,} of its {total:,} grain intervals ({100 * n / total:.1f} %); "
                "archived, the rest could never be loaded: load the rest first, or prune with --include-partial")
            for m, n, total in con.execute(
                f"SELECT month, intervals, month_intervals FROM mart_month_coverage WHERE month IN ({listed}) "
                "AND partial ORDER BY month").fetchall()}


def prune(con: duckdb.DuckDBPyConnection, config: Config, now: dt.datetime, *, dry_run: bool = False,
          strict: bool = True, include_partial: bool = False, progress: Progress = lambda _: None) -> PruneResult:
    """Remove the usage rows (and the tables of their size) of every month that ended more
    than retention_days before `now`, once its models are shown to be built from exactly
    those rows with the config's settings and prices; mark it archived. A month that is not
    is an error (strict) or kept and named in `skipped`. A month held only in part is kept and
    named in `partial` unless `include_partial`: an archived month can never be completed."""
    cutoff = now - dt.timedelta(days=config.retention_days)
    old = [m for m in raw_months_before(con, config, cutoff) if window(config, m)[1] <= cutoff]
    built = {m: (f, n) for m, f, n in con.execute(
        "SELECT month, fingerprint, usage_rows FROM month_builds WHERE archived_at IS NULL").fetchall()}
    current = _fingerprints(config, old)
    partial = {} if include_partial else partial_months(con, old)
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
        if month in partial:
            continue
        done.append(PrunedMonth(month, rows))
        if dry_run:
            continue
        progress(f"pruning {month}: {rows['gpu_usage']:,} usage rows")
        con.execute(f"DELETE FROM gpu_usage WHERE interval_start >= {literal(start)} "
                    f"AND interval_start < {literal(end)}")
        for table in PRUNED[1:]:
            con.execute(f"DELETE FROM {table} WHERE month = {literal(month)}")
        keep_jobs(con, [month])
        con.execute(f"UPDATE month_builds SET archived_at = {literal(now)} WHERE month = {literal(month)}")
    return PruneResult(cutoff, done, skipped, dry_run, [partial[m] for m in old if m in partial])


# what archived months show of their jobs: mart_job_by_month's rows as they were archived
ARCHIVED_JOBS = "archived_job_by_month"


def keep_jobs(con: duckdb.DuckDBPyConnection, wanted: list[str]) -> None:
    """Keep, once, what the months `wanted` show of their jobs (the rows mart_job_by_month gives
    from the stored tables now): the whole-job figures (start and end, mAP, cost per mAP point,
    the leaderboard) come from tables of all months that later loads replace, so an archived
    month's documents read this copy. A month is marked kept by a row with no job_id."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {ARCHIVED_JOBS} (month VARCHAR, job_id VARCHAR)")
    done = {r[0] for r in con.execute(f"SELECT DISTINCT month FROM {ARCHIVED_JOBS}").fetchall()}
    todo = [m for m in wanted if m not in done]
    if not todo or not all(has_table(con, t) for t in ("mart_job", "mart_job_month", "settings")):
        return
    from . import models

    sql = next(m for m in models.discover() if m.name == "mart_job_by_month").sql
    have = {r[0] for r in con.execute(f"DESCRIBE {ARCHIVED_JOBS}").fetchall()}
    for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM (\n{sql}\n)").fetchall():
        if name not in have:  # a column a newer mart_job has
            con.execute(f'ALTER TABLE {ARCHIVED_JOBS} ADD COLUMN "{name}" {kind}')
    listed = ", ".join(literal(m) for m in todo)
    con.execute(f"INSERT INTO {ARCHIVED_JOBS} BY NAME SELECT * FROM (\n{sql}\n) WHERE month IN ({listed})")
    con.execute(f"INSERT INTO {ARCHIVED_JOBS} (month) VALUES " + ", ".join(f"({literal(m)})" for m in todo))


def raw_months_before(con: duckdb.DuckDBPyConnection, config: Config, cutoff: dt.datetime) -> list[str]:
    """The local months of the usage rows older than `cutoff` (reads only those rows)."""
    return _local_months(con, config, f"interval_start < {literal(cutoff)}")


def _count(con: duckdb.DuckDBPyConnection, table: str, month: str, start: dt.datetime, end: dt.datetime) -> int:
    if table == "gpu_usage":
        where = f"interval_start >= {literal(start)} AND interval_start < {literal(end)}"
    elif has_table(con, table):
        where = f"month = {literal(month)}"
    else:
        return 0
    return one_row(con.execute(f"SELECT count(*) FROM {table} WHERE {where}"))[0]


def prune_database(config: Config, *, dry_run: bool = False, strict: bool = True, now: dt.datetime | None = None,
                   include_partial: bool = False, progress: Progress = lambda _: None) -> PruneResult:
    """`yolocost prune`: prune the configured database in one transaction (see prune)."""
    from . import db

    with db.writing(config.database, config.memory_limit) as con:
        return prune(con, config, now or dt.datetime.now(UTC), dry_run=dry_run, strict=strict,
                     include_partial=include_partial, progress=progress)
