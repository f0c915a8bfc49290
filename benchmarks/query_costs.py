"""Where the ingest's server time goes: each request of one chunk, timed by Prometheus itself.

Records the requests `yolocost ingest` sends for the grain points of one chunk (as
benchmarks/floor.py does), sends them again one at a time with `stats=all`, and prints
Prometheus' own evaluation time per request; with --alternatives also a few per-series
queries that need no join, and the raw samples the naive path reads. Run it against the
benchmark's server, e.g.:

    .venv/bin/python benchmarks/query_costs.py --config benchmarks/.work/bench-yolocost.toml \\
        --start 2026-10-05 --hours 24

(start a server on the cached data first: `prometheus --storage.tsdb.path=benchmarks/.work/
simple-g64-d7-2026-10-05-s7/tsdb --storage.tsdb.retention.time=100y --config.file=...`, and
point the config's url at it.)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import RANGE, ingest_requests  # noqa: E402
from yolocost.config import load_config  # noqa: E402
from yolocost.promclient import PrometheusClient  # noqa: E402


def alternatives(scrape: int, grain: int) -> dict[str, str]:
    r = f"{grain * 1000 - 1}ms"
    fresh = f"last_over_time(DCGM_FI_DEV_GPU_UTIL[{scrape * 1000 - 1}ms] offset 1ms)"
    energy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    return {
        "alt: samples = count_over_time per series": f"count_over_time(DCGM_FI_DEV_GPU_UTIL[{r}] offset 1ms)",
        "alt: util sum = sum_over_time per series": f"sum_over_time(DCGM_FI_DEV_GPU_UTIL[{r}] offset 1ms)",
        "alt: mem peak = max_over_time per series": f"max_over_time(DCGM_FI_DEV_FB_USED[{r}] offset 1ms)",
        "alt: power sum = sum_over_time per series": f"sum_over_time(DCGM_FI_DEV_POWER_USAGE[{r}] offset 1ms)",
        "alt: busy = subquery on one series": f"sum_over_time(({fresh} > bool 70)[{r}:{scrape}s])",
        "alt: idle = subquery on one series": f"sum_over_time(({fresh} < bool 5)[{r}:{scrape}s])",
        "alt: GPUs with >1 series at a sample": f"max_over_time((count by (UUID, GPU_I_ID) ({fresh}))[{r}:{scrape}s]) > 1",
        "alt: energy delta per GPU": (f"sum_over_time(((max by (UUID) ({energy} offset 1ms) - max by (UUID) "
                                      f"({energy} offset {scrape * 1000 + 1}ms)) >= 0)[{r}:{scrape}s])"),
        "naive: raw DCGM_FI_DEV_GPU_UTIL samples": None,
    }


def label(path: str, query: str) -> str:
    kind = "range" if path == RANGE else "instant"
    head = query.split("(", 1)[0] or query[:20]
    return f"ingest {kind}: {head}({len(query)} chars)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--start", required=True, help="UTC date or date-time of the chunk")
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--alternatives", action="store_true")
    args = ap.parse_args()
    config = load_config(args.config)
    client = PrometheusClient(config.prometheus)
    a = int(dt.datetime.fromisoformat(args.start).replace(tzinfo=dt.timezone.utc).timestamp())
    b = a + args.hours * 3600
    grain, scrape = config.grain_seconds, config.prometheus.scrape_interval_seconds
    url = config.prometheus.url
    todo = [(label(p, q["query"]), p, q) for p, q in ingest_requests(config, client, a, b)]
    if args.alternatives:
        for name, q in alternatives(scrape, grain).items():
            if q is None:  # what get_metric_range_data asks for
                todo.append((name, "/api/v1/query", {"query": f"DCGM_FI_DEV_GPU_UTIL[{b - a}s]", "time": b}))
            else:
                todo.append((name, RANGE, {"query": q, "start": a + grain, "end": b, "step": grain}))
    rows = []
    for name, path, params in todo:
        t = time.monotonic()
        r = client.session.post(url + path, data={**params, "stats": "all"})
        wall = time.monotonic() - t
        body = r.json()
        stats = body["data"].get("stats", {})
        rows.append({"request": name, "eval_s": stats.get("timings", {}).get("evalTotalTime"), "wall_s": wall,
                     "series": len(body["data"]["result"]), "bytes": len(r.content),
                     "samples_touched": stats.get("samples", {}).get("totalQueryableSamples"),
                     "query": params["query"]})
        print(f"{name[:60]:60s} eval {rows[-1]['eval_s']:7.3f} s  wall {wall:7.3f} s  {rows[-1]['series']:6d} series "
              f"{len(r.content) / 1e6:6.2f} MB", flush=True)
    ingest_total = sum(r["eval_s"] for r in rows if r["request"].startswith("ingest"))
    print(f"ingest requests for this chunk, sum of eval: {ingest_total:.2f} s")
    print(json.dumps({"chunk": [a, b], "rows": rows}))


if __name__ == "__main__":
    main()
