"""A first one-page HTML summary of a month: headline totals and the per-project table."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from . import db, finance
from .config import Config
from .outputs import write_output
from .templating import environment, template_errors


def _rows(con, sql: str, params: list) -> list[dict]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def write_summary(config: Config, month: str, out_path: Path) -> Path:
    """Render `summary.html` for `month` from the marts into `out_path`."""
    con = db.connect(config.database, read_only=True)
    try:
        cluster = _rows(con, "SELECT * FROM mart_cluster_month WHERE month = ?", [month])
        projects = _rows(
            con,
            "SELECT * FROM mart_project_month WHERE month = ? "
            "ORDER BY bucket = 'project' DESC, bucket = 'unallocated', cost DESC, project",
            [month],
        )
        # money as the finance CSV bills it: each project rounded so that they add up to the total
        billed = finance.month_cents(con, month) if cluster else None
        for p in projects:
            p["billed_cost"] = billed.projects.get(p["project"]) if billed else None
        billed_total = billed.total if billed else None
    finally:
        con.close()
    with template_errors(config.templates_dir):
        html = environment(config.templates_dir, config.currency).get_template("summary.html").render(
            month=month,
            cluster=cluster[0] if cluster else None,
            projects=projects,
            billed_total=billed_total,
            currency=config.currency,
            cluster_name=config.cluster,
            generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        )
    return write_output(out_path, html, make_parents=True)
