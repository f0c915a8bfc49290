"""Monthly reports benchmark: a synthetic 1,000-GPU month at the default grain, 20 projects.

Loads the month straight into DuckDB with `yolocost load`, then times, each in its own
process and through the CLI exactly as a user runs it:

    load      yolocost --config CFG --db DB load DATA/       (includes building the marts)
    build     yolocost --config CFG --db DB build            (marts rebuilt from the raw tables)
    html      yolocost --config CFG --db DB report --month 2026-10 --format html
    pdf       yolocost --config CFG --db DB report --month 2026-10 --format pdf
    export    yolocost --config CFG --db DB report --month 2026-10 --format csv,summary,index
              (the finance CSV, the one-page summary and the month's index)

For each step: wall time, CPU time (wait4's: the yolocost process and the child processes
it reaped), peak RSS of the yolocost process (wait4's ru_maxrss) and peak RSS of its whole
process tree (sampled from /proc every 50 ms: the PDF step's headless Chromium and its
WeasyPrint workers run in separate processes), the load average and the CPU time other
processes used meanwhile (the machine is shared), and the step's own stderr lines with
the time each arrived (where the time goes).

The config is the shipped sample's, so DuckDB runs under yolocost's default
`[database] memory_limit` (3GB) in every step.

The synthetic generator (yolocost.synth.generate) plans ~6 projects; to reach 20 the
benchmark rewrites jobs.parquet before loading: a labeled job's project becomes one of
proj-01..proj-20 chosen by md5(job_id); unlabeled jobs (NULL project) stay unlabeled.

    .venv/bin/python benchmarks/reports_bench.py [--workdir benchmarks/.work] [--scale 21]

The generated month is cached under the workdir (git-ignored) and reused; results go to
benchmarks/results/reports.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MONTH = "2026-10"
TARGET_SECONDS = 120.0
TARGET_BYTES = 4 * 1024**3
PAGE = os.sysconf("SC_PAGE_SIZE")
CLK = os.sysconf("SC_CLK_TCK")


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------- measuring one process


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        ppid = int(raw[raw.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
        f = raw[raw.rindex(")") + 2:].split()
        return (int(f[11]) + int(f[12])) / CLK  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0.0


def descendants(root: int) -> list[int]:
    """Every process below `root` (children, their children, ...), from one read of /proc."""
    kids = _children_map()
    todo, seen = list(kids.get(root, ())), []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(kids.get(pid, ()))
    return seen


def tree_rss(root: int, cpu_seen: dict[int, float] | None = None) -> tuple[int, int]:
    """(RSS of `root` and all its descendants, number of processes); records each one's CPU time."""
    seen = [root, *descendants(root)]
    if cpu_seen is not None:
        for p in seen:
            cpu_seen[p] = max(cpu_seen.get(p, 0.0), _cpu(p))
    return sum(_rss(p) for p in seen), len(seen)


