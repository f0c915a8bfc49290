"""Monthly reports benchmark: a synthetic 1,000-GPU month at the default grain, 20 projects.

Loads the month straight into DuckDB with `yolocost load`, then times, each in its own
process and through the CLI exactly as a user runs it (`python -m yolocost`, with the code
under test first on PYTHONPATH and as the working directory):

    load      yolocost --config CFG --db DB load DATA/       (includes building the marts)
    build     yolocost --config CFG --db DB build            (marts rebuilt from the raw tables)
    report    yolocost --config CFG --db DB report --month 2026-10
              (every format in one run, as `yolocost monthly` renders them: the HTML and PDF
              reports, the finance CSV, the one-page summary and the month's index)

With `--split-report` the report step is three, each in its own process:

    html      yolocost --config CFG --db DB report --month 2026-10 --format html
    pdf       yolocost --config CFG --db DB report --month 2026-10 --format pdf
    export    yolocost --config CFG --db DB report --month 2026-10 --format csv,summary,index

For each step: wall time, CPU time (wait4's: the yolocost process and the child processes
it reaped), peak RSS of the yolocost process (wait4's ru_maxrss) and peak RSS of its whole
process tree (sampled from /proc every 50 ms: the PDF step's child processes), the DuckDB
file's size after the step (and its WAL's), the load average and the CPU time other
processes used meanwhile (the machine is shared), and the step's own stderr lines with the
time each arrived (where the time goes). The monthly set is build + report (or build + html
+ pdf + export); its target: TARGET_SECONDS of wall time at most, peak tree RSS under TARGET_BYTES.

`--baseline REF` measures the same steps with the code at git REF in the same run: a
`git worktree add --detach` of REF under the workdir, and each step runs for both codes
alternately (baseline load, new load, baseline build, new build, ...), each code with its
own config (its own sample_data/yolocost.toml), database and report folder. The table and
the results JSON hold both, with the ratio new / baseline per step.

The config is the shipped sample's, so DuckDB runs under yolocost's default
`[database] memory_limit` (3GB) unless `--memory-limit` (e.g. 12GB for a 10,000-GPU month)
writes another into the config's [database] table.

The synthetic generator (yolocost.synth.generate) plans ~6 projects; to reach 20 the
benchmark rewrites jobs.parquet before loading: a labeled job's project becomes one of
proj-01..proj-20 chosen by md5(job_id); unlabeled jobs (NULL project) stay unlabeled.
The generator refuses a scale above its MAX_SCALE (the CLI's `sample generate` limit); the
benchmark lifts that cap in its own generator process (so a larger fleet can be tried) and
records whether it did. `--scale 210` gives 10,080 GPUs.

    .venv/bin/python benchmarks/reports_bench.py [--baseline REF] [--scale 21] [--projects 20]
        [--memory-limit 12GB] [--workdir benchmarks/.work] [--json PATH] [--compare PATH]

The generated month is cached under the workdir (git-ignored) and reused; results go to
benchmarks/results/reports.json (reports-x<scale>[-p<projects>].json at another scale or
project count). At a scale other than the default the run is also compared with the
default scale's results (--compare), step by step: how the time, memory and database grow.
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MONTH = "2026-10"
DEFAULT_SCALE = 21.0
DEFAULT_PROJECTS = 20
TARGET_SECONDS = 60.0  # the monthly set (build + html + pdf + export), wall time, at most
TARGET_BYTES = 3 * 1024**3  # its peak RSS of the whole process tree, under
# a 10,000-GPU month (issue 25): the model build under 10 minutes and under 16 GB
BIG_FLEET_GPUS = 5000
BUILD_TARGET_BIG_SECONDS = 600.0
BUILD_TARGET_BIG_BYTES = 16 * 1024**3
PAGE = os.sysconf("SC_PAGE_SIZE")
CLK = os.sysconf("SC_CLK_TCK")
STEPS = ("load", "build", "report")
SPLIT_STEPS = ("load", "build", "html", "pdf", "export")
MONTHLY_SET = ("build", "report", "html", "pdf", "export")


def rel(path: Path) -> str:
    """The path relative to the checkout where it lies inside it (a link such as the venv's
    python counts as where it is, not where it points), else as given."""
    for candidate in (Path(path).absolute(), Path(path).resolve()):
        try:
            return str(candidate.relative_to(ROOT))
        except ValueError:
            continue
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


def run_step(name: str, argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> dict:
    load_before = os.getloadavg()
    busy_before = cpu_busy_seconds()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
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
    # wait4's CPU already holds the child processes yolocost reaped (the WeasyPrint
    # workers); the /proc samples (each process's own CPU, last seen) also catch any it did not
    tree_cpu = max(cpu, sum(cpu_seen.values()))
    step = {
        "step": name,
        "argv": [rel(Path(a)) if a.startswith("/") else a for a in argv],
        "cwd": rel(cwd),
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
    pdf_line = next((s for _, s in lines if s.startswith("charts drawn in ")), "")
    m = re.match(r"charts drawn in ([\d.]+) s, WeasyPrint ([\d.]+) s of work in (\d+) process", pdf_line)
    if m:
        # the seconds each report's charts took to draw and the report to print, added up over
        # the worker processes (they run side by side)
        phases["chart_drawing_work_s"] = float(m.group(1))
        phases["weasyprint_work_s"] = float(m.group(2))
        phases["pdf_processes"] = int(m.group(3))
    old = re.match(r"SVG export ([\d.]+) s \((\d+) tabs\); WeasyPrint ([\d.]+) s of work in (\d+) process",
                   next((s for _, s in lines if s.startswith("SVG export ")), ""))
    if old:  # a baseline from before matplotlib drew the PDF's charts: Chromium exported them
        phases["svg_export_s"] = float(old.group(1))
        phases["weasyprint_work_s"] = float(old.group(3))
        phases["pdf_processes"] = int(old.group(4))
    t_start = [t for t, s in lines if (s.startswith("drawing ") and "charts with matplotlib" in s)
               or s.startswith("starting Chromium")]
    if t_start and t_pdf:
        phases["pdf_start_to_first_pdf_s"] = round(t_pdf[0] - t_start[0], 2)
        phases["pdf_start_to_last_pdf_s"] = round(t_pdf[-1] - t_start[0], 2)
        phases["after_last_report_s"] = round(step["wall_s"] - t_pdf[-1], 2)
    elif t_html:
        phases["after_last_report_s"] = round(step["wall_s"] - t_html[-1], 2)
    m = re.search(r"^(\d+) charts", summary)
    if m:
        phases["charts"] = int(m.group(1))
    return phases


# ---------------------------------------------------------------- data


def generator_phases(step: dict) -> dict:
    """Split the generator's run by its progress lines (their arrival times)."""
    at = {}
    for t, s in step["stderr"]:
        for key, prefix in (("planned", "planned "), ("tables", "writing jobs"),
                            ("truth", "computing the ground truth"), ("wrote", "wrote ")):
            if s.startswith(prefix) and key not in at:
                at[key] = t
    phases = {}
    if "planned" in at:
        phases["start_and_plan_s"] = round(at["planned"], 2)  # imports, fleet, jobs, schedule
        if "tables" in at:
            phases["samples_and_usage_rows_s"] = round(at["tables"] - at["planned"], 2)
    if "tables" in at and "truth" in at:
        phases["jobs_progress_results_s"] = round(at["truth"] - at["tables"], 2)
    if "truth" in at and "wrote" in at:
        phases["ground_truth_s"] = round(at["wrote"] - at["truth"], 2)
    return phases


