"""Ingest benchmark: `yolocost ingest` vs the naive prometheus-api-client path vs the server floor.

On one backfilled Prometheus (at least 64 GPUs x 7 days at a 30 s scrape) and one window,
the paths run one after another, each in a fresh process so its peak RSS is its own:

  (a) `yolocost ingest` (the console script) into an empty DuckDB file, with benchmarks/_hook
      on PYTHONPATH to count what it fetched and time its stages;
  (b) benchmarks/naive_ingest.py: get_metric_range_data + MetricRangeDataFrame + pandas for
      per-pod GPU-hours and density;
  (c) benchmarks/floor.py: the requests the ingest sends for its grain points, replayed with
      the same concurrency, bodies read and thrown away (C: the same, chunk by chunk).

Wall time is time.monotonic() around each child; peak RSS and CPU come from GNU time, which
starts the child. The figures they share are compared: (a) vs (b) per job GPU-hours and
density, (c) vs (a) requests, series and points. A round counts as quiet when no other
process used more than a tenth of a core while any of its paths ran (a shared machine).
Results go to stdout and, as JSON, to --out.

Data (generated, backfilled and compacted once, then cached under --workdir):
  --source simple  benchmarks/synth_openmetrics.py, --gpus GPUs (default 64) x --days;
  --source synth   yolocost.synth.write_prometheus_sample with every host of the planned
                   fleet (passes --scale where the function accepts one).

    .venv/bin/python benchmarks/ingest_bench.py --rounds 3 --paths caCb --query-costs   # BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = Path(sys.executable)
UTC = dt.timezone.utc
TARGETS = {"speed_b_over_a": 10.0, "mem_a_over_b": 0.2, "wall_a_over_c": 1.5}
QUIET = 0.1  # other processes' CPU over a path's wall time, at most, for a round to count as quiet
CLK = os.sysconf("SC_CLK_TCK")
TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None  # GNU time (Debian package time)


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data: generate, backfill, compact
def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timed_run(cmd: list[str], on_start=None, **kw) -> tuple[float, float, int, float]:
    """(wall s, peak RSS MiB, exit status, CPU s) of a child process; `on_start(pid)` is
    called once it runs (TreeMemory.watch).

    The child is started through GNU time, a small process: a child's ru_maxrss counts the
    RSS of the process it was forked from (Linux keeps the larger of the pre-exec and the new
    image's peak), so forking straight from this process would add ours to its peak. The peak
    RSS is the largest single process's: a command that forks children (yolocost's fetch
    process) needs TreeMemory for what the processes hold together."""
    t = time.monotonic()
    if TIME:
        with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
            proc = subprocess.Popen([TIME, "-f", "%M %U %S", "-o", out.name, *cmd], **kw)
            if on_start:
                on_start(proc.pid)
            proc.wait()
            wall = time.monotonic() - t
            rss_kib, user, system = out.read().split()[-3:]
        return wall, int(rss_kib) / 1024, proc.returncode, float(user) + float(system)
    proc = subprocess.Popen(cmd, **kw)
    if on_start:
        on_start(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - t, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def _machine_busy_s() -> float:
    """CPU seconds spent by everything on the machine so far (all cores, /proc/stat)."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / CLK  # all but idle and iowait


def _generate_simple(om_dir: Path, args) -> dict:
    sys.path.insert(0, str(HERE))
    import synth_openmetrics

    start = int(dt.datetime.fromisoformat(args.start).replace(tzinfo=UTC).timestamp())
    meta = synth_openmetrics.generate(om_dir, gpus=args.gpus, days=args.days, start=start, seed=args.seed)
    return {"files": [om_dir / f for f in meta["files"]], "start": meta["window_start"], "end": meta["window_end"],
            "gpus": meta["gpus"], "jobs_generated": meta["jobs"], "samples": meta["samples"],
            "generator": meta["generator"], "job_label": "", "config": None}


