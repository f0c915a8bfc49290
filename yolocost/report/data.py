"""What each report section shows, read from the marts and the cent ledger only, as plain dicts and lists.

One function per section (sections.py names each section's reader: one of these, or of a
module of its own: trend.py, waste.py, tags.py, ...). Each takes an open read-only
connection, the month and the audience's project (None = the admin report, all projects)
and filters in SQL: a project report's rows come from `project = ? AND bucket = 'project'`
(the ledger's through its readers ledger_lines and ledger_jobs, sql/macros.sql; the marts'
through reading.scope), so no other project's row is ever read into it.

Every billed money figure and GPU-hour figure is a value of the cent ledger
(yolocost.ledger: ledger_charges, ledger_job_month) or a sum of such values: so a figure has
the same cents in every table, card, report, the summary, the named queries and the finance
CSV, every table adds up to its total, and GPU + energy = cost in every row. Figures that are
no charge (what a stalled stretch cost, what a policy would have saved) are not in the
ledger; they are rounded here with the largest remainder (yolocost.money) so that their
table adds up to its printed total. Money stays Decimal; densities and shares are floats.
The report's currency (yolocost.money.Currency) comes from the section registry
(yolocost.report.sections.collect) to the sections that round or write amounts.
"""

from __future__ import annotations

import re
from decimal import Decimal
from zoneinfo import ZoneInfo

from .. import ledger, money, queries, whatif
from ..money import Currency
from ..monthstr import Month
from ..monthstr import check_month as check_month  # the reports check their month here (report/__init__)
from .reading import (change_text, dec, local_time, minor_shares, project_sums, query_rows,
                      rows, scope, stable)
from .trend import comparison

TOP = 15  # rows in ranking tables (idle waste, violations); the charts show the same rows
DENSITY_BINS = 10  # density distribution: 0-10 %, ..., 90-100 %


def previous_month(month: str) -> str:
    """The month before `month` (YYYY-MM), the one a report compares it with."""
    return str(Month.parse(month).previous())


# --------------------------------------------------------------------------- sections


def months_with_data(con) -> list[str]:
    return [r["month"] for r in rows(con, "SELECT month FROM mart_cluster_month ORDER BY month")]


def month_projects(con, month: str) -> list[str]:
    """The labelled projects that held a GPU in the month, by name."""
    return [r["project"] for r in rows(
        con, "SELECT project FROM mart_project_month WHERE month = ? AND bucket = 'project' ORDER BY project", [month])]


HOST_DAY_QUERY = "unallocated_by_host_day"  # queries/: the per-host cents of capacity nobody held


def printed_totals(con, month: str, project: str | None = None) -> dict[str, Decimal]:
    """Each project's billed cents for the month (own usage plus any share of unallocated
    capacity; the finance CSV's rows of that SubAccountId add up to it), keyed like
    mart_project_month.project; {} for a month without data. With `project`, only that
    project's entry."""
    return {r["project"]: r["cents"] for r in rows(con, """
        SELECT project, sum(cost) AS cents FROM ledger_lines(?, ?)
        GROUP BY project ORDER BY project""", [month, project])}


# the admin headline's figures by the names of yolocost.ledger.month_totals
_HEADLINE_TOTALS = {"total_cents": "total", "capacity_gpu_hours": "capacity_gpu_hours",
                    "attributed_gpu_hours": "held_gpu_hours", "idle_gpu_hours": "idle_gpu_hours",
                    "idle_cost": "idle_cost", "unallocated_cents": "unallocated_cost",
                    "unallocated_gpu_hours": "unallocated_gpu_hours", "shared_cents": "share_cost",
                    "energy_cost": "energy_cost"}


