"""A year of operation: consecutive synthetic 1,000-GPU months loaded one by one into one database.

After each month is loaded, the month's steps run through the CLI exactly as a user runs
them, each in its own process (measured with reports_bench.run_step: wall time, CPU time,
peak RSS of the yolocost process and of its whole process tree, other processes' CPU):

    load     yolocost --config CFG --db DB load MONTH_DIR/     (replaces the month's window, builds)
    html     yolocost --config CFG --db DB report --month M --format html
    pdf      yolocost --config CFG --db DB report --month M --format pdf
    export   yolocost --config CFG --db DB report --month M --format csv,summary,index
    prune    yolocost --config CFG --db DB prune ...           (raw rows of months past the retention)

The monthly set is load + html + pdf + export; prune is timed apart. `prune --as-of` runs as
the cron's monthly run would, on the first of the next month at 06:00, with the default 90-day
[ingest] retention_days (which keeps the raw rows of the last three months); a CLI with
`prune --before YYYY-MM` instead keeps the last --keep-months months, and one with neither
gets a config whose retention_days reaches back to the first kept month. A CLI without `prune` skips the step and
says so. Per month also: the database file's size before and after prune, DuckDB's used
bytes, the raw usage rows stored per month, and the ledger totals of every month loaded so far
(they must not change when later months are loaded or older ones pruned).

Data. yolocost.synth.generate writes a month as its window: the local calendar month plus a
day on each side, planned afresh, with job ids job-000001... and GPU UUIDs drawn from the seed.
Loaded as generated, consecutive months would overlap by two days (the next load replaces the
last day of the month before with its own plan) and share job ids (its jobs.parquet would
relabel the month before's usage). So each generated month (seed YYYYMM01; 20261001, the demo
month's, for 2026-10) is cut to the month's export as of its end: usage rows of the local
month only, the GPU UUIDs of the 2026-10 fleet (the same GPUs all year), job ids made unique
per month (job-2026-10-000123), the jobs that hold GPU time in the month, end_time cleared for
jobs still running at the month's end, progress rows before it and results of finished jobs.
Then reports_bench.with_projects spreads the labeled jobs over 20 projects.

    .venv/bin/python benchmarks/year_bench.py [--months 12] [--scale 21] [--workdir DIR] [--out FILE]
    .venv/bin/python benchmarks/year_bench.py --months 3 --scale 1      # a quick smoke run

Generated months are cached under the workdir (git-ignored; reruns skip generation); the
database and reports are made afresh each run. Progress goes to stderr, the table to stdout,
results to benchmarks/results/year.json (rewritten after every month).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reports_bench import (  # noqa: E402
    PAGE,
    ROOT,
    TARGET_BYTES,
    TARGET_SECONDS,
    mib,
    rel,
    report_phases,
    run_step,
    with_projects,
)

TIMEZONE = "Europe/Berlin"  # the sample config's and the generator's
BASE_SEED = 20261001  # the demo month's seed: its fleet's GPU UUIDs are used for every month
TARGET_RATIO = 1.2  # monthly set at the last month within 1.2x of the first
SET_STEPS = ("load", "html", "pdf", "export")


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- months


def month_list(last: str, n: int) -> list[str]:
    y, m = int(last[:4]), int(last[5:])
    out = []
    for _ in range(n):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y - 1, 12) if m == 1 else (y, m - 1)
    return out[::-1]


def shift(month: str, k: int) -> str:
    n = int(month[:4]) * 12 + int(month[5:]) - 1 + k
    return f"{n // 12:04d}-{n % 12 + 1:02d}"


def seed_for(month: str) -> int:
    return int(month.replace("-", "")) * 100 + 1


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) of the local calendar month, as UTC datetimes."""
    from yolocost.synth.window import Window

    w = Window.for_month(month, TIMEZONE)
    utc = dt.timezone.utc
    return dt.datetime.fromtimestamp(w.month_start, utc), dt.datetime.fromtimestamp(w.month_end, utc)


# ---------------------------------------------------------------- data


