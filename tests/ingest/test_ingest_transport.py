"""What lies between yolocost and the store: partial answers, a server that never answers,
rate limiters and gateways.

Each case runs against a real HTTP server on 127.0.0.1: a relay in front of the real
Prometheus of the fixture hour that changes or holds some of its answers (no real
Prometheus can be made to send a partial-response warning, a 429 or to hang, so the relay
adds them), or a socket that accepts connections and never answers. Every server and every
request is bounded in time.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.server
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Callable, Iterator

import pytest

from yolocost.config import PrometheusConfig, load_config
from yolocost.errors import ConfigError
from yolocost.promclient import (MAX_RETRY_AFTER, NoAnswer, PartialResponse, PrometheusClient, PrometheusError,
                                 QueryTooBig, is_partial_warning, retry_after)
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

HOLD_SECONDS = 60  # the longest a relay holds a request it never answers (it is stopped sooner)
HTML_429 = b"<html><head><title>429 Too Many Requests</title></head><body><h1>Slow down</h1></body></html>"

# What a request gets: (status, headers, body) or None to hold it unanswered
Respond = Callable[[str, str, bytes], "tuple[int, dict[str, str], bytes] | None"]


# ---- loopback servers


@contextlib.contextmanager
def serve(respond: Respond) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering each request with `respond(method, path, body)`;
    yields its URL. Requests it holds are let go (closed unanswered) when it stops."""
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer = respond(self.command, self.path, body)
            if answer is None:
                stop.wait(HOLD_SECONDS)
                self.close_connection = True
                return
            status, headers, data = answer
            self.send_response(status)
            for name, value in {"Content-Length": str(len(data)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args):  # keep pytest's output clean
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def forward(upstream: str, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    """The real server's answer to the same request."""
    request = urllib.request.Request(upstream + path, data=body if method == "POST" else None, method=method)
    if method == "POST":
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, {"Content-Type": r.headers.get("Content-Type", "")}, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {"Content-Type": exc.headers.get("Content-Type", "")}, exc.read()


def relay(upstream: str, alter: Callable[[str, dict], None]) -> Respond:
    """Forwards to `upstream`; `alter(path, answer)` may change each successful JSON answer."""
    def respond(method: str, path: str, body: bytes):
        status, headers, data = forward(upstream, method, path, body)
        if status == 200:
            answer = json.loads(data)
            alter(path.split("?")[0], answer)
            data = json.dumps(answer).encode()
        return status, headers, data
    return respond


@contextlib.contextmanager
def silent_socket() -> Iterator[str]:
    """A port that accepts connections (the kernel completes the handshakes) and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


def rows(db) -> list[tuple]:
    return h.query(db, "SELECT * FROM gpu_usage ORDER BY ALL")


def client(url: str, slept: list[float], **settings) -> PrometheusClient:
    """A client whose pauses are recorded in `slept` instead of slept."""
    return PrometheusClient(PrometheusConfig(url=url, **settings), sleep=slept.append)


VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


def fixed(status: int, body: bytes, headers: dict[str, str] | None = None) -> Respond:
    return lambda method, path, data: (status, {"Content-Type": "application/json", **(headers or {})}, body)


# ---- 8. partial responses

THANOS = "No StoreAPIs matched for this query"
PARTIAL = "partial response: store 10.0.0.3:10901 unavailable: rpc error: code = Unavailable"
INFO = ('PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: '
        '"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" (1:10)')


@pytest.mark.parametrize("warning, partial", [
    (THANOS, True),
    (PARTIAL, True),
    ("receive series from Addr: 10.0.0.4:10901 LabelSets: {replica=\"b\"}: rpc error: code = DeadlineExceeded", True),
    ("something no store documents", True),  # unknown: the bill must not be made of it silently
    (INFO, False),
    ("PromQL warning: encountered a mix of histograms and floats for metric name \"x\" (1:1)", False),
])
def test_which_warnings_mean_missing_data(warning, partial):
    assert is_partial_warning(warning) is partial


def partial_answers(extra: dict) -> Callable[[str, dict], None]:
    """Adds `extra` (e.g. warnings) to every query and series answer, as a querier does when a
    shard or replica did not answer."""
    def alter(path: str, answer: dict) -> None:
        if path in ("/api/v1/query", "/api/v1/query_range", "/api/v1/series", "/api/v1/label/__name__/values"):
            answer.update(extra)
    return alter


def test_partial_response_stops_the_ingest(yc, prior_db, prom):
    """A relay in front of the real fixture Prometheus adds a Thanos-style warning to every
    query and series answer: refused with one line naming the warning and the server, before
    the database is touched."""
    with serve(relay(prom.url, partial_answers({"warnings": [PARTIAL, INFO]}))) as url:
        with h.unchanged(prior_db):
            result = yc.ingest(yc.config(url), prior_db)
    h.assert_one_line_error(result, f"Prometheus at {url} answered /api/v1/", "with a partial response",
                            PARTIAL, "accept_partial_responses = true")


def test_accepted_partial_responses_are_billed_and_kept_for_the_caller(yc, good_db, tmp_path, prom):
    """With accept_partial_responses = true the same answers are billed (here they were whole,
    so the rows are the good ones); the ingest says they were partial and keeps the warning
    for the reports (`ingest_notes`)."""
    with serve(relay(prom.url, partial_answers({"warnings": [PARTIAL, INFO]}))) as url:
        db = tmp_path / "accepted.duckdb"
        accepted = yc.ingest(yc.config(url, prometheus="accept_partial_responses = true"), db)
        h.assert_ok(accepted)
        assert f"warning: Prometheus at {url} answered with a partial response" in accepted.stderr
        # kept for the reports: one row for the window, with the store's first warning
        assert h.query(db, "SELECT kind, detail FROM ingest_notes") == [("partial", PARTIAL)]
        slept: list[float] = []
        c = client(url, slept, accept_partial_responses=True)
        assert c.series("DCGM_FI_DEV_GPU_UTIL", h.WINDOW_START.timestamp(), h.WINDOW_END.timestamp())
        c.query("vector(1)", h.WINDOW_END.timestamp())
        assert c.warnings == [PARTIAL]  # once, and the info annotation is no partial answer
        assert PARTIAL in c.partial_note() and "accept_partial_responses" in c.partial_note()
        with pytest.raises(PartialResponse):
            client(url, slept).query("vector(1)", h.WINDOW_END.timestamp())
    assert rows(db) == rows(good_db)


def test_promql_annotations_do_not_stop_a_whole_answer(yc, good_db, tmp_path, prom):
    """Prometheus 2.4x sends info annotations under `warnings`, 3.x under `infos`: remarks on
    the query, not missing data, so the ingest runs as without them."""
    with serve(relay(prom.url, partial_answers({"warnings": [INFO], "infos": [INFO]}))) as url:
        db = tmp_path / "annotated.duckdb"
        h.assert_ok(yc.ingest(yc.config(url), db))
    assert rows(db) == rows(good_db)


def test_victoriametrics_is_partial_flag():
    """VictoriaMetrics cluster marks an answer some storage nodes missed with "isPartial": true."""
    body = json.dumps({"status": "success", "isPartial": True,
                       "data": {"resultType": "vector", "result": []}}).encode()
    with serve(fixed(200, body)) as url:
        with pytest.raises(PartialResponse, match="isPartial"):
            client(url, []).query("up", 0)
        accepting = client(url, [], accept_partial_responses=True)
        assert accepting.query("up", 0) == [] and accepting.warnings


def test_accept_partial_responses_must_be_a_boolean(tmp_path):
    path = tmp_path / "yolocost.toml"
    path.write_text('[prometheus]\naccept_partial_responses = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="prometheus.accept_partial_responses: must be true or false"):
        load_config(path)
    path.write_text("[prometheus]\naccept_partial_responses = true\n", encoding="utf-8")
    assert load_config(path).prometheus.accept_partial_responses is True
    assert PrometheusConfig().accept_partial_responses is False


# ---- 9. a server that never answers


def test_a_silent_server_is_retried_then_no_answer_not_too_big():
    """No byte of answer is no sign of a big query: retried like other transient failures,
    then NoAnswer (which the ingest does not split on), within (retries + 1) x timeout."""
    slept: list[float] = []
    with silent_socket() as url:
        began = time.monotonic()
        with pytest.raises(PrometheusError) as info:
            client(url, slept, timeout_seconds=1, retries=2).query_range("up", 0, 300, 15)
        took = time.monotonic() - began
    assert isinstance(info.value, NoAnswer) and not isinstance(info.value, QueryTooBig)
    assert f"Prometheus at {url} did not answer within 1 s (after 3 attempt(s))" in str(info.value)
    assert "\n" not in str(info.value)
    assert slept == [0.5, 1.0]
    assert 3 <= took < 3 + 5, took  # three attempts of 1 s (the pauses were recorded, not slept)


def test_an_ingest_against_a_server_that_never_answers_its_queries_ends_in_bounded_time(yc, prior_db, prom):
    """The server answers discovery but holds every query_range (as a store stuck on its
    queries would): no chunk is split, the ingest stops within the documented bound, (retries
    + 1) x timeout_seconds plus the pauses for the first request without answer (requests in
    flight then are waited for, at most as long again), plus what the answered requests took."""
    held: list[str] = []

    def respond(method: str, path: str, body: bytes):
        if path.startswith("/api/v1/query_range"):
            held.append(path)
            return None
        return forward(prom.url, method, path, body)

    with serve(respond) as url:
        began = time.monotonic()
        with h.unchanged(prior_db):
            result = yc.ingest(yc.config(url, prometheus="timeout_seconds = 1"), prior_db)
        took = time.monotonic() - began
    h.assert_one_line_error(result, f"Prometheus at {url} did not answer within 1 s (after 2 attempt(s))",
                            "timeout_seconds")
    assert "splitting it" not in result.stderr and "even a single" not in result.stderr, result.stderr
    assert held
    bound = 2 * ((1 + 1) * 1 + 0.5)  # retries = 1 in the harness' config
    assert took < bound + 30, (took, result.stderr)  # + the start of the CLI and the answered requests


def test_a_prometheus_timeout_answer_is_too_big_and_not_retried():
    """Splitting is for answers that say so: Prometheus' own timeout (HTTP 503, errorType
    "timeout") is QueryTooBig at once, not retried as an unavailable server."""
    body = json.dumps({"status": "error", "errorType": "timeout",
                       "error": "query timed out in expression evaluation"}).encode()
    slept: list[float] = []
    with serve(fixed(503, body)) as url:
        with pytest.raises(QueryTooBig, match="query timed out"):
            client(url, slept, retries=3).query_range("up", 0, 300, 15)
    assert slept == []


# ---- 10. rate limiters and gateways


def limited_then(good: Respond, failures: int, status: int = 429, headers: dict[str, str] | None = None,
                 body: bytes = HTML_429) -> Respond:
    """`failures` answers of `status` with an HTML page (a proxy's), then `good`'s."""
    count = [0]

    def respond(method: str, path: str, data: bytes):
        count[0] += 1
        if count[0] <= failures:
            return status, {"Content-Type": "text/html", **(headers or {})}, body
        return good(method, path, data)
    return respond


def test_429_with_html_and_retry_after_is_retried():
    slept: list[float] = []
    with serve(limited_then(fixed(200, VECTOR), 2, headers={"Retry-After": "7"})) as url:
        assert client(url, slept, retries=3).query("up", 0) == []
    assert slept == [7.0, 7.0]


@pytest.mark.parametrize("status", [502, 503, 504])
def test_gateway_errors_with_html_are_retried_with_backoff(status):
    slept: list[float] = []
    with serve(limited_then(fixed(200, VECTOR), 2, status, body=b"<html>Bad Gateway</html>")) as url:
        assert client(url, slept, retries=2).query("up", 0) == []
    assert slept == [0.5, 1.0]


def test_retry_after_as_a_date_and_capped():
    slept: list[float] = []
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    with serve(limited_then(fixed(200, VECTOR), 1, 503, headers={"Retry-After": later})) as url:
        assert client(url, slept, retries=1).query("up", 0) == []
    assert slept == [MAX_RETRY_AFTER] and MAX_RETRY_AFTER == 60
    now = 1_800_000_000
    assert retry_after(email.utils.formatdate(now + 12, usegmt=True), now) == 12
    assert retry_after(email.utils.formatdate(now - 12, usegmt=True), now) == 0  # a date past: at once
    assert retry_after("120", now) == 60 and retry_after("0", now) == 0
    assert retry_after("soon", now) is None and retry_after(None, now) is None  # backoff instead


def test_rate_limited_on_every_attempt_is_one_line_naming_the_status():
    slept: list[float] = []
    with serve(limited_then(fixed(200, VECTOR), 99, headers={"Retry-After": "1"})) as url:
        with pytest.raises(PrometheusError) as info:
            client(url, slept, retries=2).query("up", 0)
    text = str(info.value)
    assert f"Prometheus at {url} is rate-limiting requests (HTTP 429) (after 3 attempt(s))" in text, text
    assert "does not answer like a Prometheus API" not in text and "\n" not in text
    assert slept == [1.0, 1.0]


def test_an_ingest_behind_a_rate_limiter_gets_every_row(yc, good_db, tmp_path, prom):
    """A rate limiter in front of the real Prometheus answers each distinct request's first
    try with 429, an HTML page and Retry-After: 1; the ingest waits, retries and gets the
    rows of the good ingest."""
    seen: set[tuple[str, bytes]] = set()
    lock = threading.Lock()
    limited = [0]

    def respond(method: str, path: str, body: bytes):
        with lock:
            first = (path, body) not in seen
            seen.add((path, body))
            limited[0] += first
        if first and limited[0] <= 6:
            return 429, {"Content-Type": "text/html", "Retry-After": "1"}, HTML_429
        return forward(prom.url, method, path, body)

    with serve(respond) as url:
        db = tmp_path / "limited.duckdb"
        h.assert_ok(yc.ingest(yc.config(url), db))
    assert limited[0] >= 6
    assert rows(db) == rows(good_db)


def test_an_ingest_rate_limited_on_every_attempt_stops_with_one_line(yc, prior_db):
    with serve(limited_then(fixed(200, VECTOR), 10**6, headers={"Retry-After": "0"})) as url:
        with h.unchanged(prior_db):
            result = yc.ingest(yc.config(url), prior_db)
    h.assert_one_line_error(result, f"Prometheus at {url} is rate-limiting requests (HTTP 429)",
                            "(after 2 attempt(s))")
    assert not re.search(r"does not answer like", result.stderr)
