"""`yolocost ingest` against a Prometheus that cannot serve it: one clear line, exit 2, nothing written.

Every case starts from a database holding a good ingest of the window (a copy of it), runs
the real CLI in a subprocess, and checks that the stderr ends in exactly one `error:` line,
the exit status is 2 (not 1, no traceback), and the database file and every table and mart
are exactly what they were.
"""

from __future__ import annotations

import datetime as dt

import http.server
import os
import re
import socket
import threading
import time

import pytest

from yolocost import db as ydb

from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

# ---- 1. nothing there


def test_nothing_listening(yc, prior_db):
    port = h.free_port()
    config = yc.config(f"http://127.0.0.1:{port}")
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db)
    h.assert_one_line_error(result, f"cannot reach Prometheus at http://127.0.0.1:{port}", "connection refused",
                            "after 2 attempt(s)")


def test_a_window_whose_first_interval_has_not_ended(yc, prior_db):
    """Nothing has happened yet: said as such, before any server is asked (the exporter is
    not to blame)."""
    port = h.free_port()
    config = yc.config(f"http://127.0.0.1:{port}")
    if time.time() % 300 > 280:  # the interval must not end while the CLI starts
        time.sleep(300 - time.time() % 300 + 1)
    now = dt.datetime.now(dt.timezone.utc)
    start = now.replace(second=0, microsecond=0) - dt.timedelta(minutes=now.minute % 5)
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db, start=start, end=start + dt.timedelta(hours=1))
    h.assert_one_line_error(result, "the window's first 300 s interval", "has not ended yet: nothing to ingest before")


# ---- 2. something that is not Prometheus


class _NotPrometheus(http.server.BaseHTTPRequestHandler):
    status, body, content_type = 200, b"", "text/html"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_POST = _answer

    def log_message(self, *args):  # keep pytest's output clean
        pass


HTML = b"<!doctype html><html><head><title>Intranet</title></head><body><h1>Welcome</h1></body></html>"


@pytest.mark.parametrize("status, body, content_type, kind", [
    (200, HTML, "text/html; charset=utf-8", "HTTP 200, text/html"),  # a plain web page
    (404, HTML, "text/html", "HTTP 404, text/html"),  # a web server without /api/v1 at all
    (200, b'{"hello": "world"}', "application/json", "HTTP 200, application/json"),  # JSON, not the API's
], ids=["html", "html-404", "other-json"])
def test_http_server_that_is_not_prometheus(yc, prior_db, status, body, content_type, kind):
    handler = type("Handler", (_NotPrometheus,), {"status": status, "body": body, "content_type": content_type})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with h.unchanged(prior_db):
            result = yc.ingest(yc.config(url), prior_db)
    finally:
        server.shutdown()
        server.server_close()
    h.assert_one_line_error(result, f"{url} does not answer like a Prometheus API", kind, "[prometheus] url")


# ---- 3. basic auth

WRONG = "not-the-Pa55word-8472"


@pytest.fixture(scope="module")
def secured(backfilled):
    """A Prometheus that requires basic auth (the harness' test user and password)."""
    with h.serve(backfilled("full"), auth=True) as server:
        yield server


@pytest.mark.parametrize("how", ["password_env", "password_in_url", "no_credentials"])
def test_wrong_credentials(yc, prior_db, secured, how):
    port = secured.url.rsplit(":", 1)[1]
    env = {}
    if how == "password_env":
        config = yc.config(secured.url, prometheus=f'username = "{h.AUTH_USER}"\npassword_env = "YC_TEST_PROM_PASSWORD"')
        env["YC_TEST_PROM_PASSWORD"] = WRONG
    elif how == "password_in_url":
        config = yc.config(f"http://{h.AUTH_USER}:{WRONG}@127.0.0.1:{port}")
    else:
        config = yc.config(secured.url)
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db, env=env, debug=True)
    if how == "password_in_url":  # credentials belong in env or a file, never in the config file
        h.assert_one_line_error(result, "prometheus.url: holds a user name or password")
    else:
        h.assert_one_line_error(result, f"Prometheus at http://127.0.0.1:{port} refused the credentials (HTTP 401)")
    assert WRONG not in result.stdout + result.stderr


