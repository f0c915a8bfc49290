"""What each report section shows, read from the marts only, as plain dicts and lists.

One function per section. Each takes an open read-only connection, the month and the
audience's project (None = the admin report, all projects) and filters in SQL: a project
report's rows come from `WHERE project = ? AND bucket = 'project'`, so no other project's row
is ever read into it. One figure is the exception, by necessity: a project's printed total in
cents is the finance CSV's (yolocost.finance.project_totals_cents rounds every bucket of the
month together, largest remainder), so that it equals the admin report's figure and the sum
of the project's CSV rows. Only that project's own cents leave `printed_totals`.

Money stays Decimal (the marts' DECIMAL(38, 9)). Project and cluster totals come from
yolocost.finance; columns that add up to a printed total (users of a project, GPU models,
image tags, ...) are rounded to cents with the largest-remainder functions of yolocost.money
(towards that total where there is one); single figures are rounded half up by the
templates' `money` filter. Hours, densities and shares are floats.
"""

from __future__ import annotations

import contextvars

import datetime as dt
import re
from decimal import Decimal
from typing import Any, Sequence
from zoneinfo import ZoneInfo

import duckdb

from .. import finance, money
from ..errors import YolocostError

MONTH_RE = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
TOP = 15  # rows in ranking tables (idle waste, violations); the charts show the same rows
DENSITY_BINS = 10  # density distribution: 0-10 %, ..., 90-100 %


def check_month(month: str) -> str:
    if not isinstance(month, str) or not MONTH_RE.fullmatch(month):
        raise YolocostError(f"--month: {month!r} is not a month (YYYY-MM)")
    return month


def previous_month(month: str) -> str:
    year, mon = int(month[:4]), int(month[5:7])
    return f"{year - 1}-12" if mon == 1 else f"{year}-{mon - 1:02d}"


# --------------------------------------------------------------------------- helpers


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence = ()) -> list[dict[str, Any]]:
    """Rows as dicts. Floating-point sums come out of a parallel aggregation in any order, so
    their last bits vary between runs; rounding them to 10 significant digits keeps the
    reports (and the chart data embedded in them) identical for identical data."""
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [{n: _stable(v) for n, v in zip(names, row)} for row in cur.fetchall()]


def _stable(value: Any) -> Any:
    return float(f"{value:.10g}") if isinstance(value, float) else value


def _scope(project: str | None, alias: str = "") -> tuple[str, list]:
    """SQL condition (with its parameters) that keeps only the audience's own rows."""
    if project is None:
        return "", []
    a = f"{alias}." if alias else ""
    return f" AND {a}project = ? AND {a}bucket = 'project'", [project]


def _dec(value) -> Decimal:
    return Decimal(0) if value is None else Decimal(value)


# decimals of the report currency's minor unit, set by `collect` for the sections it reads
_places: contextvars.ContextVar[int] = contextvars.ContextVar("places", default=2)


def _cents(items: list[dict], key: str, out: str, total: Decimal | None = None) -> None:
    """Round items[key] to cents into items[out] so that they add up: to `total` (already in
    cents) when given, else to the rounded sum. Largest remainder (yolocost.money)."""
    if not items:
        return
    amounts = [_dec(i[key]) for i in items]
    places = _places.get()
    parts = money.to_cents(amounts, places) if total is None else money.distribute(amounts, total, places)
    for item, part in zip(items, parts):
        item[out] = part


def _change(current, previous, kind: str) -> str | None:
    """'+12.3 %' (relative) or '+1.2 pp' (density, percentage points) against last month."""
    if current is None or previous is None:
        return None
    if kind == "percent":
        return f"{(float(current) - float(previous)) * 100:+.1f} pp"
    if float(previous) == 0:
        return None
    return f"{(float(current) / float(previous) - 1) * 100:+.1f} %"


def _local(ts: dt.datetime | None, tz: ZoneInfo) -> str:
    return "" if ts is None else ts.astimezone(tz).strftime("%Y-%m-%d %H:%M")


# --------------------------------------------------------------------------- sections


def months_with_data(con) -> list[str]:
    return [r["month"] for r in rows(con, "SELECT month FROM mart_cluster_month ORDER BY month")]


