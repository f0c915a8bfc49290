"""The database module: writes run single-threaded (DuckDB 2.0.0 crashes now and then when
models are rebuilt in parallel in the transaction that replaced a large window: a fault the
tests cannot provoke on demand, so this checks the setting that avoids it), reads do not."""

from yolocost import db


def test_writes_run_on_one_thread_and_reads_on_all(tmp_path):
    path = tmp_path / "t.duckdb"
    with db.writing(path) as con:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == db.WRITE_SETTINGS["threads"] == 1
        assert con.execute("SELECT current_setting('write_buffer_row_group_count')").fetchone()[0] == 1
    con = db.connect(path, read_only=True)
    try:
        import duckdb

        default = duckdb.connect().execute("SELECT current_setting('threads')").fetchone()[0]
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
