"""Every class of bad input the suite covers, and the table of them in docs/errors.md.

CASES run here, each through the real CLI in a subprocess: one `error: ...` line on stderr
(no traceback, never the catch-all `error: unexpected ...`) and the exit status given.
ELSEWHERE names the classes that other tests cover (or tests below that need more than a
command line: Ctrl-C, a closed pipe, CSV cells), each with the test that covers it.
docs/errors.md holds the table of both lists; a test checks that it is current. After
adding a case, rewrite the table with:

    python tests/test_bad_input.py --write
"""

from __future__ import annotations

import ast
import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb
import pytest
from helpers.onegpu import CONFIG, write_raw

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errors.md"
BEGIN, END = "<!-- table: written by tests/test_bad_input.py --write -->", "<!-- end of table -->"
GENEROUS_SECONDS = 20  # a bound on how long a Ctrl-C may take that no loaded machine reaches

# --------------------------------------------------------------------------- files a case prepares


def with_database(folder: Path) -> None:
    """The working folder's yc.duckdb: one GPU-hour on 2026-10-01, loaded by the real loader."""
    shutil.copy(_TEMPLATE[0], folder / "yc.duckdb")


def with_grain_600(folder: Path) -> None:
    """A database cut at the default 300 s grain, and a config that now says 600 s (with a
    raw folder cut at 600 s)."""
    with_database(folder)
    write_raw(folder / "raw", grain=600)
    (folder / "yolocost.toml").write_text(CONFIG + "[ingest]\ngrain_seconds = 600\n")


def with_currency_zzz(folder: Path) -> None:
    (folder / "yolocost.toml").write_text(CONFIG.replace('timezone = "UTC"', 'timezone = "UTC"\ncurrency = "ZZZ"'))


def with_config_changed(old: str, new: str) -> Callable[[Path], None]:
    """The template database, and a config changed since it was built (no `build` run since)."""
    def setup(folder: Path) -> None:
        with_database(folder)
        (folder / "yolocost.toml").write_text(CONFIG.replace(old, new))
    return setup


with_price_x10 = with_config_changed('price_per_gpu_hour = "2.00"', 'price_per_gpu_hour = "20.00"')
with_timezone_tokyo = with_config_changed('timezone = "UTC"', 'timezone = "Asia/Tokyo"')
with_busy_60 = with_config_changed("[[prices]]", "[thresholds]\nbusy_util_percent = 60\n[[prices]]")
STALE = "2026-10 was built with {}: its stored figures are stale; run `yolocost build --month 2026-10` to rebuild it"


def with_retention_of_a_million_days(folder: Path) -> None:
    (folder / "yolocost.toml").write_text(CONFIG + "[ingest]\nretention_days = 1000000\n")


def with_token_over_http(folder: Path) -> None:
    """A bearer token file and a Prometheus URL on another host over plain http."""
    (folder / "token").write_text("t0ken\n")
    (folder / "yolocost.toml").write_text(
        CONFIG + '[prometheus]\nurl = "http://prometheus.example.internal:9090"\nbearer_token_file = "token"\n')


def with_query_files(folder: Path) -> None:
    """Query files a user may have: one that is only comments, one saved as Latin-1, and a
    folder of named queries where one file is not UTF-8."""
    (folder / "only-comments.sql").write_text("-- title: nothing yet\n-- SELECT 1\n\n")
    (folder / "latin1.sql").write_bytes("-- title: Kosten für Projekte\nSELECT 1\n".encode("latin-1"))
    (folder / "mine").mkdir()
    (folder / "mine" / "broken.sql").write_bytes(b"-- title: \xff\xfe\nSELECT 1\n")
    (folder / "mine" / "badparam.sql").write_text("-- param: 1st INTEGER\nSELECT $1st\n")
    (folder / "mine" / "ok.sql").write_text("-- title: fine\nSELECT 42 AS answer\n")
    with_database(folder)


_TEMPLATE: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _template_database(tmp_path_factory):
    """Built once for the module with the real loader; each case that needs it copies it."""
    from yolocost.config import load_config
    from yolocost.load import load_parquet_dir

    folder = tmp_path_factory.mktemp("template")
    (folder / "yolocost.toml").write_text(CONFIG)
    load_parquet_dir(load_config(folder / "yolocost.toml"), write_raw(folder / "raw"))
    _TEMPLATE[:] = [folder / "yc.duckdb"]
    yield
    _TEMPLATE.clear()


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    """A class of bad input: the command line after `yolocost`, the files it needs, and the
    one line it must give (a fragment of it) with its exit status."""

    name: str
    argv: tuple[str, ...]
    message: str
    status: int = 2
    setup: Callable[[Path], None] | None = None
    given: str = ""  # what the prepared files hold, for the table


CASES = [
    Case("ingest: --start before 1970", ("ingest", "--start", "0001-01-01", "--end", "2026-10-02"),
         "--start must lie between 1970 and 9998 (UTC), got '0001-01-01'"),
    Case("ingest: --end after 9998", ("ingest", "--start", "2026-10-01", "--end", "9999-12-31T23:00"),
         "--end must lie between 1970 and 9998"),
    Case("ingest: --start before the epoch in UTC", ("ingest", "--start", "1970-01-01T00:00+01:00", "--end", "2026-10-02"),
         "--start must lie between 1970 and 9998 (UTC)"),
    Case("ingest: --start not a date", ("ingest", "--start", "yesterday", "--end", "2026-10-02"),
         "--start must be an ISO date or date-time"),
    Case("ingest: --month not YYYY-MM", ("ingest", "--month", "2026-13"), "--month must read YYYY-MM (month 01 to 12), got '2026-13'"),
    Case("ingest: --month before 1970", ("ingest", "--month", "0001-01"), "--month must lie between 1970-01 and 9998-12"),
    Case("ingest: --month and --start", ("ingest", "--month", "2026-10", "--start", "2026-10-01"),
         "give either --month or --start/--end, not both"),
    Case("ingest: no window", ("ingest",), "give the window: --month YYYY-MM, or --start and --end"),
    Case("ingest: window off the grain", ("ingest", "--start", "2026-10-01T00:01", "--end", "2026-10-02"),
         "the window must start and end on the 300 s grain, got 2026-10-01T00:01Z"),
    Case("ingest: empty window", ("ingest", "--start", "2026-10-02", "--end", "2026-10-01"),
         "the window is empty: its end (2026-10-01T00:00Z) must be after its start"),
    Case("query: SQL that is only a comment", ("query", "-- nothing"),
         "query sql: holds no SQL statement (only comments or blank lines)", setup=with_database),
    Case("query: .sql file that is only comments", ("query", "only-comments.sql"),
         "query only-comments: holds no SQL statement", setup=with_query_files, given="only `--` lines"),
    Case("query: .sql file not UTF-8", ("query", "latin1.sql"),
         "latin1.sql: not UTF-8 text (byte 0xfc at offset 18); save the query as UTF-8", setup=with_query_files,
         given="saved as Latin-1"),
    Case("query: named query whose file is not UTF-8", ("query", "broken", "--queries-dir", "mine"),
         "query broken: mine/broken.sql: not UTF-8 text", setup=with_query_files),
    Case("query: named query with a bad param header", ("query", "badparam", "--queries-dir", "mine"),
         "mine/badparam.sql: bad param header '1st INTEGER'", setup=with_query_files),
    Case("query: .sql file that does not exist", ("query", "nope.sql"), "nope.sql: no such query file"),
    Case("query --write: database file missing", ("--db", "typo.duckdb", "query", "--write", "SELECT 1"),
         "typo.duckdb: database not found"),
    Case("build: database file missing", ("--db", "typo.duckdb", "build"),
         "typo.duckdb: database not found (check --db and [database] path"),
    Case("report: database file missing", ("--db", "typo.duckdb", "report", "--month", "2026-10"),
         "typo.duckdb: database not found"),
    Case("export finance: -o names a folder", ("export", "finance", "--month", "2026-10", "-o", "."),
         "error: .: is a folder, not a file; give a file path"),
    Case("export finance: database file missing", ("--db", "typo.duckdb", "export", "finance", "--month", "2026-10"),
         "typo.duckdb: database not found"),
    Case("export finance: a FOCUS version yolocost does not write",
         ("export", "finance", "--month", "2026-10", "--focus-version", "1.4"),
         "FOCUS version '1.4' is not one yolocost writes (one of 1.2, 1.3)"),
    Case("build: grain_seconds changed on a stored database", ("build",),
         "yolocost.toml sets [ingest] grain_seconds = 600; set grain_seconds = 300 again, or use a new database file",
         setup=with_grain_600, given="database at 300 s, config now 600 s"),
    Case("load: grain_seconds changed on a stored database", ("load", "raw"),
         "yc.duckdb holds usage rows at a 300 s grain", setup=with_grain_600,
         given="database at 300 s, config and files now 600 s"),
    Case("config: currency not ISO 4217", ("config", "check"),
         "cluster.currency: 'ZZZ' is not an ISO 4217 currency code", setup=with_currency_zzz,
         given='currency = "ZZZ"'),
    Case("report: a month built with other prices", ("report", "--month", "2026-10"),
         STALE.format("price of A100 2 (the config: 20)"), setup=with_price_x10,
         given="built at 2.00, the config now says 20.00"),
    Case("export finance: a month built with other prices", ("export", "finance", "--month", "2026-10"),
         STALE.format("price of A100 2 (the config: 20)"), setup=with_price_x10,
         given="built at 2.00, the config now says 20.00"),
    Case("whatif: a month built in another time zone", ("whatif", "--month", "2026-10"),
         STALE.format("cluster.timezone 'UTC' (the config: 'Asia/Tokyo')"), setup=with_timezone_tokyo,
         given="built in UTC, the config now says Asia/Tokyo"),
    Case("query: a month parameter naming a month built with other prices",
         ("query", "top_idle_wasters", "--param", "month=2026-10"), STALE.format("price of A100 2 (the config: 20)"),
         setup=with_price_x10, given="built at 2.00, the config now says 20.00"),
    Case("estimate: a month built with other thresholds", ("estimate", "--model-type", "yolov8m"),
         "yolocost estimate: 2026-10 was built with thresholds.busy_util_percent 70 (the config: 60): its stored "
         "figures are stale; run `yolocost build`", setup=with_busy_60,
         given="built at busy 70 %, the config now says 60 %"),
    Case("config: a number outside its range", ("prune", "--dry-run"),
         "ingest.retention_days: must be a whole number from 1 to 36500, got 1000000",
         setup=with_retention_of_a_million_days, given="retention_days = 1000000"),
    Case("config: a credential over plain http to another host", ("ingest", "--month", "2026-10"),
         "prometheus.bearer_token_file: the credential would be sent in clear text to "
         "http://prometheus.example.internal:9090 (plain http:// to another host); use an https:// url, or set "
         "[prometheus] allow_insecure_http = true", setup=with_token_over_http,
         given="bearer_token_file with an http:// url"),
    Case("query: a setting changed by a read-only query", ("query", 'SET memory_limit = "100GB"'),
         'Cannot change configuration option "memory_limit" - the configuration has been locked (a read-only query '
         "runs under the configured settings, [database] memory_limit among them)", setup=with_database),
    Case("sample generate: --month 2026-13", ("sample", "generate", "--out", "gen", "--month", "2026-13"),
         "--month must be a month YYYY-MM from 1971-01 to 9998-12, got '2026-13'"),
    Case("sample generate: unknown --timezone", ("sample", "generate", "--out", "gen", "--timezone", "Mars/X"),
         "--timezone: unknown time zone 'Mars/X'"),
    Case("sample generate: --scale nan", ("sample", "generate", "--out", "gen", "--scale", "nan"),
         "--scale must be a number above 0 and at most 250, got nan"),
    Case("sample generate: --scale inf", ("sample", "generate", "--out", "gen", "--scale", "inf"),
         "--scale must be a number above 0 and at most 250, got inf"),
    Case("sample generate: --scale negative", ("sample", "generate", "--out", "gen", "--scale", "-1"),
         "--scale must be a number above 0 and at most 250, got -1.0"),
    Case("sample generate: --scale 0", ("sample", "generate", "--out", "gen", "--scale", "0"),
         "--scale must be a number above 0"),
]