def month_projects(con, month: str) -> list[str]:
    """The labelled projects that held a GPU in the month, by name."""
    return [r["project"] for r in rows(
        con, "SELECT project FROM mart_project_month WHERE month = ? AND bucket = 'project' ORDER BY project", [month])]


def printed_totals(con, month: str, project: str | None = None) -> dict[str, Decimal]:
    """Cents of each project's month total exactly as the finance CSV has them
    (yolocost.finance.project_totals_cents: largest remainder over the month's projects,
    '(unlabeled)' and '(unallocated)', adding up to the rounded cluster total), keyed like
    mart_project_month.project; {} for a month without data. With `project`, only that
    project's entry is returned: the only figure of other projects' rounding a project
    report needs."""
    try:
        totals = finance.project_totals_cents(con, month)
    except YolocostError:
        return {}
    if project is not None:
        return {project: totals[project]} if project in totals else {}
    return totals


def headline(con, month: str, project: str | None) -> dict:
    """Headline cards, this month against the previous one."""
    prev = previous_month(month)
    if project is None:
        found = {r["month"]: r for r in rows(con, """
            SELECT month, total_cost, capacity_gpu_hours, attributed_gpu_hours, density, idle_gpu_hours,
                   idle_cost, unallocated_gpu_hours, unallocated_cost, unlabeled_gpu_hours, unlabeled_cost,
                   energy_cost, energy_kwh, jobs, users, projects, gpus
            FROM mart_cluster_month WHERE month IN (?, ?)""", [month, prev])}
        cur, old = found.get(month), found.get(prev)
        if cur is None:
            return {"cards": [], "current": None, "previous_month": prev}
        for r, m in ((cur, month), (old, prev)):
            if r is not None:
                r["total_cents"] = finance.total_cents(con, m)
                r["unallocated_cents"] = printed_totals(con, m).get("(unallocated)", Decimal("0.00"))
        spec = [
            ("total_cents", "Total cost", "money", f"GPU time and energy, {cur['gpus']} GPUs"),
            ("attributed_gpu_hours", "GPU-hours held by jobs", "number",
             f"{cur['jobs']} jobs, {cur['users']} users, of {cur['capacity_gpu_hours']:,.0f} capacity"),
            ("density", "Effective compute density", "percent", "busy seconds / held seconds"),
            ("idle_cost", "Idle waste", "money", f"{cur['idle_gpu_hours']:,.1f} GPU-hours under the idle threshold"),
            ("unallocated_cents", "Unallocated capacity", "money",
             f"{cur['unallocated_gpu_hours']:,.1f} GPU-hours nobody held (GPU time and energy)"),
        ]
    else:
        found = {r["month"]: r for r in rows(con, """
            SELECT p.month, p.cost, p.gpu_hours, p.density, p.idle_gpu_hours, p.idle_cost, p.jobs, p.users,
                   p.energy_cost,
                   CAST(p.cost AS DOUBLE) / nullif(CAST(c.total_cost AS DOUBLE), 0) AS cost_share,
                   p.gpu_hours / nullif(c.capacity_gpu_hours, 0) AS gpu_hour_share
            FROM mart_project_month AS p JOIN mart_cluster_month AS c USING (month)
            WHERE p.month IN (?, ?) AND p.project = ? AND p.bucket = 'project'""", [month, prev, project])}
        cur, old = found.get(month), found.get(prev)
        if cur is None:
            return {"cards": [], "current": None, "previous_month": prev}
        cur["total_cents"] = printed_totals(con, month, project)[project]
        if old is not None:
            old["total_cents"] = printed_totals(con, prev, project)[project]
        spec = [
            ("total_cents", "Project cost", "money",
             f"GPU time and energy; {cur['cost_share'] * 100:.1f} % of the cluster's cost"),
            ("gpu_hours", "GPU-hours", "number",
             f"{cur['jobs']} jobs, {cur['users']} users; {cur['gpu_hour_share'] * 100:.1f} % of cluster capacity"),
            ("density", "Effective compute density", "percent", "busy seconds / held seconds"),
            ("idle_cost", "Idle waste", "money", f"{cur['idle_gpu_hours']:,.1f} GPU-hours under the idle threshold"),
        ]
    cards = []
    for key, label, kind, note in spec:
        previous = old.get(key) if old else None
        change = _change(cur.get(key), previous, kind)
        # density up is good news; cost, hours and waste up are not
        worse = change is not None and change.startswith("+") != (key == "density") and not change[1:].startswith("0.0")
        cards.append({"key": key, "label": label, "fmt": kind, "value": cur.get(key), "previous": previous,
                      "change": change, "worse": worse, "note": note})
    return {"cards": cards, "current": cur, "previous": old, "previous_month": prev}


