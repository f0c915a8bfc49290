"""Path (c) of the ingest benchmark: the floor, Prometheus answering yolocost's own PromQL.

The requests are the ones `yolocost ingest` sends while it fetches the grain points: the
ingest's own `_Fetcher.run` is run with its client recording every request made inside
`_Fetcher._grain_points` (each answered by the server, since what follows depends on the
answers: a chunk's plan decides its queries, its energy answers which grains are read raw),
and stopped there. So the list holds whatever the ingest decides for this server and window:
which queries, which chunks, which GPUs get which PromQL.

The recorded requests are then POSTed again, `[prometheus] concurrency` at a time, each body
read in full and thrown away: no JSON parsing. Series and points of the range answers are
counted from the raw bytes (one scan per body, far cheaper than parsing) so they can be
compared with what the ingest fetched.

`--mode pipelined` (default) keeps `concurrency` requests in flight over the whole window,
the true floor; `--mode chunked` sends a chunk's requests (its instant queries first) and
waits for them before the next chunk, as the ingest does.

Usage: python benchmarks/floor.py --config CFG --start EPOCH --end EPOCH --out FILE.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

T0 = time.monotonic()

from yolocost.config import load_config  # noqa: E402
from yolocost.ingest.fetcher import Fetcher as _Fetcher  # noqa: E402
from yolocost.ingest.spill import Spill as _Spill  # noqa: E402
from yolocost.promclient import PrometheusClient, _ts  # noqa: E402

QUERY, RANGE = "/api/v1/query", "/api/v1/query_range"


class _Captured(Exception):
    """Stops the ingest's own _Fetcher.run once it has asked for the grain points."""


def ingest_requests(config, client: PrometheusClient, start: int, end: int) -> list[tuple[str, dict]]:
    """(API path, form parameters) of every request the ingest sends for the grain points."""
    recorded: list[tuple[str, dict]] = []
    lock = threading.Lock()
    real_query, real_range = client.query, client.query_range

    def query(promql_: str, at: float) -> list[dict]:
        with lock:
            recorded.append((QUERY, {"query": promql_, "time": _ts(at)}))
        return real_query(promql_, at)

    def query_range(promql: str, a: float, b: float, step: float) -> list[dict]:
        with lock:
            recorded.append((RANGE, {"query": promql, "start": _ts(a), "end": _ts(b), "step": _ts(step)}))
        return real_range(promql, a, b, step)

    original = _Fetcher._grain_points

    def grain_points(self, *args, **kwargs):
        client.query, client.query_range = query, query_range
        try:
            original(self, *args, **kwargs)
        finally:
            del client.query, client.query_range  # back to the class's methods
        raise _Captured()

    _Fetcher._grain_points = grain_points
    scratch = Path(tempfile.mkdtemp(prefix="floor-"))
    try:
        with _Spill(config.with_database(scratch / "floor.duckdb")) as spill:
            _Fetcher(config, client, lambda _: None).run(start, end, spill)
    except _Captured:
        return recorded
    finally:
        _Fetcher._grain_points = original
        shutil.rmtree(scratch, ignore_errors=True)
    raise RuntimeError("the ingest finished without asking for grain points")


def fingerprint(path: str, params: dict) -> str:
    return hashlib.sha256(json.dumps([path, params], sort_keys=True).encode()).hexdigest()[:16]


def chunk_of(path: str, params: dict) -> str:
    return params["time"] if path == QUERY else params["end"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--mode", choices=("pipelined", "chunked"), default="pipelined")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    phases = {"imports_s": time.monotonic() - T0}

    t = time.monotonic()
    config = load_config(args.config)
    client = PrometheusClient(config.prometheus)
    requests_ = ingest_requests(config, client, args.start, args.end)
    session = client.session  # same headers, auth, TLS settings and connection pool as the ingest
    timeout = config.prometheus.timeout_seconds
    phases["record_s"] = time.monotonic() - t

    def fetch(path: str, params: dict) -> tuple[str, int, int, int]:
        r = session.post(config.prometheus.url + path, data=params, timeout=timeout)
        body = r.content  # read in full, not parsed
        if r.status_code != 200 or not body.startswith(b'{"status":"success"'):
            raise SystemExit(f"floor: HTTP {r.status_code} for {params}: {body[:300]!r}")
        series = body.count(b'"metric":')
        points = body.count(b"[") - 1 - series  # "result":[ + one "values":[ per series + one per point
        return path, len(body), series, points

    t = time.monotonic()
    with ThreadPoolExecutor(config.prometheus.concurrency) as pool:
        if args.mode == "pipelined":
            results = [f.result() for f in [pool.submit(fetch, p, q) for p, q in requests_]]
        else:
            results = []
            chunks: dict[str, list] = {}
            for p, q in requests_:
                chunks.setdefault(chunk_of(p, q), []).append((p, q))
            for reqs in chunks.values():
                first = [(p, q) for p, q in reqs if p == QUERY]  # the chunk's plan comes first
                results += [fetch(p, q) for p, q in first]
                results += [f.result() for f in [pool.submit(fetch, p, q) for p, q in reqs if p == RANGE]]
    phases["fetch_s"] = time.monotonic() - t
    client.close()

    ranges = [r for r in results if r[0] == RANGE]
    out = {
        "phases": phases,
        "mode": args.mode,
        "chunks": len({chunk_of(p, q) for p, q in requests_}),
        "concurrency": config.prometheus.concurrency,
        "requests": len(results),
        "instant_requests": len(results) - len(ranges),
        "bytes": sum(r[1] for r in results),
        "series": sum(r[2] for r in ranges),
        "points": sum(r[3] for r in ranges),
        "request_fingerprints": sorted(fingerprint(p, q) for p, q in requests_),
    }
    with open(args.out, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
