"""Ingest benchmark at fleet scale: a 1,000-GPU month through a real Prometheus.

Data: `synth_openmetrics.generate_days`, --gpus GPUs (default 1,000) x --days (default 31)
at a 30 s scrape, written one UTC day at a time, each day backfilled with `promtool tsdb
create-blocks-from openmetrics` into the same TSDB and its text deleted before the next is
backfilled (a day of 1,000 GPUs is 4.4 GB of OpenMetrics; the next day is generated while
promtool reads the last). Made once and cached under --workdir; generation and backfill
times are recorded. The backfilled blocks are not compacted: Prometheus runs with
`--storage.tsdb.max-block-duration=12h`, so no compaction runs during a measurement.

For each window (--windows, days from the data's first day) two paths run one after the
other, each in a fresh process, against one Prometheus on 127.0.0.1:

  (a) `yolocost ingest` (the console script of this checkout) into an empty DuckDB file;
  (d) benchmarks/raw_floor.py: the raw-sample dump, every sample of every metric the
      ingest reads, by range selectors a day at a time, bodies read and thrown away.

Per path: wall time, peak RSS (GNU time: the largest single process), what the path's
processes hold together at their peak (ingest_bench.TreeMemory: yolocost's fetch runs in a
child process), and the Prometheus server's CPU seconds (from
/proc/PID/stat before and after), also per GPU-day of the window. The machine's other CPU
use during each path is recorded too (a shared machine).

    .venv/bin/python benchmarks/ingest_month_bench.py --windows 7,14,31   # BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synth_openmetrics  # noqa: E402
from ingest_bench import (ROOT, UTC, Prometheus, _blocks, _du, _timed_run, code_version,  # noqa: E402
                          ingest_figures, log, read_hook, run_path, write_config)

PY = Path(sys.executable)


def _free_gib(path: Path) -> float:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / 2**30


def prepare(args, workdir: Path) -> tuple[Path, dict]:
    """The backfilled TSDB (cached, resumable day by day) and what it took to make it."""
    key = f"month-g{args.gpus}-d{args.days}-{args.start}-s{args.seed}"
    home = workdir / key
    tsdb, state_path = home / "tsdb", home / "prep.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    if args.regenerate:
        shutil.rmtree(home, ignore_errors=True)
        state = {}
    if state.get("days_done") == args.days or (state.get("days_done") and args.measure_only):
        log(f"using cached data in {home} ({state['days_done']} of {args.days} days)")
        return tsdb, state
    if state.get("days_done"):  # a day is written to the TSDB whole or not at all: drop a partial one
        for b in tsdb.iterdir():
            if b.name not in state["blocks_by_day"]:
                shutil.rmtree(b) if b.is_dir() else b.unlink()
    else:
        shutil.rmtree(home, ignore_errors=True)
        state = {"key": key, "days_done": 0, "generate_s": 0.0, "backfill_s": 0.0, "wall_s": 0.0,
                 "openmetrics_bytes": 0, "backfill_peak_rss_mib": 0.0, "blocks_by_day": [], "per_day": []}
    om_dir = home / "openmetrics"
    shutil.rmtree(om_dir, ignore_errors=True)
    om_dir.mkdir(parents=True)
    tsdb.mkdir(parents=True, exist_ok=True)
    start = int(dt.datetime.fromisoformat(args.start).replace(tzinfo=UTC).timestamp())
    first = state["days_done"]

    # a thread writes day d + 1 while promtool backfills day d (at most one day waiting)
    made: queue.Queue = queue.Queue(maxsize=1)

    def writer() -> None:
        try:
            t = time.monotonic()
            for d, path, meta in synth_openmetrics.generate_days(om_dir, gpus=args.gpus, days=args.days,
                                                                 start=start, seed=args.seed, first_day=first):
                made.put((d, path, dict(meta, files=None), time.monotonic() - t))
                t = time.monotonic()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            made.put(exc)
            return
        made.put(None)

    began = time.monotonic()
    threading.Thread(target=writer, daemon=True).start()
    while True:
        item = made.get()
        if item is None:
            break
        if isinstance(item, BaseException):
            raise item
        d, path, meta, gen_s = item
        size = path.stat().st_size
        before = set(_blocks(tsdb))
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
               str(path), str(tsdb)]
        wall, rss, rc, cpu = _timed_run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if rc:
            raise SystemExit(f"promtool failed on {path}")
        path.unlink()
        state["blocks_by_day"] += sorted(set(_blocks(tsdb)) - before)
        state["per_day"].append({"day": d, "generate_s": round(gen_s, 1), "backfill_s": round(wall, 1),
                                 "promtool_cpu_s": round(cpu, 1), "promtool_peak_rss_mib": round(rss),
                                 "openmetrics_bytes": size})
        state["generate_s"] += gen_s
        state["backfill_s"] += wall
        state["openmetrics_bytes"] += size
        state["backfill_peak_rss_mib"] = max(state["backfill_peak_rss_mib"], rss)
        state["days_done"] = d + 1
        state["wall_s"] += time.monotonic() - began
        began = time.monotonic()
        state.update({k: meta[k] for k in ("generator", "seed", "gpus", "hosts", "jobs", "models", "scrape_seconds")})
        state["window_start"] = start
        state["tsdb_bytes"] = _du(tsdb)
        state_path.write_text(json.dumps(state, indent=1))
        log(f"day {d + 1}/{args.days}: generated {gen_s:.1f} s, backfilled {wall:.1f} s ({size / 1e9:.1f} GB text, "
            f"promtool {rss:.0f} MiB), {_free_gib(tsdb):.0f} GiB free")
    shutil.rmtree(om_dir, ignore_errors=True)
    for stale in ("samples", "dcgm_samples"):
        state.pop(stale, None)
    metas = [json.loads((tsdb / b / "meta.json").read_text()) for b in _blocks(tsdb)]
    state["blocks"] = len(metas)
    state["tsdb_samples"] = sum(m["stats"]["numSamples"] for m in metas)
    state["tsdb_bytes"] = _du(tsdb)
    state_path.write_text(json.dumps(state, indent=1))
    return tsdb, state


def _same_rows(db_a: Path, db_b: Path) -> dict:
    """Whether two ingests stored the same gpu_usage rows (EXCEPT ALL both ways)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{db_a}' AS x (READ_ONLY)")
        con.execute(f"ATTACH '{db_b}' AS y (READ_ONLY)")
        cols = "interval_start, gpu_uuid, job_id, seconds_present, seconds_busy, seconds_idle, mem_peak_mib, energy_mj"
        only_a = con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM x.gpu_usage EXCEPT ALL "
                             f"SELECT {cols} FROM y.gpu_usage)").fetchone()[0]
        only_b = con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM y.gpu_usage EXCEPT ALL "
                             f"SELECT {cols} FROM x.gpu_usage)").fetchone()[0]
        energy = [con.execute(f"SELECT sum(energy_mj) FROM {d}.gpu_usage").fetchone()[0] for d in "xy"]
    finally:
        con.close()
    return {"rows_only_in_a": only_a, "rows_only_in_base": only_b, "energy_mj_a": energy[0],
            "energy_mj_base": energy[1], "identical": only_a == 0 and only_b == 0}