def daily(con, month: str, project: str | None) -> dict:
    """Cost per local day, stacked by project bucket (admin) or by GPU model (a project)."""
    if project is None:
        found = rows(con, """
            SELECT day, project AS series, bucket, sum(cost) AS cost, sum(gpu_hours) AS gpu_hours
            FROM mart_daily WHERE month = ? GROUP BY ALL ORDER BY day, bucket, series""", [month])
        label = "project"
    else:
        found = rows(con, """
            SELECT day, gpu_model AS series, sum(cost) AS cost, sum(gpu_hours) AS gpu_hours
            FROM mart_daily WHERE month = ? AND project = ? AND bucket = 'project'
            GROUP BY ALL ORDER BY day, series""", [month, project])
        label = "GPU model"
    for r in found:
        r["day"] = r["day"].isoformat()
    days = sorted({r["day"] for r in found})
    first = dt.date(int(month[:4]), int(month[5:7]), 1)
    following = (first + dt.timedelta(days=31)).replace(day=1)
    return {"series_label": label, "rows": found, "days": len(days),
            "first_day": first.isoformat(), "next_month": following.isoformat()}


def projects(con, month: str, totals: dict[str, Decimal]) -> list[dict]:
    """Admin only: every bucket of the month with last month's printed cost."""
    prev = previous_month(month)
    found = rows(con, """
        SELECT p.project, p.bucket, p.jobs, p.users, p.gpu_hours, p.density, p.idle_gpu_hours, p.idle_cost,
               p.gpu_cost, p.energy_cost, p.cost,
               CAST(p.cost AS DOUBLE) / nullif(CAST(c.total_cost AS DOUBLE), 0) AS share
        FROM mart_project_month AS p JOIN mart_cluster_month AS c USING (month)
        WHERE p.month = ?
        ORDER BY p.bucket = 'project' DESC, p.bucket = 'unallocated', p.cost DESC, p.project""", [month])
    prev_totals = printed_totals(con, prev)
    for r in found:
        r["cents"] = totals[r["project"]]
        r["previous_cents"] = prev_totals.get(r["project"])
        r["change"] = _change(r["cents"], r["previous_cents"], "money")
    return found


def users(con, month: str, project: str | None, totals: dict[str, Decimal]) -> list[dict]:
    """Cost per user (x project for the admin). Rows of a project add up to its printed total."""
    where, params = _scope(project)
    found = rows(con, f"""
        SELECT project, bucket, coalesce(user_name, '(no user)') AS user_name, jobs, gpu_hours, density,
               idle_gpu_hours, idle_cost, cost
        FROM mart_user_month WHERE month = ?{where}
        ORDER BY cost DESC, project, user_name""", [month, *params])
    groups: dict[str, list[dict]] = {}
    for r in found:
        groups.setdefault(r["project"], []).append(r)
    for key, items in groups.items():
        _cents(items, "cost", "cents", totals.get(key))
    return found


def gpu_models(con, month: str, project: str | None, totals: dict[str, Decimal]) -> list[dict]:
    """Admin: capacity, held and unallocated time and cost per GPU model. A project: its own
    GPU-hours and cost per model (adding up to its printed total)."""
    if project is None:
        found = rows(con, """
            SELECT gpu_model, gpus, capacity_gpu_hours, coalesce(attributed_gpu_hours, 0) AS attributed_gpu_hours,
                   coalesce(unallocated_gpu_hours, 0) AS unallocated_gpu_hours,
                   attributed_density AS density, attributed_cost, unallocated_cost, energy_cost,
                   capacity_cost + energy_cost AS cost
            FROM mart_gpu_model_month WHERE month = ? ORDER BY cost DESC, gpu_model""", [month])
        _cents(found, "cost", "cents")
    else:
        found = rows(con, """
            SELECT gpu_model, max(jobs) AS max_daily_jobs, sum(gpu_hours) AS gpu_hours,
                   sum(idle_gpu_hours) AS idle_gpu_hours, sum(idle_cost) AS idle_cost,
                   sum(energy_cost) AS energy_cost, sum(cost) AS cost
            FROM mart_daily WHERE month = ? AND project = ? AND bucket = 'project'
            GROUP BY gpu_model ORDER BY cost DESC, gpu_model""", [month, project])
        _cents(found, "cost", "cents", totals.get(project))
    return found