def assert_one_line_error(result: subprocess.CompletedProcess, message: str, status: int = 2) -> None:
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith("error: "), result.stderr
    assert message in errors[0], result.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, tmp_path, cli):
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    if case.setup:
        case.setup(tmp_path)
    before = _snapshot(tmp_path / "yc.duckdb")
    assert_one_line_error(cli(*case.argv, cwd=tmp_path, timeout=300), case.message, case.status)
    assert _snapshot(tmp_path / "yc.duckdb") == before  # a refused command changes nothing
    assert not (tmp_path / "typo.duckdb").exists()  # and creates no database


def _snapshot(path: Path):
    """What a database holds (None: no file): the rows, settings, loads and month totals."""
    if not path.exists():
        return None
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [con.execute(sql).fetchall() for sql in (
            "SELECT count(*), sum(seconds_present) FROM gpu_usage", "SELECT * FROM settings",
            "SELECT count(*) FROM loads", "SELECT * FROM mart_cluster_month ORDER BY ALL")]
    finally:
        con.close()


# --------------------------------------------------------------------------- a bad query file among good ones


def test_one_unreadable_query_file_does_not_break_the_others(tmp_path, cli):
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    with_query_files(tmp_path)
    listed = cli("queries", "--queries-dir", "mine", cwd=tmp_path, timeout=300)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert "ok" in names and "top_idle_wasters" in names and "broken" not in names and "badparam" not in names
    assert listed.stderr.splitlines() == [
        "warning: mine/badparam.sql: bad param header '1st INTEGER' (skipped)",
        "warning: mine/broken.sql: not UTF-8 text (byte 0xff at offset 10); save the query as UTF-8 (skipped)"]
    for name in ("ok", "user_costs"):
        ran = cli("query", name, "--queries-dir", "mine", "-p" if name != "ok" else "-f",
                  "month=2026-10" if name != "ok" else "csv", cwd=tmp_path, timeout=300)
        assert ran.returncode == 0, ran.stderr
    assert cli("query", "ok", "--queries-dir", "mine", "-f", "csv", cwd=tmp_path, timeout=300).stdout == "answer\n42\n"


# --------------------------------------------------------------------------- a closed stdout pipe


@pytest.mark.parametrize("argv", [("query", "SELECT * FROM range(200000)", "-f", "csv"), ("queries",),
                                  ("query", "SELECT * FROM range(200000)", "-f", "csv", "-o", "/dev/stdout")],
                         ids=["query", "queries", "query-o-dev-stdout"])