def measure(args, workdir: Path, tsdb: Path, prep: dict) -> None:
    scratch = workdir / "month-run"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    prom = Prometheus(tsdb, workdir)
    prom.cmd.append("--storage.tsdb.max-block-duration=12h")  # leave the backfilled blocks as they are
    start = prep["window_start"]
    gpus = prep["gpus"]
    windows = [int(w) for w in args.windows.split(",")]
    if max(windows) > prep["days_done"]:
        raise SystemExit(f"the data holds {prep['days_done']} days; asked for windows {windows}")
    yolocost = Path(shutil.which("yolocost") or "yolocost")
    base_src = None
    if "b" in args.paths:  # the ingest of --base (a commit), from a copy of its yolocost package
        base_src = workdir / f"base-{args.base}"
        if not (base_src / "yolocost").exists():
            base_src.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", "archive", args.base, "yolocost"], cwd=ROOT, capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
    result: dict = {"command": " ".join([os.path.relpath(PY, ROOT), *map(str, sys.argv)]), "code": code_version(),
                    "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                                "loadavg_at_start": os.getloadavg()},
                    "data": prep, "settings": {"chunk_hours": args.chunk_hours, "concurrency": args.concurrency,
                                               "memory_limit": args.memory_limit or "config default"},
                    "windows": []}
    for stale in ("blocks_by_day", "samples", "dcgm_samples"):  # (the TSDB's own count is tsdb_samples)
        result["data"].pop(stale, None)
    try:
        result["server_start_s"] = round(prom.start(), 2)
        result["machine"]["prometheus"] = prom.get("/api/v1/status/buildinfo")["data"]["version"]
        t = time.monotonic()  # warm-up: every sample of the longest window read once, a day at a time
        for d in range(max(windows)):
            for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "kube_pod_labels", "kube_pod_container_info"):
                q = urllib.parse.quote(f"count(count_over_time({name}[1d]))")
                prom.get(f"/api/v1/query?query={q}&time={start + (d + 1) * 86400}")
        result["warmup_s"] = round(time.monotonic() - t, 1)
        log(f"server ready at {prom.url}, warm-up {result['warmup_s']} s")
        cfg = write_config(workdir, {}, prom.url, args)
        iso = lambda x: dt.datetime.fromtimestamp(x, UTC).isoformat()  # noqa: E731
        for w in windows:
            end = start + w * 86400
            row: dict = {"days": w, "gpu_days": gpus * w}
            for p in args.paths:
                name = f"{p}{w}"
                if p == "d":
                    outj = scratch / f"{name}.json"
                    cmd = [str(PY), str(HERE / "raw_floor.py"), "--url", prom.url, "--start", str(start),
                           "--end", str(end), "--concurrency", str(args.concurrency), "--out", str(outj)]
                    row["d"] = run_path(name, cmd, prom, scratch)
                    row["d"]["floor"] = json.loads(outj.read_text())
                else:  # a: this checkout's ingest; b: --base's
                    db = scratch / f"{name}.duckdb"
                    counts = scratch / f"{name}-counts.json"
                    src = ROOT if p == "a" else base_src
                    env = {**os.environ, "PYTHONPATH": f"{HERE / '_hook'}{os.pathsep}{src}",
                           "YOLOCOST_BENCH_COUNTS": str(counts)}
                    cmd = [str(yolocost), "--config", str(cfg), "--db", str(db), "-q", "ingest",
                           "--start", iso(start), "--end", iso(end)]
                    row[p] = run_path(name, cmd, prom, scratch, env)
                    hook = read_hook(counts)
                    row[p]["stages"] = {k: round(v, 2) for k, v in hook["stages"].items()}
                    row[p]["peak_rss_after_stage_mib"] = hook["peak_rss_after_mib"]
                    row[p]["fetched"] = hook["counts"]
                    row[p]["requests"] = len(hook.get("request_fingerprints", []))
                    figures = ingest_figures(db)
                    row[p]["usage_rows"], row[p]["gpus"] = figures["usage_rows"], figures["gpus"]
                    row[p]["jobs"] = len(figures["jobs"])
                    row[p]["gpu_hours"] = round(sum(j["gpu_hours"] for j in figures["jobs"].values()), 3)
                row[p]["server_cpu_s_per_gpu_day"] = round(row[p]["server_cpu_s"] / (gpus * w), 5)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # after each path
                Path(args.out).write_text(json.dumps({**result, "windows": [*result["windows"], row]}, indent=1) + "\n")
            if "a" in row and "b" in row:
                row["a_vs_base"] = _same_rows(scratch / f"a{w}.duckdb", scratch / f"b{w}.duckdb")
                log(f"a vs base at {w} days: {row['a_vs_base']}")
            for f in scratch.glob("*.duckdb*"):
                f.unlink()
            result["windows"].append(row)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(result, indent=1) + "\n")  # after each window
    finally:
        prom.stop()
    report(result)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {args.out}")