def ensure_month(workdir: Path, scale: float, env: dict[str, str]) -> tuple[Path, dict]:
    data = workdir / f"month-x{scale:g}"
    marker = data / ".complete"
    if marker.exists():
        info = json.loads(marker.read_text())
        info["cached"] = True
        return data, info
    shutil.rmtree(data, ignore_errors=True)
    code = (
        "import importlib, json, sys\n"
        "g = importlib.import_module('yolocost.synth.generate')\n"
        f"scale = {scale!r}\n"
        "lifted = scale > g.MAX_SCALE\n"
        "g.MAX_SCALE = max(g.MAX_SCALE, scale)  # `yolocost sample generate` stops at MAX_SCALE\n"
        "say = lambda m: print(m, file=sys.stderr, flush=True)\n"
        f"r = g.generate({str(data)!r}, scale=scale, progress=say)\n"
        "print(json.dumps({'gpus': r.gpus, 'jobs': r.jobs, 'usage_rows': r.usage_rows,"
        " 'scale_cap_lifted': lifted}))\n"
    )
    print(f"generating the month at scale {scale:g} into {rel(data)} ...", flush=True)
    step = run_step("generate", [sys.executable, "-c", code], env)
    info = json.loads(step["stdout"][-1])
    info.update(generate_wall_s=step["wall_s"], generate_cpu_s=step["tree_cpu_s"],
                generate_peak_rss_bytes=step["peak_rss_tree_bytes"],
                generate_phases=generator_phases(step),
                generate_other_cpu_s=step["other_cpu_s"],
                parquet_bytes=sum(f.stat().st_size for f in data.glob("*.parquet")))
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