def test_a_reader_that_leaves_early_is_one_line_and_status_2(tmp_path, argv):
    """`yolocost query ... | head -1`: the reader is gone before the output comes (the pipe's
    read end closed at once, so the timing cannot decide): the output is not complete, which a
    cron job must be able to tell, so one line and status 2 (no traceback, no "unexpected")."""
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    with_database(tmp_path)
    # Popen, not the cli fixture: the test closes the read end of stdout before the CLI writes
    proc = subprocess.Popen([sys.executable, "-m", "yolocost", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err.decode()
    assert err.decode() == ("error: standard output was closed before all of the output was written "
                            "(its reader, such as `head`, left early)\n")


# --------------------------------------------------------------------------- Ctrl-C


def _popen(argv: list[str], cwd: Path) -> subprocess.Popen:
    # Popen, not the cli fixture: the Ctrl-C tests send SIGINT to the running process
    return subprocess.Popen([sys.executable, "-m", "yolocost", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _interrupt(proc: subprocess.Popen) -> tuple[float, str]:
    """SIGINT as Ctrl-C sends it; the seconds until the process ended, and its stderr."""
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return time.monotonic() - started, err


def _wait_until_open(proc: subprocess.Popen, path: Path) -> None:
    """Until the process holds `path` open (its query is running), read from /proc."""
    fds = Path(f"/proc/{proc.pid}/fd")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if any(os.path.realpath(fd) == str(path.resolve()) for fd in fds.iterdir()):
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{path} never opened; stderr: {proc.stderr.read() if proc.poll() is not None else ''}")


def test_ctrl_c_stops_a_long_query_with_130(tmp_path):
    """A sum over a cross join of 10^10 rows (minutes of work, next to no memory): before,
    DuckDB turned the interrupt into a RuntimeError and the command ended in
    `error: unexpected ...` with status 1."""
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    with_database(tmp_path)
    proc = _popen(["query", "SELECT sum(a.range * b.range) AS x FROM range(100000) a CROSS JOIN range(100000) b"],
                  tmp_path)
    _wait_until_open(proc, tmp_path / "yc.duckdb")
    time.sleep(0.5)  # into the query
    seconds, err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["error: interrupted"]
    assert seconds < GENEROUS_SECONDS


def test_ctrl_c_during_a_load_leaves_the_database_as_it_was(tmp_path, cli):
    """The sample month replaces itself; Ctrl-C while the models are rebuilt in the
    transaction that replaced it (before, DuckDB's cancelled statement ended in
    `error: unexpected RuntimeError` with status 1)."""
    sample = ROOT / "sample_data"
    first = cli("--config", str(sample / "yolocost.toml"), "--db", "yc.duckdb", "-q", "load", str(sample), cwd=tmp_path,
                timeout=300)
    assert first.returncode == 0, first.stderr
    before = _snapshot(tmp_path / "yc.duckdb")
    proc = _popen(["--config", str(sample / "yolocost.toml"), "--db", "yc.duckdb", "load", str(sample)], tmp_path)
    seen = []
    for line in proc.stderr:  # progress: the rows are replaced, the transaction still open
        seen.append(line)
        if line.startswith("yolocost: building models"):
            break
    assert seen and seen[-1].startswith("yolocost: building models"), seen
    seconds, err = _interrupt(proc)
    assert proc.returncode == 130, "".join(seen) + err
    assert err.strip().splitlines()[-1] == "error: interrupted" and "Traceback" not in err
    assert seconds < GENEROUS_SECONDS
    assert _snapshot(tmp_path / "yc.duckdb") == before


def test_ctrl_c_stops_an_ingest_waiting_on_a_silent_server(tmp_path):
    """A server that accepts the connection and never answers (timeout 60 s): Ctrl-C ends
    the wait at once."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent.settimeout(120)
        (tmp_path / "yolocost.toml").write_text(
            CONFIG + f'[prometheus]\nurl = "http://127.0.0.1:{silent.getsockname()[1]}"\ntimeout_seconds = 60\n')
        proc = _popen(["ingest", "--start", "2026-10-01", "--end", "2026-10-02"], tmp_path)
        conn, _ = silent.accept()  # the ingest's first request is on its way
        with conn:
            seconds, err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted" and "Traceback" not in err
    assert seconds < GENEROUS_SECONDS
    assert not (tmp_path / "yc.duckdb").exists()


def test_ctrl_c_does_not_wait_for_a_thread_pool():
    """A pool whose worker is busy for two minutes (as an ingest's HTTP request to a server
    that never answers): leaving the `with` block would wait for it; the watchdog the CLI's
    SIGINT handler starts ends the process a second later. The module is driven by a small
    script, since a busy worker is what matters, not which command holds it."""
    script = (
        "import concurrent.futures, time\n"
        "from yolocost import interrupts\n"
        "interrupts.install()\n"
        "with concurrent.futures.ThreadPoolExecutor(2) as pool:\n"
        "    future = pool.submit(time.sleep, 120)\n"
        "    print('waiting', flush=True)\n"
        "    future.result()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "waiting\n"
    seconds, err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert seconds < GENEROUS_SECONDS


# --------------------------------------------------------------------------- queries obey the memory limit


def test_a_query_runs_under_the_configured_memory_limit(tmp_path, cli):
    (tmp_path / "yolocost.toml").write_text(CONFIG.replace('path = "yc.duckdb"', 'path = "yc.duckdb"\nmemory_limit = "200MB"'))
    with_database(tmp_path)
    out = cli("query", "SELECT current_setting('memory_limit') AS m", "-f", "csv", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "m\n190.7 MiB\n"  # DuckDB shows 200,000,000 bytes in MiB


# --------------------------------------------------------------------------- CSV cells a spreadsheet would run


@pytest.mark.parametrize("cell", [
    "=1+1", "+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1", " =1+1", "  @x", "\u00a0=1",
    "\uff1d1+1", "\uff0b1", "\uff0d1", "\uff20SUM(A1)", " \uff1d1", "\ufe661",
])
def test_csv_neutralizes_formula_cells(cell):
    from yolocost import csvsafe, finance, tables
    from yolocost.report import jobs

    assert csvsafe.csv_safe(cell) == "'" + cell
    assert finance.csv_safe is tables.csv_safe is jobs.csv_safe is csvsafe.csv_safe  # every CSV uses the one implementation


@pytest.mark.parametrize("cell", ["plain", "1.5", " x", "a=b", "\uff41"])
def test_csv_leaves_other_cells_alone(cell):
    from yolocost import csvsafe

    assert csvsafe.csv_safe(cell) == cell


def test_csv_output_neutralizes_header_cells(tmp_path, cli):
    """A PIVOT turns label values into column names: they are cells like any other."""
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    with_database(tmp_path)
    sql = ("PIVOT (SELECT * FROM (VALUES ('=HYPERLINK(\"x\")', 1), (' \uff0bcmd', 2), ('ok', 3)) t(label, n)) "
           "ON label USING sum(n)")
    out = cli("query", sql, "-f", "csv", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    header, row = csv.reader(io.StringIO(out.stdout))
    assert sorted(header) == sorted(["'=HYPERLINK(\"x\")", "' \uff0bcmd", "ok"])
    assert sorted(row) == ["1", "2", "3"]


# --------------------------------------------------------------------------- a month held only in part


def test_export_of_a_month_held_in_part_warns_with_the_coverage(tmp_path, cli):
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    with_database(tmp_path)  # one hour of 2026-10-01
    out = cli("export", "finance", "--month", "2026-10", "-o", "f.csv", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == ("warning: the database holds 2026-10-01..2026-10-01 of October 2026 (1 of 31 days): "
                                  "the CSV covers only that")
    assert (tmp_path / "f.csv").is_file()


# --------------------------------------------------------------------------- genuine bugs


def test_the_catch_all_for_a_bug_shows_no_exception_text(monkeypatch):
    """A bug's exception text can carry anything (a line of a token file, a header): the
    catch-all prints the exception type only. The bug is faked, as the real code has none
    to trigger."""
    # in-process (CliRunner), not the cli fixture: the bug is faked with monkeypatch
    from click.testing import CliRunner

    from yolocost import cli as yolocost_cli
    from yolocost import queries

    def bug(*_args, **_kwargs):
        raise RuntimeError("Authorization: Bearer SECRET-TOKEN-123")

    monkeypatch.setattr(queries, "scan", bug)
    result = CliRunner().invoke(yolocost_cli.main, ["queries"])
    assert result.exit_code == 1
    assert "error: unexpected RuntimeError (a bug in yolocost; rerun with --debug for the details)" in result.output
    assert "SECRET" not in result.output


# --------------------------------------------------------------------------- the table in docs/errors.md


@dataclass(frozen=True)
class Covered:
    """A class of bad input another test covers: the message fragment appears in that test's file."""

    name: str
    example: str
    message: str
    status: int
    test: str  # tests/<file>.py::<test function>


HERE = "tests/test_bad_input.py"
ELSEWHERE = [
    # this module, beyond a command line
    Covered("query: a named query file is not UTF-8 (the others still run)", "yolocost queries --queries-dir mine",
            "warning: mine/broken.sql: not UTF-8 text", 0, f"{HERE}::test_one_unreadable_query_file_does_not_break_the_others"),
    Covered("stdout closed early (`| head -1`)", "yolocost query ... | head -1",
            "standard output was closed before all of the output was written", 2,
            f"{HERE}::test_a_reader_that_leaves_early_is_one_line_and_status_2"),
    # tests/test_stderr.py
    Covered("stderr cannot be written (a full log disk, a reader gone, `2>&-`)", "yolocost report ... 2>/dev/full",
            "(progress and warnings are lost; the files are written)", 0,
            "tests/test_stderr.py::test_report_writes_its_files_whatever_stderr_does"),
    Covered("stderr and stdout closed early under a file-writing command", "yolocost demo 2>&1 | head -1",
            "(the closing lines are lost; the files are written)", 0,
            "tests/test_stderr.py::test_demo_builds_everything_whatever_stderr_does"),
    Covered("Ctrl-C during a long query", "yolocost query 'SELECT ... CROSS JOIN ...'", "error: interrupted", 130,
            f"{HERE}::test_ctrl_c_stops_a_long_query_with_130"),
    Covered("Ctrl-C during a load", "yolocost load sample_data/", "error: interrupted", 130,
            f"{HERE}::test_ctrl_c_during_a_load_leaves_the_database_as_it_was"),
    Covered("Ctrl-C during an ingest waiting on a server", "yolocost ingest --start ... --end ...", "error: interrupted",
            130, f"{HERE}::test_ctrl_c_stops_an_ingest_waiting_on_a_silent_server"),
    Covered("Ctrl-C while a thread pool waits on a busy worker", "yolocost ingest ... (requests in flight)",
            "error: interrupted", 130, f"{HERE}::test_ctrl_c_does_not_wait_for_a_thread_pool"),
    Covered("CSV cell a spreadsheet would run (`=`, `+`, `-`, `@`, after blanks, fullwidth `＝`)",
            "a project label `=HYPERLINK(...)`", "(the cell is written with a leading ')", 0,
            f"{HERE}::test_csv_neutralizes_formula_cells"),
    Covered("CSV header cell a spreadsheet would run (a PIVOT on labels)", "yolocost query 'PIVOT ...' -f csv",
            "(the cell is written with a leading ')", 0, f"{HERE}::test_csv_output_neutralizes_header_cells"),
    Covered("export finance: month held only in part", "yolocost export finance --month 2026-10",
            "warning: the database holds 2026-10-01..2026-10-01 of October 2026", 0,
            f"{HERE}::test_export_of_a_month_held_in_part_warns_with_the_coverage"),
    Covered("a bug (any unforeseen exception)", "-", "error: unexpected RuntimeError (a bug in yolocost; rerun with "
            "--debug for the details)", 1, f"{HERE}::test_the_catch_all_for_a_bug_shows_no_exception_text"),
    # tests/test_cli.py
    Covered("config: unknown key", "[labels] projcet = ...", "unknown key", 2, "tests/test_cli.py::test_unknown_config_key"),
    Covered("config: malformed TOML", "[cluster", "not valid TOML", 2, "tests/test_cli.py::test_malformed_toml"),
    Covered("load: unpriced GPU model", "gpu_model H200 without a price", "no price for GPU model 'H200'", 2,
            "tests/test_cli.py::test_unpriced_gpu_model_stops_the_load_and_keeps_what_was_stored"),
    Covered("load: NaN utilization", "util_mean NaN", "util_mean is NaN", 2, "tests/test_cli.py::test_nan_utilization"),
    Covered("load: missing utilization", "util_mean null", "util_mean is missing (null/NaN)", 2,
            "tests/test_cli.py::test_nan_utilization"),
    Covered("load: duplicate usage rows", "a row twice", "duplicate rows for GPU GPU-0", 2,
            "tests/test_cli.py::test_duplicate_rows"),
    Covered("query: a write without --write", "yolocost query 'DELETE FROM jobs'", "read-only", 2,
            "tests/test_cli.py::test_query_is_read_only_unless_asked"),
    Covered("query: no database yet", "yolocost query 'SELECT 1'", "database not found", 2,
            "tests/test_cli.py::test_query_without_a_database"),
    Covered("query: unknown named query", "yolocost query no_such_query", "unknown query 'no_such_query'", 2,
            "tests/test_cli.py::test_unknown_named_query"),
    Covered("load: mig_profile not a MIG profile", "MIG-3g.40gb", "mig_profile not a MIG profile", 2,
            "tests/test_cli.py::test_values_that_would_silently_vanish_are_refused"),
    Covered("load: energy NaN", "energy_mj NaN", "energy_mj holds 1 value(s) that are not a valid BIGINT", 2,
            "tests/test_cli.py::test_values_that_would_silently_vanish_are_refused"),
    Covered("load: gpu_index not a number", "gpu_index 'first'", "gpu_index holds 1 value(s) that are not a valid INTEGER",
            2, "tests/test_cli.py::test_values_that_would_silently_vanish_are_refused"),
    Covered("load: mAP as a percentage", "map50 = 62.17", "between 0 and 1", 2,
            "tests/test_cli.py::test_job_results_must_be_fractions"),
    Covered("load: project named like a bucket", "project '(unallocated)'", "reserved bucket name", 2,
            "tests/test_cli.py::test_reserved_bucket_names_are_refused_as_project_labels"),
    Covered("load: misspelt column", "jobs.parquet with `projekt`", "jobs.parquet: unknown column(s) projekt", 2,
            "tests/test_cli.py::test_a_misspelt_column_is_refused_not_loaded_as_nulls"),
    Covered("query: reading or writing other files", "yolocost query \"COPY (SELECT 42) TO 'leak.csv'\"",
            "(refused by DuckDB's sandbox)", 2, "tests/test_cli.py::test_read_only_query_cannot_touch_other_files"),
    Covered("query: MONTH parameter not YYYY-MM", "-p month=oct", "month: 'oct' is not a valid MONTH", 2,
            "tests/test_cli.py::test_month_parameter_is_checked_and_negative_numbers_stay_numbers_in_csv"),
    Covered("load: duplicate job rows", "job-1 twice in jobs.parquet", "duplicate rows for job job-1", 2,
            "tests/test_cli.py::test_duplicate_job_rows"),
    # tests/test_config.py
    *[Covered(f"config: {name}", example, message, 2,
              "tests/test_config.py::test_bad_config_names_file_key_and_problem_in_one_line")
      for name, example, message in [
          ("negative price", 'price_per_gpu_hour = "-1"', "prices[0].price_per_gpu_hour: must not be negative"),
          ("price not a number", 'price_per_gpu_hour = "abc"', "prices[0].price_per_gpu_hour: not a decimal"),
          ("price missing", "[[prices]] without price_per_gpu_hour", "prices[0].price_per_gpu_hour: missing"),
          ("unknown time zone", 'timezone = "Mars/Olympus"', "cluster.timezone: unknown time zone"),
          ("currency not three letters", 'currency = "dollars"', "cluster.currency"),
          ("grain not dividing an hour", "grain_seconds = 7", "ingest.grain_seconds"),
          ("grain crossing local midnight", "Asia/Kolkata with grain_seconds = 3600", "would cross local midnight"),
          ("threshold above 100 %", "busy_util_percent = 170", "thresholds.busy_util_percent: must be between 0"),
          ("idle threshold above busy", "idle_util_percent = 80", "idle_util_percent: must be below busy"),
          ("tag pattern not a regex", 'pattern = "(["', "tag_policy.pattern: not a valid RE2 regular expression"),
          ("tag pattern RE2 cannot run", "pattern = '^(?!latest).*$'", "tag_policy.pattern: not a valid RE2 regular expression"),
          ("price too large", 'price_per_gpu_hour = "1e15"', "prices[0].price_per_gpu_hour: must be below"),
          ("price of a million", "price_per_gpu_hour = 1000000", "must be below 1,000,000, got 1000000"),
          ("'*' as a GPU model", 'gpu_model = "*"', "prices[0].gpu_model: '*' is reserved"),
          ("infinite threshold", "breaker_loss_delta = inf", "thresholds.breaker_loss_delta: must be a finite number"),
          ("URL without a scheme", 'url = "localhost:9090"', "prometheus.url: must start with http"),
          ("URL port out of range", 'url = "http://127.0.0.1:190900"', "prometheus.url: Port out of range"),
          ("scrape interval not dividing the grain", "scrape_interval_seconds = 45", "does not divide the 300 s grain"),
          ("selector not label matchers", 'selector = "cluster=prod"', "prometheus.selector: must be label matchers"),
          ("unknown utilization source", 'utilization = "gpu"', "ingest.utilization: must be auto, dev or prof"),
          ("memory limit not an amount", 'memory_limit = "lots"', "database.memory_limit: must be an amount such as 3GB"),
          ("[reports] private not true or false", 'private = "yes"', "reports.private: must be true or false"),
          ("memory limit too small", 'memory_limit = "1KB"', "database.memory_limit: must be at least 128MB"),
          ("retries not whole", "retries = 2.5", "prometheus.retries: must be a whole number from 0 to 20, got 2.5"),
          ("concurrency not whole", "concurrency = 1.9", "prometheus.concurrency: must be a whole number from 1 to 32"),
          ("token variable not set", 'bearer_token_env = "UNSET"', "is not set"),
          ("user name without password", 'username = "ops"', "basic auth needs both"),
          ("two prices from one date", "two [[prices]] for A from 1970-01-01", "second price for 'A'"),
      ]],
    *[Covered(f"config: {name} outside its range", example, message, 2,
              "tests/test_config.py::test_a_number_outside_its_range_names_the_key_and_the_range")
      for name, example, message in [
          ("memory limit", 'memory_limit = "1001TB"', "database.memory_limit: must be at most 1000TB"),
          ("chunk hours", "chunk_hours = 0", "prometheus.chunk_hours: must be a whole number from 1 to 744"),
          ("scrape interval", "scrape_interval_seconds = 7200",
           "prometheus.scrape_interval_seconds: must be a whole number from 1 to 3600"),
          ("timeout", "timeout_seconds = 0.5", "prometheus.timeout_seconds: must be between 1 and 3600"),
          ("breaker loss delta", "breaker_loss_delta = 1e308", "thresholds.breaker_loss_delta: must be between 0 and 1000"),
      ]],
    Covered("config: a credential over plain http to this machine", 'url = "http://127.0.0.1:9090" with a token',
            "(accepted: loopback traffic never leaves the host)", 0,
            "tests/test_config.py::test_a_credential_over_tls_or_to_this_machine_is_accepted"),
    Covered("config: file not found", "--config nope.toml", "config file not found", 2,
            "tests/test_config.py::test_missing_config_file"),
    Covered("config: credential of several lines or words", "a token file of two lines", "holds more than one word or line",
            2, "tests/test_config.py::test_a_malformed_credential_is_refused_without_showing_it"),
    Covered("config: credential outside Latin-1", "a token with €", "outside Latin-1", 2,
            "tests/test_config.py::test_a_malformed_credential_is_refused_without_showing_it"),
    Covered("config: password in the URL", 'url = "http://alice:...@prom:9090"', "prometheus.url: holds a user name or password",
            2, "tests/test_config.py::test_credentials_in_the_url_are_refused_without_showing_them"),
    # tests/test_queries.py
    Covered("query: required parameter missing", "yolocost query top_idle_wasters", "needs --param month", 2,
            "tests/test_queries.py::test_missing_and_bad_parameters_are_clean_errors"),
    Covered("query: INTEGER parameter not a number", "-p limit=ten", "limit: 'ten' is not a valid INTEGER", 2,
            "tests/test_queries.py::test_missing_and_bad_parameters_are_clean_errors"),
    Covered("query: misspelt parameter", "-p limt=3", "has no parameter limt", 2,
            "tests/test_queries.py::test_missing_and_bad_parameters_are_clean_errors"),
    Covered("query: DOUBLE parameter nan or inf", "-p min_hours=nan", "is not a valid DOUBLE", 2,
            "tests/test_queries.py::test_missing_and_bad_parameters_are_clean_errors"),
    Covered("query: error raised while reading rows", "SELECT error('too late') ...", "query sql: Invalid Input Error: too late",
            2, "tests/test_queries.py::test_an_error_while_reading_rows_is_a_clean_error"),
    # tests/test_finance.py
    Covered("export finance: month without data", "--month 2026-04", "no usage data for 2026-04", 2,
            "tests/test_finance.py::test_command_writes_the_csv_and_reports_errors_in_one_line"),
    Covered("export finance: month not YYYY-MM", "--month march", "must read YYYY-MM", 2,
            "tests/test_finance.py::test_command_writes_the_csv_and_reports_errors_in_one_line"),
    Covered("export finance: --month missing", "yolocost export finance", "--month", 2,
            "tests/test_finance.py::test_command_writes_the_csv_and_reports_errors_in_one_line"),
    Covered("export finance: database missing", "--db none.duckdb", "database not found", 2,
            "tests/test_finance.py::test_missing_database_is_one_clear_error"),
    # tests/test_metrics.py
    Covered("load: GPU model without a price (no default)", "gpu_model H100", "H100", 2,
            "tests/test_metrics.py::test_unpriced_gpu_model_is_an_error_and_the_default_price_is_explicit"),
    # tests/report
    *[Covered(f"report: {name}", example, message, 2, "tests/report/test_report_cli.py::test_bad_input_is_one_line_and_exit_2")
      for name, example, message in [
          ("month not a month", "--month 2026-13", "must read YYYY-MM"),
          ("month without data", "--month 2026-12", "no data for 2026-12"),
          ("unknown project", "--audience project:nope", "no project 'nope'"),
          ("unknown audience", "--audience everyone", "is not admin, project:NAME or all"),
          ("unknown format", "--format docx", "'docx' is not one of html, pdf, summary, csv, index or all"),
          ("templates folder missing", "--templates no-such-folder", "templates folder not found"),
      ]],
    # tests/test_whatif.py
    *[Covered(f"whatif: {name}", example, message, 2,
              "tests/test_whatif.py::test_whatif_refuses_a_month_without_data_and_a_bad_limit")
      for name, example, message in [
          ("month without data", "--month 2026-04", "no data for 2026-04"),
          ("month not a month", "--month 2026-4", "must read YYYY-MM"),
          ("limit below 1", "--limit 0", "--limit: must be at least 1"),
      ]],
    Covered("config: policy value out of range", "idle_reclaim_minutes = 0", "policies.idle_reclaim_minutes: must be between",
            2, "tests/test_whatif.py::test_policies_config_is_validated_and_enters_the_month_fingerprint"),
    Covered("report: PDF without Pango", "WeasyPrint cannot load libpango", "apt-get install libpango-1.0-0", 2,
            "tests/report/test_report_cli.py::test_report_without_pango_says_how_to_install_it_and_stops"),
    Covered("report: template syntax error", "{% if %}", "actions.html:2: TemplateSyntaxError", 2,
            "tests/report/test_report_templates.py::test_a_broken_override_is_one_line_naming_its_file_and_line"),
    Covered("report: template names an unknown value", "{{ no_such_value.x }}", "actions.html:3: UndefinedError", 2,
            "tests/report/test_report_templates.py::test_a_broken_override_is_one_line_naming_its_file_and_line"),
    Covered("report: template includes a missing file", "{% include 'nope.html' %}", "TemplateNotFound: nope.html", 2,
            "tests/report/test_report_templates.py::test_a_broken_override_is_one_line_naming_its_file_and_line"),
    # tests/ingest/test_ingest_errors.py
    *[Covered(f"ingest: {name}", example, message, 2, f"tests/ingest/test_ingest_errors.py::{test}")
      for name, example, message, test in [
          ("nothing listening", "url of a closed port", "connection refused", "test_nothing_listening"),
          ("a web page, not Prometheus", "url of an intranet page", "does not answer like a Prometheus API",
           "test_http_server_that_is_not_prometheus"),
          ("HTTP 404 web server", "url without /api/v1", "HTTP 404, text/html", "test_http_server_that_is_not_prometheus"),
          ("JSON that is not the API's", '{"hello": "world"}', "HTTP 200, application/json",
           "test_http_server_that_is_not_prometheus"),
          ("wrong password", "password_env with a wrong password", "refused the credentials (HTTP 401)",
           "test_wrong_credentials"),
          ("password in the URL", "url = http://user:pw@...", "prometheus.url: holds a user name or password",
           "test_wrong_credentials"),
          ("--query.max-samples below one interval", "--query.max-samples=5", "too many samples",
           "test_max_samples_too_small_even_for_one_interval"),
          ("--query.timeout too small", "--query.timeout=1ms", "--query.timeout", "test_query_timeout_too_small"),
          ("scraped slower than configured", "scrape_interval_seconds = 15 on 30 s data",
           "hold a sample every 30 s", "test_scrape_slower_than_configured"),
          ("server lost stored intervals", "retention passed half the window", "would delete them",
           "test_stored_intervals_the_server_no_longer_holds_are_not_deleted"),
          ("series without UUID", "exporter without default labels", "carry no UUID label", "test_no_uuid_label"),
          ("energy counter missing", "no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
           "holds GPU utilization but no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION series", "test_missing_metric"),
          ("utilization missing", "no DCGM_FI_DEV_GPU_UTIL",
           "holds no DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE series", "test_missing_metric"),
          ("second ingest while one holds the lock", "two ingests at once", "another yolocost run holds yc.duckdb.lock",
           "test_second_ingest_refused_while_the_lock_is_held"),
      ]],
    # tests/test_monthly.py
    Covered("monthly: second run while one runs", "two crons at once", "holds yolocost.duckdb.lock", 2,
            "tests/test_monthly.py::test_second_run_is_refused_while_one_holds_the_lock"),
    Covered("monthly: Prometheus unreachable", "url of port 1", "error: cannot reach Prometheus", 2,
            "tests/test_monthly.py::test_failure_exits_non_zero_with_one_line"),
    # tests/bench
    *[Covered(f"bench matrix: {name}", example, message, 2, "tests/bench/test_matrix.py::test_bad_matrix_is_one_line")
      for name, example, message in [
          ("job id twice", "two [[run]] of one model", "job id lb-yolov8n appears twice"),
          ("model missing", "[[run]] without model", "run[2].model: missing"),
          ("unknown key", "epoch = 3", "run[2].epoch: unknown key"),
          ("wrong type", "epochs = '3'", "run[2].epochs: has the wrong type"),
          ("bad job id", "name = 'bad id'", "must be letters, digits"),
          ("unknown top-level key", "project = 'x' at the top", "project: unknown key"),
      ]],
    Covered("bench matrix: damaged run record", "yolocost-run.json holding {not json", "lb-yolov8n", 2,
            "tests/bench/test_matrix.py::test_matrix_runs_every_config_and_skips_finished_ones"),
    Covered("bench run: unknown model yaml", "--model yolov8x-nosuch.yaml", "--model yolov8x-nosuch.yaml: ", 2,
            "tests/bench/test_runner_recovery.py::test_bad_model_or_device_is_one_line_and_counts_no_attempt"),
    Covered("bench run: weights file as model", "--model yolov8n.pt", "downloads nothing", 2,
            "tests/bench/test_runner_recovery.py::test_bad_model_or_device_is_one_line_and_counts_no_attempt"),
    Covered("bench run: two devices", "--device 0,1", "one device per job", 2,
            "tests/bench/test_runner_recovery.py::test_bad_model_or_device_is_one_line_and_counts_no_attempt"),
    Covered("bench run: dataset missing", "--data with a download: URL", "data {data}", 2,
            "tests/bench/test_runner_recovery.py::test_missing_dataset_is_one_line_and_nothing_is_downloaded"),
    Covered("bench run: same job twice at once", "two runs of job busy", "bench run of job busy, pid", 2,
            "tests/bench/test_runner_recovery.py::test_a_second_process_on_the_same_job_is_refused"),
    Covered("bench run: metrics port in use", "--metrics-port of a bound port", "cannot serve metrics on", 2,
            "tests/bench/test_runner_recovery.py::test_a_port_in_use_is_one_line_and_counts_no_attempt"),
    Covered("bench run: the bench extra not installed (torch, ultralytics, matplotlib, ...)",
            "pip install yolocost without [bench]", "error: the benchmark runner needs the bench extra", 2,
            "tests/bench/test_without_torch.py::test_bench_run_without_the_extra_says_what_to_install_and_writes_nothing"),
    Covered("bench matrix: the bench extra not installed", "pip install yolocost without [bench]",
            "error: the benchmark runner needs the bench extra", 2,
            "tests/bench/test_without_torch.py::test_bench_matrix_without_the_extra_writes_nothing"),
    *[Covered(f"bench run: job label {name}", example, message, 2,
              "tests/bench/test_job_metrics.py::test_label_names_that_collide_are_one_clean_error")
      for name, example, message in [
          ("that is the job id", "[labels] project = 'job_id'", "project = 'job_id' is also the job id"),
          ("that is the UUID", "[labels] user = 'UUID'", "user = 'UUID' is also the runner's UUID label"),
          ("used twice", "project and user both 'team'", "'team' is also the label of project"),
          ("not a Prometheus label name", "[labels] project = '1team'", "cannot be served as a Prometheus label name"),
      ]],
    *[Covered(f"import-results: {name}", example, message, 2,
              "tests/bench/test_results_import.py::test_bad_input_changes_nothing")
      for name, example, message in [
          ("no results.csv", "a folder without results.csv", "no results.csv"),
          ("short line", "a line of 3 cells", "line 2 has 3 cells"),
          ("cell not a number", "abc in a loss column", "is not a number"),
          ("epoch twice", "epoch 1 on two lines", "epoch 1 appears twice"),
          ("mAP as a percentage", "metrics/mAP50(B) = 15.0", "fractions between 0 and 1"),
          ("run record not JSON", "yolocost-run.json holding {not json", "not a valid run record"),
          ("run record of the wrong shape", '"labels": null', "not a valid run record (labels is null, expected a JSON object)"),
          ("run record label not text", '"project": ["a"]', "expected a string or null"),
      ]],
    Covered("import-results: two folders of one job id", "a/train b/train", "are both job train", 2,
            "tests/bench/test_results_import.py::test_two_folders_with_one_job_id_are_refused"),
    # tests/test_secret_and_ca_files.py, tests/ingest/test_ingest_tls.py
    *[Covered(f"config: {name} not UTF-8", f"`{key}` holding Latin-1 bytes", "is not UTF-8 text", 2,
              "tests/test_secret_and_ca_files.py::test_a_secret_file_that_is_not_utf8")
      for name, key in [("credential file", "bearer_token_file"), ("password file", "password_file")]],
    Covered("config: `ca_file` missing", 'ca_file = "certs/prometheus-ca.pem" absent', "prometheus.ca_file: cannot read",
            2, "tests/test_secret_and_ca_files.py::test_a_missing_ca_file"),
    Covered("config: `ca_file` is a folder", 'ca_file = "certs"', "is a folder, not a file", 2,
            "tests/test_secret_and_ca_files.py::test_a_ca_file_that_is_a_folder"),
    Covered("ingest: CA bundle in the environment vs `ca_file`", "REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) = another CA",
            "(none: the ingest uses ca_file and succeeds)", 0,
            "tests/ingest/test_ingest_tls.py::test_ca_file_wins_over_a_ca_bundle_in_the_environment"),
    Covered("ingest: CA bundle in the environment vs `insecure_skip_verify`", "REQUESTS_CA_BUNDLE = another CA",
            "(none: verification stays off, the ingest succeeds)", 0,
            "tests/ingest/test_ingest_tls.py::test_insecure_skip_verify_wins_over_a_ca_bundle_in_the_environment"),
    Covered("ingest: wrong `ca_file`, right CA in the environment", "ca_file = another CA, REQUESTS_CA_BUNDLE = the right one",
            "CERTIFICATE_VERIFY_FAILED", 2,
            "tests/ingest/test_ingest_tls.py::test_a_wrong_ca_file_is_not_rescued_by_the_environment"),
    # tests/ingest/test_ingest_bad_answers.py
    *[Covered(f"ingest answer: {name}", example, message, 2,
              "tests/ingest/test_ingest_bad_answers.py::test_broken_answer_is_one_line_naming_the_server")
      for name, example, message in [
          ("HTTP body cut short", "Content-Length 4000, 40 bytes sent", "sent an incomplete answer"),
          ("JSON cut short", '{"status":"success","data":{"res', "sent an answer that is not valid JSON"),
          ("data.result not a list", '{"status":"success","data":{"result":"x"}}', "data.result is a string, not a list"),
          ("data a list where an object belongs", '{"status":"success","data":[]} from /api/v1/query',
           "data is a list, not an object"),
          ("data missing", '{"status":"success"}', "data is missing or null"),
          ("series without values", '{"result":[{"metric":{...}}]}', 'a series has missing or null as "values", not a list'),
          ("series not an object", '{"result":[[1,2]]}', 'a series is a list without a "metric" object'),
          ("label value not a string", 'series API [{"UUID": 7}]', "a label set is an object, not an object of strings"),
          ("series API answers an object", '{"status":"success","data":{"a":1}}',
           "data is an object, not a list of label sets"),
          ("metric names API answers numbers", '{"status":"success","data":[1]}', "not a list of names"),
          ("point not a pair", '"values": [[1]]', 'a point is not a [time, "value"] pair'),
          ("point time not a number", '"values": [["x", "1"]]', 'a point is not a [time, "value"] pair'),
          ("point off the query's steps", '"values": [[1.0, "1"]]', "on the query's steps"),
          ("bad point in training progress", 'yolocost_epoch_end_time_seconds answer [[1, "x"]]',
           'a point is not a [time, "value"] pair'),
      ]],
    Covered("load: a text column of another type", "jobs.parquet with a BLOB, DOUBLE, list or BOOLEAN project",
            "column; it must hold text", 2, "tests/test_cli.py::test_a_text_column_of_another_type_is_refused_naming_it"),
    Covered("query: RESET or PRAGMA of a setting in a read-only query", "-- x\\nRESET memory_limit",
            "the configuration has been locked", 2,
            "tests/test_cli.py::test_a_read_only_query_cannot_lift_its_memory_limit"),
    # tests/test_db_storage.py
    Covered("database: out of memory while committing", "Failed to commit: Failed to allocate ...",
            "DuckDB ran out of memory (", 2,
            "tests/test_db_storage.py::test_out_of_memory_while_committing_is_the_out_of_memory_line"),
    Covered("database: a SQLite file", "--db costs.db (SQLite) with build / load / query", "it is a SQLite database", 2,
            "tests/test_db_storage.py::test_a_file_that_is_no_duckdb_database"),
    Covered("database: a text file", "--db costs.db (CSV text)", "not a DuckDB database", 2,
            "tests/test_db_storage.py::test_a_file_that_is_no_duckdb_database"),
    Covered("database: damaged block during build", "64 bytes overwritten inside a gpu_usage block",
            "the database file is damaged (Corrupt database file", 2,
            "tests/test_db_storage.py::test_a_damaged_block_during_build"),
    Covered("database: damaged header when opened (build, query)", "64 bytes overwritten at the first database header",
            "the database file is damaged (Corrupt database file", 2,
            "tests/test_db_storage.py::test_a_damaged_header_when_the_database_is_opened"),
    Covered("database: disk full during load", "the sample month into a database on a small tmpfs",
            "disk full (no space left on device); nothing was changed", 2,
            "tests/test_db_storage.py::test_disk_full_during_load"),
    Covered("database: read-only folder around a writable database (build, load)",
            "file bind-mounted writable into a read-only tmpfs", "cannot write the database: its folder", 2,
            "tests/test_db_storage.py::test_read_only_folder_around_a_writable_database"),
    Covered("database: read-only folder around a writable database (ingest)", "as above",
            "cannot create the lock file yc.duckdb.lock", 2,
            "tests/test_db_storage.py::test_read_only_folder_around_a_writable_database"),
    Covered("database: older settings table", "settings without breaker_min_seconds, no prices table",
            "(none: build migrates, every mart as the current version builds it)", 0,
            "tests/test_db_storage.py::test_an_older_settings_table_is_migrated_by_build"),
    Covered("database: older raw table, trailing optional columns missing", "jobs without imgsz, batch",
            "(none: the columns are added, NULL in old rows)", 0,
            "tests/test_db_storage.py::test_an_older_table_with_trailing_optional_columns_missing_is_completed"),
    Covered("database: older raw table that cannot be completed", "gpu_usage without util_mean or mig_profile",
            "the database was written by an older yolocost", 2,
            "tests/test_db_storage.py::test_an_older_table_that_cannot_be_completed_is_refused"),
    *[Covered(f"database: DuckDB {name}", example, message, 2,
              "tests/test_db_storage.py::test_storage_errors_name_the_file_and_let_other_errors_through")
      for name, example, message in [
          ("fatal error", "FatalException, invalidated database", "DuckDB stopped on a fatal error"),
          ("serialization error", "SerializationException", "the database file is damaged"),
          ("I/O error", "IOException", "cannot read or write the database"),
      ]],
    # tests/bench/test_results_import_times.py
    *[Covered(f"import-results: results.csv time {name}", example, "is not a number of seconds", 2,
              "tests/bench/test_results_import_times.py::test_a_time_no_training_has_is_refused")
      for name, example in [("negative", "2,-5,..."), ("NaN", "2,nan,..."), ("infinite", "2,inf,... / 2,-inf,..."),
                            ("absurd", "2,1e300,... / 2,400000000,...")]],
    Covered("import-results: results.csv time empty, no run record", "2,,...",
            "has no time in results.csv and no run record", 2,
            "tests/bench/test_results_import_times.py::test_an_empty_time_with_no_run_record_still_says_which_epoch"),
    # output files: tests/test_outputs.py, tests/report/test_report_outputs.py, tests/test_demo.py
    Covered("output file: disk full", "export finance -o / query -o on a full file system", "cannot write: ", 2,
            "tests/test_outputs.py::test_a_full_disk_keeps_the_old_file_and_leaves_no_temporary_file"),
    Covered("output file: new file in a read-only folder", "query -o ro/new.csv", "cannot write: Read-only file system", 2,
            "tests/test_outputs.py::test_a_file_in_a_folder_that_allows_no_new_file_is_rewritten_in_place"),
    Covered("output file: folder without write permission", "query -o locked/new.csv", "cannot write: Permission denied",
            2, "tests/test_outputs.py::test_a_file_in_a_folder_that_allows_no_new_file_is_rewritten_in_place"),
    Covered("output file: path is a folder", "query -o .", "is a folder, not a file; give a file path", 2,
            "tests/test_outputs.py::test_a_folder_is_refused_in_one_line"),
    Covered("demo: --out folder not empty", "demo --out mine (holding a config and a database)",
            "folder is not empty", 2, "tests/test_demo.py::test_demo_refuses_a_folder_that_is_not_empty"),
    Covered("import-results: a stored job without --replace", "train3 imported twice",
            "give --replace to replace them", 2, "tests/bench/test_results_import.py::test_a_stored_job_is_not_replaced_without_replace"),
    Covered("import-results: a job whose labels are stored (an ingest)", "bench run folder of an ingested job",
            "keeping its stored labels", 0, "tests/bench/test_results_import.py::test_a_stored_jobs_labels_are_kept_without_replace"),
    Covered("report: template override that raises while rendering", "{{ 1/0 }}",
            "ZeroDivisionError while rendering: division by zero", 2,
            "tests/report/test_report_outputs.py::test_an_override_that_fails_names_its_file_and_line_and_writes_nothing"),
    Covered("report: template filter called wrongly", '{{ "x" | money(1, 2, 3) }}', "TypeError while rendering: ", 2,
            "tests/report/test_report_outputs.py::test_an_override_that_fails_names_its_file_and_line_and_writes_nothing"),
    Covered("report: month folder on a full disk (HTML)", "reports/ on a small tmpfs", "cannot write: ", 2,
            "tests/report/test_report_outputs.py::test_a_full_disk_leaves_the_earlier_set_and_no_temporary_file"),
    Covered("report: month folder on a full disk (PDF)", "reports/ on a small tmpfs, --format pdf",
            "cannot write: No space left on device", 2,
            "tests/report/test_report_outputs.py::test_a_full_disk_while_printing_pdfs_leaves_the_earlier_set"),
    Covered("report: month folder read-only", "reports/2026-10 on a read-only file system",
            "cannot write: Read-only file system", 2,
            "tests/report/test_report_outputs.py::test_a_read_only_month_folder_is_one_line"),
    Covered("report: month folder is a file", "reports/2026-10 a plain file",
            "cannot create the month's reports folder: File exists", 2,
            "tests/report/test_report_outputs.py::test_a_month_folder_that_is_a_file_is_one_line"),
    Covered("report: a folder where a file of the month folder goes", "reports/2026-10/summary.html a folder",
            "is a folder, not a file; move it away to write this report", 2,
            "tests/report/test_report_outputs.py::test_a_folder_where_a_file_of_the_set_goes_is_one_line_and_moves_nothing"),
    Covered("report: a symlink or FIFO planted in the month folder", "reports/2026-10/summary.html -> /elsewhere/file",
            "(replaced by the report; the file it points at is not touched)", 0,
            "tests/report/test_report_outputs.py::test_links_and_fifos_in_the_month_folder_are_replaced_never_written_through"),
    # load coverage: tests/test_load_coverage.py
    Covered("load: a span with holes where the database holds rows", "a folder of Oct 2 and Oct 29 only",
            "--window START END", 2, "tests/test_load_coverage.py::test_two_days_of_a_month_do_not_replace_the_days_between"),
    Covered("load: stored GPU-intervals the new data does not hold", "--window of a day, one host's rows",
            "holds no rows for", 2, "tests/test_load_coverage.py::test_window_of_a_partial_file"),
    Covered("load: rows outside --window", "--window 2026-10-10T12:00 2026-10-11 on a whole day",
            "usage row(s) outside the window", 2, "tests/test_load_coverage.py::test_window_of_a_partial_file"),
    Covered("load: --window empty", "--window 2026-10-11 2026-10-10", "--window is empty", 2,
            "tests/test_load_coverage.py::test_window_of_a_partial_file"),
    Covered("load: --window off the grain", "--window 2026-10-10T00:01 2026-10-11", "on the 300 s grain", 2,
            "tests/test_load_coverage.py::test_window_of_a_partial_file"),
    Covered("load: --window not a date", "--window yesterday 2026-10-11", "--window START must be an ISO date", 2,
            "tests/test_load_coverage.py::test_window_of_a_partial_file"),
    Covered("load: rows in the future", "one GPU's rows shifted ten years ahead", "usage row(s) in the future", 2,
            "tests/test_load_coverage.py::test_one_gpu_shifted_ten_years_is_refused"),
    Covered("load: rows of another cluster", "cluster 'other' in the usage rows", "usage row(s) of cluster 'other'", 2,
            "tests/test_load_coverage.py::test_rows_of_another_cluster_are_refused"),
    Covered("load: the database holds another cluster's rows", "[cluster] name = \"c2\" over c1's database",
            "a database holds one cluster", 2, "tests/test_load_coverage.py::test_a_database_holds_one_cluster"),
    Covered("ingest: a renamed [cluster] name", "name = \"u\" over cluster t's rows", "a database holds one cluster", 2,
            "tests/ingest/test_ingest_coverage.py::test_a_renamed_cluster_is_refused"),
    Covered("load: a day shifted off the grain", "interval_start + 1 minute", "interval_start not on the 300 s grain", 2,
            "tests/test_load_coverage.py::test_bad_rows_are_named_before_any_loss"),
    # ingest coverage and metric stores: tests/ingest/test_ingest_coverage.py, test_ingest_stores.py, test_ingest_errors.py
    Covered("ingest: a selector that leaves out a stored GPU", 'selector with UUID!="GPU-bbb"',
            "returned no samples for 12 stored usage row(s)", 2,
            "tests/ingest/test_ingest_coverage.py::test_a_selector_that_leaves_out_a_gpu_is_refused"),
    Covered("ingest: scraped faster than configured", "scrape_interval_seconds = 60 on 30 s data",
            "hold a sample every 30 s", 2, "tests/ingest/test_ingest_stores.py::test_scrape_interval_configured_60_data_30"),
    Covered("ingest: the grain queries' scrape steps hold fewer than half a series' raw samples",
            "a store answering otherwise than measured", "answers the grain queries otherwise than its ranges were measured",
            2, "tests/ingest/test_ingest_stores.py::test_a_store_answering_otherwise_than_measured_stops_the_ingest"),
    Covered("ingest: samples of a job-info, MIG or shared GPU stamped so late that two share a scrape step",
            "every tenth scrape 10 ms late, 3 ms before a step boundary", "12 samples (360 GPU-seconds) of 1 shared, MIG "
            "or job-info GPU(s)", 2,
            "tests/ingest/test_ingest_dcgm_modes.py::test_late_scrapes_on_a_joined_gpu_stop_the_ingest_naming_it"),
    Covered("ingest: both spellings of the GPU's UUID label in one window", "UUID and uuid (--use-old-namespace)",
            "name GPUs by UUID on some hosts and by uuid", 2,
            "tests/ingest/test_ingest_dcgm_modes.py::test_both_uuid_spellings_in_one_window_are_refused"),
    Covered("ingest: a window in an archived month", "July archived, ingest July 31 to August 2",
            "the window: 2026-07 is archived", 2,
            "tests/test_months.py::test_an_ingest_into_an_archived_month_is_refused_before_anything_is_fetched"),
    Covered("ingest: a window whose first interval has not ended", "--start at the current 5-minute interval",
            "has not ended yet: nothing to ingest before", 2,
            "tests/ingest/test_ingest_errors.py::test_a_window_whose_first_interval_has_not_ended"),
    Covered("ingest: no samples to measure the store on", "a window after the data (VictoriaMetrics)",
            "(a notice: could not measure how URL bounds ranges; judged from a subquery)", 0,
            "tests/ingest/test_ingest_stores.py::test_no_samples_to_measure_on_is_said"),
    Covered("ingest: second ingest while one runs", "a first ingest stuck on a silent server",
            "another yolocost run holds yc.duckdb.lock", 2,
            "tests/ingest/test_ingest_errors.py::test_second_ingest_refused_while_one_runs"),
    # servers that fail or answer in part: tests/ingest/test_ingest_transport.py
    *[Covered(name, example, message, status, f"tests/ingest/test_ingest_transport.py::{test}")
      for name, example, message, status, test in [
          ("ingest: a partial response (a shard or replica did not answer)",
           '"warnings": ["partial response: store ... unavailable"]', "with a partial response", 2,
           "test_partial_response_stops_the_ingest"),
          ("ingest: a partial response with accept_partial_responses = true", "the same answers",
           "(billed; the client keeps the warnings for a warning line)", 0,
           "test_accepted_partial_responses_are_billed_and_kept_for_the_caller"),
          ("config: accept_partial_responses not true or false", 'accept_partial_responses = "yes"',
           "prometheus.accept_partial_responses: must be true or false", 2,
           "test_accept_partial_responses_must_be_a_boolean"),
          ("ingest: a server that accepts connections and never answers", "query_range held, timeout_seconds = 1",
           "did not answer within 1 s (after 2 attempt(s))", 2,
           "test_an_ingest_against_a_server_that_never_answers_its_queries_ends_in_bounded_time"),
          ("ingest: HTTP 429 on every attempt (an HTML page, Retry-After)", "a rate limiter in front of the store",
           "is rate-limiting requests (HTTP 429)", 2, "test_an_ingest_rate_limited_on_every_attempt_stops_with_one_line"),
          ("ingest: HTTP 429 before the answers", "429 with an HTML page and Retry-After: 1, then the answer",
           "(retried after the pause Retry-After asks for: the same rows)", 0,
           "test_an_ingest_behind_a_rate_limiter_gets_every_row"),
      ]],
    # a month built with another config, and archived months (tests/test_stale_months.py)
    Covered("report, export, whatif, query: a month built in another currency", 'currency = "EUR" after a USD build',
            "was built with {changed}: its stored figures", 2,
            "tests/test_stale_months.py::test_a_month_built_with_another_config_is_refused_and_nothing_is_written"),
    Covered("report, whatif, export: an archived month after a currency change", 'October archived in USD, now "EUR"',
            "(shown as built, labelled USD, with a note saying so)", 0,
            "tests/test_stale_months.py::test_an_archived_month_is_shown_as_built_in_its_own_currency"),
    # yolocost estimate and bench run --max-cost
    Covered("estimate: unknown option", "yolocost estimate --model-type yolov8m --bogus 1",
            "No such option '--bogus'", 2, "tests/test_estimate.py::test_bad_options_are_one_line"),
    Covered("estimate: no model type", "yolocost estimate", "Missing option '--model-type'", 2,
            "tests/test_estimate.py::test_bad_options_are_one_line"),
    Covered("estimate: a count that is not a whole number above 0", "yolocost estimate --model-type yolov8m --gpus two",
            "--gpus: 'two' is not a whole number above 0", 2, "tests/test_estimate.py::test_bad_options_are_one_line"),
    Covered("estimate: an empty label", "yolocost estimate --model-type ' '", "--model-type: empty", 2,
            "tests/test_estimate.py::test_bad_options_are_one_line"),
    Covered("estimate: database file missing", "yolocost --db none.duckdb estimate --model-type yolov8m",
            "database not found", 2, "tests/test_estimate.py::test_a_missing_database_is_one_line"),
    Covered("estimate: no comparable finished run", "yolocost estimate --model-type yolo26n",
            "(a message, no error: no finished run of yolo26n or of its family yolo26 in the database)", 0,
            "tests/test_estimate.py::test_no_history_is_exit_0_with_a_message"),
    Covered("bench run: upper estimate above --max-cost", "yolocost bench run ... --max-cost 10",
            "above --max-cost", 2, "tests/test_estimate.py::test_bench_run_prints_the_estimate_and_max_cost_refuses"),
    Covered("bench run: --max-cost without an estimate", "--max-cost 1000 with no database",
            "--max-cost: no database at", 2,
            "tests/test_estimate.py::test_bench_run_prints_the_estimate_and_max_cost_refuses"),
    Covered("bench run: --max-cost not an amount", "--max-cost ten", "--max-cost: 'ten' is not an amount above 0", 2,
            "tests/test_estimate.py::test_bench_run_prints_the_estimate_and_max_cost_refuses"),
]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code in a table cell; a backtick inside gets a double-backtick span."""
    text = _cell(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def table_rows() -> list[str]:
    rows = [
        f"| {_cell(c.name)} | {_code('yolocost ' + ' '.join(_quote(a) for a in c.argv))}"
        f"{' (' + _cell(c.given) + ')' if c.given else ''} | {_code(c.message)} | {c.status} | `{HERE}::test_case` |"
        for c in CASES
    ]
    rows += [f"| {_cell(c.name)} | {_code(c.example)} | {_code(c.message)} | {c.status} | `{c.test}` |"
             for c in ELSEWHERE]
    return ["| Class | Example | Message (fragment) | Exit | Tested in |", "|---|---|---|---|---|", *rows]


def _quote(arg: str) -> str:
    return f"'{arg}'" if not arg or any(ch in arg for ch in " \"$*;()") else arg


def rendered_doc(current: str) -> str:
    """docs/errors.md with the table between its markers rewritten from CASES and ELSEWHERE."""
    head, _, rest = current.partition(BEGIN)
    _, _, tail = rest.partition(END)
    count = f"\n{len(CASES) + len(ELSEWHERE)} classes.\n\n"
    return head + BEGIN + count + "\n".join(table_rows()) + "\n" + END + tail


def test_the_errors_table_is_current():
    current = DOC.read_text(encoding="utf-8")
    assert BEGIN in current and END in current
    assert current == rendered_doc(current), "docs/errors.md is stale: run python tests/test_bad_input.py --write"


def test_there_are_at_least_100_classes_and_each_names_a_real_test():
    assert len(CASES) + len(ELSEWHERE) >= 100
    names = [c.name for c in CASES] + [c.name for c in ELSEWHERE]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    for covered in ELSEWHERE:
        path, _, function = covered.test.partition("::")
        source = (ROOT / path).read_text(encoding="utf-8")
        defined = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
        assert function in defined, covered.test
        if not covered.message.startswith("("):  # "(...)": a behaviour, not a message text
            assert covered.message in source or covered.message in _unescaped(source), (covered.name, covered.test)


def _unescaped(source: str) -> str:
    """The file's text with Python string escapes read (a message written as \\u20ac)."""
    return source.encode("utf-8").decode("unicode_escape", errors="ignore")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_bad_input.py --write   (rewrites the table in docs/errors.md)")
    DOC.write_text(rendered_doc(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {len(CASES) + len(ELSEWHERE)} classes into {DOC}")