def _generate_synth(om_dir: Path, args) -> dict:
    from yolocost import synth
    from yolocost.synth.plan import plan_month
    from yolocost.synth.scenario import DEFAULT_HOSTS, HostChoice

    fn = synth.write_prometheus_sample
    params = inspect.signature(fn).parameters
    scale = args.scale if "scale" in params else 1.0
    plan = plan_month(synth.DEMO_SEED, synth.DEMO_MONTH, synth.DEMO_TIMEZONE, scale)
    modes = {h.host: h.mode for h in DEFAULT_HOSTS}
    hosts = [HostChoice(h.name, modes.get(h.name, "k8s"), tuple(range(len(h.gpus)))) for h in plan.hosts]
    kw = {"days": args.days, "hosts": hosts, "progress": log}
    if "scale" in params:
        kw["scale"] = scale
    sample = fn(om_dir, **kw)
    gpus = sum(len(h.gpus) for h in hosts)
    if gpus < 64:
        log(f"WARNING: write_prometheus_sample gives {gpus} GPUs (< 64): it has no scale parameter")
    return {"files": [sample.files["metrics"]], "start": sample.start, "end": sample.end, "gpus": gpus,
            "jobs_generated": sample.jobs, "samples": sample.samples, "series_written": sample.series,
            "generator": f"yolocost.synth.write_prometheus_sample(scale={scale}, days={args.days}, all hosts)",
            "job_label": "batch_kubernetes_io_job_name", "config": str(sample.files["config"])}


