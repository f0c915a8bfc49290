"""What the stopping policies would have saved in a month, read from the stored replay.

mart_policy_savings (one row per month x policy x job a policy would have stopped) and
mart_policy_month (one row per month x policy, with the rule and the grain it was built with)
are by-month marts, so an archived month answers from its archive. Money stays Decimal to
the end: each stopped job's saving is rounded to the cent on its own (half up, through
yolocost.money.Currency), so a job shows the same cents in the command, the admin report and its
project's report, a project's figure is the sum of its jobs' cents and a policy's total the
sum of its projects'. GPU-hours are rounded to 0.1 h the same way. The headline figure is the
saving net of false positives (`net_cost`: the stops after which the job's training did not
improve; a false stop saves nothing), always shown with the false-positive count and the
gross figure (`cost`, every stop), and in whole GPUs (`gpus_freed`: the net GPU-hours over the
month's hours). `yolocost whatif` and the
reports' "What policies would have saved" section both use `collect`.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from . import db, money, months
from .config import Config
from .errors import YolocostError
from .money import Currency
from .monthstr import check_month
from .tables import json_text

TITLES = {"idle_reclaim": "Idle reclaim", "breaker": "Breaker"}
TOP_JOBS = 10


def resolution(grain_seconds: int) -> str:
    """The resolution limit every output states."""
    return (f"Replayed at the grain of the usage rows ({grain_seconds / 60:g} min): a stop falls on the start of an "
            f"interval and an interval counts whole, so figures are exact to one grain; each month is replayed "
            f"on its own (a job crossing a month boundary is replayed in each month).")


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[dict[str, Any]]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _local(ts: dt.datetime | None, tz: ZoneInfo) -> str:
    return "" if ts is None else ts.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def month_hours(month: str, tz: ZoneInfo) -> Decimal:
    """Hours from the month's first local midnight to the next month's (743 or 745 in a DST month)."""
    start, end = months.local_window(month, tz)
    return Decimal(int((end - start).total_seconds())) / 3600


def gpus_freed(gpu_hours: Decimal, hours: Decimal) -> Decimal:
    """A saving in whole GPUs: the GPU-hours it frees over the month's hours, to 0.01 GPU (how
    many GPUs the cluster could do without, on average over the month)."""
    return money.round_cents(Decimal(gpu_hours) / hours, 2) if hours else Decimal("0.00")


def collect(con: duckdb.DuckDBPyConnection, month: str, project: str | None, *, timezone: str, currency: str,
            limit: int | None = TOP_JOBS) -> dict | None:
    """Each policy's savings in `month`: totals, per project and the top `limit` jobs (None:
    all), for every project (project None) or one project's own jobs only. None when the
    month was never built."""
    tz, shown = ZoneInfo(timezone), Currency(currency)
    policies = _rows(con, "SELECT policy, rule, grain_seconds FROM mart_policy_month WHERE month = ? "
                          "ORDER BY policy_order", [month])
    if not policies:
        return None
    scope, params = ("", []) if project is None else (" AND project = ? AND bucket = 'project'", [project])
    replayed = db.one_row(con.execute(f"SELECT count(*) FROM mart_job_month WHERE month = ?{scope}",
                                      [month, *params]))[0]
    stopped = _rows(con, f"""
        SELECT policy, job_id, project, bucket, coalesce(user_name, '(no user)') AS user_name, model_type,
               trigger_start, stop_at, saved_intervals, saved_gpu_seconds, saved_cost, false_positive, fp_reason
        FROM mart_policy_savings WHERE month = ?{scope}
        ORDER BY policy, saved_cost DESC, job_id""", [month, *params])
    hours = month_hours(month, tz)
    out = []
    for p in policies:
        jobs = [j for j in stopped if j["policy"] == p["policy"]]
        for job in jobs:  # each job on its own: the same figure in every report and scope
            job["cost"] = shown.round(job["saved_cost"])
            job["gpu_hours"] = money.round_cents(Decimal(job["saved_gpu_seconds"]) / 3600, 1)
            job["start"], job["stop"] = _local(job.pop("trigger_start"), tz), _local(job.pop("stop_at"), tz)
            job["exact_cost"] = job.pop("saved_cost")
        projects: dict[str, dict] = {}
        for j in jobs:
            row = projects.setdefault(j["project"], {"project": j["project"], "bucket": j["bucket"], "jobs_stopped": 0,
                                                     "false_positives": 0, "gpu_hours": Decimal("0.0"),
                                                     "cost": shown.zero,
                                                     "net_gpu_hours": Decimal("0.0"),
                                                     "net_cost": shown.zero})
            row["jobs_stopped"] += 1
            row["false_positives"] += bool(j["false_positive"])
            row["gpu_hours"] += j["gpu_hours"]
            row["cost"] += j["cost"]
            if not j["false_positive"]:  # a false stop saves nothing: the job would have been rerun
                row["net_gpu_hours"] += j["gpu_hours"]
                row["net_cost"] += j["cost"]
        by_project = sorted(projects.values(),
                            key=lambda r: (-r["net_cost"], -r["cost"], -r["gpu_hours"], r["project"]))
        out.append({
            "policy": p["policy"], "title": TITLES.get(p["policy"], p["policy"]), "rule": p["rule"],
            "jobs_stopped": len(jobs), "false_positives": sum(bool(j["false_positive"]) for j in jobs),
            "gpu_hours": sum((r["gpu_hours"] for r in by_project), Decimal("0.0")),
            "cost": sum((r["cost"] for r in by_project), shown.zero),
            "net_gpu_hours": sum((r["net_gpu_hours"] for r in by_project), Decimal("0.0")),
            "net_cost": sum((r["net_cost"] for r in by_project), shown.zero),
            "projects": by_project, "jobs": jobs if limit is None else jobs[:limit],
        })
        out[-1]["gpus_freed"] = gpus_freed(out[-1]["net_gpu_hours"], hours)
    grain = policies[0]["grain_seconds"]
    return {"month": month, "currency": currency, "timezone": timezone, "grain_seconds": grain, "resolution": resolution(grain),
            "jobs_replayed": replayed, "policies": out}


def whatif(config: Config, month: str, limit: int = TOP_JOBS) -> dict:
    """`yolocost whatif`: the month's policy savings over every project, from the marts
    (read-only). A month the database holds no data for is an error naming the months it has."""
    check_month(month)
    if limit < 1:
        raise YolocostError(f"--limit: must be at least 1, got {limit}")
    db.require_database(config.database)
    con = db.connect(config.database, read_only=True, memory_limit=config.memory_limit)
    try:
        with db.models_needed("whatif"):
            built = months.as_built(con, config, month)  # a stale month is refused; an archived one shown as built
            config = built.config
            result = collect(con, month, None, timezone=config.timezone, currency=config.currency, limit=limit)
            if result is None:
                known = [r[0] for r in con.execute("SELECT month FROM mart_cluster_month ORDER BY month").fetchall()]
                if month in known:  # built by a version before the policy replay
                    raise YolocostError(
                        f"{config.database}: {month} holds no policy replay (it was built by an older yolocost); "
                        f"`yolocost build --month {month}` adds it while the month still holds its usage rows")
                have = f" (months with data: {', '.join(known)})" if known else " (it holds no usage)"
                raise YolocostError(f"{config.database}: no data for {month}{have}")
    finally:
        con.close()
    if built.note:
        result["note"] = built.note
    return result


# --------------------------------------------------------------------------- output


def to_table(result: dict) -> str:
    """The month's savings as aligned text: per policy its rule, totals, projects and top jobs."""
    from .tables import to_table as table

    cur = result["currency"]
    cash = Currency(cur).format
    lines = [f"What the stopping policies would have saved in {result['month']} ({result['jobs_replayed']} jobs "
             f"replayed; {cur}; times in {result['timezone']})", result["resolution"], ""]
    if result.get("note"):
        lines[2:2] = [f"Note: {result['note']}."]
    for p in result["policies"]:
        lines.append(f"{p['title']} ({p['policy']}): {p['rule']}")
        lines.append(f"  would have saved {cash(p['net_cost'])} {cur} net of false positives "
                     f"({p['net_gpu_hours']} GPU-hours, {p['gpus_freed']} GPUs freed on average over the month): "
                     f"stopped {p['jobs_stopped']} job(s), "
                     f"{p['false_positives']} of them false positive(s) (training improved after the stop; "
                     f"their {cash(p['cost'] - p['net_cost'])} {cur} not counted); "
                     f"gross {p['gpu_hours']} GPU-hours, {cash(p['cost'])} {cur}")
        if p["projects"]:
            lines.append("")
            lines.append(table(["project", "jobs stopped", "false positives", f"net saved {cur}", "GPU-hours",
                                f"gross {cur}"],
                               [(r["project"], r["jobs_stopped"], r["false_positives"], r["net_cost"], r["gpu_hours"],
                                 r["cost"]) for r in p["projects"]], shown_as={3: cash, 5: cash}).rstrip("\n"))
            shown = len(p["jobs"])
            lines.append("")
            lines.append(f"Top {shown} of {p['jobs_stopped']} jobs:" if shown < p["jobs_stopped"] else "Jobs:")
            lines.append(table(["job", "project", "user", "stopped at", "GPU-hours", f"saved {cur}", "false positive"],
                               [(j["job_id"], j["project"], j["user_name"], j["stop"], j["gpu_hours"], j["cost"],
                                 f"yes: {j['fp_reason']}" if j["false_positive"] else "no")
                                for j in p["jobs"]], max_width=60, shown_as={5: cash}).rstrip("\n"))
        lines.append("")
    return "\n".join(lines)


def to_json(result: dict) -> str:
    """The result as JSON: money and GPU-hours as exact decimal strings."""
    return json_text(result) + "\n"


FORMATS = {"table": to_table, "json": to_json}
