"""The one-page HTML summary of a month: headline cards and the per-project table.

Every money and GPU-hour figure on the page is a sum of the cent ledger (ledger_charges,
yolocost.ledger): the month's cents and tenths of GPU-hours rounded once at build time. So
the project rows add up to the printed totals, and the totals are the ones the admin report
and the finance CSV print: the total is sum(cost) of the month, unallocated capacity is
sum(cost) of the '(unallocated)' bucket (GPU time and energy), idle waste is sum(idle_cost).
Counts and ratios (jobs, users, GPUs, density) come from the marts.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from . import db, ledger, months
from .config import Config
from .outputs import write_output
from .templating import environment, template_errors

# one row per project bucket, in the order the reports list them; every figure a ledger sum
_LEDGER_PROJECTS = """
    SELECT bucket, project,
           coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu'), 0) AS gpu_cost,
           coalesce(sum(cost) FILTER (WHERE charge_kind = 'energy'), 0) AS energy_cost,
           coalesce(sum(cost), 0) AS cost,
           coalesce(sum(cost) FILTER (WHERE shared), 0) AS share_cost,
           coalesce(sum(idle_cost), 0) AS idle_cost,
           coalesce(sum(gpu_hours) FILTER (WHERE NOT shared), 0) AS gpu_hours,
           coalesce(sum(idle_gpu_hours), 0) AS idle_gpu_hours
    FROM ledger_lines(?, NULL)
    GROUP BY bucket, project
    ORDER BY bucket = 'project' DESC, bucket = 'unallocated', cost DESC, project"""

def _rows(con, sql: str, params: list) -> list[dict]:
    with db.models_needed("the summary"):
        cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def ledger_month(con: duckdb.DuckDBPyConnection, month: str) -> dict | None:
    """The month's ledger totals (yolocost.ledger.month_totals), or None when the ledger holds no row of it."""
    with db.models_needed("the summary"):
        return ledger.month_totals(con, month)


def summary_context(con: duckdb.DuckDBPyConnection, config: Config, month: str) -> dict:
    """What summary.html shows for `month`: the ledger's sums, and the marts' counts and ratios."""
    cluster = _rows(con, "SELECT * FROM mart_cluster_month WHERE month = ?", [month])
    ledger = ledger_month(con, month) if cluster else None
    projects = _rows(con, _LEDGER_PROJECTS, [month]) if ledger else []
    counts = {(r["bucket"], r["project"]): r for r in _rows(
        con, "SELECT bucket, project, jobs, users, density FROM mart_project_month WHERE month = ?", [month])}
    for p in projects:
        found = counts.get((p["bucket"], p["project"]), {})
        p.update(jobs=found.get("jobs", 0), users=found.get("users", 0), density=found.get("density"))
    return {
        "month": month,
        "cluster": cluster[0] if cluster and ledger else None,
        "ledger": ledger,
        "projects": projects,
        "shares": bool(ledger and ledger["share_cost"]),
        "jobs_total": sum(int(p["jobs"] or 0) for p in projects),
        "currency": config.currency,
        "cluster_name": config.cluster,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def write_summary(config: Config, month: str, out_path: Path, templates_dir: Path | None = None) -> Path:
    """Render `summary.html` for `month` into `out_path` (`yolocost report` writes it into the
    month folder with the reports)."""
    con = db.connect(config.database, read_only=True)
    try:
        config = months.as_built(con, config, month).config  # a stale month is refused
        context = summary_context(con, config, month)
    finally:
        con.close()
    templates = templates_dir or config.templates_dir
    with template_errors(templates):
        html = environment(templates, config.currency).get_template("summary.html").render(**context)
    return write_output(out_path, html, make_parents=True)