def headline(con, month: str, project: str | None, currency: Currency) -> dict:
    """Headline cards, this month against the previous one; no change is shown when either
    month is partial (`coverage["note"]` says which, with its coverage)."""
    prev = previous_month(month)
    covered = comparison(con, month, prev)
    if project is None:
        marts = {r["month"]: r for r in rows(con, """
            SELECT month, density, jobs, users, projects, gpus, energy_kwh
            FROM mart_cluster_month WHERE month IN (?, ?)""", [month, prev])}
        found = {}
        for m in (month, prev):
            totals = ledger.month_totals(con, m)
            if totals is not None and m in marts:
                found[m] = {**marts[m], **{card: totals[key] for card, key in _HEADLINE_TOTALS.items()}}
        cur, old = found.get(month), found.get(prev)
        if cur is None:
            return {"cards": [], "current": None, "previous_month": prev, "coverage": covered}
        shared = (f"; {currency.format(cur['shared_cents'])} of it charged to projects by their GPU-hours"
                  if cur["shared_cents"] else "; charged to no project")
        spec = [
            ("total_cents", "Total cost", "money", f"GPU time and energy, {cur['gpus']} GPUs"),
            ("attributed_gpu_hours", "GPU-hours held by jobs", "number",
             f"{cur['jobs']} jobs, {cur['users']} users, of {cur['capacity_gpu_hours']:,.1f} capacity"),
            ("density", "Effective compute density", "percent", "busy seconds / held seconds"),
            ("idle_cost", "Idle waste", "money", f"{cur['idle_gpu_hours']:,.1f} GPU-hours under the idle threshold"),
            ("unallocated_cents", "Unallocated capacity", "money",
             f"{cur['unallocated_gpu_hours']:,.1f} GPU-hours nobody held (GPU time and energy){shared}"),
        ]
    else:
        found = {}
        sums = project_sums(con, [month, prev], project)
        for m in (month, prev):
            own = sums.get(m)
            if own is None:
                continue
            own = {k: v for k, v in own.items() if k != "month"}
            extra = rows(con, """
                SELECT p.density, p.jobs, p.users,
                       (SELECT sum(cost) FROM ledger_lines(?, NULL)) AS cluster_cents,
                       (SELECT sum(gpu_hours) FROM ledger_lines(?, NULL)) AS capacity_gpu_hours
                FROM mart_project_month AS p WHERE p.month = ? AND p.project = ? AND p.bucket = 'project'""",
                [m, m, m, project])
            found[m] = {**own, **(extra[0] if extra else {"density": None, "jobs": 0, "users": 0,
                                                             "cluster_cents": None, "capacity_gpu_hours": None})}
            r = found[m]
            r["cost_share"] = float(r["total_cents"] / r["cluster_cents"]) if r["cluster_cents"] else 0.0
            r["gpu_hour_share"] = float(r["gpu_hours"] / r["capacity_gpu_hours"]) if r["capacity_gpu_hours"] else 0.0
        cur, old = found.get(month), found.get(prev)
        if cur is None:
            return {"cards": [], "current": None, "previous_month": prev, "coverage": covered}
        spec = [
            ("total_cents", "Project cost", "money",
             f"GPU time and energy; {cur['cost_share'] * 100:.1f} % of the cluster's cost"),
            ("gpu_hours", "GPU-hours", "number",
             f"{cur['jobs']} jobs, {cur['users']} users; {cur['gpu_hour_share'] * 100:.1f} % of cluster capacity"),
            ("density", "Effective compute density", "percent", "busy seconds / held seconds"),
            ("idle_cost", "Idle waste", "money", f"{cur['idle_gpu_hours']:,.1f} GPU-hours under the idle threshold"),
        ]
        if cur["share_cents"]:
            spec.append(("share_cents", "Share of unallocated capacity", "money",
                         f"capacity nobody held, charged by GPU-hours; billed in all {currency.format(cur['billed_cents'])}"))
    cards = []
    for key, label, kind, note in spec:
        previous = old.get(key) if old else None
        change = change_text(cur.get(key), previous, kind) if not covered["note"] else None
        # density up is good news; cost, hours and waste up are not
        worse = change is not None and change.startswith("+") != (key == "density") and not change[1:].startswith("0.0")
        cards.append({"key": key, "label": label, "fmt": kind, "value": cur.get(key), "previous": previous,
                      "change": change, "worse": worse, "note": note})
    return {"cards": cards, "current": cur, "previous": old, "previous_month": prev, "coverage": covered}


def daily(con, month: str, project: str | None) -> dict:
    """Cost per local day, stacked by project bucket (admin; capacity nobody held as one
    series, whatever share of it was charged to projects) or by GPU model (a project's own use)."""
    if project is None:
        found = rows(con, """
            SELECT day, CASE WHEN unallocated THEN '(unallocated)' ELSE project END AS series,
                   CASE WHEN unallocated THEN 'unallocated' ELSE bucket END AS bucket,
                   sum(cost) AS cost, sum(gpu_hours) AS gpu_hours
            FROM ledger_lines(?, NULL) GROUP BY ALL ORDER BY day, bucket, series""", [month])
        label = "project"
    else:
        found = rows(con, """
            SELECT day, gpu_model AS series, sum(cost) AS cost, sum(gpu_hours) AS gpu_hours
            FROM ledger_lines(?, ?) WHERE NOT shared
            GROUP BY ALL ORDER BY day, series""", [month, project])
        label = "GPU model"
    for r in found:
        r["day"] = r["day"].isoformat()
        r["gpu_hours"] = r["gpu_hours"] or Decimal("0.0")
    days = sorted({r["day"] for r in found})
    first, following = Month.parse(month).first_day, Month.parse(month).next().first_day
    return {"series_label": label, "rows": found, "days": len(days),
            "first_day": first.isoformat(), "next_month": following.isoformat()}