def image_tags(con, month: str, project: str | None) -> list[dict]:
    """Spend, density and idle waste per container image tag (exact sums over mart_job_month)."""
    where, params = _scope(project)
    found = rows(con, f"""
        SELECT image_tag, tag_status, count(*) AS jobs, count(DISTINCT project) AS projects,
               sum(gpu_hours) AS gpu_hours,
               CAST(sum(seconds_busy) AS DOUBLE) / nullif(CAST(sum(seconds_present) AS DOUBLE), 0) AS density,
               sum(idle_gpu_hours) AS idle_gpu_hours, sum(idle_cost) AS idle_cost, sum(cost) AS cost
        FROM mart_job_month WHERE month = ?{where}
        GROUP BY image_tag, tag_status ORDER BY cost DESC, image_tag""", [month, *params])
    return _top_with_rest(found, "cost", "cents")


def _top_with_rest(found: list[dict], key: str, out: str, top: int = TOP) -> dict:
    """The first `top` rows and one summed row for the rest, rounded to cents together."""
    shown, rest = found[:top], found[top:]
    other = None
    if rest:
        other = {"count": len(rest), key: sum((_dec(r[key]) for r in rest), Decimal(0)),
                 "jobs": sum(r.get("jobs") or 0 for r in rest),
                 "gpu_hours": sum(r.get("gpu_hours") or 0 for r in rest),
                 "idle_cost": sum((_dec(r.get("idle_cost")) for r in rest), Decimal(0))}
    _cents(shown + ([other] if other else []), key, out)
    return {"rows": shown, "other": other, "count": len(found),
            "cents": sum((r[out] for r in shown + ([other] if other else [])), Decimal("0.00"))}


def density(con, month: str, project: str | None) -> dict:
    """Jobs per band of effective compute density (0-10 %, ..., 90-100 %)."""
    where, params = _scope(project)
    found = rows(con, f"""
        SELECT least(CAST(floor(coalesce(density, 0) * {DENSITY_BINS}) AS INTEGER), {DENSITY_BINS - 1}) AS bin,
               count(*) AS jobs, sum(gpu_hours) AS gpu_hours, sum(cost) AS cost, sum(idle_cost) AS idle_cost
        FROM mart_job_month WHERE month = ?{where}
        GROUP BY bin ORDER BY bin""", [month, *params])
    by_bin = {r["bin"]: r for r in found}
    step = 100 // DENSITY_BINS
    bins = []
    for b in range(DENSITY_BINS):
        r = by_bin.get(b, {})
        bins.append({"label": f"{b * step}–{(b + 1) * step} %", "jobs": r.get("jobs", 0),
                     "gpu_hours": r.get("gpu_hours") or 0.0, "cost": r.get("cost") or Decimal(0),
                     "idle_cost": r.get("idle_cost") or Decimal(0)})
    _cents(bins, "cost", "cents")
    summary = rows(con, f"""
        SELECT count(*) AS jobs,
               median(density) AS median_density,
               CAST(sum(seconds_busy) AS DOUBLE) / nullif(CAST(sum(seconds_present) AS DOUBLE), 0) AS overall,
               count(*) FILTER (WHERE density < 0.5) AS low_jobs,
               coalesce(sum(gpu_hours) FILTER (WHERE density < 0.5), 0) AS low_gpu_hours,
               coalesce(sum(cost) FILTER (WHERE density < 0.5), 0) AS low_cost
        FROM mart_job_month WHERE month = ?{where}""", [month, *params])[0]
    return {"bins": bins, **summary}


