"""DuckDB stress test: N loads of the "gap" folder, each into a fresh copy of the sample month.

The gap folder holds the sample month's usage rows of 2026-10-02 and 2026-10-29 (UTC) only, so
a load of it replaces the large window between them and rebuilds every model in the same
transaction: the write that made DuckDB end a load now and then with "Corrupted bitpacking
segment" or a similar error. Each run loads the gap folder into a fresh copy of the full
month's database in its own process and records its exit status, its error line and its wall
time. After a failed run the copy must hold exactly what it held before (a failure must never
leave a partial database); every successful run must leave the same contents in every table
(raw tables, models and marts; all but the load log, which holds the time of the load).

Prepared once per DuckDB version, write settings and yolocost/db.py (a database file written
by one version is not always readable by an older one; db.py chooses the file's storage
format) and cached under benchmarks/.work/duckdb_stress/ (git-ignored).

    python benchmarks/duckdb_stress.py --runs 50
    pip install --target /tmp/duckdb-1.5.6 duckdb==1.5.6   # another DuckDB, first on PYTHONPATH:
    python benchmarks/duckdb_stress.py --runs 50 --duckdb /tmp/duckdb-1.5.6
    python benchmarks/duckdb_stress.py --runs 20 --write-settings '{"threads": 2}'
    python benchmarks/duckdb_stress.py --load-args "--allow-loss"   # options of `yolocost load`

Results go to stdout and benchmarks/results/duckdb_stress.json (one entry per --label).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work" / "duckdb_stress"
RESULTS = ROOT / "benchmarks" / "results" / "duckdb_stress.json"
SAMPLE = ROOT / "sample_data"
GAP_DAYS = ("2026-10-02", "2026-10-29")

# Runs the CLI with yolocost.db.WRITE_SETTINGS replaced (argv[1], JSON): to try other settings
# of the write connection without editing the code.
SETTINGS_RUNNER = (
    "import json, sys\n"
    "import yolocost.db\n"
    "yolocost.db.WRITE_SETTINGS = json.loads(sys.argv[1])\n"
    "from yolocost.cli import main\n"
    "sys.argv = ['yolocost'] + sys.argv[2:]\n"
    "main()\n"
)


def child_env(duckdb_dir: str | None) -> dict:
    """The environment of every child: a given duckdb folder first on PYTHONPATH, then this checkout."""
    env = dict(os.environ)
    paths = ([duckdb_dir] if duckdb_dir else []) + [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_child(python: str, env: dict, args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([python, *args], env=env, capture_output=True, text=True, timeout=timeout)


def yolocost_command(write_settings: str | None, cli: list[str]) -> list[str]:
    """Python arguments that run `yolocost CLI...`, with other write settings if given."""
    return ["-c", SETTINGS_RUNNER, write_settings, *cli] if write_settings else ["-m", "yolocost", *cli]


def duckdb_version(python: str, env: dict) -> str:
    out = run_child(python, env, ["-c", "import duckdb; print(duckdb.__version__)"])
    if out.returncode:
        sys.exit(f"error: cannot import duckdb with {python}: {out.stderr.strip().splitlines()[-1:]}")
    return out.stdout.strip()


def fingerprint(path: str, tables: str) -> dict:
    """Row count and an order-independent hash of every row of each table (run in the child's
    python, so that the database is read by the version that wrote it)."""
    import duckdb

    con = duckdb.connect(path, read_only=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main' ORDER BY 1"
        ).fetchall()]
        wanted = {"all": names, "all-but-loads": [n for n in names if n != "loads"]}.get(
            tables, [n for n in names if n in tables.split(",")])
        # a month's build record holds the time it was built: compared without it
        stamped = {"month_builds": "built_at"} if tables == "all-but-loads" else {}
        return {n: list(map(str, con.execute(
            f"SELECT count(*), sum(hash(t)::HUGEINT) FROM (SELECT * EXCLUDE ({stamped[n]}) FROM {n}) AS t"
            if n in stamped else f"SELECT count(*), sum(hash(t)::HUGEINT) FROM {n} AS t").fetchone()))
                for n in wanted}
    finally:
        con.close()


def state_of(python: str, env: dict, path: Path, tables: str = "all") -> dict | str:
    """The database's fingerprint, or why it could not be read."""
    out = run_child(python, env, [__file__, "--fingerprint", str(path), "--tables", tables])
    if out.returncode:
        return "unreadable: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(out.stdout)


