"""Raw-dump floor of the ingest benchmark: every sample of every dcgm metric the ingest reads.

For each metric and each day of the window, one instant query of a range selector
(`METRIC[1d - 1ms] offset 1ms` at the day's end: the samples in [day, day + 1d)),
`--concurrency` requests in flight, each body read in full and thrown away; samples and
series are counted from the raw bytes. This is what a client that computes everything
itself from raw samples would make the server send at the least: no PromQL evaluation
beyond selecting the samples, only encoding them.

Usage: python benchmarks/raw_floor.py --url URL --start EPOCH --end EPOCH --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

import requests

METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--end", type=int, required=True)
    ap.add_argument("--hours", type=int, default=24, help="range of one request")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    step = args.hours * 3600
    jobs = [(m, b) for b in range(args.start + step, args.end + step, step) for m in METRICS]
    session = requests.Session()

    def fetch(metric: str, end: int) -> tuple[int, int, int]:
        end = min(end, args.end)
        span = end - (end - step if end - step >= args.start else args.start)
        r = session.post(args.url + "/api/v1/query", timeout=600,
                         data={"query": f"{metric}[{span * 1000 - 1}ms] offset 1ms", "time": str(end)})
        body = r.content  # read in full, not parsed
        if r.status_code != 200 or not body.startswith(b'{"status":"success"'):
            raise SystemExit(f"raw floor: HTTP {r.status_code} for {metric} at {end}: {body[:300]!r}")
        return len(body), body.count(b'"metric":'), body.count(b'"]')

    t = time.monotonic()
    with ThreadPoolExecutor(args.concurrency) as pool:
        results = list(pool.map(lambda j: fetch(*j), jobs))
    out = {"fetch_s": time.monotonic() - t, "requests": len(results), "metrics": list(METRICS),
           "bytes": sum(r[0] for r in results), "series": sum(r[1] for r in results),
           "samples": sum(r[2] for r in results), "concurrency": args.concurrency, "hours": args.hours}
    with open(args.out, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
