"""Prometheus' CPU per kind of request the ingest sends for a window, requests sent one at a time.

Starts Prometheus on a TSDB (as ingest_month_bench.py does: no compaction), records the
ingest's grain requests for [--start, --end) with benchmarks/floor.py, sends each alone and reads
the server's CPU time from /proc before and after it; `--extra PROMQL` adds range queries over
the same window at the grain (to price an alternative form). Prints one line per kind.

    .venv/bin/python benchmarks/request_costs.py --tsdb benchmarks/.work/month-g1000-d31-2026-10-01-s7/tsdb \\
        --start 1790812800 --end 1790899200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import QUERY, RANGE, ingest_requests  # noqa: E402
from ingest_bench import Prometheus, write_config  # noqa: E402
from yolocost.config import load_config  # noqa: E402
from yolocost.promclient import PrometheusClient  # noqa: E402
from yolocost.promql import ENERGY  # noqa: E402


def _instant_kind(q: str) -> str:
    """What an instant query of the ingest is, for the table."""
    if q.startswith(ENERGY):
        return "energy raw samples"
    if q.startswith("resets("):
        return "energy resets"
    if q.startswith("{"):
        return "utilization raw samples (busy/idle where a step held two)"
    if " and on(" in q:
        return "plan: which GPUs need the join (special_gpus)"
    return "plan: GPUs with two series in a step (several_series)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsdb", required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--extra", action="append", default=[], help="a range query to price as well")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="request-costs-"))
    prom = Prometheus(Path(args.tsdb), work)
    prom.cmd.append("--storage.tsdb.max-block-duration=12h")
    prom.start()
    try:
        cfg = load_config(str(write_config(work, {}, prom.url, argparse.Namespace(chunk_hours=24, concurrency=4))))
        client = PrometheusClient(cfg.prometheus)
        reqs = ingest_requests(cfg, client, args.start, args.end)
        reqs += [(RANGE, {"query": q, "start": str(args.start + cfg.grain_seconds), "end": str(args.end),
                          "step": str(cfg.grain_seconds)}) for q in args.extra]
        kinds: dict[str, list] = {}
        for path, params in reqs:
            q = params["query"]
            kind = q[:70] if path != QUERY else _instant_kind(q)
            cpu = prom.cpu_s()
            r = client.session.post(prom.url + path, data=params, timeout=600)
            if r.status_code != 200:
                raise SystemExit(f"HTTP {r.status_code}: {r.content[:300]!r}")
            k = kinds.setdefault(kind, [0, 0.0, 0])
            k[0], k[1], k[2] = k[0] + 1, k[1] + prom.cpu_s() - cpu, k[2] + len(r.content)
        for kind, (n, cpu, size) in sorted(kinds.items(), key=lambda x: -x[1][1]):
            print(f"{cpu:8.2f} s server CPU {n:4d} requests {size / 2**20:8.1f} MiB  {kind}")
        print(f"total {sum(v[1] for v in kinds.values()):.2f} s")
    finally:
        prom.stop()


if __name__ == "__main__":
    main()