def storage_version(python: str, env: dict, path: Path) -> str:
    """DuckDB's storage format of the file (`v1.5.0+`, `v2.0.0+`, ...)."""
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=True); "
            "print(c.execute('SELECT tags FROM duckdb_databases() WHERE database_name = current_database()')"
            ".fetchone()[0].get('storage_version', '?'))")
    out = run_child(python, env, ["-c", code, str(path)])
    return out.stdout.strip() if out.returncode == 0 else "?"


def prepare(python: str, env: dict, version: str, write_settings: str | None) -> tuple[Path, Path, Path, dict]:
    """(config, full database, gap folder, full database's fingerprint), made once per version."""
    gap = WORK / "gap"
    if not (gap / "gpu_usage.parquet").is_file():
        gap.mkdir(parents=True, exist_ok=True)
        days = ", ".join(f"DATE '{d}'" for d in GAP_DAYS)
        code = (
            "import duckdb, sys; c = duckdb.connect(); c.execute(\"SET TimeZone = 'UTC'\"); "
            f"c.execute(\"COPY (SELECT * FROM read_parquet('{SAMPLE / 'gpu_usage.parquet'}') "
            f"WHERE CAST(interval_start AS DATE) IN ({days}) ORDER BY interval_start, gpu_uuid) "
            f"TO '{gap / 'gpu_usage.parquet.tmp'}' (FORMAT parquet)\")"
        )
        out = run_child(python, env, ["-c", code])
        if out.returncode:
            sys.exit(f"error: making the gap folder: {out.stderr.strip()}")
        (gap / "gpu_usage.parquet.tmp").rename(gap / "gpu_usage.parquet")
    # per version, write settings and db.py (the connection settings: they may change the
    # storage format of the file the full database is written in)
    key = hashlib.sha1((write_settings or "").encode() + (ROOT / "yolocost" / "db.py").read_bytes()).hexdigest()[:8]
    folder = WORK / f"{version}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "yolocost.toml"
    shutil.copyfile(SAMPLE / "yolocost.toml", config)
    full = folder / "full.duckdb"
    state_file = folder / "full.state.json"
    if not state_file.is_file():
        full.unlink(missing_ok=True)
        partial = folder / "full.partial.duckdb"
        partial.unlink(missing_ok=True)
        out = run_child(python, env, yolocost_command(
            write_settings, ["--config", str(config), "--db", str(partial), "load", str(SAMPLE)]))
        if out.returncode:
            sys.exit(f"error: loading the sample month with duckdb {version}: {out.stderr.strip()}")
        partial.rename(full)
        state = state_of(python, env, full)
        if isinstance(state, str):
            sys.exit(f"error: the full database: {state}")
        state_file.write_text(json.dumps(state))
    return config, full, gap, json.loads(state_file.read_text())


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The run's `error:` line (or its last stderr line, or the signal that ended it)."""
    if proc.returncode < 0:
        return f"killed by {signal.Signals(-proc.returncode).name}"
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or ["(no output)"])[-1]


