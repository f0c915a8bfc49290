"""Memory of one `yolocost ingest` over time: the RSS of the ingest process and of its fetch
process (a forked child), read from /proc every 0.5 s, on the cached 1,000-GPU TSDB of
`ingest_month_bench.py` (run `--prepare-only` there first). Says whether the fetch's memory
climbs with the window or stays at what a few answers in flight take.

    .venv/bin/python benchmarks/ingest_timeline.py --days 31 --memory-limit 512MB   # BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_bench import ROOT, UTC, Prometheus, log, write_config  # noqa: E402
from reports_bench import _children_map, _rss  # noqa: E402

DATA = "month-g1000-d31-2026-10-01-s7"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=31)
    ap.add_argument("--memory-limit", default="512MB", help="[database] memory_limit")
    ap.add_argument("--chunk-hours", type=int, default=24, help="[prometheus] chunk_hours")
    ap.add_argument("--concurrency", type=int, default=4, help="[prometheus] concurrency")
    ap.add_argument("--workdir", default=str(HERE / ".work"))
    ap.add_argument("--out", default=str(HERE / "results" / "ingest-timeline.json"))
    args = ap.parse_args()
    tsdb = Path(args.workdir) / DATA / "tsdb"
    prep = json.loads((Path(args.workdir) / DATA / "prep.json").read_text())
    start = prep["window_start"]
    scratch = Path(tempfile.mkdtemp(prefix="timeline-", dir=args.workdir))
    prom = Prometheus(tsdb, scratch)
    prom.cmd.append("--storage.tsdb.max-block-duration=12h")  # leave the backfilled blocks as they are
    prom.start()
    try:
        cfg = write_config(scratch, prep, prom.url, args)  # the month bench's config
        iso = lambda s: dt.datetime.fromtimestamp(s, UTC).isoformat()  # noqa: E731
        cmd = [str(ROOT / ".venv" / "bin" / "yolocost"), "--config", str(cfg), "--db", str(scratch / "t.duckdb"),
               "-q", "ingest", "--start", iso(start), "--end", iso(start + args.days * 86400)]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        samples = []
        while proc.poll() is None:
            children = _children_map().get(proc.pid, ())
            samples.append((round(time.monotonic() - t0, 1), _rss(proc.pid) >> 20, sum(_rss(c) for c in children) >> 20))
            time.sleep(0.5)
        err = proc.stderr.read().decode()
        if proc.returncode != 0:
            raise SystemExit(f"ingest failed (exit {proc.returncode}): {err[-2000:]}")
    finally:
        prom.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    fetch = [s for s in samples if s[2]]
    result = {"days": args.days, "memory_limit": args.memory_limit, "wall_s": round(time.monotonic() - t0, 1),
              "peak_ingest_process_mib": max(s[1] for s in samples), "peak_fetch_process_mib": max(s[2] for s in samples),
              "samples_s_ingest_fetch_mib": samples}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result) + "\n")
    print(f"{'s':>6s} {'ingest MiB':>11s} {'fetch MiB':>10s}")
    for s in samples[::60]:  # every 30 s
        print(f"{s[0]:6.0f} {s[1]:11d} {s[2]:10d}")
    if fetch:
        third = max(1, len(fetch) // 3)
        parts = [max(s[2] for s in fetch[i * third:(i + 1) * third] or fetch[-1:]) for i in range(3)]
        print(f"fetch process peak by third of its run: {parts[0]} / {parts[1]} / {parts[2]} MiB")
    log(f"peak: ingest process {result['peak_ingest_process_mib']} MiB, fetch process "
        f"{result['peak_fetch_process_mib']} MiB; wrote {args.out}")


if __name__ == "__main__":
    main()