@pytest.mark.parametrize("how", ["password_env", "password_file"])
def test_right_credentials(yc, good_db, tmp_path, secured, how):
    if how == "password_env":
        config = yc.config(secured.url, prometheus=f'username = "{h.AUTH_USER}"\npassword_env = "YC_TEST_PROM_PASSWORD"')
    else:
        (tmp_path / "secret").write_text(h.AUTH_PASSWORD + "\n")
        config = yc.config(secured.url, prometheus=f'username = "{h.AUTH_USER}"\npassword_file = "secret"')
    db = tmp_path / "auth.duckdb"
    result = yc.ingest(config, db, env={"YC_TEST_PROM_PASSWORD": h.AUTH_PASSWORD}, debug=True)
    h.assert_ok(result)
    assert h.AUTH_PASSWORD not in result.stdout + result.stderr
    # the same rows as the unauthenticated server gives (loads names the server: skipped)
    assert h.snapshot(db, skip=("loads",)) == h.snapshot(good_db, skip=("loads",))


# ---- 4. --query.max-samples


def test_max_samples_too_small_even_for_one_interval(yc, prior_db, prometheus):
    server = prometheus(flags=["--query.max-samples=5"])  # less than the 10 steps of one interval
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(server.url), prior_db)
    h.assert_one_line_error(result, f"Prometheus at {server.url}", "too many samples",
                            "even a single 300 s interval is too much", "--query.max-samples")


@pytest.mark.parametrize("max_samples", [200, 100])
def test_max_samples_splits_chunks_and_keeps_the_rows(yc, good_db, tmp_path, prometheus, max_samples):
    """Limits that refuse the 3-hour chunk but take smaller ones (100 needs several splits): same rows."""
    server = prometheus(flags=[f"--query.max-samples={max_samples}"])
    db = tmp_path / "split.duckdb"
    result = yc.ingest(yc.config(server.url), db)
    h.assert_ok(result)
    split = re.search(r"(\d+) chunk\(s\) split", result.stderr)
    assert split and int(split.group(1)) >= 1, result.stderr
    assert "server refused" in result.stderr
    if max_samples == 100:
        assert int(split.group(1)) >= 2, result.stderr
    assert h.query(db, "SELECT * FROM gpu_usage ORDER BY ALL") == h.query(good_db, "SELECT * FROM gpu_usage ORDER BY ALL")
    assert h.snapshot(db, skip=("loads",)) == h.snapshot(good_db, skip=("loads",))


# ---- 5. --query.timeout


def test_query_timeout_too_small(yc, prior_db, prometheus):
    server = prometheus(flags=["--query.timeout=1ms"])  # the smallest duration Prometheus accepts
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(server.url), prior_db)
    line = h.assert_one_line_error(result, f"Prometheus at {server.url}")
    # Prometheus reports a query over its deadline as errorType "timeout" ("query timed out in
    # expression evaluation") or, when the deadline hits while it expands series, as errorType
    # "execution" ("context deadline exceeded"); which one is a race inside the server.
    assert re.search(r"timed out|deadline exceeded", line), line
    assert "--query.timeout" in line, line  # both kinds are read as "too slow": the hint names the limit


# ---- 5b. dcgm-exporter scraped less often than configured


def test_scrape_slower_than_configured(yc, prior_db, prom):
    """The data hold a sample every 30 s; configured as 15 s, half of each interval's 15 s
    steps have no sample, so present seconds would come out halved: refused."""
    config = yc.config(prom.url, prometheus="scrape_interval_seconds = 15")
    with h.unchanged(prior_db):
        result = yc.ingest(config, prior_db)
    h.assert_one_line_error(result, "hold a sample every 30 s", "scrape_interval_seconds = 15")
    # judged from the fetched rows, before any database is opened: none is created
    absent = prior_db.with_name("absent.duckdb")
    h.assert_one_line_error(yc.ingest(config, absent), "scrape_interval_seconds = 15")
    assert not absent.exists()