# a bucket's ledger sums: own use (GPU, energy), the share of unallocated capacity, hours, idle
_LEDGER_SUMS = """
    coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu' AND NOT shared), 0) AS gpu_cost,
    coalesce(sum(cost) FILTER (WHERE charge_kind = 'energy' AND NOT shared), 0) AS energy_cost,
    coalesce(sum(cost) FILTER (WHERE shared), 0) AS share_cents,
    coalesce(sum(gpu_hours) FILTER (WHERE NOT shared), 0) AS gpu_hours,
    coalesce(sum(idle_gpu_hours), 0) AS idle_gpu_hours,
    coalesce(sum(idle_cost), 0) AS idle_cost"""


def _bucket_sums(con, month: str) -> list[dict]:
    """Every bucket of the month from the ledger. The '(unallocated)' row holds all capacity
    nobody held (its GPU-hours and cost), and as a negative share what the "proportional"
    policy charged of it to projects, so each column adds up: cost to capacity + energy,
    share to 0, billed (cost + share) to the month's total."""
    found = rows(con, f"""
        SELECT project, bucket, {_LEDGER_SUMS}
        FROM ledger_lines(?, NULL) WHERE NOT unallocated
        GROUP BY project, bucket
        UNION ALL
        SELECT project, 'project', 0, 0, sum(cost), 0, 0, 0
        FROM ledger_lines(?, NULL) WHERE shared GROUP BY project""", [month, month])
    merged: dict[tuple, dict] = {}
    for r in found:
        key = (r["project"], r["bucket"])
        if key in merged:
            for k in ("gpu_cost", "energy_cost", "share_cents", "gpu_hours", "idle_gpu_hours", "idle_cost"):
                merged[key][k] += r[k]
        else:
            merged[key] = r
    nobody = rows(con, """
        SELECT '(unallocated)' AS project, 'unallocated' AS bucket,
               coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu'), 0) AS gpu_cost,
               coalesce(sum(cost) FILTER (WHERE charge_kind = 'energy'), 0) AS energy_cost,
               -coalesce(sum(cost) FILTER (WHERE shared), 0) AS share_cents,
               coalesce(sum(gpu_hours), 0) AS gpu_hours, NULL AS idle_gpu_hours, NULL AS idle_cost,
               count(*) AS n
        FROM ledger_lines(?, NULL) WHERE unallocated""", [month])[0]
    out = list(merged.values())
    if nobody.pop("n"):
        out.append(nobody)
    for r in out:
        r["cents"] = r["gpu_cost"] + r["energy_cost"]
        r["billed_cents"] = r["cents"] + r["share_cents"]
    return out


def projects(con, month: str) -> list[dict]:
    """Admin only: every bucket of the month (ledger sums, see _bucket_sums) with jobs, users
    and density from mart_project_month and last month's billed cents, and the change where
    both months are whole."""
    prev = previous_month(month)
    comparable = not comparison(con, month, prev)["note"]
    marts = {r["project"]: r for r in rows(con, """
        SELECT project, jobs, users, density FROM mart_project_month WHERE month = ?""", [month])}
    found = _bucket_sums(con, month)
    total = sum((r["billed_cents"] for r in found), Decimal(0))
    prev_totals = printed_totals(con, prev)
    for r in found:
        r.update({k: marts.get(r["project"], {}).get(k) for k in ("jobs", "users", "density")})
        r["share"] = float(r["billed_cents"] / total) if total else None
        r["previous_cents"] = prev_totals.get(r["project"])
        r["change"] = change_text(r["billed_cents"], r["previous_cents"], "money") if comparable else None
    found.sort(key=lambda r: (BUCKET_RANK.get(r["bucket"], 9), -r["billed_cents"], r["project"]))
    return found


BUCKET_RANK = {"project": 0, "unlabeled": 1, "unallocated": 2}


# a job-month's ledger figures joined to its labels
_JOBS = """
    FROM ledger_jobs(?, ?) AS l
    JOIN mart_job_month AS m ON m.month = l.month AND m.job_id = l.job_id"""


