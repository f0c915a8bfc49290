"""Open the DuckDB file, create the raw tables and write the settings the SQL models read."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import re
from pathlib import Path
from typing import Iterator

import duckdb

from . import gpumemory, interrupts
from .config import Config
from .errors import DataError, YolocostError
from .resources import SQL_DIR
from .sqltext import literal, values


def connect(path: Path | str, *, read_only: bool = False, sandboxed: bool = False,
            memory_limit: str | None = None, settings: dict | None = None,
            timezone: str = "UTC") -> duckdb.DuckDBPyConnection:
    """Open the database; a missing file in read-only mode or a held lock is a clean error.

    `sandboxed` also denies access to any other file (COPY TO, read_csv, ATTACH, ...), so
    an ad-hoc query can read the database and nothing else, and change nothing; and it locks
    DuckDB's settings once `timezone` is set, so that no SET, RESET or PRAGMA lifts the
    memory_limit (or anything else) the query was given."""
    path = Path(path)
    if read_only and not path.is_file():
        raise YolocostError(f"{path}: database not found (run `yolocost demo` or `yolocost load` first)")
    if not read_only:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise YolocostError(f"{path}: cannot create the database's folder: {exc.strerror}") from None
    _check_is_duckdb(path)
    try:
        options: dict = {"enable_external_access": False} if sandboxed else {}
        options.update(NO_EXTENSION_DOWNLOADS)
        if not read_only:
            options["storage_compatibility_version"] = STORAGE_VERSION
        if memory_limit:
            options["memory_limit"] = memory_limit
        options.update(settings or {})
        con = duckdb.connect(str(path), read_only=read_only, config=options)
    except duckdb.IOException as exc:
        first = str(exc).splitlines()[0]
        if "could not set lock" in first.lower() or "conflicting lock" in first.lower():
            raise YolocostError(f"{path}: database is in use by another yolocost process ({first})") from None
        raise storage_error(path, exc) or YolocostError(f"{path}: cannot open database: {first}") from None
    except duckdb.Error as exc:
        problem = storage_error(path, exc)
        if problem is None:
            raise
        raise problem from None
    con.execute(f"SET TimeZone = {literal(timezone)}")
    if sandboxed:
        con.execute("SET lock_configuration = true")
    interrupts.cancel_on_interrupt(con)
    return con


# DuckDB installs and loads an extension it knows of when a file or function needs one (a
# SQLite file as the database: it downloads sqlite_scanner from the internet). yolocost needs
# only the ones built into the package (parquet, icu, json).
NO_EXTENSION_DOWNLOADS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def one_row(result: duckdb.DuckDBPyConnection) -> tuple:
    """The row of a query that always returns one (an aggregate's, count(*)): fetchone() is
    typed as a row or None."""
    row = result.fetchone()
    assert row is not None
    return row


def _check_is_duckdb(path: Path) -> None:
    """Refuse a file that exists but is no DuckDB database (a SQLite file, a CSV, ...), naming it."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise YolocostError(f"{path}: cannot read the database: {exc.strerror}") from None
    if not head or head[8:12] == DUCKDB_MAGIC:  # an empty file DuckDB makes into a new database
        return
    kind = " (it is a SQLite database)" if head.startswith(b"SQLite format 3\0") else ""
    raise YolocostError(f"{path}: not a DuckDB database{kind}; check [database] path or --db")


def storage_error(path: Path | str, exc: BaseException, outcome: str = "") -> YolocostError | None:
    """The one-line error for a DuckDB failure caused by the database file or the disk it is
    on (full, read-only, damaged), naming the file and ending with `outcome` (what became of
    the change); None for anything else (a query's own error, a bug), which must not be
    disguised as bad input."""
    if not isinstance(exc, duckdb.Error):
        return None
    memory = out_of_memory(exc)
    if memory:  # a commit that could not allocate says "Failed to commit", but the file is fine
        return YolocostError(memory + outcome)
    # DuckDB 1.5 opens its messages with the error's kind ("IO Error: "): the line says it otherwise
    first = re.sub(r"^[A-Za-z ]+ Error: ", "", " ".join((str(exc).splitlines() or [""])[0].split()))
    text = str(exc)
    name = Path(path).name
    if "No space left on device" in text or "Disk full" in text or "disk is full" in text:
        return YolocostError(f"{path}: disk full (no space left on device){outcome}")
    about_file = name in text  # DuckDB names the file (the database, its .wal or .tmp) it failed on
    if about_file and ("Read-only file system" in text or "Permission denied" in text):
        reason = "read-only file system" if "Read-only file system" in text else "permission denied"
        if ".wal" in text:
            return YolocostError(f"{path}: cannot write the database: its folder {Path(path).parent} takes no new "
                                 f"file ({reason}; DuckDB writes {name}.wal beside the database){outcome}")
        return YolocostError(f"{path}: cannot write the database ({reason}){outcome}")
    if ("Corrupt database file" in text or "does not match stored checksum" in text
            or isinstance(exc, duckdb.SerializationException)):
        return YolocostError(f"{path}: the database file is damaged ({first}); restore it from a backup or "
                             f"rebuild it from the raw data{outcome}")
    if isinstance(exc, duckdb.FatalException) or "database has been invalidated" in text:
        return YolocostError(f"{path}: DuckDB stopped on a fatal error while using the database ({first}){outcome}")
    if isinstance(exc, (duckdb.IOException, duckdb.TransactionException)) and (about_file or "Failed to commit" in text):
        return YolocostError(f"{path}: cannot read or write the database ({first}){outcome}")
    return None


def out_of_memory(exc: BaseException) -> str | None:
    """The one line for DuckDB running out of memory, raised as such or inside a failed commit
    ("Failed to commit: Failed to allocate ..."); None for any other error."""
    text = str(exc)
    if not isinstance(exc, duckdb.OutOfMemoryException) and not (isinstance(exc, duckdb.Error)
                                                                 and _NO_MEMORY.search(text)):
        return None
    first = (text.splitlines() or [""])[0]
    return f"DuckDB ran out of memory ({first}); raise [database] memory_limit"


_NO_MEMORY = re.compile(r"Out of Memory Error|Failed to allocate|bad allocation")


@contextlib.contextmanager
def storage_errors(path: Path | str, outcome: str = "") -> Iterator[None]:
    """Turn DuckDB failures of the file or its disk inside the block into one line naming
    the database; every other error passes unchanged."""
    try:
        yield
    except duckdb.Error as exc:
        problem = storage_error(path, exc, outcome)
        if problem is None:
            raise
        raise problem from None


def _check_writable_folder(path: Path | str) -> None:
    """DuckDB writes its log `<file>.wal` beside the database on every commit: a folder that
    takes no new file fails the write only at the end, after all the work, so refuse first."""
    folder = Path(path).resolve().parent
    if not os.access(folder, os.W_OK | os.X_OK):
        reason = "read-only file system" if _read_only_mount(folder) else "no write permission"
        raise YolocostError(f"{path}: cannot write the database: its folder {folder} is not writable ({reason}; "
                            f"DuckDB writes {Path(path).name}.wal beside the database)")


def _read_only_mount(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def require_database(path: Path | str) -> None:
    """A command that works on stored data refuses a database file that does not exist
    (a typo in --db would otherwise create an empty one and report nothing)."""
    path = Path(path)
    if not path.is_file():
        raise YolocostError(f"{path}: database not found (check --db and [database] path, or create it with "
                            "`yolocost load`, `yolocost ingest` or `yolocost demo`)")


# A database file this creates uses the storage format DuckDB 1.5 writes by default, so the
# pinned 1.5 line can open a file whichever DuckDB created it (DuckDB 2.0 writes its own 2.0
# format by default, which 1.5 cannot read). The pin: DuckDB 2.0.0 ends a load now and then
# with "Corrupted bitpacking segment", "Corrupted RLE segment", an INT64 overflow or a
# segfault while the models are rebuilt in the transaction that has just replaced a large
# window, in files of every format (benchmarks/duckdb_stress.py, BENCHMARKS.md); DuckDB 1.5.6
# failed in none of 100 such loads. A file keeps the format it was created with.
STORAGE_VERSION = "v0.10.2"


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All or nothing: on any error the database keeps its previous state."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        # after a fatal error DuckDB refuses the ROLLBACK too: the first error is the one to
        # show, and an open transaction is discarded when the connection closes anyway
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# Writes use DuckDB's threads. DuckDB 2.0.0 crashed now and then (a segfault, or "Corrupted
# ALP/bitpacking segment") while the models were rebuilt in the transaction that had just
# replaced a large window of rows, on any number of threads; yolocost pins the 1.5 line,
# which passed every stress run on one thread and on two (BENCHMARKS.md, "DuckDB
# stability"). Each row group is written out as it fills, which keeps the models a
# transaction builds off the heap (DuckDB otherwise keeps up to 5 in memory).
WRITE_SETTINGS = {"write_buffer_row_group_count": 1}


@contextlib.contextmanager
def writing(path: Path | str, memory_limit: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection with the raw tables in place, inside one transaction."""
    con = connect(path, memory_limit=memory_limit, settings=WRITE_SETTINGS)
    try:
        with storage_errors(path, "; nothing was changed"):
            _check_writable_folder(path)
            create_schema(con)
            with transaction(con):  # a migration is undone with the write it was made for
                migrate_schema(con, path)
                create_definitions(con)
                yield con
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # the first error is the one to show
            con.close()
        raise
    # closing folds the log into the file; should that fail, the change is in the log already
    # and the next connection folds it in
    with storage_errors(path, f" while closing it; the change is committed in {Path(path).name}.wal"):
        con.close()


@contextlib.contextmanager
def models_needed(reader: str) -> Iterator[None]:
    """A read of a model or ledger table the database lacks (built by an older yolocost, or
    its models never built) as one line saying what to run, instead of DuckDB's catalog error."""
    try:
        yield
    except duckdb.CatalogException as exc:
        first = str(exc).splitlines()[0]
        raise YolocostError(f"the database lacks a model {reader} reads ({first}); "
                            "rebuild the models with `yolocost build`") from None


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the raw tables if they do not exist yet (schema.sql documents each one)."""
    con.execute((SQL_DIR / "schema.sql").read_text(encoding="utf-8"))


def create_definitions(con: duckdb.DuckDBPyConnection) -> None:
    """Create (or bring up to this version) what the named queries and the reports share in
    the database itself, so that the duckdb command line finds it in the file too: the
    macros of sql/macros.sql and the view gpu_memory, the rows of yolocost.gpumemory."""
    con.execute((SQL_DIR / "macros.sql").read_text(encoding="utf-8"))
    con.execute("CREATE OR REPLACE VIEW gpu_memory AS SELECT * FROM "
                f"(VALUES {values(gpumemory.view_rows())}) AS t(gpu_model, model_key, memory_gib)")


# tables that hold nothing but a copy of the config, rewritten on every build
CONFIG_TABLES = ("settings", "prices", "energy_prices")


@functools.lru_cache(maxsize=1)
def _expected_columns() -> dict[str, list[tuple[str, bool, str]]]:
    """Each raw table's (column, nullable, type) in order, as schema.sql creates them."""
    con = duckdb.connect(config=dict(NO_EXTENSION_DOWNLOADS))
    try:
        create_schema(con)
        return _columns(con)
    finally:
        con.close()


def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, bool, str]]]:
    out: dict[str, list[tuple[str, bool, str]]] = {}
    for table, column, nullable, kind in con.execute(
        "SELECT table_name, column_name, is_nullable = 'YES', data_type FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).fetchall():
        out.setdefault(table, []).append((column, nullable, kind))
    return out


def migrate_schema(con: duckdb.DuckDBPyConnection, path: Path | str) -> None:
    """Bring the tables of a file written by an older yolocost up to the current schema.

    The config tables are made anew (the build rewrites them anyway; settings keeps the
    values of the columns it had, which the checks before a build read). A raw table that lacks
    trailing columns which may be NULL gets them added (old rows hold no value there); a
    raw table that lacks any other column cannot be completed in place: refused, naming it."""
    found = _columns(con)
    for table, wanted in _expected_columns().items():
        have = [c for c, _, _ in found.get(table, [])]
        names = [c for c, _, _ in wanted]
        if have == names or not have:
            continue
        if table in CONFIG_TABLES:
            # settings keeps the values of the columns both versions have: the checks before
            # the build (grain, time zone and currency of archived months) compare against them
            common = ", ".join(f'"{c}"' for c in have if c in names) if table == "settings" else ""
            if common:
                con.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
                create_schema(con)
                con.execute(f"INSERT INTO {table} ({common}) SELECT {common} FROM {table}_old")
                con.execute(f"DROP TABLE {table}_old")
            else:
                con.execute(f"DROP TABLE {table}")
                create_schema(con)
            continue
        missing = [(c, nullable, kind) for c, nullable, kind in wanted if c not in have]
        if not missing:
            continue
        if names[:len(have)] != have or not all(nullable for _, nullable, _ in missing):
            raise YolocostError(
                f"{path}: the database was written by an older yolocost: table {table} lacks column(s) "
                f"{', '.join(c for c, _, _ in missing)}, which cannot be added to its rows; load the raw data "
                "into a new database (--db NEW.duckdb load/ingest)"
            )
        for column, _, kind in missing:
            con.execute(f'ALTER TABLE {table} ADD COLUMN "{column}" {kind}')


def settings_row(config: Config) -> tuple:
    """The settings table's one row for the config (SETTINGS_COLUMNS order)."""
    t, p = config.thresholds, config.policies
    return (config.cluster, config.timezone, config.currency, config.grain_seconds,
            t.busy_util_percent, t.idle_util_percent, t.breaker_util_percent,
            t.breaker_loss_delta, t.breaker_min_hours * 3600, config.tag_pattern,
            config.unallocated_policy, p.idle_reclaim_minutes * 60, p.idle_reclaim_util_percent,
            p.idle_reclaim_protect_minutes * 60, p.idle_reclaim_startup_grace_minutes * 60)


SETTINGS_COLUMNS = ("cluster", "timezone", "currency", "grain_seconds", "busy_util_percent", "idle_util_percent",
                    "breaker_util_percent", "breaker_loss_delta", "breaker_min_seconds", "tag_pattern",
                    "unallocated_policy", "idle_reclaim_seconds", "idle_reclaim_util_percent",
                    "idle_reclaim_protect_seconds", "idle_reclaim_grace_seconds")


def price_rows(config: Config) -> list[tuple]:
    """The prices table's rows for the config: (gpu_model, effective_from, price_per_gpu_hour)."""
    rows = [(p.gpu_model, p.effective_from, p.price_per_gpu_hour) for p in config.prices]
    if config.default_price_per_gpu_hour is not None:
        rows.append(("*", dt.date(1970, 1, 1), config.default_price_per_gpu_hour))
    return rows


def energy_price_rows(config: Config) -> list[tuple]:
    return [(e.effective_from, e.price_per_kwh) for e in config.energy_prices]


def write_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Replace the settings, prices and energy prices with those of the config."""
    check_grain(con, config)
    check_stored_cluster(con, config)
    con.execute("DELETE FROM settings")
    # by name: a settings table migrated from an older file may order its columns otherwise
    con.execute(f"INSERT INTO settings ({', '.join(SETTINGS_COLUMNS)}) VALUES {values([settings_row(config)])}")
    # values as literals, not parameters: see sqltext
    con.execute("DELETE FROM prices")
    prices = price_rows(config)
    if prices:
        con.execute(f"INSERT INTO prices VALUES {values(prices)}")
    con.execute("DELETE FROM energy_prices")
    if config.energy_prices:
        con.execute(f"INSERT INTO energy_prices VALUES {values(energy_price_rows(config))}")


def check_stored_cluster(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """The stored usage rows are the config's cluster's. The models do not tell clusters apart
    (every mart sums all usage rows, under the name and currency of the last config written),
    so a database holds one cluster's rows: another cluster's rows, or a renamed cluster, would
    be billed together with these. The settings name the cluster every stored row is of (rows
    of another are refused on the way in, coverage.check_cluster, and the settings are not
    renamed over stored rows, here), so only a config naming another cluster reads the rows."""
    stored = con.execute("SELECT cluster FROM settings LIMIT 1").fetchone()
    if stored is not None and stored[0] == config.cluster:
        return
    row = con.execute(f"""
        SELECT cluster, count(*) FROM gpu_usage WHERE cluster IS DISTINCT FROM {literal(config.cluster)}
        GROUP BY cluster ORDER BY count(*) DESC, cluster LIMIT 1
    """).fetchone()
    if row:
        raise DataError(
            f"{config.database}: holds {row[1]:,} usage row(s) of cluster {row[0]!r}, but the config's [cluster] name "
            f"is {config.cluster!r}; a database holds one cluster (the reports would bill both together): "
            "give each cluster its own [database] path, or keep the name the database was built with"
        )


def check_grain(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Refuse a config whose grain differs from the one the stored usage rows were cut at:
    the models would read 300 s rows as 600 s ones (breaker stretches, interval counts)."""
    stored = con.execute("SELECT grain_seconds FROM settings LIMIT 1").fetchone()
    if stored is None or stored[0] == config.grain_seconds:
        return
    if one_row(con.execute("SELECT count(*) FROM gpu_usage"))[0] == 0:
        return  # nothing cut at the old grain yet
    where = config.source or "the config"
    raise YolocostError(
        f"{config.database} holds usage rows at a {stored[0]} s grain, but {where} sets [ingest] grain_seconds = "
        f"{config.grain_seconds}; set grain_seconds = {stored[0]} again, or use a new database file for the new grain")


_HELD_LOCKS: set[int] = set()  # file descriptors of the locks `exclusive` holds


def _drop_held_locks() -> None:
    """In a forked child: close its copies of the parent's lock files, so that the lock goes
    when the parent goes, whatever the child is still doing (forked.py)."""
    for fd in _HELD_LOCKS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_held_locks)


@contextlib.contextmanager
def exclusive(path: Path | str, what: str) -> Iterator[None]:
    """Hold `<file>.lock` for a whole ingest or monthly run (of a database) or bench run (of a
    run record): a second one is refused.

    The lock is an flock on an open file, so the kernel drops it when the process dies,
    even by SIGKILL: no stale lock to clean up. A forked child does not hold it."""
    import fcntl

    path = Path(path)
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise YolocostError(f"{path}: cannot create the lock file {lock.name} beside it in {path.absolute().parent} "
                            f"({exc.strerror}); the folder must be writable") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise YolocostError(f"{path}: another yolocost run holds {lock.name} ({holder}); wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{what}, pid {os.getpid()}".encode(), 0)
        _HELD_LOCKS.add(fd)
        yield
    finally:
        _HELD_LOCKS.discard(fd)
        os.close(fd)