def config_text(code_root: Path, run: Path, memory_limit: str | None) -> str:
    """The sample config of the code at `code_root`, its reports written under `run`, and
    `memory_limit` (if given) as its [database] memory_limit."""
    sample = code_root / "sample_data" / "yolocost.toml"
    if not sample.exists():  # an installed package: its bundled copy
        from yolocost.resources import shipped_dir

        sample = shipped_dir("sample_data") / "yolocost.toml"
    text = sample.read_text(encoding="utf-8")
    reports = run / "reports"
    new = text.replace('output_dir = "reports"', f"output_dir = {json.dumps(str(reports))}")
    assert new != text, f"{rel(sample)} changed: [reports] output_dir not found"
    if memory_limit:
        line = f"memory_limit = {json.dumps(memory_limit)}"
        table = re.search(r"(?ms)^\[database\][ \t]*\n(.*?)(?=^\[|\Z)", new)
        assert table, f"{rel(sample)} changed: no [database] table"
        body = table.group(1)
        if re.search(r"(?m)^memory_limit\s*=", body):
            body = re.sub(r"(?m)^memory_limit\s*=.*$", line, body)
        else:
            body = f"{line}\n{body}"
        new = new[: table.start(1)] + body + new[table.end(1):]
    return new


def write_config(run: Path, code_root: Path = ROOT, memory_limit: str | None = None) -> Path:
    cfg = run / "yolocost.toml"
    cfg.write_text("# written by benchmarks/reports_bench.py from sample_data/yolocost.toml\n"
                   + config_text(code_root, run, memory_limit), encoding="utf-8")
    return cfg


# ---------------------------------------------------------------- the code under test


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def code_state(root: Path) -> dict:
    """The commit of a checkout and whether its package, queries, sample or templates differ from it."""
    try:
        sha = git("rev-parse", "HEAD", cwd=root)
        dirty = git("status", "--porcelain", "--", "yolocost", "queries", "sample_data", "reports",
                    "pyproject.toml", cwd=root)
    except (OSError, subprocess.CalledProcessError):
        return {"sha": None, "dirty": None}
    return {"sha": sha, "dirty": bool(dirty)}


def baseline_worktree(workdir: Path, ref: str) -> tuple[Path, str]:
    """A detached worktree of `ref` under the workdir (reused when it is already there, clean)."""
    sha = git("rev-parse", "--verify", f"{ref}^{{commit}}")
    path = workdir / f"baseline-{sha[:12]}"
    if path.exists():
        try:
            reusable = (Path(git("rev-parse", "--show-toplevel", cwd=path)).resolve() == path.resolve()
                        and git("rev-parse", "HEAD", cwd=path) == sha
                        and not git("status", "--porcelain", cwd=path))
        except subprocess.CalledProcessError:
            reusable = False
        if reusable:
            return path, sha
        remove_worktree(path)
    git("worktree", "add", "--detach", str(path), sha)
    return path, sha