def idle_waste(con, month: str, project: str | None) -> dict:
    """The jobs with the most idle cost, and idle waste per project (admin) or per user."""
    where, params = _scope(project)
    jobs = rows(con, f"""
        SELECT job_id, project, bucket, coalesce(user_name, '(no user)') AS user_name, model_type, image_tag,
               gpu_models, gpus, gpu_hours, idle_gpu_hours, idle_cost, density, cost
        FROM mart_job_month WHERE month = ? AND idle_gpu_hours > 0{where}
        ORDER BY idle_cost DESC, job_id LIMIT {TOP}""", [month, *params])
    if project is None:
        groups = rows(con, """
            SELECT project AS name, bucket, idle_gpu_hours, idle_cost, gpu_hours,
                   idle_gpu_hours / nullif(gpu_hours, 0) AS idle_share
            FROM mart_project_month WHERE month = ? AND bucket <> 'unallocated'
            ORDER BY idle_cost DESC, project""", [month])
        label = "Project"
    else:
        groups = rows(con, """
            SELECT coalesce(user_name, '(no user)') AS name, bucket, idle_gpu_hours, idle_cost, gpu_hours,
                   idle_gpu_hours / nullif(gpu_hours, 0) AS idle_share
            FROM mart_user_month WHERE month = ? AND project = ? AND bucket = 'project'
            ORDER BY idle_cost DESC, name""", [month, project])
        label = "User"
    _cents(groups, "idle_cost", "idle_cents")
    return {"jobs": jobs, "groups": groups, "group_label": label}


LEADERBOARD_COLUMNS = """
    model_type, image_tag, runs, mean_map50, mean_map50_95, mean_training_hours, mean_gpu_hours,
    peak_mem_mib, mean_density, mean_cost_per_run, cost_per_map50_point, cost_per_map50_95_point"""


def leaderboard(con, month: str, project: str | None, timezone: str, grain_seconds: int) -> list[dict]:
    """The value leaderboard: model config x image tag, cheapest mAP point first. The admin
    reads mart_leaderboard; a project's board is the same aggregate over its own jobs."""
    if project is None:
        return rows(con, f"""
            SELECT {LEADERBOARD_COLUMNS} FROM mart_leaderboard WHERE month = ?
            ORDER BY cost_per_map50_point NULLS LAST, model_type, image_tag""", [month])
    return leaderboard_from_jobs(con, month, project, timezone, grain_seconds)


def leaderboard_from_jobs(con, month: str, project: str | None, timezone: str, grain_seconds: int) -> list[dict]:
    """mart_leaderboard's aggregate over mart_job, restricted to one project's jobs (or none)."""
    where, params = _scope(project)
    return rows(con, f"""
        SELECT {LEADERBOARD_COLUMNS} FROM (
            SELECT
                model_type, image_tag, count(*) AS runs,
                avg(map50) AS mean_map50, avg(map50_95) AS mean_map50_95,
                avg(epoch(last_interval) - epoch(first_interval) + ?) / 3600 AS mean_training_hours,
                avg(gpu_hours) AS mean_gpu_hours, max(mem_peak_mib) AS peak_mem_mib, avg(density) AS mean_density,
                CAST(sum(cost) / count(*) AS DECIMAL(38, 9)) AS mean_cost_per_run,
                CAST(sum(cost) AS DOUBLE) / count(*) / nullif(avg(map50) * 100, 0) AS cost_per_map50_point,
                CAST(sum(cost) AS DOUBLE) / count(*) / nullif(avg(map50_95) * 100, 0) AS cost_per_map50_95_point
            FROM mart_job
            WHERE map50 IS NOT NULL AND first_interval IS NOT NULL
              AND strftime(timezone(?, coalesce(end_time, last_interval)), '%Y-%m') = ?{where}
            GROUP BY model_type, image_tag)
        ORDER BY cost_per_map50_point NULLS LAST, model_type, image_tag""",
        [grain_seconds, timezone, month, *params])


def breakers(con, month: str, project: str | None, tz: ZoneInfo) -> dict:
    """Breaker candidates (stalled stretches) and what a pause would have saved."""
    where, params = _scope(project)
    found = rows(con, f"""
        SELECT job_id, project, bucket, coalesce(user_name, '(no user)') AS user_name, model_type,
               stretch_start, stretch_end, stretch_hours, gpu_hours, cost, util_mean, loss_before, loss_after
        FROM mart_breakers WHERE month = ?{where}
        ORDER BY cost DESC, job_id, stretch_start""", [month, *params])
    for r in found:
        r["start"], r["end"] = _local(r.pop("stretch_start"), tz), _local(r.pop("stretch_end"), tz)
    _cents(found, "cost", "cents")
    return {"rows": found, "gpu_hours": sum(r["gpu_hours"] or 0 for r in found),
            "cents": sum((r["cents"] for r in found), Decimal("0.00")), "jobs": len({r["job_id"] for r in found})}


