"""Choose the what-if policies' defaults by measurement: caught / missed / false positives.

Two months, each loaded once into its own database with the demo config (sample_data/yolocost.toml):
- demo: the bundled sample month (October 2026; no zombie planted), where every stop is a
  false alarm unless the job's training did not improve after it;
- zombies: the generator's month with `--zombies N` planted zombie jobs (yolocost.synth.jobs.Zombie;
  their ground truth in incidents.zombies: the job and the instant it stopped working).

For every setting the script writes the settings row and evaluates the model
yolocost/sql/marts/mart_policy_savings.sql itself (the SQL a build runs) over the built
intermediate tables, then counts:
- caught: planted zombies stopped at or after the instant they stopped working;
- missed: planted zombies not caught;
- false positives: stops that are no caught zombie (ground truth; on the demo month every stop),
  with "fp %" = false positives / stops; and the replay's own count of stops after which the
  job's training improved ("replay fp");
- net saved: the saving of the stops that are not replay false positives (the headline figure).

Usage: .venv/bin/python benchmarks/policy_bench.py [--zombies 9] [--seed 20261001] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from yolocost import synth  # noqa: E402
from yolocost.config import load_config  # noqa: E402
from yolocost.load import load_parquet_dir  # noqa: E402
from yolocost.resources import SQL_DIR, shipped_dir  # noqa: E402

MONTH = synth.DEMO_MONTH
IDLE = [  # (quiet minutes, util %, start-up grace minutes, protect minutes)
    (5, 5, 0, 15), (5, 5, 15, 15), (5, 5, 30, 15), (5, 5, 60, 15),
    (15, 5, 30, 15), (30, 5, 30, 15), (5, 10, 30, 15), (5, 5, 30, 0),
]
BREAKER = [2, 4, 6]  # breaker_min_hours (util 40 %, loss delta 0.001: the [thresholds] defaults)


def build(data: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    shutil.copyfile(shipped_dir("sample_data") / "yolocost.toml", folder / "yolocost.toml")
    config = load_config(folder / "yolocost.toml")
    load_parquet_dir(config, data, lambda _msg: None)
    return config.database


def replay(path: Path, policy: str, **settings) -> list[dict]:
    sql = (SQL_DIR / "marts" / "mart_policy_savings.sql").read_text(encoding="utf-8")
    con = duckdb.connect(str(path))
    try:
        sets = ", ".join(f"{k} = {v}" for k, v in settings.items())
        con.execute(f"UPDATE settings SET {sets}")
        cur = con.execute(f"SELECT job_id, stop_at, saved_cost, false_positive FROM ({sql}) "
                          f"WHERE month = ? AND policy = ?", [MONTH, policy])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        con.close()


def score(stops: list[dict], zombies: list[dict]) -> dict:
    import datetime as dt

    planted = {z["job_id"]: dt.datetime.fromisoformat(z["idle_from"].replace("Z", "+00:00")) for z in zombies}
    caught = {s["job_id"] for s in stops if s["job_id"] in planted and s["stop_at"] >= planted[s["job_id"]]}
    false = [s for s in stops if s["job_id"] not in caught]
    net = sum((Decimal(s["saved_cost"]) for s in stops if not s["false_positive"]), Decimal(0))
    return {"stops": len(stops), "caught": len(caught), "missed": len(planted) - len(caught), "false": len(false),
            "fp_pct": 100.0 * len(false) / len(stops) if stops else 0.0,
            "replay_fp": sum(bool(s["false_positive"]) for s in stops), "net": net.quantize(Decimal("0.01")),
            "gross": sum((Decimal(s["saved_cost"]) for s in stops), Decimal(0)).quantize(Decimal("0.01"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zombies", type=int, default=9)
    ap.add_argument("--seed", type=int, default=synth.DEMO_SEED)
    ap.add_argument("--out", type=Path, help="also write the tables (Markdown) and the raw figures (.json) here")
    args = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        demo_db = build(shipped_dir("sample_data"), tmp / "demo")
        gen = synth.generate(tmp / "zombie-data", seed=args.seed, zombies=args.zombies)
        zombies = gen.ground_truth["incidents"]["zombies"]
        zombie_db = build(tmp / "zombie-data", tmp / "zombies")
        rows = []
        for minutes, util, grace, protect in IDLE:
            s = dict(idle_reclaim_seconds=minutes * 60, idle_reclaim_util_percent=util,
                     idle_reclaim_grace_seconds=grace * 60, idle_reclaim_protect_seconds=protect * 60)
            rows.append({"policy": "idle_reclaim", "setting": f"{minutes} min < {util} %, grace {grace} min, "
                                                              f"protect {protect} min",
                         "demo": score(replay(demo_db, "idle_reclaim", **s), []),
                         "zombies": score(replay(zombie_db, "idle_reclaim", **s), zombies)})
        for hours in BREAKER:
            s = dict(breaker_min_seconds=hours * 3600)
            rows.append({"policy": "breaker", "setting": f"{hours} h < 40 %, loss delta 0.001",
                         "demo": score(replay(demo_db, "breaker", **s), []),
                         "zombies": score(replay(zombie_db, "breaker", **s), zombies)})
    head = ("| policy | setting | demo: stops | demo: false positives (no zombie planted: every stop) | "
            "demo: replay fp | demo: net saved USD | "
            f"zombie month: caught / {len(zombies)} | missed | false positives (fp %) | replay fp | net saved USD |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        d, z = r["demo"], r["zombies"]
        lines.append(f"| {r['policy']} | {r['setting']} | {d['stops']} | {d['false']} | {d['replay_fp']} | {d['net']:,} | "
                     f"{z['caught']} | {z['missed']} | {z['false']} ({z['fp_pct']:.0f} %) | {z['replay_fp']} | "
                     f"{z['net']:,} |")
    kinds = ", ".join(f"{z['job_id']} {z['kind']} {z['hours']} h x {z['gpus']} GPU" for z in zombies)
    text = "\n".join(lines) + f"\n\nPlanted zombies (seed {args.seed}): {kinds}.\n"
    print(text)
    print(f"({time.time() - t0:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(json.dumps({"zombies": zombies, "rows": rows}, default=str, indent=1)
                                                 + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