def remove_worktree(path: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)


@dataclass
class Code:
    """One code under test: its checkout, run folder, config and database."""

    label: str  # "new" or "baseline"
    root: Path  # the checkout whose yolocost package is imported
    run: Path
    cfg: Path
    db: Path
    env: dict

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "yolocost", "--config", str(self.cfg), "--db", str(self.db), *args]

    def db_sizes(self) -> tuple[int, int]:
        size = lambda p: p.stat().st_size if p.exists() else 0  # noqa: E731
        return size(self.db), size(self.db.with_name(self.db.name + ".wal"))

    def check_import(self) -> str:
        """Where `python -m yolocost` run as the steps run it imports yolocost from."""
        out = subprocess.run([sys.executable, "-c", "import yolocost; print(yolocost.__file__)"],
                             cwd=self.root, env=self.env, check=True, capture_output=True, text=True)
        where = Path(out.stdout.strip()).resolve()
        assert where.is_relative_to(self.root.resolve()), f"{self.label}: yolocost imported from {where}"
        return rel(where)


def make_code(label: str, root: Path, run: Path, memory_limit: str | None) -> Code:
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(root))
    # compiled once here, so the first step of neither code pays for compiling the package
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "yolocost")], check=True,
                   env=env, stdout=subprocess.DEVNULL)
    return Code(label, root, run, write_config(run, root, memory_limit), run / "bench.duckdb", env)


# ---------------------------------------------------------------- main


def mib(n: int) -> str:
    return f"{n / 1024**2:,.0f}"


def outputs_of(code: Code) -> dict:
    folder = code.run / "reports" / MONTH
    files = sorted(folder.iterdir()) if folder.is_dir() else []
    db, wal = code.db_sizes()
    return {
        "html_files": sum(f.suffix == ".html" for f in files),
        "pdf_files": sum(f.suffix == ".pdf" for f in files),
        "html_bytes": sum(f.stat().st_size for f in files if f.suffix == ".html"),
        "pdf_bytes": sum(f.stat().st_size for f in files if f.suffix == ".pdf"),
        "csv_files": sum(f.suffix == ".csv" for f in files),
        "db_bytes": db,
        "wal_bytes": wal,
    }


def verdict_of(steps: list[dict], gpus: int | None) -> dict:
    monthly = [s for s in steps if s["step"] in MONTHLY_SET]
    total_wall = sum(s["wall_s"] for s in monthly)
    peak_tree = max(s["peak_rss_tree_bytes"] for s in monthly)
    load = next((s for s in steps if s["step"] == "load"), None)
    verdict = {
        "monthly_set": " + ".join(s["step"] for s in monthly),
        "total_wall_s": round(total_wall, 2),
        "total_cpu_s": round(sum(s["tree_cpu_s"] for s in monthly), 2),
        "peak_rss_main_bytes": max(s["peak_rss_main_bytes"] for s in monthly),
        "peak_rss_tree_bytes": peak_tree,
        "target_wall_s": TARGET_SECONDS,
        "target_bytes": TARGET_BYTES,
        "meets_time": total_wall <= TARGET_SECONDS,
        "meets_memory": peak_tree < TARGET_BYTES,
        "with_load_wall_s": round(total_wall + (load["wall_s"] if load else 0.0), 2),
    }
    build = next((s for s in steps if s["step"] == "build"), None)
    if gpus and gpus >= BIG_FLEET_GPUS and build:
        verdict.update(build_target_wall_s=BUILD_TARGET_BIG_SECONDS, build_target_bytes=BUILD_TARGET_BIG_BYTES,
                       build_meets_time=build["wall_s"] <= BUILD_TARGET_BIG_SECONDS,
                       build_meets_memory=build["peak_rss_tree_bytes"] < BUILD_TARGET_BIG_BYTES)
    return verdict


def ratio(new: float, base: float) -> float | None:
    return round(new / base, 3) if base else None


