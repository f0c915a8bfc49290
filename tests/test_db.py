"""The database module: the write settings, the storage format and the pinned DuckDB line.

DuckDB 2.0.0 crashed now and then when models were rebuilt in the transaction that replaced a
large window (a fault the tests cannot provoke on demand); the 1.5 line yolocost pins did not
in any stress run, on one thread or two (BENCHMARKS.md). So these check the pin and the
settings the write path relies on."""

import duckdb as _duckdb

from yolocost import db


def test_writes_flush_row_groups_and_use_every_thread_on_the_pinned_duckdb(tmp_path):
    assert _duckdb.__version__.startswith("1.5."), "the write path is only proven on the DuckDB 1.5 line"
    path = tmp_path / "t.duckdb"
    default = _duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
    with db.writing(path) as con:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == default
        assert con.execute("SELECT current_setting('write_buffer_row_group_count')").fetchone()[0] == 1
    con = db.connect(path, read_only=True)
    try:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == default
    finally:
        con.close()


def test_new_databases_use_a_storage_format_duckdb_1_5_reads(tmp_path):
    """Every database file yolocost creates, whichever DuckDB creates it, can be opened by the
    pinned DuckDB 1.5 line: DuckDB 2.0 writes its own 2.0 format by default, which 1.5
    cannot read."""
    import duckdb

    path = tmp_path / "t.duckdb"
    with db.writing(path):
        pass
    con = duckdb.connect(str(path), read_only=True)
    try:
        tags = con.execute("SELECT tags FROM duckdb_databases() WHERE database_name = 't'").fetchone()[0]
    finally:
        con.close()
    assert tags["storage_version"] == "v1.0.0+"  # the format DuckDB 1.5 writes by default