# ---- 6. a metric missing entirely


def test_stored_intervals_the_server_no_longer_holds_are_not_deleted(yc, prior_db, prometheus, tmp_path):
    """The database holds the whole hour; this server only its second half (as a Prometheus
    whose retention has passed the first): replacing the window would delete 30 minutes of
    stored usage, so it is refused. Into an empty database the same server's data go, with
    a warning that the window starts later."""
    server = prometheus("second_half_only")
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(server.url), prior_db)
    first = h.DATA_START.strftime("%Y-%m-%dT%H:%MZ")
    last = (h.DATA_START + dt.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%MZ")
    h.assert_one_line_error(result, "returned no samples for 12 stored usage row(s) (1.00 GPU-hours) of 2 GPUs "
                            f"(GPU-aaa, GPU-bbb) on 1 host (h1) from {first} to {last}", "would delete them",
                            "retention shorter than the window")
    empty = tmp_path / "empty.duckdb"
    result = yc.ingest(yc.config(server.url), empty)
    h.assert_ok(result)
    assert "warning: Prometheus at" in result.stderr and "the window's figures start there" in result.stderr
    assert h.query(empty, "SELECT count(*) FROM gpu_usage") == [(12,)]


def test_no_uuid_label(yc, prior_db, prometheus):
    """Series that name no GPU would give no rows at all: a misconfigured exporter, refused."""
    server = prometheus("no_uuid")
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(server.url), prior_db)
    h.assert_one_line_error(result, f"series at {server.url} carry no UUID label", "dcgm-exporter's default labels")


@pytest.mark.parametrize("variant, needles", [
    ("no_energy", ["holds GPU utilization but no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION series",
                   "dcgm-exporter's counters file"]),
    ("no_util", ["holds no DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE series",
                 "is dcgm-exporter scraped there?"]),
])
def test_missing_metric(yc, prior_db, prometheus, variant, needles):
    server = prometheus(variant)
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(server.url), prior_db)
    h.assert_one_line_error(result, f"Prometheus at {server.url}", *needles,
                            h.iso(h.WINDOW_START)[:16] + "Z", h.iso(h.WINDOW_END)[:16] + "Z")


# ---- 7. one ingest at a time


def test_second_ingest_refused_while_the_lock_is_held(yc, prior_db, prom):
    config = yc.config(prom.url)
    with ydb.exclusive(prior_db, "ingest"):  # as another yolocost process would hold it
        with h.unchanged(prior_db):
            result = yc.ingest(config, prior_db)
    h.assert_one_line_error(result, f"{prior_db}: another yolocost run holds yc.duckdb.lock",
                            f"(ingest, pid {os.getpid()})", "wait for it to finish")
    h.assert_ok(yc.ingest(config, prior_db))  # released: the next one runs


def test_second_ingest_refused_while_one_runs(yc, prior_db, prom):
    """A real first ingest, stuck on a server that accepts connections and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshakes; nobody ever reads or answers
        stuck = yc.config(f"http://127.0.0.1:{silent.getsockname()[1]}", prometheus="timeout_seconds = 60")
        first = yc.popen(stuck, prior_db)
        try:
            lock = prior_db.with_name(prior_db.name + ".lock")
            h.wait_for(lambda: lock.exists() and f"pid {first.pid}" in lock.read_text(),
                       what="the first ingest to take the lock")
            assert first.poll() is None
            with h.unchanged(prior_db):
                second = yc.ingest(yc.config(prom.url), prior_db)
            h.assert_one_line_error(second, "another yolocost run holds yc.duckdb.lock",
                                    f"(ingest, pid {first.pid})")
        finally:
            h.kill_and_reap(first)
    # killed with SIGKILL, the first run's lock went with it
    h.assert_ok(yc.ingest(yc.config(prom.url), prior_db))