def users(con, month: str, project: str | None) -> list[dict]:
    """Cost per user (x project for the admin): sums of the ledger's job cents, so the rows of
    a project add up to its own-usage cost."""
    return rows(con, f"""
        SELECT l.project, l.bucket, coalesce(m.user_name, '(no user)') AS user_name, count(*) AS jobs,
               sum(l.gpu_hours) AS gpu_hours,
               density(sum(m.seconds_busy), sum(m.seconds_present)) AS density,
               sum(l.idle_gpu_hours) AS idle_gpu_hours, sum(l.idle_cost) AS idle_cost,
               sum(l.gpu_cost) AS gpu_cost, sum(l.energy_cost) AS energy_cost, sum(l.cost) AS cents
        {_JOBS}
        GROUP BY l.project, l.bucket, m.user_name
        ORDER BY cents DESC, l.project, user_name""", [month, project])


def gpu_models(con, month: str, project: str | None) -> list[dict]:
    """Admin: capacity, held and unallocated time and cost per GPU model. A project: its own
    GPU-hours and cost per model. Ledger sums: held + unallocated GPU cost + energy = cost."""
    if project is None:
        found = rows(con, """
            SELECT l.gpu_model, any_value(g.gpus) AS gpus, sum(l.gpu_hours) AS capacity_gpu_hours,
                   coalesce(sum(l.gpu_hours) FILTER (WHERE NOT l.unallocated), 0) AS attributed_gpu_hours,
                   coalesce(sum(l.gpu_hours) FILTER (WHERE l.unallocated), 0) AS unallocated_gpu_hours,
                   any_value(g.attributed_density) AS density,
                   coalesce(sum(l.cost) FILTER (WHERE l.charge_kind = 'gpu' AND NOT l.unallocated), 0) AS attributed_cost,
                   coalesce(sum(l.cost) FILTER (WHERE l.charge_kind = 'gpu' AND l.unallocated), 0) AS unallocated_cost,
                   coalesce(sum(l.cost) FILTER (WHERE l.charge_kind = 'energy'), 0) AS energy_cost,
                   sum(l.cost) AS cents
            FROM ledger_lines(?, NULL) AS l JOIN mart_gpu_model_month AS g USING (month, gpu_model)
            GROUP BY l.gpu_model ORDER BY cents DESC, l.gpu_model""", [month])
    else:
        found = rows(con, """
            SELECT gpu_model, sum(gpu_hours) AS gpu_hours, sum(idle_gpu_hours) AS idle_gpu_hours,
                   sum(idle_cost) AS idle_cost,
                   coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu'), 0) AS gpu_cost,
                   coalesce(sum(cost) FILTER (WHERE charge_kind = 'energy'), 0) AS energy_cost,
                   sum(cost) AS cents
            FROM ledger_lines(?, ?) WHERE NOT shared
            GROUP BY gpu_model ORDER BY cents DESC, gpu_model""", [month, project])
    return found


def image_tags(con, month: str, project: str | None) -> dict:
    """Spend, density and idle waste per container image tag (sums of the ledger's job cents)."""
    found = rows(con, f"""
        SELECT m.image_tag, m.tag_status, count(*) AS jobs, count(DISTINCT l.project) AS projects,
               sum(l.gpu_hours) AS gpu_hours,
               density(sum(m.seconds_busy), sum(m.seconds_present)) AS density,
               sum(l.idle_gpu_hours) AS idle_gpu_hours, sum(l.idle_cost) AS idle_cost, sum(l.cost) AS cents
        {_JOBS}
        GROUP BY m.image_tag, m.tag_status ORDER BY cents DESC, m.image_tag""", [month, project])
    return _top_with_rest(found)


def _top_with_rest(found: list[dict], top: int = TOP) -> dict:
    """The first `top` rows and one summed row for the rest (sums of ledger values)."""
    shown, rest = found[:top], found[top:]
    other = None
    if rest:
        other = {"count": len(rest), "cents": sum((r["cents"] for r in rest), Decimal(0)),
                 "jobs": sum(r.get("jobs") or 0 for r in rest),
                 "gpu_hours": sum((r["gpu_hours"] for r in rest), Decimal(0)),
                 "idle_cost": sum((dec(r.get("idle_cost")) for r in rest), Decimal(0))}
    every = shown + ([other] if other else [])
    return {"rows": shown, "other": other, "count": len(found),
            "cents": sum((r["cents"] for r in every), Decimal(0)),
            "gpu_hours": sum((r["gpu_hours"] for r in every), Decimal(0)),
            "idle_cost": sum((dec(r["idle_cost"]) for r in every), Decimal(0)),
            "jobs": sum(r["jobs"] for r in every)}