COMPARED = (("wall_s", "wall s"), ("tree_cpu_s", "CPU s"), ("peak_rss_tree_bytes", "tree MiB"),
            ("db_bytes", "db MiB"))


def side_by_side(base: list[dict], new: list[dict], base_verdict: dict, new_verdict: dict) -> dict:
    """Per step and for the monthly set: baseline, new and new / baseline."""
    out = {}
    for b, n in zip(base, new):
        out[b["step"]] = {k: {"baseline": b[k], "new": n[k], "ratio": ratio(n[k], b[k])} for k, _ in COMPARED}
    out["monthly_set"] = {
        k: {"baseline": base_verdict[v], "new": new_verdict[v], "ratio": ratio(new_verdict[v], base_verdict[v])}
        for k, v in (("wall_s", "total_wall_s"), ("tree_cpu_s", "total_cpu_s"),
                     ("peak_rss_tree_bytes", "peak_rss_tree_bytes"))
    }
    return out


def show(key: str, value) -> str:
    if value is None:
        return "-"
    return mib(value) if key.endswith("bytes") else f"{value:.1f}"


def print_side_by_side(cmp: dict) -> None:
    print(f"{'':11}" + "".join(f" | {title:^26}" for _, title in COMPARED))
    print(f"{'step':11}" + " | {:>8} {:>8} {:>8}".format("baseline", "new", "new/base") * len(COMPARED))
    for step, row in cmp.items():
        cells = []
        for key, _ in COMPARED:
            c = row.get(key)
            cells.append(" | " + ("{:>8} {:>8} {:>8}".format(
                show(key, c["baseline"]), show(key, c["new"]), "-" if c["ratio"] is None else f"{c['ratio']:.2f}")
                if c else f"{'':26}"))
        print(f"{step:11}" + "".join(cells))


def growth(result: dict, ref_path: Path) -> dict | None:
    """This run's steps against an earlier results JSON's (another scale): how each grows."""
    try:
        ref = json.loads(ref_path.read_text())
    except (OSError, ValueError):
        return None
    if ref.get("data", {}).get("scale") == result["data"]["scale"]:
        return None
    by_step = {s["step"]: s for s in ref.get("steps", [])}
    rows = ref.get("data", {}).get("usage_rows")
    out = {
        "reference": rel(ref_path),
        "reference_when": ref.get("when"),
        "reference_code": ref.get("code"),
        "reference_data": {k: ref.get("data", {}).get(k) for k in ("scale", "gpus", "jobs", "usage_rows")},
        "usage_rows_ratio": ratio(result["data"]["usage_rows"], rows) if rows else None,
        "steps": {},
    }
    for s in result["steps"]:
        r = by_step.get(s["step"])
        if r:
            out["steps"][s["step"]] = {k: {"reference": r.get(k), "this": s.get(k), "ratio": ratio(s.get(k) or 0, r.get(k) or 0)}
                                       for k, _ in COMPARED}
    rv, tv = ref.get("verdict", {}), result["verdict"]
    if "total_wall_s" in rv:
        out["monthly_set_wall"] = {"reference": rv["total_wall_s"], "this": tv["total_wall_s"],
                                   "ratio": ratio(tv["total_wall_s"], rv["total_wall_s"])}
    return out


def print_steps(steps: list[dict]) -> None:
    print(f"{'step':10} {'code':8} {'wall s':>7} {'CPU s':>7} {'tree CPU':>8} {'RSS MiB':>8} {'tree MiB':>9} "
          f"{'procs':>5} {'db MiB':>8} {'other CPU s':>11} {'load1':>6}")
    for s in steps:
        print(f"{s['step']:10} {s['code']:8} {s['wall_s']:7.1f} {s['cpu_s']:7.1f} {s['tree_cpu_s']:8.1f} "
              f"{mib(s['peak_rss_main_bytes']):>8} {mib(s['peak_rss_tree_bytes']):>9} {s['max_processes']:5d} "
              f"{mib(s['db_bytes']):>8} {s['other_cpu_s']:11.1f} {s['loadavg_before'][0]:6.2f}")