def one_run(i: int, args, env: dict, config: Path, full: Path, gap: Path, before: dict) -> dict:
    copy = WORK / f"run-{os.getpid()}.duckdb"
    for leftover in (copy, copy.with_name(copy.name + ".wal"), copy.with_name(copy.name + ".lock")):
        leftover.unlink(missing_ok=True)
    shutil.copyfile(full, copy)
    command = yolocost_command(args.write_settings, ["--config", str(config), "--db", str(copy), "load",
                                                     *shlex.split(args.load_args), str(gap)])
    start, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = run_child(args.python, env, command, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess(command, 124, "", f"error: no end after {args.timeout} s")
    wall, after_cpu = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after_cpu.ru_utime - cpu.ru_utime) + (after_cpu.ru_stime - cpu.ru_stime)
    record = {"run": i, "rc": proc.returncode, "wall_s": round(wall, 3), "cpu_s": round(cpu_s, 3)}
    if proc.returncode:
        record["error"] = error_line(proc)
        after = state_of(args.python, env, copy)
        record["db"] = "unchanged" if after == before else ("unreadable" if isinstance(after, str) else "CHANGED")
        if isinstance(after, str):
            record["db_error"] = after
    else:
        record["tables"] = state_of(args.python, env, copy, "all-but-loads")
    copy.unlink(missing_ok=True)
    return record


def summarize(records: list[dict]) -> dict:
    walls = [r["wall_s"] for r in records]
    failures = [r for r in records if r["rc"]]
    ok_cpu = [r["cpu_s"] for r in records if not r["rc"]]
    results = {json.dumps(r["tables"], sort_keys=True) for r in records if not r["rc"]}
    return {
        "runs": len(records),
        "failures": len(failures),
        "errors": dict(collections.Counter(r["error"] for r in failures).most_common()),
        "failed_db_states": dict(collections.Counter(r["db"] for r in failures)),
        # every table but the load log (its wall-clock column), models and marts included
        "distinct_results_of_successful_runs": len(results),
        "wall_s_median": round(statistics.median(walls), 2) if walls else None,
        "wall_s_mean": round(statistics.fmean(walls), 2) if walls else None,
        # the machine may be shared: CPU seconds (user + system) of the run's process
        "cpu_s_median_of_successful_runs": round(statistics.median(ok_cpu), 2) if ok_cpu else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--python", default=sys.executable, help="python that runs yolocost")
    parser.add_argument("--duckdb", metavar="DIR", help="a `pip install --target` folder put first on PYTHONPATH")
    parser.add_argument("--load-args", default="", help="extra arguments of `yolocost load` (one string)")
    parser.add_argument("--write-settings", metavar="JSON",
                        help="replace yolocost.db.WRITE_SETTINGS in the child, e.g. '{\"threads\": 2}'")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a run counts as hung")
    parser.add_argument("--label", help="name of the entry in the results file (default: duckdb version + settings)")
    parser.add_argument("--fingerprint", help=argparse.SUPPRESS)
    parser.add_argument("--tables", default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fingerprint:
        print(json.dumps(fingerprint(args.fingerprint, args.tables)))
        return

    env = child_env(args.duckdb)
    version = duckdb_version(args.python, env)
    label = args.label or version + (f" {args.write_settings}" if args.write_settings else "")
    print(f"duckdb {version}: preparing", file=sys.stderr)
    config, full, gap, before = prepare(args.python, env, version, args.write_settings)
    storage = storage_version(args.python, env, full)
    records = []
    for i in range(1, args.runs + 1):
        record = one_run(i, args, env, config, full, gap, before)
        records.append(record)
        print(f"run {i}/{args.runs}: rc {record['rc']} {record['wall_s']:.2f} s"
              + (f" {record['error']} (database {record['db']})" if record["rc"] else ""), file=sys.stderr, flush=True)
    summary = {"duckdb": version, "label": label, "storage_version": storage, "load_args": args.load_args,
               "write_settings": json.loads(args.write_settings) if args.write_settings else None,
               **summarize(records)}
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results[label] = {**summary, "records": [{k: v for k, v in r.items() if k != "tables"} for r in records]}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    bad = [r for r in records if r["rc"] and r["db"] != "unchanged"]
    if bad or summary["distinct_results_of_successful_runs"] > 1:
        sys.exit("error: a failed run changed the database, or successful runs disagree")


if __name__ == "__main__":
    main()