def density(con, month: str, project: str | None) -> dict:
    """Jobs per band of effective compute density (0-10 %, ..., 90-100 %), ledger sums."""
    found = rows(con, f"""
        SELECT least(CAST(floor(coalesce(m.density, 0) * {DENSITY_BINS}) AS INTEGER), {DENSITY_BINS - 1}) AS bin,
               count(*) AS jobs, sum(l.gpu_hours) AS gpu_hours, sum(l.cost) AS cents, sum(l.idle_cost) AS idle_cost
        {_JOBS}
        GROUP BY bin ORDER BY bin""", [month, project])
    by_bin = {r["bin"]: r for r in found}
    step = 100 // DENSITY_BINS
    bins = []
    for b in range(DENSITY_BINS):
        r = by_bin.get(b, {})
        bins.append({"label": f"{b * step}–{(b + 1) * step} %", "jobs": r.get("jobs", 0),
                     "gpu_hours": r.get("gpu_hours") or Decimal("0.0"), "cents": r.get("cents") or Decimal(0),
                     "idle_cost": r.get("idle_cost") or Decimal(0)})
    summary = rows(con, f"""
        SELECT count(*) AS jobs,
               median(m.density) AS median_density,
               density(sum(m.seconds_busy), sum(m.seconds_present)) AS overall,
               count(*) FILTER (WHERE m.density < 0.5) AS low_jobs,
               coalesce(sum(l.gpu_hours) FILTER (WHERE m.density < 0.5), 0) AS low_gpu_hours,
               coalesce(sum(l.cost) FILTER (WHERE m.density < 0.5), 0) AS low_cost,
               -- the density tip's saving (an estimate): at 50 % density the same busy time needs
               -- density / 50 % of the GPU-hours
               coalesce(sum(CAST(l.cost AS DOUBLE) * (1 - coalesce(m.density, 0) / 0.5))
                            FILTER (WHERE m.density < 0.5), 0) AS low_saving
        {_JOBS}""", [month, project])[0]
    return {"bins": bins, **summary}


def idle_waste(con, month: str, project: str | None) -> dict:
    """The jobs with the most idle cost, and idle waste per project (admin) or per user: ledger
    values, the same cents as the project, user and job tables."""
    jobs = rows(con, f"""
        SELECT l.job_id, l.project, l.bucket, coalesce(m.user_name, '(no user)') AS user_name, m.model_type,
               m.image_tag, m.gpu_models, m.gpus, l.gpu_hours, l.idle_gpu_hours, l.idle_cost, m.density, l.cost
        {_JOBS}
        WHERE l.idle_cost > 0
        ORDER BY l.idle_cost DESC, l.idle_gpu_hours DESC, l.job_id LIMIT {TOP}""", [month, project])
    if project is None:
        groups = [{"name": r["project"], "bucket": r["bucket"], "idle_gpu_hours": r["idle_gpu_hours"],
                   "idle_cents": r["idle_cost"], "gpu_hours": r["gpu_hours"],
                   "idle_share": float(r["idle_gpu_hours"] / r["gpu_hours"]) if r["gpu_hours"] else None}
                  for r in _bucket_sums(con, month) if r["bucket"] != "unallocated"]
        groups.sort(key=lambda g: (-g["idle_cents"], g["name"]))
        label = "Project"
    else:
        groups = [{"name": u["user_name"], "bucket": u["bucket"], "idle_gpu_hours": u["idle_gpu_hours"],
                   "idle_cents": u["idle_cost"], "gpu_hours": u["gpu_hours"],
                   "idle_share": float(u["idle_gpu_hours"] / u["gpu_hours"]) if u["gpu_hours"] else None}
                  for u in users(con, month, project)]
        groups.sort(key=lambda g: (-g["idle_cents"], g["name"]))
        label = "User"
    return {"jobs": jobs, "groups": groups, "group_label": label}


LEADERBOARD_ENDS = 10  # the PDF prints the best and the worst this many of a longer leaderboard

# The value leaderboard's configurations: the macro cost_per_map_board (sql/macros.sql), which
# the named query cost_per_map_leaderboard ranks and rounds; here its rows are read whole, the
# ledger cents as `cents`, for one project's jobs or (project NULL) every project's.
LEADERBOARD_SQL = """
    SELECT model_type, image_tag, runs, mean_map50, mean_map50_95, mean_training_hours, mean_gpu_hours,
           peak_mem_mib, mean_density, cost AS cents
    FROM cost_per_map_board(?, ?, ?)"""