def prices_since(first_month: str) -> str:
    """The date the benchmark's prices start: the sample's (2026-01-01), or the first of the
    month before the first month when that is earlier (a generated window starts a day early)."""
    return min(f"{shift(first_month, -1)}-01", "2026-01-01")


def ensure_generated(raw: Path, month: str, scale: float, env: dict[str, str]) -> dict:
    """The generator's month (its whole window) in `raw`, made once and cached.

    The generator prices its ground truth with the demo prices, which start on 2026-01-01,
    and refuses a window before that; the generation process moves their start back (the
    usage rows do not depend on prices, only ground_truth.json does)."""
    marker = raw / ".complete"
    if marker.exists():
        return {**json.loads(marker.read_text()), "cached": True}
    shutil.rmtree(raw, ignore_errors=True)
    seed = seed_for(month)
    code = (
        "import json\n"
        "from yolocost.synth import prices\n"
        "from yolocost.synth.generate import generate\n"
        f"since = {prices_since(month)!r}\n"
        "for p in prices.DEMO_PRICES + prices.DEMO_ENERGY_PRICES:\n"
        "    if p['effective_from'] == '2026-01-01':\n"
        "        p['effective_from'] = min(since, p['effective_from'])\n"
        f"r = generate({str(raw)!r}, seed={seed}, month={month!r}, timezone={TIMEZONE!r}, scale={scale!r})\n"
        "print(json.dumps({'gpus': r.gpus, 'jobs': r.jobs, 'usage_rows': r.usage_rows}))\n"
    )
    say(f"{month}: generating (scale {scale:g}, seed {seed}) ...")
    step = run_step("generate", [sys.executable, "-c", code], env)
    info = json.loads(step["stdout"][-1])
    info.update(seed=seed, generate_wall_s=step["wall_s"], generate_cpu_s=step["tree_cpu_s"],
                generate_peak_rss_bytes=step["peak_rss_tree_bytes"], generate_other_cpu_s=step["other_cpu_s"])
    marker.write_text(json.dumps(info))
    return {**info, "cached": False}


