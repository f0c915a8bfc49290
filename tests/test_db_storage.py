"""The database file and its disk as bad input: one line naming the file, exit 2, nothing changed.

Each case runs the real CLI in a subprocess on a real DuckDB file: the bundled sample month
(loaded once per session), a copy of it with a damaged block, one on a full file system,
one in a folder that takes no new file, a SQLite file, and files written by an older
yolocost whose tables lack columns. Mounting (a small tmpfs, a read-only bind) needs root
with CAP_SYS_ADMIN; without it the two cases that need a mount say so and are skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import duckdb
import pytest
from helpers.builders import assert_one_line_error, yolocost

from yolocost import db as ydb
from yolocost.errors import YolocostError
from yolocost.resources import shipped_dir

SAMPLE = shipped_dir("sample_data")
CONFIG = SAMPLE / "yolocost.toml"
BLOCK_SIZE, HEADER_SIZE = 262144, 3 * 4096  # DuckDB's block and file header sizes (storage version 1.x-2.0)
# What the tests write over a block: eight different 8-byte words. DuckDB's block checksum XORs
# one hash per 8-byte word, so eight equal words (64 bytes of one value) cancel out, and over a
# region that held repeated words (padding) the damage went unnoticed in some file layouts.
DAMAGE = b"".join((0x5A5A5A5A00000000 + i).to_bytes(8, "little") for i in range(1, 9))


def run(*args: str, db: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "YOLOCOST_CONFIG"}
    return yolocost("--config", str(CONFIG), "--db", str(db), *args, cwd=cwd, env=env, timeout=300)


def digest(path: Path, views: bool = True) -> dict[str, tuple]:
    """(rows, order-independent hash of the rows) of every table (and view): the contents,
    whatever blocks the file keeps them in. DOUBLE columns (utilization, power) are left out:
    their sums may differ in the last bits from one build to the next; money and seconds are
    DECIMAL and count. So is month_builds.built_at (the wall-clock time of a build)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        kinds = "('BASE TABLE', 'VIEW')" if views else "('BASE TABLE')"
        names = [n for (n,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            f"AND table_schema = 'main' AND table_type IN {kinds} ORDER BY 1").fetchall()]
        out = {}
        for name in names:
            kept = [f'"{c}"' for c, t in con.execute(f'SELECT column_name, column_type FROM (DESCRIBE "{name}")')
                    .fetchall() if t not in ("DOUBLE", "FLOAT") and c != "built_at"]
            out[name] = con.execute(f'SELECT count(*), sum(hash({", ".join(kept)})::HUGEINT) FROM "{name}"').fetchone()
        return out
    finally:
        con.close()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory) -> Path:
    """The sample month loaded by the CLI, made once; copy it, do not write it."""
    folder = tmp_path_factory.mktemp("sample-db")
    path = folder / "sample.duckdb"
    result = run("load", str(SAMPLE), db=path, cwd=folder)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture
def sample_copy(sample_file, tmp_path) -> Path:
    path = tmp_path / "yc.duckdb"
    shutil.copyfile(sample_file, path)
    return path