def cpu_busy_seconds() -> float:
    """All CPUs' non-idle time since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLK


def run_step(name: str, argv: list[str], env: dict[str, str]) -> dict:
    load_before = os.getloadavg()
    busy_before = cpu_busy_seconds()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    lines: list[tuple[float, str]] = []
    out: list[str] = []
    peak = {"rss": 0, "procs": 0}
    cpu_seen: dict[int, float] = {}
    done = threading.Event()

    def read_err():
        for raw in proc.stderr:
            lines.append((time.monotonic() - started, raw.decode("utf-8", "replace").rstrip()))

    def read_out():
        out.append(proc.stdout.read().decode("utf-8", "replace"))

    def sample():
        while not done.is_set():
            rss, n = tree_rss(proc.pid, cpu_seen)
            if rss > peak["rss"]:
                peak["rss"] = rss
            peak["procs"] = max(peak["procs"], n)
            done.wait(0.05)

    threads = [threading.Thread(target=f, daemon=True) for f in (read_err, read_out, sample)]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    done.set()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join()
    busy = cpu_busy_seconds() - busy_before
    cpu = usage.ru_utime + usage.ru_stime
    # wait4's CPU already holds the child processes yolocost reaped (Chromium, the WeasyPrint
    # workers); the /proc samples (each process's own CPU, last seen) also catch any it did not
    tree_cpu = max(cpu, sum(cpu_seen.values()))
    step = {
        "step": name,
        "argv": [rel(Path(a)) if a.startswith("/") else a for a in argv],
        "returncode": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "tree_cpu_s": round(tree_cpu, 2),
        "peak_rss_main_bytes": usage.ru_maxrss * 1024,
        "peak_rss_tree_bytes": max(peak["rss"], usage.ru_maxrss * 1024),
        "max_processes": peak["procs"],
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "machine_busy_cpu_s": round(busy, 2),
        "other_cpu_s": round(max(0.0, busy - tree_cpu), 2),
        "stderr": [[round(t, 2), s.replace(f"{ROOT}/", "")] for t, s in lines],
        "stdout": "".join(out).replace(f"{ROOT}/", "").strip().splitlines(),
    }
    if proc.returncode != 0:
        sys.stderr.write("".join(f"{s}\n" for _, s in lines))
        raise SystemExit(f"{name} failed with exit code {proc.returncode}")
    return step


# ---------------------------------------------------------------- where the time goes


def report_phases(step: dict) -> dict:
    """Split a `report` step by its own stderr progress lines (their text and arrival times)."""
    lines = [(t, s.removeprefix("yolocost: ")) for t, s in step["stderr"]]
    t_read = [t for t, s in lines if s.startswith("reading the marts")]
    t_html = [t for t, s in lines if s.startswith("wrote ") and s.endswith(".html")]
    t_pdf = [t for t, s in lines if s.startswith("wrote ") and s.endswith(".pdf")]
    t_chrome = [t for t, s in lines if s.startswith("starting Chromium")]
    summary = next((s for _, s in lines if " charts; " in s), "")
    phases = {"summary_line": summary, "audiences": len(t_read)}
    built = next(((t, s) for t, s in lines if re.match(r"built \d+ charts in [\d.]+ s", s)), None)
    if t_read:
        phases["startup_s"] = round(t_read[0], 2)  # interpreter, imports, config, connect
        if built:
            # the line comes after the figures; reading the marts for every audience came before them
            figures_s = float(re.search(r"in ([\d.]+) s", built[1]).group(1))
            phases["read_marts_s"] = round(built[0] - figures_s - t_read[0], 2)
            phases["build_figures_s"] = figures_s
    m = re.search(r"HTML in ([\d.]+) s", summary)
    if m:
        phases["html_render_s"] = float(m.group(1))
    m = re.search(r"PDF in ([\d.]+) s", summary)
    if m:
        phases["pdf_total_s"] = float(m.group(1))
    pdf_line = next((s for _, s in lines if s.startswith("SVG export ")), "")
    m = re.match(r"SVG export ([\d.]+) s \((\d+) tabs\); WeasyPrint ([\d.]+) s of work in (\d+) process", pdf_line)
    if m:
        # SVG export: wall time the browser spent on the charts (the printing overlaps it);
        # WeasyPrint: the seconds each report took to print, added up over the worker processes
        phases["svg_export_s"] = float(m.group(1))
        phases["chromium_tabs"] = int(m.group(2))
        phases["weasyprint_work_s"] = float(m.group(3))
        phases["weasyprint_processes"] = int(m.group(4))
    if t_chrome and t_pdf:
        phases["chromium_start_to_first_pdf_s"] = round(t_pdf[0] - t_chrome[0], 2)
        phases["chromium_start_to_last_pdf_s"] = round(t_pdf[-1] - t_chrome[0], 2)
        phases["after_last_report_s"] = round(step["wall_s"] - t_pdf[-1], 2)
    elif t_html:
        phases["after_last_report_s"] = round(step["wall_s"] - t_html[-1], 2)
    m = re.search(r"^(\d+) charts", summary)
    if m:
        phases["charts"] = int(m.group(1))
    return phases


# ---------------------------------------------------------------- data


def ensure_month(workdir: Path, scale: float, env: dict[str, str]) -> tuple[Path, dict]:
    data = workdir / f"month-x{scale:g}"
    marker = data / ".complete"
    if marker.exists():
        info = json.loads(marker.read_text())
        info["cached"] = True
        return data, info
    shutil.rmtree(data, ignore_errors=True)
    code = (
        "import json, sys\n"
        "from yolocost.synth.generate import generate\n"
        f"r = generate({str(data)!r}, scale={scale!r})\n"
        "print(json.dumps({'gpus': r.gpus, 'jobs': r.jobs, 'usage_rows': r.usage_rows}))\n"
    )
    step = run_step("generate", [sys.executable, "-c", code], env)
    info = json.loads(step["stdout"][-1])
    info.update(generate_wall_s=step["wall_s"], generate_peak_rss_bytes=step["peak_rss_tree_bytes"])
    marker.write_text(json.dumps(info))
    info["cached"] = False
    return data, info


def project_of(job_id: str, projects: int) -> str:
    n = int(hashlib.md5(job_id.encode()).hexdigest()[:8], 16) % projects
    return f"proj-{n + 1:02d}"


def with_projects(data: Path, workdir: Path, projects: int) -> tuple[Path, dict]:
    """A copy of the month folder whose jobs.parquet spreads labeled jobs over `projects` projects."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = workdir / f"{data.name}-p{projects}"
    out.mkdir(parents=True, exist_ok=True)
    for src in data.glob("*.parquet"):
        if src.name == "jobs.parquet":
            continue
        dst = out / src.name
        if not dst.exists():
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
    jobs = pq.read_table(data / "jobs.parquet")
    before = sorted({p for p in jobs.column("project").to_pylist() if p is not None})
    new = [None if p is None else project_of(j, projects)
           for j, p in zip(jobs.column("job_id").to_pylist(), jobs.column("project").to_pylist())]
    idx = jobs.schema.get_field_index("project")
    jobs = jobs.set_column(idx, jobs.schema.field(idx), pa.array(new, pa.string()))
    pq.write_table(jobs, out / "jobs.parquet")
    after = sorted({p for p in new if p is not None})
    return out, {"projects_generated": len(before), "projects_after_rewrite": len(after),
                 "jobs": jobs.num_rows, "unlabeled_jobs": sum(p is None for p in new)}