class Prometheus:
    """A prometheus process serving a data folder on 127.0.0.1 with no scrape jobs."""

    def __init__(self, data: Path, workdir: Path):
        self.data, self.workdir = data, workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        conf = workdir / "prometheus.yml"
        conf.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
        self.log_path = workdir / "prometheus.log"
        self.cmd = ["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={data}",
                    "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{self.port}"]
        self.proc = None

    def start(self) -> float:
        t = time.monotonic()
        with open(self.log_path, "ab") as fh:
            self.proc = subprocess.Popen(self.cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"prometheus exited: see {self.log_path}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t
            except OSError:
                pass
            if time.monotonic() - t > 300:
                raise SystemExit(f"prometheus not ready after 300 s: see {self.log_path}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def get(self, path: str, timeout: float = 600) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return json.loads(r.read())


def _blocks(tsdb: Path) -> list[str]:
    return sorted(p.name for p in tsdb.iterdir() if p.is_dir() and (p / "meta.json").exists())


def prepare(args, workdir: Path) -> tuple[Path, dict]:
    """The backfilled, compacted TSDB for the arguments (cached) and what it took to make it."""
    key = f"{args.source}-g{args.gpus}-d{args.days}-{args.start[:10]}-s{args.seed}"
    if args.source == "synth":
        key = f"synth-x{args.scale}-d{args.days}"
    home = workdir / key
    tsdb, done = home / "tsdb", home / "prep.json"
    if done.exists() and not args.regenerate:
        log(f"using cached data in {home}")
        return tsdb, json.loads(done.read_text())
    shutil.rmtree(home, ignore_errors=True)
    om_dir = home / "openmetrics"
    om_dir.mkdir(parents=True)
    prep: dict = {"key": key}

    log(f"generating OpenMetrics ({args.source})")
    t = time.monotonic()
    gen = _generate_simple(om_dir, args) if args.source == "simple" else _generate_synth(om_dir, args)
    prep["generate_s"] = time.monotonic() - t
    prep["openmetrics_bytes"] = sum(f.stat().st_size for f in gen["files"])
    prep.update({k: v for k, v in gen.items() if k != "files"})
    if gen["config"]:
        shutil.copy(gen["config"], home / "sample-yolocost.toml")
        prep["config"] = str(home / "sample-yolocost.toml")

    log(f"backfilling {len(gen['files'])} file(s), {prep['openmetrics_bytes'] / 1e9:.2f} GB")
    t, peak = time.monotonic(), 0.0
    for f in gen["files"]:
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(f), str(tsdb)]
        _, rss, rc, _ = _timed_run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if rc:
            raise SystemExit(f"promtool failed on {f}")
        peak = max(peak, rss)
    prep["backfill_s"] = time.monotonic() - t
    prep["backfill_peak_rss_mib"] = peak
    prep["blocks_backfilled"] = len(_blocks(tsdb))
    if not args.keep_openmetrics:
        shutil.rmtree(om_dir)

    # Prometheus compacts the backfilled (overlapping, 18 h) blocks about a minute after it
    # starts; do that here once, so that no compaction runs during a measurement.
    log("first start of Prometheus: waiting for its compaction of the backfilled blocks")
    t = time.monotonic()
    prom = Prometheus(tsdb, home)
    try:
        prom.start()
        seen, stable_since = _blocks(tsdb), time.monotonic()
        while True:
            time.sleep(3)
            now = _blocks(tsdb)
            tmp = any(p.name.endswith(".tmp") or p.name.endswith(".tmp-for-creation") for p in tsdb.iterdir())
            if now != seen or tmp:
                seen, stable_since = now, time.monotonic()
            elif time.monotonic() - t > 90 and time.monotonic() - stable_since > 20:
                break
    finally:
        prom.stop()
    prep["compact_s"] = time.monotonic() - t
    prep["blocks"] = len(_blocks(tsdb))
    prep["tsdb_bytes"] = _du(tsdb)
    metas = [json.loads((tsdb / b / "meta.json").read_text()) for b in _blocks(tsdb)]
    prep["tsdb_samples"] = sum(m["stats"]["numSamples"] for m in metas)
    done.write_text(json.dumps(prep, indent=1))
    return tsdb, prep


# ---------------------------------------------------------------- config for the ingest
def write_config(workdir: Path, prep: dict, url: str, args) -> Path:
    cfg = workdir / "bench-yolocost.toml"
    if prep.get("config"):  # the synthetic sample's own config, pointed at our server
        text = Path(prep["config"]).read_text()
        text = text.replace('url = "http://127.0.0.1:9090"', f'url = "{url}"')
        if "[prometheus]" in text and args.chunk_hours:
            text = text.replace("[prometheus]\n", f"[prometheus]\nchunk_hours = {args.chunk_hours}\n"
                                                  f"concurrency = {args.concurrency}\n", 1)
        cfg.write_text(text)
        return cfg
    cfg.write_text(f"""# written by benchmarks/ingest_bench.py
[cluster]
name = "bench"
timezone = "UTC"

[prometheus]
url = "{url}"
scrape_interval_seconds = 30
chunk_hours = {args.chunk_hours}
concurrency = {args.concurrency}

[ingest]
grain_seconds = 300

[[prices]]
gpu_model = "NVIDIA A100-SXM4-80GB"
effective_from = 2026-01-01
price_per_gpu_hour = "2.93"

[[prices]]
gpu_model = "NVIDIA A10G"
effective_from = 2026-01-01
price_per_gpu_hour = "0.98"
""")
    if getattr(args, "memory_limit", None):  # DuckDB's memory for the write and the build
        cfg.write_text(cfg.read_text() + f'\n[database]\nmemory_limit = "{args.memory_limit}"\n')
    return cfg


# ---------------------------------------------------------------- the three paths
class Sampler(threading.Thread):
    """Peak RSS and CPU seconds of the Prometheus server while one path runs."""

    def __init__(self, prom: Prometheus):
        super().__init__(daemon=True)
        self.prom, self.peak, self.halt = prom, 0.0, threading.Event()
        self.cpu0, self.busy0, self.load0 = prom.cpu_s(), _machine_busy_s(), os.getloadavg()[0]

    def run(self) -> None:
        while not self.halt.is_set():
            self.peak = max(self.peak, self.prom.rss_mib())
            self.halt.wait(0.25)

    def finish(self) -> dict:
        self.halt.set()
        self.join()
        return {"server_cpu_s": round(self.prom.cpu_s() - self.cpu0, 2), "server_rss_peak_mib": round(self.peak, 1),
                "machine_cpu_s": round(_machine_busy_s() - self.busy0, 2), "loadavg_before": self.load0}


class TreeMemory(threading.Thread):
    """What a command's processes hold together at their peak, sampled every 50 ms from
    /proc/PID/smaps_rollup of each process below the one watched (GNU time, left out): the
    sum of their RSS, which counts twice the pages a forked child still shares with its
    parent (an upper bound), and of their PSS, which shares such pages out (what the tree
    holds). A peak shorter than the sampling interval can be missed; GNU time's peak (the
    largest single process) is exact."""

    def __init__(self):
        super().__init__(daemon=True)
        self.root, self.halt = 0, threading.Event()
        self.rss = self.pss = 0  # KiB
        self.processes = 0

    def watch(self, pid: int) -> None:
        self.root = pid
        self.start()

    def run(self) -> None:
        from reports_bench import descendants

        while not self.halt.is_set():
            seen = descendants(self.root)
            rss = pss = 0
            for pid in seen:
                try:
                    with open(f"/proc/{pid}/smaps_rollup") as fh:
                        for line in fh:
                            if line.startswith("Rss:"):
                                rss += int(line.split()[1])
                            elif line.startswith("Pss:"):
                                pss += int(line.split()[1])
                except OSError:  # ended meanwhile
                    pass
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            self.processes = max(self.processes, len(seen))
            self.halt.wait(0.05)

    def finish(self) -> dict:
        self.halt.set()
        if self.is_alive():
            self.join()
        return {"tree_peak_rss_sum_mib": round(self.rss / 1024, 1), "tree_peak_pss_mib": round(self.pss / 1024, 1),
                "tree_processes": self.processes}


def run_path(name: str, cmd: list[str], prom: Prometheus, workdir: Path, env: dict | None = None) -> dict:
    out, err = workdir / f"{name}.stdout", workdir / f"{name}.stderr"
    sampler = Sampler(prom)
    sampler.start()
    tree = TreeMemory()
    with open(out, "wb") as o, open(err, "wb") as e:
        wall, rss, rc, cpu = _timed_run(cmd, on_start=tree.watch, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                        env=env, cwd=ROOT)
    server = {**sampler.finish(), **tree.finish()}
    # CPU of everything else on this shared machine while the path ran: a noise indicator
    server["others_cpu_s"] = round(server["machine_cpu_s"] - server["server_cpu_s"] - cpu, 2)
    if rc != 0:
        raise SystemExit(f"path {name} failed (exit {rc}): {err.read_text()[-2000:]}")
    log(f"{name}: {wall:.2f} s, peak RSS {rss:.0f} MiB (processes together: PSS {server['tree_peak_pss_mib']:.0f}, "
        f"RSS summed {server['tree_peak_rss_sum_mib']:.0f} MiB), CPU {cpu:.1f} s, server CPU {server['server_cpu_s']} s, "
        f"others {server['others_cpu_s']} s")
    return {"wall_s": round(wall, 3), "peak_rss_mib": round(rss, 1), "cpu_s": round(cpu, 2), **server}


def read_hook(counts: Path) -> dict:
    """What benchmarks/_hook wrote for one ingest: the process's file, and the fetch process's
    (`<file>.fetch`, where the fetch runs in a child). Stage times add up; each stage's
    memory is that of the process it ran in (the fetch's under `fetch:`)."""
    hook = json.loads(counts.read_text())
    fetch_file = counts.with_name(counts.name + ".fetch")
    if fetch_file.exists():
        child = json.loads(fetch_file.read_text())
        fetch_file.unlink()
        for name, value in child["stages"].items():
            hook["stages"][name] = hook["stages"].get(name, 0.0) + value
        hook["counts"] = child["counts"]
        hook["request_fingerprints"] = sorted(hook["request_fingerprints"] + child["request_fingerprints"])
        for key in ("peak_rss_after_mib", "rss_after_mib"):
            hook[key] = {**hook[key], **{f"fetch:{k}": v for k, v in child[key].items()}}
    return hook


def ingest_figures(db: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT job_id, sum(seconds_present)::DOUBLE / 3600, sum(seconds_busy)::DOUBLE / sum(seconds_present)::DOUBLE "
            "FROM gpu_usage WHERE job_id IS NOT NULL GROUP BY 1"
        ).fetchall()
        # jobs a raw DCGM_FI_DEV_GPU_UTIL count cannot match: MIG instances (their utilization is
        # DCGM_FI_PROF_GR_ENGINE_ACTIVE) and GPUs shared at a sample (1/n seconds)
        odd = [j for (j,) in con.execute(
            "SELECT DISTINCT job_id FROM gpu_usage WHERE job_id IS NOT NULL "
            "AND (mig_profile IS NOT NULL OR seconds_present % 30 <> 0)").fetchall()]
        usage_rows = con.execute("SELECT count(*) FROM gpu_usage").fetchone()[0]
        gpus = con.execute("SELECT count(DISTINCT gpu_uuid) FROM gpu_usage").fetchone()[0]
    finally:
        con.close()
    return {"usage_rows": usage_rows, "gpus": gpus,
            "jobs": {j: {"gpu_hours": h, "density": d} for j, h, d in rows}, "odd_jobs": sorted(odd)}


def compare(a: dict, b: dict) -> dict:
    odd = set(b["odd_jobs"]) | set(a["odd_jobs"])
    both = sorted((set(a["jobs"]) & set(b["jobs"])) - odd)
    dh = [abs(a["jobs"][j]["gpu_hours"] - b["jobs"][j]["gpu_hours"]) for j in both]
    dd = [abs(a["jobs"][j]["density"] - b["jobs"][j]["density"]) for j in both]
    worst = max(both, key=lambda j: abs(a["jobs"][j]["gpu_hours"] - b["jobs"][j]["gpu_hours"]), default=None)
    return {
        "jobs_compared": len(both),
        "jobs_only_ingest": sorted(set(a["jobs"]) - set(b["jobs"])),
        "jobs_only_naive": sorted(set(b["jobs"]) - set(a["jobs"])),
        "jobs_skipped_mig_or_shared": sorted(odd & set(a["jobs"])),
        "gpu_hours_compared": round(sum(a["jobs"][j]["gpu_hours"] for j in both), 6),
        "max_gpu_hours_diff": max(dh, default=0.0),
        "max_density_diff": max(dd, default=0.0),
        "worst_gpu_hours_job": worst,
        "gpu_hours_agree": max(dh, default=0.0) <= 1e-6,
        "density_agree": max(dd, default=0.0) <= 0.01,
    }


def code_version() -> dict:
    """The commit measured, and whether the ingest's files differ from it (work in progress)."""
    def git(*a: str) -> str:
        done = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    files = [*sorted(str(p.relative_to(ROOT)) for p in (ROOT / "yolocost" / "ingest").glob("*.py")),
             "yolocost/promql.py", "yolocost/promclient.py", "yolocost/load.py"]
    return {"head": git("rev-parse", "--short", "HEAD"),
            "modified": [line.split(maxsplit=1)[1] for line in git("status", "--porcelain", "--", *files).splitlines()],
            "sha256": {f: __import__("hashlib").sha256((ROOT / f).read_bytes()).hexdigest()[:12] for f in files}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default=str(HERE / ".work"), help="cache for generated data and scratch files")
    ap.add_argument("--out", default=str(HERE / "results" / "ingest.json"))
    ap.add_argument("--source", choices=("simple", "synth"), default="simple")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--start", default="2026-10-05", help="UTC date of the window's first day (simple source)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scale", type=float, default=1.4, help="fleet scale (synth source, where supported)")
    ap.add_argument("--chunk-hours", type=int, default=24, help="[prometheus] chunk_hours")
    ap.add_argument("--concurrency", type=int, default=4, help="[prometheus] concurrency")
    ap.add_argument("--rounds", type=int, default=1, help="run (c), (a), (b) this many times, interleaved")
    ap.add_argument("--paths", default="cab", help="which paths, in order: a, b, c (C: also the floor in "
                                                   "--mode chunked, waiting per chunk as the ingest does)")
    ap.add_argument("--floor-mode", choices=("pipelined", "chunked"), default="pipelined")
    ap.add_argument("--query-costs", action="store_true",
                    help="after the paths, time each grain query of the window's first chunk (benchmarks/query_costs.py)")
    ap.add_argument("--regenerate", action="store_true", help="ignore cached data")
    ap.add_argument("--keep-openmetrics", action="store_true")
    args = ap.parse_args()

    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tsdb, prep = prepare(args, workdir)
    start, end = prep["start"], prep["end"]
    scratch = workdir / "run"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()

    prom = Prometheus(tsdb, workdir)
    result: dict = {"command": " ".join([os.path.relpath(PY, ROOT), *map(str, sys.argv)]), "code": code_version(),
                    "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                    "data": prep, "window": [start, end], "runs": []}
    try:
        result["server_start_s"] = round(prom.start(), 2)
        info = prom.get("/api/v1/status/buildinfo")["data"]
        result["machine"]["prometheus"] = info["version"]
        series = prom.get(f"/api/v1/series?match[]=%7B__name__%3D~%22.%2B%22%7D&start={start}&end={end}")["data"]
        result["data"]["series_in_window"] = len(series)
        result["data"]["dcgm_series_in_window"] = sum(s["__name__"].startswith("DCGM_") for s in series)
        # warm-up: read every raw sample of the window once (so that no path pays for a cold
        # page cache), counting them per metric on the way
        t = time.monotonic()
        samples = {}
        for name in sorted({s["__name__"] for s in series}):
            q = urllib.parse.quote(f"sum(count_over_time({name}[{end - start}s]))")
            found = prom.get(f"/api/v1/query?query={q}&time={end - 0.001:.3f}")["data"]["result"]
            samples[name] = int(float(found[0]["value"][1])) if found else 0
        result["warmup_s"] = round(time.monotonic() - t, 2)
        result["data"]["samples_in_window"] = samples
        log(f"server ready at {prom.url} ({len(series)} series), warm-up {result['warmup_s']} s")

        cfg = write_config(workdir, prep, prom.url, args)
        iso = lambda s: dt.datetime.fromtimestamp(s, UTC).isoformat()  # noqa: E731
        yolocost = ROOT / ".venv" / "bin" / "yolocost"
        if not yolocost.exists():
            yolocost = Path(shutil.which("yolocost") or "yolocost")
        for r in range(args.rounds):
            run: dict = {}
            for p in args.paths:
                if p == "a":
                    db = scratch / f"a{r}.duckdb"
                    for f in scratch.glob(f"a{r}.duckdb*"):
                        f.unlink()
                    counts = scratch / f"a{r}-counts.json"
                    env = {**os.environ, "PYTHONPATH": str(HERE / "_hook"), "YOLOCOST_BENCH_COUNTS": str(counts)}
                    cmd = [str(yolocost), "--config", str(cfg), "--db", str(db), "-q", "ingest",
                           "--start", iso(start), "--end", iso(end)]
                    run["a"] = run_path(f"a{r}", cmd, prom, scratch, env)
                    run["a"]["command"] = " ".join([os.path.relpath(cmd[0], ROOT), "--config", "CFG", "--db", "DB"] + cmd[5:])
                    hook = read_hook(counts)
                    run["a"]["stages"] = {k: round(v, 3) for k, v in hook["stages"].items()}
                    run["a"]["peak_rss_after_stage_mib"] = hook["peak_rss_after_mib"]
                    run["a"]["fetched"] = hook["counts"]
                    run["a"]["request_fingerprints"] = hook.get("request_fingerprints", [])
                    run["a"]["figures"] = ingest_figures(db)
                    said = re.search(r"([\d,]+) usage rows", (scratch / f"a{r}.stdout").read_text())
                    run["a"]["figures"]["usage_rows_reported"] = int(said.group(1).replace(",", "")) if said else None
                elif p == "b":
                    outj = scratch / f"b{r}.json"
                    cmd = [str(PY), str(HERE / "naive_ingest.py"), "--url", prom.url, "--start", str(start),
                           "--end", str(end), "--chunk-hours", str(args.chunk_hours), "--out", str(outj)]
                    if prep.get("job_label"):
                        cmd += ["--job-label", prep["job_label"]]
                    run["b"] = run_path(f"b{r}", cmd, prom, scratch)
                    run["b"]["figures"] = json.loads(outj.read_text())
                elif p in "cC":  # C: the floor with the ingest's chunk-by-chunk waits (--mode chunked)
                    key = "c" if p == "c" else "c_chunked"
                    mode = args.floor_mode if p == "c" else "chunked"
                    outj = scratch / f"{key}{r}.json"
                    cmd = [str(PY), str(HERE / "floor.py"), "--config", str(cfg), "--start", str(start),
                           "--end", str(end), "--mode", mode, "--out", str(outj)]
                    run[key] = run_path(f"{key}{r}", cmd, prom, scratch)
                    run[key]["floor"] = json.loads(outj.read_text())
            result["runs"].append(run)
        if args.query_costs:
            cmd = [str(PY), str(HERE / "query_costs.py"), "--config", str(cfg), "--start", iso(start)[:19],
                   "--hours", str(args.chunk_hours)]
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
            result["query_costs"] = json.loads(done.stdout.strip().splitlines()[-1])
            log("query costs:\n" + "\n".join(done.stdout.strip().splitlines()[:-1]))
    finally:
        prom.stop()

    report(result, args)
    result["total_s"] = round(time.monotonic() - began, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    slim = json.loads(json.dumps(result))
    for run in slim["runs"]:  # per-job figures stay out of the JSON: only the comparison
        for k in ("a", "b"):
            if k in run:
                run[k]["figures"].pop("jobs", None)
    out.write_text(json.dumps(slim, indent=1) + "\n")
    log(f"wrote {out} (total {result['total_s']} s)")


def report(result: dict, args) -> None:
    runs = result["runs"]
    best = {p: min((r[p] for r in runs if p in r), key=lambda x: x["wall_s"]) for p in "abc" if any(p in r for r in runs)}
    summary: dict = {"per_path_best_of_rounds": {p: {k: v[k] for k in ("wall_s", "peak_rss_mib", "cpu_s", "server_cpu_s",
                                                                         "server_rss_peak_mib", "others_cpu_s")} for p, v in best.items()}}
    per_round = []
    for r in runs:
        row = {}
        if "a" in r and "b" in r:
            row["speed_b_over_a"] = r["b"]["wall_s"] / r["a"]["wall_s"]
            row["mem_a_over_b"] = r["a"]["peak_rss_mib"] / r["b"]["peak_rss_mib"]
        if "a" in r and "c" in r:
            # the floor is (c)'s replay of the ingest's requests; its process also starts Python
            # and records those requests first (running the ingest's discovery), which is not floor
            row["wall_a_over_c"] = r["a"]["wall_s"] / r["c"]["floor"]["phases"]["fetch_s"]
            row["wall_a_over_c_process"] = r["a"]["wall_s"] / r["c"]["wall_s"]
        if "a" in r and "c_chunked" in r:
            row["wall_a_over_c_chunked"] = r["a"]["wall_s"] / r["c_chunked"]["floor"]["phases"]["fetch_s"]
        # a round is quiet when nothing else on the machine used more than a tenth of a core
        # while any of its paths ran
        noise = max(x["others_cpu_s"] / x["wall_s"] for k, x in r.items())
        per_round.append({**{k: round(v, 3) for k, v in row.items()}, "others_cpu_share": round(noise, 3),
                          "quiet": noise < QUIET})
    summary["ratios_per_round"] = per_round
    summary["quiet_rounds"] = [i + 1 for i, x in enumerate(per_round) if x["quiet"]]
    last = runs[-1]
    checks = {}
    if "a" in last:
        fa = last["a"]["figures"]
        checks["a_database"] = {"usage_rows_reported": fa["usage_rows_reported"], "usage_rows_stored": fa["usage_rows"],
                                "agree": fa["usage_rows_reported"] == fa["usage_rows"]}
    if "a" in last and "b" in last:
        checks["a_vs_b"] = compare(last["a"]["figures"], last["b"]["figures"])
    if "a" in last and "c" in last:
        fa = last["a"]["fetched"]
        fc = last["c"]["floor"]
        checks["c_vs_a"] = {
            "series_a": sum(v["series"] for v in fa.values()), "points_a": sum(v["points"] for v in fa.values()),
            "series_c": fc["series"], "points_c": fc["points"],
            "bytes_c": fc["bytes"], "requests_c": fc["requests"], "instant_requests_c": fc["instant_requests"],
            "requests_a": len(last["a"]["request_fingerprints"]),
            "same_requests": bool(fc["request_fingerprints"])
                             and last["a"]["request_fingerprints"] == fc["request_fingerprints"],
        }
    summary["agreement"] = checks
    summary["targets"] = TARGETS
    result["summary"] = summary

    names = {"a": "(a) yolocost ingest", "b": "(b) naive prometheus-api-client + pandas",
             "c": "(c) floor: server answers our PromQL", "c_chunked": "(c') floor, chunk by chunk like (a)"}
    print()
    d = result["data"]
    code = result["code"]
    print(f"code: {code['head']}" + (f" with uncommitted changes to {', '.join(code['modified'])}"
                                     if code["modified"] else ""))
    print(f"data: {d['gpus']} GPUs x {args.days} days at 30 s, {d.get('tsdb_samples', 0):,} samples, "
          f"{d.get('series_in_window', 0):,} series, TSDB {d.get('tsdb_bytes', 0) / 2**20:.0f} MiB; "
          f"Prometheus {result['machine'].get('prometheus')}, {result['machine']['cpus']} CPUs")
    for i, r in enumerate(runs):
        rr = per_round[i]
        print(f"\nround {i + 1}: " + ("quiet" if rr["quiet"] else f"NOISY (other processes used up to "
                                                               f"{rr['others_cpu_share']:.0%} of a core during a path)"))
        print(f"  {'path':42s} {'wall s':>8s} {'replay s':>9s} {'peak RSS MiB':>13s} {'CPU s':>7s} {'server CPU s':>13s} "
              f"{'others CPU s':>13s}")
        for p in ("c", "c_chunked", "a", "b"):
            if p in r:
                x = r[p]
                replay = f"{x['floor']['phases']['fetch_s']:9.2f}" if "floor" in x else " " * 9
                print(f"  {names[p]:42.42s} {x['wall_s']:8.2f} {replay} {x['peak_rss_mib']:13.0f} {x['cpu_s']:7.1f} "
                      f"{x['server_cpu_s']:13.1f} {x['others_cpu_s']:13.1f}")
        rr = per_round[i]
        for k, target in TARGETS.items():
            if k in rr:
                ok = rr[k] >= target if k == "speed_b_over_a" else rr[k] <= target
                want = f">= {target}" if k == "speed_b_over_a" else f"<= {target}"
                print(f"  {k:24s} {rr[k]:8.3f}   target {want:8s} {'met' if ok else 'MISSED'}")
        for k, what in (("wall_a_over_c_process", "(a) vs (c)'s whole process"),
                        ("wall_a_over_c_chunked", "(a) vs (c')'s replay, chunk by chunk")):
            if k in rr:
                print(f"  {k:24s} {rr[k]:8.3f}   ({what})")
    if "a_database" in checks:
        c = checks["a_database"]
        print(f"\n(a) database: ingest reported {c['usage_rows_reported']:,} usage rows, the file holds "
              f"{c['usage_rows_stored']:,}" + ("" if c["agree"] else "   <-- DISAGREE: rows lost on the way to disk"))
        st = last["a"]["stages"]
        print("(a) stages, s: " + ", ".join(f"{k[:-2]} {v:.2f}" for k, v in st.items()))
        print("(a) peak RSS after stage, MiB: " + ", ".join(f"{k.removesuffix('_s')} {v:.0f}"
                                                          for k, v in last["a"]["peak_rss_after_stage_mib"].items()))
    if "a_vs_b" in checks:
        c = checks["a_vs_b"]
        print(f"(a) vs (b): {c['jobs_compared']} jobs, {c['gpu_hours_compared']:.1f} GPU-hours compared; max |diff| "
              f"GPU-hours {c['max_gpu_hours_diff']:.3g} h, density {c['max_density_diff']:.3g}; "
              f"only (a): {len(c['jobs_only_ingest'])}, only (b): {len(c['jobs_only_naive'])}, "
              f"skipped (MIG/shared): {len(c['jobs_skipped_mig_or_shared'])}")
    if "c_vs_a" in checks:
        c = checks["c_vs_a"]
        print(f"(c) vs (a): series {c['series_c']:,} / {c['series_a']:,}, points {c['points_c']:,} / {c['points_a']:,}, "
              f"same requests: {c['same_requests']} ({c['requests_c']} / {c['requests_a']}, {c['instant_requests_c']} "
              f"of them instant); (c) received {c['bytes_c'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