# ---- not a DuckDB file


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE gpu_usage (x)")
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("kind", ["sqlite", "text"])
@pytest.mark.parametrize("command", [("build",), ("load", str(SAMPLE)), ("query", "SELECT 1")])
def test_a_file_that_is_no_duckdb_database(tmp_path, kind, command):
    path = _sqlite(tmp_path / "costs.db") if kind == "sqlite" else tmp_path / "costs.db"
    if kind == "text":
        path.write_text("interval_start,gpu_uuid\n2026-10-01,GPU-1\n", encoding="utf-8")
    before = sha(path)
    result = run(*command, db=path, cwd=tmp_path)
    line = assert_one_line_error(result, f"{path}: not a DuckDB database")
    # DuckDB would otherwise fetch its SQLite extension from the internet to open the file
    assert ("it is a SQLite database" in line) == (kind == "sqlite")
    assert "extension" not in result.stderr.lower() and "download" not in result.stderr.lower()
    assert sha(path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["costs.db"]


# ---- a damaged block


def test_a_damaged_block_during_build(sample_copy, tmp_path):
    con = duckdb.connect(str(sample_copy), read_only=True)
    block = con.execute("SELECT min(block_id) FROM pragma_storage_info('gpu_usage') "
                        "WHERE column_name = 'seconds_present' AND block_id >= 0").fetchone()[0]
    con.close()
    with open(sample_copy, "r+b") as f:  # bytes inside the block: its checksum no longer matches
        f.seek(HEADER_SIZE + block * BLOCK_SIZE + 4096)
        f.write(DAMAGE)
    before = sha(sample_copy)
    result = run("build", db=sample_copy, cwd=tmp_path)
    assert_one_line_error(result, f"{sample_copy}: the database file is damaged (Corrupt database file",
                   f"in block at location {HEADER_SIZE + block * BLOCK_SIZE}", "nothing was changed")
    assert sha(sample_copy) == before
    assert not sample_copy.with_name(sample_copy.name + ".wal").exists()


@pytest.mark.parametrize("command", [("build",), ("query", "SELECT count(*) FROM gpu_usage")])
def test_a_damaged_header_when_the_database_is_opened(sample_copy, tmp_path, command):
    with open(sample_copy, "r+b") as f:  # the first database header (after the file header)
        f.seek(4096)
        f.write(DAMAGE)
    before = sha(sample_copy)
    result = run(*command, db=sample_copy, cwd=tmp_path)
    assert_one_line_error(result, f"{sample_copy}: the database file is damaged (Corrupt database file",
                   "in block at location 4096")
    assert sha(sample_copy) == before


# ---- out of memory while committing


COMMIT_OOM = "TransactionContext Error: Failed to commit: Failed to allocate block of 262144 bytes (bad allocation)"


def test_out_of_memory_while_committing_is_the_out_of_memory_line(sample_copy, monkeypatch):
    """DuckDB's commit that cannot allocate says "Failed to commit", which read as a problem of
    the file ("cannot read or write the database"). Provoking it on purpose is not reliable
    (DuckDB spills to disk first), so the commit of a real build fails here as it did."""
    # in-process (CliRunner), not the cli fixture: the failing commit is faked with monkeypatch
    from click.testing import CliRunner

    from yolocost import cli

    @contextlib.contextmanager
    def commit_out_of_memory(con):
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        finally:
            con.execute("ROLLBACK")
        raise duckdb.TransactionException(COMMIT_OOM)

    monkeypatch.setattr(ydb, "transaction", commit_out_of_memory)
    result = CliRunner().invoke(cli.main, ["--config", str(CONFIG), "--db", str(sample_copy), "build"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert errors == [f"error: DuckDB ran out of memory ({COMMIT_OOM}); raise [database] memory_limit; "
                      "nothing was changed"], result.output


# ---- mounts: a full disk, a read-only folder


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@contextlib.contextmanager
def mounted(folder: Path, *args: str):
    """`mount ARGS folder` for the block (skipped where this process may not mount), then unmounted."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) to make a small or read-only file system")
    try:
        _mount(*args, str(folder))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot mount here ({exc.stderr.strip()}): the container lacks CAP_SYS_ADMIN")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _small_window(folder: Path) -> Path:
    """The sample month's first four hours of usage (and all its jobs) as a raw data folder."""
    folder.mkdir()
    for name in ("gpu_usage", "jobs", "training_progress", "job_results"):
        where = " WHERE interval_start < TIMESTAMPTZ '2026-10-01 04:00:00+00'" if name == "gpu_usage" else ""
        duckdb.execute(f"COPY (SELECT * FROM read_parquet('{SAMPLE / name}.parquet'){where}) "
                       f"TO '{folder / name}.parquet' (FORMAT parquet)")
    return folder


def test_disk_full_during_load(tmp_path):
    base = tmp_path / "base.duckdb"
    result = run("load", str(_small_window(tmp_path / "small")), db=base, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # room for the small database and 3 MiB more; the whole month needs about 30 MiB more
    size = base.stat().st_size // 2**20 + 3
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", f"size={size}m", "tmpfs") as disk:
        path = disk / "yc.duckdb"
        shutil.copyfile(base, path)
        before = digest(path)
        result = run("load", str(SAMPLE), db=path, cwd=tmp_path)
        assert_one_line_error(result, f"{path}: disk full (no space left on device); nothing was changed")
        assert digest(path) == before
        assert sorted(p.name for p in disk.iterdir()) == ["yc.duckdb"]  # no .wal, no temp files
    assert before["gpu_usage"][0] == 17316 and before["mart_project_month"][0] > 0


def test_read_only_folder_around_a_writable_database(sample_copy, tmp_path):
    """The file itself can be written (bound from a writable file system), its folder takes no
    new file (a read-only tmpfs): DuckDB's .wal and yolocost's .lock cannot be made."""
    with mounted(tmp_path / "ro", "-t", "tmpfs", "-o", "size=1m", "tmpfs") as folder:
        path = folder / "yc.duckdb"
        path.touch()
        _mount("--bind", str(sample_copy), str(path))
        try:
            _mount("-o", "remount,ro", str(folder))
            assert os.access(path, os.W_OK) and not os.access(folder, os.W_OK)
            before = sha(path)
            for command in (("build",), ("load", str(SAMPLE))):
                result = run(*command, db=path, cwd=tmp_path)
                assert_one_line_error(result, f"{path}: cannot write the database: its folder {folder} is not writable",
                               "read-only file system", "yc.duckdb.wal")
            result = run("ingest", "--start", "2026-10-01", "--end", "2026-10-02", db=path, cwd=tmp_path)
            assert_one_line_error(result, f"{path}: cannot create the lock file yc.duckdb.lock", "Read-only file system")
            assert sha(path) == before and sorted(p.name for p in folder.iterdir()) == ["yc.duckdb"]
        finally:
            subprocess.run(["umount", str(path)], capture_output=True)


# ---- files written by an older yolocost


def test_an_older_settings_table_is_migrated_by_build(sample_copy, sample_file, tmp_path):
    con = duckdb.connect(str(sample_copy))
    # a settings table without breaker_min_seconds (a column in the middle) and no prices table
    con.execute("CREATE OR REPLACE TABLE settings AS SELECT * EXCLUDE (breaker_min_seconds) FROM settings")
    con.execute("DROP TABLE prices")
    con.close()
    result = run("build", db=sample_copy, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(sample_copy), read_only=True)
    settings = con.execute("SELECT cluster, grain_seconds, breaker_util_percent, breaker_min_seconds, tag_pattern "
                           "FROM settings").fetchall()
    con.close()
    assert settings == [("demo-cluster", 300, 40.0, 7200.0, r"^[a-z0-9]+-yolo[a-z0-9]+-[a-z0-9]+-cu[0-9]+$")]
    after, original = digest(sample_copy), digest(sample_file)
    assert after == original  # every table and mart as the current version builds it


def test_an_older_table_with_trailing_optional_columns_missing_is_completed(sample_copy, sample_file, tmp_path):
    con = duckdb.connect(str(sample_copy))
    con.execute("ALTER TABLE jobs DROP COLUMN batch")
    con.execute("ALTER TABLE jobs DROP COLUMN imgsz")
    con.close()
    result = run("build", db=sample_copy, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(sample_copy), read_only=True)
    jobs = con.execute("SELECT count(*), count(imgsz), count(batch) FROM jobs").fetchone()
    con.close()
    assert jobs == (345, 0, 0)  # the columns are back, without values the file never held


@pytest.mark.parametrize("drop", ["gpu_usage.util_mean", "gpu_usage.mig_profile"])
def test_an_older_table_that_cannot_be_completed_is_refused(sample_copy, tmp_path, drop):
    table, column = drop.split(".")
    con = duckdb.connect(str(sample_copy))
    con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    con.close()
    before = digest(sample_copy, views=False)  # the models read the dropped column: not readable
    for command in (("build",), ("load", str(SAMPLE))):
        result = run(*command, db=sample_copy, cwd=tmp_path)
        assert_one_line_error(result, f"{sample_copy}: the database was written by an older yolocost",
                       f"table {table} lacks column(s) {column}", "load the raw data into a new database")
        assert digest(sample_copy, views=False) == before


# ---- which DuckDB errors are the file's


def test_storage_errors_name_the_file_and_let_other_errors_through(tmp_path):
    """DuckDB's file and disk failures become one line naming the database; a query's own
    error (a bug in yolocost) passes unchanged. The fatal and serialization errors cannot be
    provoked on purpose: DuckDB's own exception classes, made here, stand in for them."""
    path = tmp_path / "yc.duckdb"
    con = duckdb.connect(str(path))
    with pytest.raises(duckdb.BinderException):
        with ydb.storage_errors(path):
            con.execute("SELECT no_such_column FROM (SELECT 1 AS x)")
    con.close()
    cases = [
        (duckdb.FatalException("FATAL Error: Failed to fsync"), "DuckDB stopped on a fatal error"),
        (duckdb.InvalidInputException("Invalid Input Error: database has been invalidated because of a previous "
                                      "fatal error"), "DuckDB stopped on a fatal error"),
        (duckdb.SerializationException("Serialization Error: Failed to deserialize"), "the database file is damaged"),
        (duckdb.IOException(f'IO Error: Could not read from file "{path}": Input/output error'),
         "cannot read or write the database (Could not read from file"),
    ]
    for exc, needle in cases:
        with pytest.raises(YolocostError) as info:
            with ydb.storage_errors(path, "; nothing was changed"):
                raise exc
        assert str(info.value).startswith(f"{path}: {needle}") and str(info.value).endswith("; nothing was changed")
    for exc in (duckdb.TransactionException("TransactionContext Error: Failed to commit: Failed to allocate block of "
                                            "262144 bytes (bad allocation)"),
                duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 256.0 KiB")):
        with pytest.raises(YolocostError) as info:  # the file is fine: the same line as any out-of-memory
            with ydb.storage_errors(path, "; nothing was changed"):
                raise exc
        first = str(exc).splitlines()[0]
        assert str(info.value) == f"DuckDB ran out of memory ({first}); raise [database] memory_limit; nothing was changed"
    for other in (duckdb.InvalidInputException("Invalid Input Error: Required argument missing"),
                  duckdb.IOException('IO Error: No files found that match the pattern "raw/x.parquet"')):
        with pytest.raises(type(other)):  # not about the database file: passed on unchanged
            with ydb.storage_errors(path):
                raise other
