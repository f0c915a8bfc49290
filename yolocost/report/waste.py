"""The section `user_waste`: users ranked by what their idle GPU time cost, as Princeton's
jobstats / Job Defense Shield rank users.

Per user: the GPU-hours their jobs held under the idle threshold ([thresholds] idle, the
ledger's idle_gpu_hours) and their cost (the ledger's idle cents, ledger_job_month.idle_cost),
the share of their GPU-hours that idled, their effective compute density (busy seconds / held
seconds of mart_job_month) and their number of jobs (job-months: a job that crossed into the
month counts once). A user is the job's user label as mart_user_month attributes it
(int_jobs.user_name: '(unknown)' for a job with no user label). The admin report ranks each user
once over every project and bucket they used (the projects named); a project report ranks its
own users from its own jobs only (`WHERE project = ? AND bucket = 'project'`).

Sums of ledger values only: the idle cents of the users add up to the idle waste the report
prints in its headline (the month's, or the project's, idle cost) and in the user table. The
first `top` users are rows, the rest one summed row, so the table still adds up.
"""

from __future__ import annotations

from decimal import Decimal

import duckdb

SQL = """
SELECT coalesce(m.user_name, '(no user)') AS user_name,
       string_agg(DISTINCT l.project, ', ' ORDER BY l.project) AS projects,
       count(*) AS jobs,
       count(*) FILTER (WHERE l.idle_gpu_hours > 0 OR l.idle_cost > 0) AS idle_jobs,
       sum(l.gpu_hours) AS gpu_hours,
       sum(l.idle_gpu_hours) AS idle_gpu_hours,
       sum(l.idle_cost) AS idle_cost,
       sum(l.cost) AS cents,
       sum(m.seconds_busy) AS seconds_busy,
       sum(m.seconds_present) AS seconds_present
FROM ledger_jobs(?, ?) AS l
JOIN mart_job_month AS m ON m.month = l.month AND m.job_id = l.job_id
GROUP BY coalesce(m.user_name, '(no user)')
ORDER BY idle_cost DESC, idle_gpu_hours DESC, user_name"""


def _ratio(part, whole) -> float | None:
    return float(f"{float(Decimal(part) / Decimal(whole)):.10g}") if whole else None


def user_waste(con: duckdb.DuckDBPyConnection, month: str, project: str | None, top: int) -> dict:
    """Users ranked by idle cost: `rows` (the first `top`, with their rank), `other` (the rest
    summed, or None) and the totals every row adds up to."""
    cur = con.execute(SQL, [month, project])
    names = [d[0] for d in cur.description]
    found = []
    for rank, values in enumerate(cur.fetchall(), 1):
        r = dict(zip(names, values))
        busy, present = Decimal(r.pop("seconds_busy") or 0), Decimal(r.pop("seconds_present") or 0)
        r.update(rank=rank, density=_ratio(busy, present), idle_share=_ratio(r["idle_gpu_hours"], r["gpu_hours"]),
                 busy=busy, present=present)
        found.append(r)

    def summed(items: list[dict]) -> dict:
        busy = sum((i["busy"] for i in items), Decimal(0))
        present = sum((i["present"] for i in items), Decimal(0))
        out = {k: sum((i[k] for i in items), Decimal(0)) for k in ("gpu_hours", "idle_gpu_hours", "idle_cost", "cents")}
        out.update(users=len(items), jobs=sum(i["jobs"] for i in items), idle_jobs=sum(i["idle_jobs"] for i in items),
                   density=_ratio(busy, present), idle_share=_ratio(out["idle_gpu_hours"], out["gpu_hours"]))
        return out

    rest = found[top:]
    return {"rows": found[:top], "other": summed(rest) if rest else None, "total": summed(found),
            "users": len(found), "wasting": sum(1 for r in found if r["idle_cost"] > 0)}