def ensure_prepared(raw: Path, out: Path, month: str, scale: float) -> dict:
    """The month's export as of its end, cut from the generated window (see the module docstring)."""
    import duckdb
    from yolocost.synth.fleet import build_fleet

    marker = out / ".complete"
    if marker.exists():
        return {**json.loads(marker.read_text()), "cached": True}
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    start, end = month_bounds(month)
    lo, hi = f"TIMESTAMPTZ '{start.isoformat()}'", f"TIMESTAMPTZ '{end.isoformat()}'"
    new_id = f"regexp_replace(job_id, '^job-', 'job-{month}-')"
    src = {name: f"read_parquet('{raw / (name + '.parquet')}')"
           for name in ("gpu_usage", "jobs", "training_progress", "job_results")}
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit = '2GB'; SET threads = 2; SET TimeZone = 'UTC'; SET enable_progress_bar = false")
        fleet = [(g.hostname, g.index, g.uuid) for h in build_fleet(BASE_SEED, scale) for g in h.gpus]
        con.execute("CREATE TEMP TABLE fleet (hostname VARCHAR, gpu_index INTEGER, uuid VARCHAR)")
        con.executemany("INSERT INTO fleet VALUES (?, ?, ?)", fleet)
        bad = con.execute(f"SELECT count(*) FROM {src['jobs']} WHERE job_id NOT LIKE 'job-%'").fetchone()[0]
        assert not bad, f"{raw}: job ids not of the form job-NNNNNN"
        con.execute(f"""
            CREATE TEMP TABLE kept AS
            SELECT j.job_id, j.end_time IS NOT NULL AND j.end_time <= {hi} AS finished
            FROM {src['jobs']} AS j
            WHERE j.job_id IN (SELECT job_id FROM {src['gpu_usage']}
                               WHERE interval_start >= {lo} AND interval_start < {hi} AND job_id IS NOT NULL)""")
        con.execute(f"""
            COPY (
                SELECT u.* EXCLUDE (file_row_number) REPLACE (f.uuid AS gpu_uuid, {new_id.replace('job_id', 'u.job_id')} AS job_id)
                FROM read_parquet('{raw / 'gpu_usage.parquet'}', file_row_number = true) AS u
                JOIN fleet AS f ON f.hostname = u.hostname AND f.gpu_index = u.gpu_index
                WHERE u.interval_start >= {lo} AND u.interval_start < {hi}
                ORDER BY u.file_row_number
            ) TO '{out / 'gpu_usage.parquet'}' (FORMAT parquet, COMPRESSION zstd)""")
        con.execute(f"""
            COPY (
                SELECT * REPLACE ({new_id} AS job_id, CASE WHEN end_time <= {hi} THEN end_time END AS end_time)
                FROM {src['jobs']} WHERE job_id IN (SELECT job_id FROM kept) ORDER BY job_id
            ) TO '{out / 'jobs.parquet'}' (FORMAT parquet, COMPRESSION zstd)""")
        con.execute(f"""
            COPY (
                SELECT * REPLACE ({new_id} AS job_id) FROM {src['training_progress']}
                WHERE job_id IN (SELECT job_id FROM kept) AND ts < {hi} ORDER BY job_id, epoch, metric
            ) TO '{out / 'training_progress.parquet'}' (FORMAT parquet, COMPRESSION zstd)""")
        con.execute(f"""
            COPY (
                SELECT * REPLACE ({new_id} AS job_id) FROM {src['job_results']}
                WHERE job_id IN (SELECT job_id FROM kept WHERE finished) ORDER BY job_id
            ) TO '{out / 'job_results.parquet'}' (FORMAT parquet, COMPRESSION zstd)""")
        usage = f"read_parquet('{out / 'gpu_usage.parquet'}')"
        first, last, rows, gpus, hours = con.execute(
            f"SELECT min(interval_start), max(interval_start), count(*), count(DISTINCT gpu_uuid), "
            f"sum(seconds_present) / 3600 FROM {usage}").fetchone()
        grains = con.execute(f"SELECT count(DISTINCT interval_start) FROM {usage}").fetchone()[0]
        jobs, running = con.execute(
            f"SELECT count(*), count(*) FILTER (WHERE end_time IS NULL) FROM read_parquet('{out / 'jobs.parquet'}')"
        ).fetchone()
        cut_jobs = con.execute(f"""
            SELECT count(*) FILTER (WHERE start_time < {lo}), count(*) FILTER (WHERE end_time IS NULL OR end_time > {hi})
            FROM {src['jobs']} WHERE job_id IN (SELECT job_id FROM kept)""").fetchone()
        raw_rows = con.execute(f"SELECT count(*) FROM {src['gpu_usage']}").fetchone()[0]
    finally:
        con.close()
    grain = 300
    # the load takes the span of the rows as its window: it must be the month, no more, no less
    assert first == start and last == end - dt.timedelta(seconds=grain), (month, first, last)
    assert grains == (end - start).total_seconds() // grain, (month, grains)
    info = {
        "month": month, "window_utc": [start.isoformat(), end.isoformat()], "usage_rows": rows,
        "usage_rows_generated": raw_rows, "gpus": gpus, "gpu_hours": round(float(hours), 1), "jobs": jobs,
        "jobs_running_at_month_end": running, "jobs_started_before_month": cut_jobs[0],
        "jobs_cut_at_month_end": cut_jobs[1], "prepare_wall_s": round(time.monotonic() - started, 2),
    }
    marker.write_text(json.dumps(info))
    return {**info, "cached": False}


def ensure_month(workdir: Path, month: str, scale: float, projects: int, env: dict[str, str]) -> tuple[Path, dict]:
    """Generate, cut and relabel one month; returns the folder to load and what was made."""
    base = workdir / f"x{scale:g}" / month
    gen = ensure_generated(base / "generated", month, scale, env)
    prep = ensure_prepared(base / "generated", base / "month", month, scale)
    data, proj = with_projects(base / "month", base, projects)
    return data, {"generated": gen, "prepared": prep, "projects": proj}


# ---------------------------------------------------------------- config and prune