def leaderboard(con, month: str, project: str | None, timezone: str, grain_seconds: int) -> list[dict]:
    """The value leaderboard, whole: every model config x image tag with at least one finished
    run that ended in the month (a project's: its own runs only), cheapest mAP50 point first,
    each row with its `rank` (1 = best value). Money is the cent ledger's: `cents` is the sum of
    the runs' ledger cents (all the months they ran in); `mean_cost_per_run` (cents / runs) and
    `cost_per_map50_point` (cents / runs / (mean mAP50 x 100)) are rates on those cents."""
    return leaderboard_from_jobs(con, month, project, timezone, grain_seconds)


def leaderboard_from_jobs(con, month: str, project: str | None, timezone: str, grain_seconds: int) -> list[dict]:
    """The leaderboard (see `leaderboard`) over the month's finished jobs, restricted to one
    project's jobs (or none)."""
    found = rows(con, LEADERBOARD_SQL, [month, project, grain_seconds])
    for r in found:
        runs = Decimal(r["runs"])
        r["mean_cost_per_run"] = (r["cents"] / runs).quantize(Decimal("1e-9"))
        per_run = float(r["cents"]) / r["runs"]
        r["cost_per_map50_point"] = (stable(per_run / (r["mean_map50"] * 100)) if r["mean_map50"] else None)
        r["cost_per_map50_95_point"] = (stable(per_run / (r["mean_map50_95"] * 100))
                                        if r["mean_map50_95"] else None)
    found.sort(key=lambda r: (r["cost_per_map50_point"] is None, r["cost_per_map50_point"] or 0.0,
                              r["model_type"] or "", r["image_tag"] or ""))
    for rank, r in enumerate(found, start=1):
        r["rank"] = rank
    return found


VERSION_QUERY = "ultralytics_version_share"  # queries/: GPU-hours and speed per Ultralytics version
UNKNOWN_VERSION = "(unknown)"
# The Ultralytics version an image tag names (the named query ultralytics_version_share holds
# the same pattern): at the start of the tag or after one of - _ . / :, the word "ultralytics"
# (then optionally - _ or :, then optionally v) or the letter "u", then two or three
# dot-separated numbers, then the end of the tag or one of - _ / +; any case.
# 'ultralytics-8.3.40', 'ultralytics8.3.40', 'train-yolov8-medium-cu118-u8.3.40' -> 8.3.40;
# 'train-yolov10-medium-cu118' (cu118: its u follows a letter) and a bare 'v8.3.40' (it may be
# the image's own version) name none, nor does the official image's bare '8.3.40' (the
# image's repository is not kept, only its tag). No table records the version a runner ran.
VERSION_PATTERN = r"(?i)(?:^|[-_./:])(?:ultralytics[-_:]?v?|u)(\d+\.\d+(?:\.\d+)?)(?:$|[-_/+])"
_VERSION = re.compile(VERSION_PATTERN)


def ultralytics_version(tag: str | None) -> str | None:
    """The Ultralytics version an image tag names (VERSION_PATTERN), or None."""
    found = _VERSION.search(tag or "")
    return found.group(1) if found else None


def ultralytics_versions(con, month: str, project: str | None, currency: Currency) -> dict:
    """The rows of the named query ultralytics_version_share for the audience: per version the
    jobs, GPU-hours (ledger tenths) and their share, cost (ledger cents), the runs that
    finished an epoch, their epochs and epochs per GPU-hour; '(unknown)' last. Totals are sums
    of the rows."""
    found = query_rows(con, VERSION_QUERY, month, project)
    return {"rows": found, "known": sum(1 for r in found if r["ultralytics_version"] != UNKNOWN_VERSION),
            "jobs": sum(r["jobs"] for r in found), "gpu_hours": sum((r["gpu_hours"] for r in found), Decimal("0.0")),
            "cents": sum((r["cost"] for r in found), currency.zero), "epochs": sum(r["epochs"] for r in found),
            "runs_with_epochs": sum(r["runs_with_epochs"] for r in found)}


