"""Open the DuckDB file, create the raw tables and write the settings the SQL models read."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Iterator

import duckdb

from .config import Config
from .errors import YolocostError
from .resources import SQL_DIR


def connect(path: Path | str, *, read_only: bool = False, sandboxed: bool = False,
            memory_limit: str | None = None, settings: dict | None = None) -> duckdb.DuckDBPyConnection:
    """Open the database; a missing file in read-only mode or a held lock is a clean error.

    `sandboxed` also denies access to any other file (COPY TO, read_csv, ATTACH, ...), so
    an ad-hoc query can read the database and nothing else, and change nothing."""
    path = Path(path)
    if read_only and not path.is_file():
        raise YolocostError(f"{path}: database not found (run `yolocost demo` or `yolocost load` first)")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        options = {"enable_external_access": False} if sandboxed else {}
        if not read_only:
            options["storage_compatibility_version"] = STORAGE_VERSION
        if memory_limit:
            options["memory_limit"] = memory_limit
        options.update(settings or {})
        con = duckdb.connect(str(path), read_only=read_only, config=options)
    except duckdb.IOException as exc:
        first = str(exc).splitlines()[0]
        if "lock" in first.lower():
            raise YolocostError(f"{path}: database is in use by another yolocost process ({first})") from None
        raise YolocostError(f"{path}: cannot open database: {first}") from None
    con.execute("SET TimeZone = 'UTC'")
    return con


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
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# Writes run on one thread. With more, DuckDB 2.0.0 crashes now and then (a segfault, or
# "Corrupted ALP/bitpacking segment") while the models are rebuilt in the transaction that
# has just replaced a large window of rows: replacing all of October in the sample month's
# database crashed 4 of 25 runs with 2 threads and none of 46 with one. The build takes
# about 1.4 times as long; reading (reports, queries) keeps every thread. On one thread
# DuckDB keeps a transaction's new rows in memory until 5 row groups have piled up; writing
# each row group out as it fills keeps the models a transaction builds off the heap.
WRITE_SETTINGS = {"threads": 1, "write_buffer_row_group_count": 1}


@contextlib.contextmanager
def writing(path: Path | str, memory_limit: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection with the raw tables in place, inside one transaction."""
    con = connect(path, memory_limit=memory_limit, settings=WRITE_SETTINGS)
    try:
        create_schema(con)
        with transaction(con):
            yield con
    finally:
        con.close()


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the raw tables if they do not exist yet (schema.sql documents each one)."""
    con.execute((SQL_DIR / "schema.sql").read_text(encoding="utf-8"))


def write_settings(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Replace the settings, prices and energy prices with those of the config."""
    t = config.thresholds
    con.execute("DELETE FROM settings")
    con.execute(
        "INSERT INTO settings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [config.cluster, config.timezone, config.currency, config.grain_seconds,
         t.busy_util_percent, t.idle_util_percent, t.breaker_util_percent,
         t.breaker_loss_delta, t.breaker_min_hours * 3600, config.tag_pattern],
    )
    con.execute("DELETE FROM prices")
    rows = [(p.gpu_model, p.effective_from, p.price_per_gpu_hour) for p in config.prices]
    if config.default_price_per_gpu_hour is not None:
        rows.append(("*", dt.date(1970, 1, 1), config.default_price_per_gpu_hour))
    if rows:
        con.executemany("INSERT INTO prices VALUES (?, ?, ?)", rows)
    con.execute("DELETE FROM energy_prices")
    if config.energy_prices:
        con.executemany(
            "INSERT INTO energy_prices VALUES (?, ?)",
            [(e.effective_from, e.price_per_kwh) for e in config.energy_prices],
        )


@contextlib.contextmanager
def exclusive(path: Path | str, what: str) -> Iterator[None]:
    """Hold `<file>.lock` for a whole ingest or monthly run (of a database) or bench run (of a
    run record): a second one is refused.

    The lock is an flock on an open file, so the kernel drops it when the process dies,
    even by SIGKILL: no stale lock to clean up."""
    import fcntl
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise YolocostError(f"{path}: another yolocost run holds {lock.name} ({holder}); wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{what}, pid {os.getpid()}".encode(), 0)
        yield
    finally:
        os.close(fd)
