"""`yolocost ingest` against a server whose answers are cut short or of the wrong shape.

A real Prometheus never sends these, so a small HTTP server on 127.0.0.1 stands in for one
(a fake, for faults the real thing cannot produce): it answers buildinfo, the series API
and the planning query as Prometheus would, for one GPU, and sends the broken answer to
one endpoint. Every case must end in one line naming the server and what was wrong, exit 2,
and leave the database exactly as it was.
"""

from __future__ import annotations

import http.server
import json
import math
import re
import threading
import urllib.parse

import pytest
from helpers import hourcluster as h  # the fixture hour, its expectations and its CLI runner

GPU = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-aaa", "gpu": "0", "Hostname": "h1",
       "modelName": "NVIDIA A100-SXM4-80GB", "job": "dcgm", "instance": "h1:9400"}
OK = {"status": "success"}


def _json(data) -> bytes:
    return json.dumps({**OK, "data": data}).encode()


class _Server(http.server.BaseHTTPRequestHandler):
    """Prometheus-like answers; `broken` = (path, query text it must hold, raw answer or 'cut')."""

    broken: tuple[str, str, object] = ("", "", b"")

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode() or urllib.parse.urlsplit(self.path).query)
        path = urllib.parse.urlsplit(self.path).path
        promql = (form.get("query") or [""])[0]
        where, holding, answer = self.broken
        if path == where and holding in promql:
            if answer == "cut":  # promises 4,000 bytes, sends 40, closes the connection
                self._send(_json({"resultType": "matrix", "result": []})[:40], length=4000)
                self.close_connection = True
                return
            self._send(answer)
        elif path == "/api/v1/status/buildinfo":
            self._send(_json({"version": "2.42.0"}))
        elif path == "/api/v1/label/__name__/values":  # every metric asked for is there
            self._send(_json(re.search(r'__name__=~"([^"]*)"', form["match[]"][0]).group(1).split("|")))
        elif path == "/api/v1/series":
            self._send(_json([{**GPU, "__name__": (form.get("match[]") or [""])[0].split("{")[0]}]))
        elif path == "/api/v1/query" and "vector(0)" in promql:  # the store probe's subquery checks
            self._send(_json({"resultType": "vector", "result": [{"metric": {}, "value": [
                float(form["time"][0]), str(_subquery_answer(promql, float(form["time"][0])))]}]}))
        elif path == "/api/v1/query":
            self._send(_json({"resultType": "vector", "result": []}))
        else:  # every range query: no points
            self._send(_json({"resultType": "matrix", "result": []}))

    def _send(self, body: bytes, length: int | None = None):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


def _subquery_answer(promql: str, at: float) -> float:
    """What Prometheus 3 answers to the probe's `vector(0)` subqueries: the last step on a
    multiple of the step, or the number of steps in the left-open range."""
    rng, step = (int(x) for x in re.search(r"\[(\d+)s:(\d+)s\]", promql).groups())
    last = math.floor(at / step) * step
    if promql.startswith("max_over_time"):
        return last
    return sum(1 for k in range(rng // step + 1) if last - k * step > at - rng)


RANGE, INSTANT, SERIES = "/api/v1/query_range", "/api/v1/query", "/api/v1/series"
NAMES = "/api/v1/label/__name__/values"
SERIES_OF = {"metric": {"UUID": "GPU-aaa"}}
CASES = {
    # (endpoint, query text, answer): what the error line must say
    "cut-body": ((RANGE, "", "cut"), ["sent an incomplete answer", "after 2 attempt(s)"]),
    "cut-json": ((RANGE, "", b'{"status":"success","data":{"resultType":"matrix","res'),
                 ["sent an answer that is not valid JSON"]),
    "result-a-string": ((RANGE, "", b'{"status":"success","data":{"result":"x"}}'),
                        [f"wrong shape to {RANGE}", "data.result is a string, not a list"]),
    "data-a-list": ((INSTANT, "", b'{"status":"success","data":[]}'),
                    [f"wrong shape to {INSTANT}", "data is a list, not an object"]),
    "no-data": ((INSTANT, "", b'{"status":"success"}'), [f"wrong shape to {INSTANT}", "data is missing or null"]),
    "values-missing": ((RANGE, "", _json({"resultType": "matrix", "result": [SERIES_OF]})),
                       [f"wrong shape to {RANGE}", 'a series has missing or null as "values", not a list']),
    "series-a-list": ((RANGE, "", _json({"resultType": "matrix", "result": [[1, 2]]})),
                      [f"wrong shape to {RANGE}", 'a series is a list without a "metric" object']),
    "label-a-number": ((SERIES, "", _json([{"UUID": 7}])),
                       [f"wrong shape to {SERIES}", "a label set is an object, not an object of strings"]),
    "series-an-object": ((SERIES, "", _json({"a": 1})),
                         [f"wrong shape to {SERIES}", "data is an object, not a list of label sets"]),
    "names-not-strings": ((NAMES, "", _json([1])), [f"wrong shape to {NAMES}", "data is a list, not a list of names"]),
    "point-not-a-pair": ((RANGE, "", _json({"resultType": "matrix", "result": [{**SERIES_OF, "values": [[1]]}]})),
                         [f"wrong shape to {RANGE}", 'a point is not a [time, "value"] pair']),
    "point-not-a-number": ((RANGE, "", _json({"resultType": "matrix",
                                              "result": [{**SERIES_OF, "values": [["x", "1"]]}]})),
                           [f"wrong shape to {RANGE}", 'a point is not a [time, "value"] pair']),
    # a time off the query's steps would land on another series' row: refused, not misplaced
    "point-off-the-steps": ((RANGE, "", _json({"resultType": "matrix",
                                               "result": [{**SERIES_OF, "values": [[1.0, "1"]]}]})),
                            [f"wrong shape to {RANGE}", "on the query's steps"]),
    # the training progress queries, read after the grain queries (which find no points here)
    "training-point": ((RANGE, "yolocost_epoch_end_time_seconds",
                        _json({"resultType": "matrix", "result": [{"metric": {"job_id": "j"}, "values": [[1, "x"]]}]})),
                       [f"wrong shape to {RANGE}", 'a point is not a [time, "value"] pair']),
}


@pytest.fixture
def serve():
    servers = []

    def start(broken) -> str:
        handler = type("Handler", (_Server,), {"broken": broken})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("case", list(CASES))
def test_broken_answer_is_one_line_naming_the_server(yc, prior_db, serve, case):
    broken, needles = CASES[case]
    url = serve(broken)
    with h.unchanged(prior_db):
        result = yc.ingest(yc.config(url), prior_db)
    h.assert_one_line_error(result, f"Prometheus at {url}", *needles)