def breakers(con, month: str, project: str | None, tz: ZoneInfo, currency: Currency) -> dict:
    """Breaker candidates (stalled stretches) and what a pause would have saved: every
    stretch with its cost (`cents`, the rows adding up to the total), and the saving net of
    the false stops (`net_cents`: the stretches whose job did not improve its loss later by
    more than the breaker's delta; the sum of those rows' printed cents)."""
    where, params = scope(project)
    found = rows(con, f"""
        SELECT job_id, project, bucket, coalesce(user_name, '(no user)') AS user_name, model_type,
               stretch_start, stretch_end, stretch_hours, gpu_hours, cost, util_mean, loss_before, loss_after,
               loss_later, coalesce(improved_later, false) AS improved_later
        FROM mart_breakers WHERE month = ?{where}
        ORDER BY cost DESC, job_id, stretch_start""", [month, *params])
    for r in found:
        r["start"], r["end"] = local_time(r.pop("stretch_start"), tz), local_time(r.pop("stretch_end"), tz)
    minor_shares(found, "cost", "cents", currency)
    # GPU-hours to the tenth the same way, so the stretches add up to the printed total
    for r, tenths in zip(found, money.to_cents([Decimal(repr(r["gpu_hours"] or 0.0)) for r in found], 1)):
        r["gpu_hours"] = tenths
    kept = [r for r in found if not r["improved_later"]]
    return {"rows": found, "gpu_hours": sum((r["gpu_hours"] for r in found), Decimal("0.0")),
            "cents": sum((r["cents"] for r in found), Decimal("0.00")), "jobs": len({r["job_id"] for r in found}),
            "net_cents": sum((r["cents"] for r in kept), Decimal("0.00")),
            "net_gpu_hours": sum((r["gpu_hours"] for r in kept), Decimal("0.0")),
            "net_jobs": len({r["job_id"] for r in kept}),
            "false_stops": len(found) - len(kept)}


def policies(con, month: str, project: str | None, timezone: str, currency: Currency) -> dict:
    """What the stopping policies would have saved (yolocost.whatif): each policy's totals, per
    project (admin report) each policy's figures side by side, and the jobs that would have
    saved the most. A project report reads only its own jobs' rows."""
    found = whatif.collect(con, month, project, timezone=timezone, currency=currency.code, limit=None)
    if found is None:
        return {"policies": [], "projects": [], "jobs": [], "jobs_total": 0, "resolution": ""}
    projects: dict[str, dict] = {}
    for p in found["policies"]:
        for row in p["projects"]:
            entry = projects.setdefault(row["project"], {"project": row["project"], "bucket": row["bucket"],
                                                         "by_policy": {}})
            entry["by_policy"][p["policy"]] = row
    zero = {"jobs_stopped": 0, "false_positives": 0, "gpu_hours": Decimal("0.0"), "cost": currency.zero}
    for entry in projects.values():
        for p in found["policies"]:
            entry["by_policy"].setdefault(p["policy"], zero)
    order = [p["policy"] for p in found["policies"]]
    by_project = sorted(projects.values(), key=lambda e: (tuple(-e["by_policy"][k]["cost"] for k in order), e["project"]))
    jobs = [dict(j, policy_title=p["title"]) for p in found["policies"] for j in p["jobs"]]
    jobs.sort(key=lambda j: (-j["cost"], j["job_id"], j["policy"]))
    return {"policies": found["policies"], "projects": by_project, "jobs": jobs[:TOP], "jobs_total": len(jobs),
            "resolution": found["resolution"], "jobs_replayed": found["jobs_replayed"]}


def tag_violations(con, month: str, project: str | None) -> dict:
    """Spend on image tags that break the tag policy, per status and per job (the ledger's job cents)."""
    found = rows(con, """
        SELECT v.job_id, l.project, l.bucket, coalesce(v.user_name, '(no user)') AS user_name,
               v.image_tag, v.tag_status, v.image_digest, l.gpu_hours, l.cost
        FROM mart_tag_violations AS v
        JOIN ledger_jobs(?, ?) AS l ON l.month = v.month AND l.job_id = v.job_id
        WHERE v.month = ?
        ORDER BY l.cost DESC, v.job_id""", [month, project, month])
    statuses: dict[str, dict] = {}
    for r in found:
        s = statuses.setdefault(r["tag_status"], {"status": r["tag_status"], "jobs": 0, "gpu_hours": Decimal(0),
                                                  "cents": Decimal(0)})
        s["jobs"] += 1
        s["gpu_hours"] += r["gpu_hours"]
        s["cents"] += r["cost"]
    by_status = sorted(statuses.values(), key=lambda s: (-s["cents"], s["status"]))
    return {"by_status": by_status, "jobs": found[:TOP], "total_jobs": len(found),
            "gpu_hours": sum((s["gpu_hours"] for s in by_status), Decimal(0)),
            "cents": sum((s["cents"] for s in by_status), Decimal(0))}