def report(result: dict) -> None:
    names = {"a": "(a) yolocost ingest", "b": "(a0) ingest at --base", "d": "(d) raw-dump floor"}
    d = result["data"]
    print(f"\ndata: {d['gpus']} GPUs x {d['days_done']} days at 30 s, {d.get('tsdb_samples', 0):,} samples in "
          f"{d.get('blocks', 0)} blocks, TSDB {d.get('tsdb_bytes', 0) / 2**30:.2f} GiB; made in "
          f"{d['wall_s'] / 60:.1f} min (generation {d['generate_s'] / 60:.1f} min, backfill "
          f"{d['backfill_s'] / 60:.1f} min, side by side); Prometheus {result['machine'].get('prometheus')}")
    print(f"{'window':>7s} {'path':24s} {'wall s':>8s} {'peak RSS MiB':>13s} {'tree PSS':>9s} {'tree RSS':>9s} "
          f"{'CPU s':>7s} {'server CPU s':>13s} {'per GPU-day':>12s} {'others CPU s':>13s}")
    for row in result["windows"]:
        for p in ("d", "b", "a"):
            if p in row:
                x = row[p]
                print(f"{row['days']:>5d} d {names[p]:24s} {x['wall_s']:8.1f} {x['peak_rss_mib']:13.0f} "
                      f"{x.get('tree_peak_pss_mib', 0):9.0f} {x.get('tree_peak_rss_sum_mib', 0):9.0f} "
                      f"{x['cpu_s']:7.1f} {x['server_cpu_s']:13.1f} {x['server_cpu_s_per_gpu_day']:12.4f} "
                      f"{x['others_cpu_s']:13.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default=str(HERE / ".work"), help="cache for generated data and scratch files")
    ap.add_argument("--out", default=str(HERE / "results" / "ingest-month.json"))
    ap.add_argument("--gpus", type=int, default=1000)
    ap.add_argument("--days", type=int, default=31, help="days of data generated")
    ap.add_argument("--start", default="2026-10-01", help="UTC date of the data's first day")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--windows", default="7,14,31", help="window lengths in days, from the first day")
    ap.add_argument("--paths", default="da", help="which paths per window, in order: a (ingest), d (raw dump), "
                                                  "b (the ingest of --base, for a before/after comparison)")
    ap.add_argument("--base", default="main", help="commit whose ingest path b runs")
    ap.add_argument("--chunk-hours", type=int, default=24, help="[prometheus] chunk_hours")
    ap.add_argument("--concurrency", type=int, default=4, help="[prometheus] concurrency")
    ap.add_argument("--memory-limit", default=None, help="[database] memory_limit (default: the config's default)")
    ap.add_argument("--prepare-only", action="store_true", help="make the data and stop")
    ap.add_argument("--measure-only", action="store_true", help="measure on the days made so far")
    ap.add_argument("--regenerate", action="store_true", help="ignore cached data")
    args = ap.parse_args()

    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    tsdb, prep = prepare(args, workdir)
    if args.prepare_only:
        return
    measure(args, workdir, tsdb, prep)


if __name__ == "__main__":
    main()