def write_config(run: Path, first_month: str, retention_days: int | None = None, name: str = "yolocost.toml") -> Path:
    """The shipped sample config with output in the run folder, prices from before the first
    month (prices_since) and, for prune, a retention."""
    from yolocost.resources import shipped_dir

    text = (shipped_dir("sample_data") / "yolocost.toml").read_text(encoding="utf-8")
    new = text.replace('output_dir = "reports"', f"output_dir = {json.dumps(str(run / 'reports'))}")
    assert new != text, "sample config changed: [reports] output_dir not found"
    assert "effective_from = 2026-01-01" in new, "sample config changed: no price effective from 2026-01-01"
    new = new.replace("effective_from = 2026-01-01", f"effective_from = {prices_since(first_month)}")
    if retention_days is not None:
        text, new = new, new.replace("grain_seconds = 300", f"grain_seconds = 300\nretention_days = {retention_days}")
        assert new != text, "sample config changed: [ingest] grain_seconds = 300 not found"
    cfg = run / name
    cfg.write_text("# written by benchmarks/year_bench.py from sample_data/yolocost.toml\n" + new, encoding="utf-8")
    return cfg


def prune_mode(yolocost: str, env: dict[str, str]) -> tuple[str | None, str]:
    """How this CLI prunes: 'as-of' (prune --as-of the cron's run time, the first of the next
    month at 06:00, with the default 90-day retention), 'before' (prune --before YYYY-MM),
    'retention' (prune with the config's retention_days) or None (no prune command), with
    the reason."""
    p = subprocess.run([yolocost, "prune", "--help"], capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        line = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"`yolocost prune --help` failed ({line}): the CLI has no prune yet, step skipped"
    if "--as-of" in p.stdout:
        return "as-of", "prune --as-of the first of the next month 06:00 (the cron's run), retention 90 days"
    if "--before" in p.stdout:
        return "before", "prune --before YYYY-MM"
    return "retention", "prune with [ingest] retention_days reaching back to the first kept month"


def retention_days_for(keep_from: str, now: dt.datetime) -> int:
    """Whole days from the first kept month's start to now: months ending before it are older."""
    start, _ = month_bounds(keep_from)
    return max(1, int((now - start).total_seconds() // 86400))


# ---------------------------------------------------------------- the database between steps


def db_state(db: Path) -> dict:
    """File sizes, DuckDB's used bytes, raw rows stored per month, the largest tables, and
    every month's ledger totals (read-only, outside the measured steps)."""
    import duckdb

    wal = db.with_name(db.name + ".wal")
    state = {"file_bytes": db.stat().st_size, "wal_bytes": wal.stat().st_size if wal.exists() else 0}
    con = duckdb.connect(str(db), read_only=True)
    try:
        size = con.execute("PRAGMA database_size").fetchone()
        state["used_bytes"] = int(size[2]) * int(size[4])  # block_size x used_blocks
        state["free_blocks"] = int(size[5])
        state["raw_rows_by_month"] = dict(con.execute(
            f"SELECT strftime(timezone('{TIMEZONE}', interval_start), '%Y-%m') AS m, count(*) "
            "FROM gpu_usage GROUP BY m ORDER BY m").fetchall())
        state["largest_tables"] = [list(r) for r in con.execute(
            "SELECT table_name, estimated_size FROM duckdb_tables() ORDER BY estimated_size DESC LIMIT 6").fetchall()]
        state["ledger"] = {m: {"cost": str(c), "gpu_hours": str(h), "rows": n} for m, c, h, n in con.execute(
            "SELECT month, sum(cost), sum(gpu_hours), count(*) FROM ledger_charges GROUP BY month ORDER BY month"
        ).fetchall()}
    finally:
        con.close()
    return state


def report_files(folder: Path) -> dict:
    files = [f for f in folder.iterdir() if f.is_file()] if folder.is_dir() else []
    count = lambda suffix: sum(f.suffix == suffix for f in files)  # noqa: E731
    return {"html": count(".html"), "pdf": count(".pdf"), "csv": count(".csv"),
            "bytes": sum(f.stat().st_size for f in files)}


# ---------------------------------------------------------------- main


def set_of(steps: list[dict]) -> dict:
    chosen = [s for s in steps if s["step"] in SET_STEPS]
    return {
        "wall_s": round(sum(s["wall_s"] for s in chosen), 2),
        "cpu_s": round(sum(s["tree_cpu_s"] for s in chosen), 2),
        "peak_rss_tree_bytes": max(s["peak_rss_tree_bytes"] for s in chosen),
        "other_cpu_s": round(sum(s["other_cpu_s"] for s in chosen), 2),
    }


def gib(n: int) -> str:
    return f"{n / 1024**3:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--months", type=int, default=12, help="consecutive months, ending with --last")
    ap.add_argument("--last", default="2026-10", help="the last month (YYYY-MM)")
    ap.add_argument("--scale", type=float, default=21.0, help="synth scale (21 -> 1,008 GPUs)")
    ap.add_argument("--projects", type=int, default=20)
    ap.add_argument("--keep-months", type=int, default=3,
                    help="raw months prune keeps, the month just loaded included (3: about 90 days)")
    ap.add_argument("--workdir", type=Path, default=ROOT / "benchmarks" / ".work" / "year")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "year.json")
    ap.add_argument("--yolocost", type=Path, default=Path(sys.executable).with_name("yolocost"),
                    help="the yolocost command to measure (default: the one beside this Python)")
    args = ap.parse_args()
    if args.months < 1 or args.keep_months < 1:
        ap.error("--months and --keep-months must be at least 1")
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", args.last):
        ap.error(f"--last must be a month YYYY-MM, got {args.last!r}")

    yolocost = str(args.yolocost)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    months = month_list(args.last, args.months)
    say(f"{len(months)} months {months[0]} .. {months[-1]} at scale {args.scale:g}, {args.projects} projects")

    # all months first, so that generating never overlaps a measured step
    data: dict[str, tuple[Path, dict]] = {}
    for m in months:
        data[m] = ensure_month(workdir, m, args.scale, args.projects, env)
        gen, prep = data[m][1]["generated"], data[m][1]["prepared"]
        say(f"{m}: {prep['usage_rows']:,} usage rows, {prep['jobs']:,} jobs, {prep['gpus']:,} GPUs"
            + ("" if gen["cached"] else f"; generated in {gen['generate_wall_s']:.1f} s")
            + ("" if prep["cached"] else f", cut in {prep['prepare_wall_s']:.1f} s"))

    mode, why = prune_mode(yolocost, env)
    say(f"prune: {why}")

    run = workdir / f"run-x{args.scale:g}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    cfg = write_config(run, months[0])
    db = run / "year.duckdb"
    base = [yolocost, "--config", str(cfg), "--db", str(db)]

    import duckdb

    result = {
        "benchmark": "year_bench",
        "command": ".venv/bin/python benchmarks/year_bench.py" + "".join(
            f" {flag} {value}" for flag, value, default in (
                ("--months", args.months, 12), ("--last", args.last, "2026-10"), ("--scale", f"{args.scale:g}", "21"),
                ("--projects", args.projects, 20), ("--keep-months", args.keep_months, 3)) if value != default),
        "machine": {
            "cpus": os.cpu_count(), "mem_total_bytes": os.sysconf("SC_PHYS_PAGES") * PAGE,
            "platform": platform.platform(), "python": platform.python_version(), "duckdb": duckdb.__version__,
        },
        "months": months,
        "scale": args.scale,
        "prune": {"mode": mode, "note": why, "keep_months": args.keep_months},
        "per_month": [],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    ledger_first: dict[str, dict] = {}
    started = time.monotonic()
    for i, m in enumerate(months, 1):
        folder, info = data[m]
        plan = [
            ("load", base + ["load", str(folder)]),
            ("html", base + ["report", "--month", m, "--format", "html"]),
            ("pdf", base + ["report", "--month", m, "--format", "pdf"]),
            ("export", base + ["report", "--month", m, "--format", "csv,summary,index"]),
        ]
        steps = []
        for name, argv in plan:
            say(f"[{i}/{len(months)}] {m} {name} ...")
            step = run_step(name, argv, env)
            if name in ("html", "pdf"):
                step["phases"] = report_phases(step)
            steps.append(step)
            say(f"  {step['wall_s']:.1f} s wall, {step['tree_cpu_s']:.1f} s CPU (tree), peak "
                f"{mib(step['peak_rss_tree_bytes'])} MiB (tree), other CPU {step['other_cpu_s']:.1f} s")
        before = db_state(db)
        keep_from = shift(m, 1 - args.keep_months)
        pruned = None
        if mode is not None:
            if mode == "as-of":
                argv = base + ["prune", "--as-of", f"{shift(m, 1)}-01T06:00"]
            elif mode == "before":
                argv = base + ["prune", "--before", keep_from]
            else:
                days = retention_days_for(keep_from, dt.datetime.now(dt.timezone.utc))
                pcfg = write_config(run, months[0], retention_days=days, name="yolocost-prune.toml")
                argv = [yolocost, "--config", str(pcfg), "--db", str(db), "prune"]
            say(f"[{i}/{len(months)}] {m} prune (raw months before {keep_from}) ...")
            pruned = run_step("prune", argv, env)
            say(f"  {pruned['wall_s']:.1f} s wall, peak {mib(pruned['peak_rss_tree_bytes'])} MiB (tree)")
        after = db_state(db) if pruned else before
        # a month whose ledger rows changed or went missing since it was first built
        changed = sorted(month for month, totals in ledger_first.items() if after["ledger"].get(month) != totals)
        for month, totals in after["ledger"].items():
            ledger_first.setdefault(month, totals)
        entry = {
            "month": m,
            "data": info,
            "steps": steps + ([pruned] if pruned else []),
            "monthly_set": set_of(steps),
            # the issue's set: the build (the load's part after its rows are in, from the
            # "building models" line of its stderr on) + html + pdf + export
            "build_in_load_s": build_part(steps[0]),
            "build_set_s": round(build_part(steps[0]) + sum(x["wall_s"] for x in steps[1:]), 1),
            "db_before_prune": before,
            "db_after_prune": after if pruned else None,
            "prune_kept_from": keep_from if pruned else None,
            "ledger_changed_months": changed,
            # the month's capacity in the ledger against the GPU-hours of the rows loaded
            "ledger_gpu_hours_minus_data": round(float(after["ledger"].get(m, {}).get("gpu_hours", "nan"))
                                                 - info["prepared"]["gpu_hours"], 1),
            "reports": report_files(run / "reports" / m),
        }
        result["per_month"].append(entry)
        s = entry["monthly_set"]
        say(f"{m}: monthly set {s['wall_s']:.1f} s, peak {mib(s['peak_rss_tree_bytes'])} MiB; database "
            f"{mib(before['file_bytes'])} MiB" + (f" -> {mib(after['file_bytes'])} MiB after prune" if pruned else "")
            + f"; ledger GPU-hours - data {entry['ledger_gpu_hours_minus_data']:+.1f}"
            + (f"; LEDGER OF {', '.join(changed)} CHANGED" if changed else "")
            + f" ({(time.monotonic() - started) / 60:.1f} min so far)")
        result["verdict"] = verdict(result, mode)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")

    print_table(result)
    print(f"wrote {rel(args.out)}")


def build_part(load: dict) -> float:
    """Seconds of a load step from its "building models" line to its end (the model build
    and the ledger; before it, the Parquet files are read and checked)."""
    at = next((t for t, line in load["stderr"] if "building models" in line), 0.0)
    return round(load["wall_s"] - at, 1)


def verdict(result: dict, mode: str | None) -> dict:
    per = result["per_month"]
    first, last = per[0]["monthly_set"], per[-1]["monthly_set"]
    sizes = [(p["db_after_prune"] or p["db_before_prune"])["file_bytes"] for p in per]
    pruned_any = [i for i, p in enumerate(per) if p["db_after_prune"] and
                  len(p["db_after_prune"]["raw_rows_by_month"]) < len(p["db_before_prune"]["raw_rows_by_month"])]
    v = {
        "monthly_set": " + ".join(SET_STEPS),
        "first_month_wall_s": first["wall_s"],
        "last_month_wall_s": last["wall_s"],
        "ratio_last_to_first": round(last["wall_s"] / first["wall_s"], 3),
        "build_set_first_s": per[0]["build_set_s"],
        "build_set_last_s": per[-1]["build_set_s"],
        "build_set_ratio": round(per[-1]["build_set_s"] / per[0]["build_set_s"], 3),
        "build_set_max_s": max(p["build_set_s"] for p in per),
        "target_ratio": TARGET_RATIO,
        "meets_ratio": last["wall_s"] <= TARGET_RATIO * first["wall_s"],
        "max_set_wall_s": max(p["monthly_set"]["wall_s"] for p in per),
        "max_set_peak_rss_tree_bytes": max(p["monthly_set"]["peak_rss_tree_bytes"] for p in per),
        "target_wall_s": TARGET_SECONDS,
        "target_bytes": TARGET_BYTES,
        "ledger_stable": not any(p["ledger_changed_months"] for p in per),
        "db_bytes_after_each_month": sizes,
        "prune": mode or "skipped (no prune command)",
    }
    v["meets_time"] = v["max_set_wall_s"] < TARGET_SECONDS
    v["meets_memory"] = v["max_set_peak_rss_tree_bytes"] < TARGET_BYTES
    if pruned_any:
        # once prune removes months the file should stop growing with them: the last month's
        # size against the size when the first month was pruned
        ref = sizes[pruned_any[0]]
        v["db_growth_since_first_prune"] = round(sizes[-1] / ref, 3)
    return v


def print_table(result: dict) -> None:
    print(f"{'month':8} {'rows':>11} {'load s':>7} {'build s':>7} {'html s':>7} {'pdf s':>7} {'export s':>8} {'set s':>7} {'set GiB':>7} "
          f"{'prune s':>7} {'DB MiB':>8} {'pruned':>8} {'raw months':>10} {'other CPU':>9}")
    for p in result["per_month"]:
        wall = {s["step"]: s["wall_s"] for s in p["steps"]}
        s = p["monthly_set"]
        after = p["db_after_prune"]
        prune_s = f"{wall['prune']:.1f}" if "prune" in wall else "-"
        print(f"{p['month']:8} {p['data']['prepared']['usage_rows']:11,} {wall['load']:7.1f} {p['build_in_load_s']:7.1f} {wall['html']:7.1f} {wall['pdf']:7.1f} {wall['export']:8.1f} "
              f"{s['wall_s']:7.1f} {gib(s['peak_rss_tree_bytes']):>7} "
              f"{prune_s:>7} {mib(p['db_before_prune']['file_bytes']):>8} "
              f"{(mib(after['file_bytes']) if after else '-'):>8} "
              f"{len((after or p['db_before_prune'])['raw_rows_by_month']):>10} {s['other_cpu_s']:9.1f}")
    v = result["verdict"]
    ok = lambda b: "met" if b else "MISSED"  # noqa: E731
    print(f"monthly set ({v['monthly_set']}): month 1 {v['first_month_wall_s']:.1f} s, last {v['last_month_wall_s']:.1f} s, "
          f"ratio {v['ratio_last_to_first']:.2f} (target <= {TARGET_RATIO}: {ok(v['meets_ratio'])}); "
          f"slowest {v['max_set_wall_s']:.1f} s (< {TARGET_SECONDS:.0f} s: {ok(v['meets_time'])}); "
          f"peak {gib(v['max_set_peak_rss_tree_bytes'])} GiB (< {gib(TARGET_BYTES)} GiB: {ok(v['meets_memory'])})")
    print(f"build + html + pdf + export: month 1 {v['build_set_first_s']:.1f} s, last {v['build_set_last_s']:.1f} s, "
          f"ratio {v['build_set_ratio']:.2f}; slowest {v['build_set_max_s']:.1f} s")
    print(f"prune: {v['prune']}" + (f"; database after the last prune {v['db_growth_since_first_prune']:.2f}x its size "
                                    "after the first month was pruned" if "db_growth_since_first_prune" in v else ""))
    print(f"ledger totals of earlier months unchanged by later loads and prunes: {'yes' if v['ledger_stable'] else 'NO'}")


if __name__ == "__main__":
    main()