def write_config(run: Path) -> Path:
    from yolocost.resources import shipped_dir

    text = (shipped_dir("sample_data") / "yolocost.toml").read_text(encoding="utf-8")
    reports = run / "reports"
    new = text.replace('output_dir = "reports"', f"output_dir = {json.dumps(str(reports))}")
    assert new != text, "sample config changed: [reports] output_dir not found"
    cfg = run / "yolocost.toml"
    cfg.write_text("# written by benchmarks/reports_bench.py from sample_data/yolocost.toml\n" + new,
                   encoding="utf-8")
    return cfg


# ---------------------------------------------------------------- main


def mib(n: int) -> str:
    return f"{n / 1024**2:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work")
    ap.add_argument("--scale", type=float, default=21.0, help="synth scale (21 -> 1,008 GPUs)")
    ap.add_argument("--projects", type=int, default=20)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "reports.json")
    args = ap.parse_args()

    yolocost = str(Path(sys.executable).with_name("yolocost"))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    data, info = ensure_month(workdir, args.scale, env)
    print(f"month: {rel(data)} {info} ", flush=True)
    data20, proj = with_projects(data, workdir, args.projects)
    print(f"projects: {proj}", flush=True)

    run = workdir / "reports-run"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    cfg = write_config(run)
    db = run / "bench.duckdb"
    base = [yolocost, "--config", str(cfg), "--db", str(db)]
    plan = [
        ("load", base + ["load", str(data20)]),
        ("build", base + ["build"]),
        ("html", base + ["report", "--month", MONTH, "--format", "html"]),
        ("pdf", base + ["report", "--month", MONTH, "--format", "pdf"]),
        ("export", base + ["report", "--month", MONTH, "--format", "csv,summary,index"]),
    ]
    steps = []
    for name, argv in plan:
        print(f"running {name} ...", flush=True)
        step = run_step(name, argv, env)
        if name in ("html", "pdf"):
            step["phases"] = report_phases(step)
        steps.append(step)
        print(f"  {step['wall_s']:.1f} s wall, {step['cpu_s']:.1f} s CPU, peak RSS "
              f"{mib(step['peak_rss_main_bytes'])} MiB (tree {mib(step['peak_rss_tree_bytes'])} MiB), "
              f"other CPU {step['other_cpu_s']:.1f} s, load {step['loadavg_before'][0]}", flush=True)

    files = sorted((run / "reports" / MONTH).iterdir())
    outputs = {
        "html_files": sum(f.suffix == ".html" for f in files),
        "pdf_files": sum(f.suffix == ".pdf" for f in files),
        "html_bytes": sum(f.stat().st_size for f in files if f.suffix == ".html"),
        "pdf_bytes": sum(f.stat().st_size for f in files if f.suffix == ".pdf"),
        "csv_files": sum(f.suffix == ".csv" for f in files),
        "db_bytes": db.stat().st_size,
    }
    monthly = [s for s in steps if s["step"] in ("build", "html", "pdf", "export")]
    total_wall = sum(s["wall_s"] for s in monthly)
    peak_main = max(s["peak_rss_main_bytes"] for s in monthly)
    peak_tree = max(s["peak_rss_tree_bytes"] for s in monthly)
    verdict = {
        "monthly_set": "build + html + pdf + export",
        "total_wall_s": round(total_wall, 2),
        "peak_rss_main_bytes": peak_main,
        "peak_rss_tree_bytes": peak_tree,
        "target_wall_s": TARGET_SECONDS,
        "target_bytes": TARGET_BYTES,
        "meets_time": total_wall < TARGET_SECONDS,
        "meets_memory": peak_tree < TARGET_BYTES,
        "with_load_wall_s": round(total_wall + steps[0]["wall_s"], 2),
    }
    try:
        import duckdb

        duckdb_version = duckdb.__version__
    except ImportError:
        duckdb_version = None
    result = {
        "benchmark": "reports_bench",
        "command": ".venv/bin/python benchmarks/reports_bench.py" + (
            f" --scale {args.scale:g}" if args.scale != 21.0 else "") + (
            f" --projects {args.projects}" if args.projects != 20 else ""),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total_bytes": os.sysconf("SC_PHYS_PAGES") * PAGE,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "duckdb": duckdb_version,
        },
        "month": MONTH,
        "data": {**info, **proj, "scale": args.scale},
        "steps": steps,
        "outputs": outputs,
        "verdict": verdict,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")

    print()
    print(f"{'step':10} {'wall s':>7} {'CPU s':>7} {'tree CPU':>8} {'RSS MiB':>8} {'tree MiB':>9} {'procs':>5} "
          f"{'other CPU s':>11} {'load1':>6}")
    for s in steps:
        print(f"{s['step']:10} {s['wall_s']:7.1f} {s['cpu_s']:7.1f} {s['tree_cpu_s']:8.1f} {mib(s['peak_rss_main_bytes']):>8} "
              f"{mib(s['peak_rss_tree_bytes']):>9} {s['max_processes']:5d} {s['other_cpu_s']:11.1f} "
              f"{s['loadavg_before'][0]:6.2f}")
    print(f"monthly set (build+html+pdf+export): {total_wall:.1f} s, peak {mib(peak_tree)} MiB "
          f"(target {TARGET_SECONDS:.0f} s, {mib(TARGET_BYTES)} MiB): "
          f"{'PASS' if verdict['meets_time'] and verdict['meets_memory'] else 'FAIL'}")
    for s in steps:
        if "phases" in s:
            print(f"{s['step']} phases: {json.dumps(s['phases'])}")
    print(f"outputs: {outputs}")
    print(f"wrote {rel(args.json)}")


if __name__ == "__main__":
    main()