def tag_violations(con, month: str, project: str | None) -> dict:
    """Spend on image tags that break the tag policy, per status and per job."""
    where, params = _scope(project, "m")
    found = rows(con, f"""
        SELECT v.job_id, v.project, m.bucket, coalesce(v.user_name, '(no user)') AS user_name,
               v.image_tag, v.tag_status, v.image_digest, v.gpu_hours, v.cost
        FROM mart_tag_violations AS v
        JOIN mart_job_month AS m ON m.month = v.month AND m.job_id = v.job_id
        WHERE v.month = ?{where}
        ORDER BY v.cost DESC, v.job_id""", [month, *params])
    statuses: dict[str, dict] = {}
    for r in found:
        s = statuses.setdefault(r["tag_status"], {"status": r["tag_status"], "jobs": 0, "gpu_hours": 0.0,
                                                  "cost": Decimal(0)})
        s["jobs"] += 1
        s["gpu_hours"] += r["gpu_hours"] or 0.0
        s["cost"] += _dec(r["cost"])
    by_status = sorted(statuses.values(), key=lambda s: (-s["cost"], s["status"]))
    _cents(by_status, "cost", "cents")
    return {"by_status": by_status, "jobs": found[:TOP], "total_jobs": len(found),
            "gpu_hours": sum(s["gpu_hours"] for s in by_status),
            "cents": sum((s["cents"] for s in by_status), Decimal("0.00"))}


def unallocated(con, month: str, totals: dict[str, Decimal]) -> dict:
    """Admin only: capacity nobody held, per GPU model (GPU time and the energy idle GPUs drew,
    adding up to the '(unallocated)' total) and per host (GPU time: mart_host_day has no energy)."""
    models = rows(con, """
        SELECT d.gpu_model, any_value(g.gpus) AS gpus, any_value(g.capacity_gpu_hours) AS capacity_gpu_hours,
               sum(d.gpu_hours) AS unallocated_gpu_hours,
               sum(d.gpu_hours) / nullif(any_value(g.capacity_gpu_hours), 0) AS share,
               sum(d.gpu_cost) AS gpu_cost, sum(d.energy_cost) AS energy_cost, sum(d.cost) AS cost
        FROM mart_daily AS d JOIN mart_gpu_model_month AS g USING (month, gpu_model)
        WHERE d.month = ? AND d.bucket = 'unallocated'
        GROUP BY d.gpu_model ORDER BY cost DESC, d.gpu_model""", [month])
    hosts = rows(con, """
        SELECT hostname, gpu_model, max(gpus) AS gpus, sum(capacity_gpu_hours) AS capacity_gpu_hours,
               sum(unallocated_gpu_hours) AS unallocated_gpu_hours,
               sum(unallocated_gpu_hours) / nullif(sum(capacity_gpu_hours), 0) AS share,
               sum(unallocated_cost) AS unallocated_cost
        FROM mart_host_day WHERE month = ?
        GROUP BY hostname, gpu_model ORDER BY unallocated_cost DESC, hostname, gpu_model""", [month])
    _cents(models, "cost", "cents", totals.get("(unallocated)"))
    _cents(hosts, "unallocated_cost", "cents")
    return {"gpu_models": models, "hosts": hosts,
            "gpu_hours": sum(m["unallocated_gpu_hours"] or 0 for m in models),
            "cents": sum((m["cents"] for m in models), Decimal("0.00")),
            "gpu_cents": sum((h["cents"] for h in hosts), Decimal("0.00"))}


# --------------------------------------------------------------------------- what to do