def print_verdict(label: str, v: dict) -> None:
    ok = v["meets_time"] and v["meets_memory"]
    print(f"{label}: monthly set (build+html+pdf+export) {v['total_wall_s']:.1f} s, peak {mib(v['peak_rss_tree_bytes'])} "
          f"MiB (target <= {TARGET_SECONDS:.0f} s, < {mib(TARGET_BYTES)} MiB): {'PASS' if ok else 'FAIL'}")
    if "build_meets_time" in v:
        ok = v["build_meets_time"] and v["build_meets_memory"]
        print(f"{label}: model build target for a 10,000-GPU month (<= {BUILD_TARGET_BIG_SECONDS:.0f} s, "
              f"< {mib(BUILD_TARGET_BIG_BYTES)} MiB): {'PASS' if ok else 'FAIL'}")


def default_json(scale: float, projects: int) -> Path:
    name = "reports"
    if scale != DEFAULT_SCALE:
        name += f"-x{scale:g}"
    if projects != DEFAULT_PROJECTS:
        name += f"-p{projects}"
    return ROOT / "benchmarks" / "results" / f"{name}.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work")
    ap.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="synth scale (21 -> 1,008 GPUs, 210 -> 10,080)")
    ap.add_argument("--projects", type=int, default=DEFAULT_PROJECTS)
    ap.add_argument("--baseline", metavar="REF", help="also run the code at git REF, step by step beside this one")
    ap.add_argument("--split-report", action="store_true",
                    help="time html, pdf and csv/summary/index as three report runs instead of one")
    ap.add_argument("--keep-worktree", action="store_true", help="leave the baseline's worktree in the workdir")
    ap.add_argument("--memory-limit", metavar="AMOUNT",
                    help="the config's [database] memory_limit (e.g. 12GB; default: yolocost's, 3GB)")
    ap.add_argument("--json", type=Path, help="results file (default: benchmarks/results/reports[-x<scale>][-p<n>].json)")
    ap.add_argument("--compare", type=Path, help="at another scale: an earlier results JSON to show the growth "
                    "against (default: benchmarks/results/reports.json, the default scale's)")
    args = ap.parse_args()
    json_path = args.json or default_json(args.scale, args.projects)

    gen_env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    data, info = ensure_month(workdir, args.scale, gen_env)
    print(f"month: {rel(data)} {info} ", flush=True)
    data_p, proj = with_projects(data, workdir, args.projects)
    print(f"projects: {proj}", flush=True)

    run = workdir / "reports-run"
    shutil.rmtree(run, ignore_errors=True)
    codes: list[Code] = []
    worktree = base_sha = None
    try:
        if args.baseline:
            worktree, base_sha = baseline_worktree(workdir, args.baseline)
            codes.append(make_code("baseline", worktree, run / "baseline", args.memory_limit))
        codes.append(make_code("new", ROOT, run / "new", args.memory_limit))
        for c in codes:
            print(f"{c.label}: {rel(c.root)}, imports {c.check_import()}, config {rel(c.cfg)}", flush=True)

        plan = {
            "load": ["load", str(data_p)],
            "build": ["build"],
            "html": ["report", "--month", MONTH, "--format", "html"],
            "pdf": ["report", "--month", MONTH, "--format", "pdf"],
            "export": ["report", "--month", MONTH, "--format", "csv,summary,index"],
            "report": ["report", "--month", MONTH],
        }
        steps: dict[str, list[dict]] = {c.label: [] for c in codes}
        chosen = SPLIT_STEPS if args.split_report else STEPS
        for name in chosen:
            for c in codes:  # the baseline first, then the new code, step by step
                print(f"running {name} ({c.label}) ...", flush=True)
                step = run_step(name, c.argv(*plan[name]), c.env, cwd=c.root)
                step["code"] = c.label
                step["db_bytes"], step["wal_bytes"] = c.db_sizes()
                if name in ("html", "pdf", "report"):
                    step["phases"] = report_phases(step)
                steps[c.label].append(step)
                print(f"  {step['wall_s']:.1f} s wall, {step['tree_cpu_s']:.1f} s CPU (tree), peak RSS "
                      f"{mib(step['peak_rss_main_bytes'])} MiB (tree {mib(step['peak_rss_tree_bytes'])} MiB), "
                      f"db {mib(step['db_bytes'])} MiB, other CPU {step['other_cpu_s']:.1f} s, "
                      f"load {step['loadavg_before'][0]}", flush=True)
        outputs = {c.label: outputs_of(c) for c in codes}
        configs_same = len({c.cfg.read_text().replace(str(c.run), "") for c in codes}) == 1
    finally:
        if worktree and not args.keep_worktree:
            remove_worktree(worktree)

    gpus = info.get("gpus")
    verdicts = {label: verdict_of(s, gpus) for label, s in steps.items()}
    try:
        import duckdb

        duckdb_version = duckdb.__version__
    except ImportError:
        duckdb_version = None
    command = ".venv/bin/python benchmarks/reports_bench.py"
    for flag, value, default in (("--baseline", args.baseline, None), ("--scale", args.scale, DEFAULT_SCALE),
                                 ("--projects", args.projects, DEFAULT_PROJECTS),
                                 ("--memory-limit", args.memory_limit, None)):
        if value != default:
            command += f" {flag} {value:g}" if isinstance(value, float) else f" {flag} {value}"
    result = {
        "benchmark": "reports_bench",
        "command": command,
        "code": code_state(ROOT),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total_bytes": os.sysconf("SC_PHYS_PAGES") * PAGE,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "duckdb": duckdb_version,
        },
        "month": MONTH,
        "memory_limit": args.memory_limit or "yolocost's default (3GB)",
        "data": {**info, **proj, "scale": args.scale},
        "steps": steps["new"],
        "outputs": outputs["new"],
        "verdict": verdicts["new"],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.baseline:
        result["baseline"] = {
            "ref": args.baseline,
            "sha": base_sha,
            "configs_same": configs_same,
            "steps": steps["baseline"],
            "outputs": outputs["baseline"],
            "verdict": verdicts["baseline"],
        }
        result["comparison"] = side_by_side(steps["baseline"], steps["new"], verdicts["baseline"], verdicts["new"])
    compare = args.compare or default_json(DEFAULT_SCALE, DEFAULT_PROJECTS)
    grown = growth(result, compare) if args.scale != DEFAULT_SCALE else None
    if grown:
        result["growth"] = grown
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=1) + "\n")

    print()
    print_steps([s for name in chosen for c in codes for s in steps[c.label] if s["step"] == name])
    if args.baseline:
        print()
        print(f"side by side: baseline {args.baseline} ({base_sha[:10]}) vs new "
              f"({(result['code']['sha'] or '?')[:10]}{', with changes' if result['code']['dirty'] else ''})"
              f"{'' if configs_same else '; their sample configs differ'}")
        print_side_by_side(result["comparison"])
    print()
    for label in steps:
        print_verdict(label, verdicts[label])
    for s in steps["new"]:
        if "phases" in s:
            print(f"{s['step']} phases (new): {json.dumps(s['phases'])}")
    for label, o in outputs.items():
        print(f"outputs ({label}): {o}")
    if grown:
        print(f"growth against {grown['reference']} (scale {grown['reference_data']['scale']}, "
              f"usage rows x{grown['usage_rows_ratio']}):")
        for step, row in grown["steps"].items():
            print(f"  {step:8} " + ", ".join(
                f"{title} {show(k, row[k]['reference'])} -> {show(k, row[k]['this'])}"
                + ("" if row[k]["ratio"] is None else f" (x{row[k]['ratio']:.2f})") for k, title in COMPARED))
        if "monthly_set_wall" in grown:
            m = grown["monthly_set_wall"]
            print(f"  monthly set {m['reference']:.1f} s -> {m['this']:.1f} s (x{m['ratio']:.2f})")
    print(f"wrote {rel(json_path)}")


if __name__ == "__main__":
    main()