def unallocated(con, month: str, currency: Currency) -> dict:
    """Admin only: capacity nobody held, per GPU model (ledger sums: GPU time and the energy
    idle GPUs drew, the '(unallocated)' row of the project table) and per host (GPU time: each
    model's unallocated GPU cents and tenths of GPU-hours shared over its hosts by their exact
    amounts in mart_host_day, day by day as the named query unallocated_by_host_day does, so the
    hosts add up to the models' GPU columns and to that query)."""
    models = rows(con, """
        SELECT l.gpu_model, any_value(g.gpus) AS gpus, any_value(c.capacity_gpu_hours) AS capacity_gpu_hours,
               sum(l.gpu_hours) AS unallocated_gpu_hours,
               coalesce(sum(l.cost) FILTER (WHERE l.charge_kind = 'gpu'), 0) AS gpu_cost,
               coalesce(sum(l.cost) FILTER (WHERE l.charge_kind = 'energy'), 0) AS energy_cost,
               coalesce(sum(l.cost) FILTER (WHERE l.shared), 0) AS shared_cents,
               sum(l.cost) AS cents
        FROM ledger_lines(?, NULL) AS l
        JOIN mart_gpu_model_month AS g USING (month, gpu_model)
        JOIN (SELECT gpu_model, sum(gpu_hours) AS capacity_gpu_hours FROM ledger_lines(?, NULL)
              GROUP BY gpu_model) AS c USING (gpu_model)
        WHERE l.unallocated
        GROUP BY l.gpu_model ORDER BY cents DESC, l.gpu_model""", [month, month])
    for m in models:
        m["unallocated_gpu_hours"] = m["unallocated_gpu_hours"] or Decimal("0.0")
        m["share"] = float(m["unallocated_gpu_hours"] / m["capacity_gpu_hours"]) if m["capacity_gpu_hours"] else None
    hosts = rows(con, """
        SELECT hostname, gpu_model, max(gpus) AS gpus, sum(capacity_gpu_hours) AS exact_capacity_gpu_hours,
               sum(unallocated_gpu_hours) AS exact_unallocated_gpu_hours,
               sum(unallocated_gpu_hours) / nullif(sum(capacity_gpu_hours), 0) AS share,
               sum(unallocated_cost) AS unallocated_cost
        FROM mart_host_day WHERE month = ?
        GROUP BY hostname, gpu_model ORDER BY hostname, gpu_model""", [month])
    # the named query unallocated_by_host_day shares each day x GPU model's ledger cents and
    # tenths over that day's hosts; the table is its rows summed per host, so the two agree
    shared: dict[tuple, list[Decimal]] = {}
    cur = con.execute(queries.resolve(HOST_DAY_QUERY).sql, {"month": month, "min_hours": 0.0})
    names = [d[0] for d in cur.description]
    for r in (dict(zip(names, found)) for found in cur.fetchall()):
        t = shared.setdefault((r["hostname"], r["gpu_model"]), [Decimal(0), Decimal("0.0"), Decimal("0.0")])
        t[0] += r["unallocated_cost"]
        t[1] += r["unallocated_gpu_hours"]
        t[2] += r["capacity_gpu_hours"]
    for h in hosts:
        cents, unallocated_tenths, capacity_tenths = shared.get((h["hostname"], h["gpu_model"]),
                                                                [currency.zero, Decimal("0.0"), Decimal("0.0")])
        h["cents"] = money.round_cents(cents, currency.places)
        h["unallocated_gpu_hours"] = unallocated_tenths
        h["capacity_gpu_hours"] = capacity_tenths
    hosts.sort(key=lambda h: (-h["cents"], -h["unallocated_gpu_hours"], h["hostname"], h["gpu_model"]))
    return {"gpu_models": models, "hosts": hosts,
            "gpu_hours": sum((m["unallocated_gpu_hours"] for m in models), Decimal(0)),
            "cents": sum((m["cents"] for m in models), Decimal(0)),
            "shared_cents": sum((m["shared_cents"] for m in models), Decimal(0)),
            "gpu_cents": sum((h["cents"] for h in hosts), Decimal(0))}


def rejected_tags(con, month: str) -> set[str]:
    """The image tags of the month's jobs that the tag policy rejects (mart_tag_violations)."""
    return {t for (t,) in con.execute("SELECT DISTINCT image_tag FROM mart_tag_violations WHERE month = ?",
                                      [month]).fetchall()}