def actions(report: dict, project: str | None, currency: str) -> list[dict]:
    """A short list of things to do, each derived from the figures of the other sections."""
    places = money.minor_unit(currency)

    def cash(value) -> str:
        return f"{money.round_cents(_dec(value), places):,.{places}f} {currency}"

    out = []
    jobs = report["idle_waste"]["jobs"][:3]
    if jobs:
        names = "; ".join(
            f"{j['job_id']} ({j['user_name']}{'' if project else ', ' + j['project']}): "
            f"{j['idle_gpu_hours']:,.1f} idle GPU-hours, {cash(j['idle_cost'])}" for j in jobs)
        out.append({"title": f"Look at the {len(jobs)} job{'s' if len(jobs) > 1 else ''} with the most idle waste",
                    "detail": names + ". Check their data loading, or release GPUs the job does not use."})
    br = report["breakers"]
    if br["rows"]:
        top = br["rows"][0]
        out.append({"title": f"Pause stalled runs: {cash(br['cents'])} would have been saved",
                    "detail": f"{len(br['rows'])} stretch(es) in {br['jobs']} job(s) ran under the breaker "
                              f"utilization with no loss improvement ({br['gpu_hours']:,.1f} GPU-hours); the largest "
                              f"is {top['job_id']} ({top['user_name']}), {top['stretch_hours']:,.1f} h from "
                              f"{top['start']}. An automatic pause (early stopping) would stop them."})
    tv = report["tag_violations"]
    if tv["by_status"]:
        parts = ", ".join(f"{s['status']}: {s['jobs']} job(s), {cash(s['cents'])}" for s in tv["by_status"])
        out.append({"title": f"Retag images: {cash(tv['cents'])} ran on images that break the tag policy",
                    "detail": f"{parts}. Use purpose-yoloversion-optimization-cuda tags so every run can be traced."})
    dens = report["density"]
    if dens["low_jobs"]:
        out.append({"title": f"Raise density: {dens['low_jobs']} job(s) were busy less than half the time",
                    "detail": f"They held {dens['low_gpu_hours']:,.1f} GPU-hours ({cash(dens['low_cost'])}). "
                              "Larger batches, more data-loader workers or a smaller GPU (or a MIG slice) fit them better."})
    board = [r for r in report["leaderboard"] if r["cost_per_map50_point"] is not None]
    if len(board) >= 2:
        best, worst = board[0], board[-1]
        out.append({"title": f"Prefer {best['model_type']} on {best['image_tag']} for value",
                    "detail": f"{best['cost_per_map50_point']:,.{places}f} {currency} per mAP50 point against "
                              f"{worst['cost_per_map50_point']:,.{places}f} {currency} for {worst['model_type']} on "
                              f"{worst['image_tag']}."})
    if project is None and report.get("unallocated") and report["unallocated"]["hosts"]:
        un = report["unallocated"]
        host = un["hosts"][0]
        out.append({"title": f"Use or give back idle capacity: {cash(un['cents'])} of GPUs nobody held",
                    "detail": f"{un['gpu_hours']:,.1f} GPU-hours unallocated; the most on {host['hostname']} "
                              f"({host['gpu_model']}, {host['unallocated_gpu_hours']:,.1f} GPU-hours, "
                              f"{(host['share'] or 0) * 100:.0f} % of its capacity). Shrink the pool or lend it out."})
    return out


# --------------------------------------------------------------------------- all of it


def collect(con, month: str, project: str | None, *, timezone: str, grain_seconds: int, currency: str) -> dict:
    """Every section of one audience's report."""
    token = _places.set(money.minor_unit(currency))
    try:
        return _collect(con, month, project, timezone=timezone, grain_seconds=grain_seconds, currency=currency)
    finally:
        _places.reset(token)


def _collect(con, month: str, project: str | None, *, timezone: str, grain_seconds: int, currency: str) -> dict:
    tz = ZoneInfo(timezone)
    totals = printed_totals(con, month, project)
    report: dict[str, Any] = {
        "headline": headline(con, month, project),
        "daily": daily(con, month, project),
        "users": users(con, month, project, totals),
        "gpu_models": gpu_models(con, month, project, totals),
        "image_tags": image_tags(con, month, project),
        "density": density(con, month, project),
        "idle_waste": idle_waste(con, month, project),
        "leaderboard": leaderboard(con, month, project, timezone, grain_seconds),
        "breakers": breakers(con, month, project, tz),
        "tag_violations": tag_violations(con, month, project),
    }
    if project is None:
        report["projects"] = projects(con, month, totals)
        report["unallocated"] = unallocated(con, month, totals)
    report["actions"] = actions(report, project, currency)
    return report
