"""How the report sections read the database: the helpers data.py's sections and trend.py share.

Rows come back as dicts with floats to 10 significant digits (stable between runs), an
audience's rows are picked in SQL (the ledger's by ledger_lines and ledger_jobs, sql/macros.sql;
the marts' by `scope`), amounts that are no charge are rounded to the
currency's minor unit with the largest remainder (`minor_shares`), and a project's ledger
sums per month (`project_sums`) feed both its headline and its trend; a section that shows
a named query's rows runs it for the audience (`query_rows`). Kept apart from
data.py so that trend.py and data.py each import it, not each other.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Sequence
from zoneinfo import ZoneInfo

import duckdb

from .. import money, months, queries
from ..errors import YolocostError


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence = ()) -> list[dict[str, Any]]:
    """Rows as dicts. Floating-point sums come out of a parallel aggregation in any order, so
    their last bits vary between runs; rounding them to 10 significant digits keeps the
    reports (and the chart data embedded in them) identical for identical data."""
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [{n: stable(v) for n, v in zip(names, row)} for row in cur.fetchall()]


def stable(value: Any) -> Any:
    """A float to 10 significant digits (see `rows`); anything else as it is."""
    return float(f"{value:.10g}") if isinstance(value, float) else value


def scope(project: str | None, alias: str = "") -> tuple[str, list]:
    """SQL condition (with its parameters) that keeps only the audience's own rows."""
    if project is None:
        return "", []
    a = f"{alias}." if alias else ""
    return f" AND {a}project = ? AND {a}bucket = 'project'", [project]


def dec(value) -> Decimal:
    return Decimal(0) if value is None else Decimal(value)


def minor_shares(items: list[dict], key: str, out: str, currency: money.Currency, total: Decimal | None = None) -> None:
    """Round items[key] to `currency`'s minor unit into items[out] so that they add up: to
    `total` (already in cents) when given, else to the rounded sum. Largest remainder
    (yolocost.money)."""
    if not items:
        return
    amounts = [dec(i[key]) for i in items]
    unit = currency.places
    parts = money.to_cents(amounts, unit) if total is None else money.distribute(amounts, total, unit)
    for item, part in zip(items, parts):
        item[out] = part


def change_text(current, previous, kind: str) -> str | None:
    """'+12.3 %' (relative) or '+1.2 pp' (density, percentage points) against last month."""
    if current is None or previous is None:
        return None
    if kind == "percent":
        return f"{(float(current) - float(previous)) * 100:+.1f} pp"
    if float(previous) == 0:
        return None
    return f"{(float(current) / float(previous) - 1) * 100:+.1f} %"


def local_time(ts: dt.datetime | None, tz: ZoneInfo) -> str:
    return "" if ts is None else ts.astimezone(tz).strftime("%Y-%m-%d %H:%M")


def project_sums(con, months: Sequence[str], project: str) -> dict[str, dict]:
    """A project's ledger sums per month, from its own rows only: own use (`total_cents`), its
    share of unallocated capacity, what it is billed, GPU-hours, idle waste and energy cost.
    Months it held no GPU in are absent."""
    out = {}
    for month in months:
        found = rows(con, """
            SELECT month,
                   coalesce(sum(cost) FILTER (WHERE NOT shared), 0) AS total_cents,
                   coalesce(sum(cost) FILTER (WHERE shared), 0) AS share_cents,
                   sum(cost) AS billed_cents,
                   coalesce(sum(gpu_hours) FILTER (WHERE NOT shared), 0) AS gpu_hours,
                   coalesce(sum(idle_gpu_hours), 0) AS idle_gpu_hours, coalesce(sum(idle_cost), 0) AS idle_cost,
                   coalesce(sum(cost) FILTER (WHERE NOT shared AND charge_kind = 'energy'), 0) AS energy_cost
            FROM ledger_lines(?, ?) GROUP BY month""", [month, project])
        if found:
            out[month] = found[0]
    return out


# the named query's test for "every project"; a project's report drops it (see scoped_query)
_EVERY_PROJECT = "$project = 'all'"


def scoped_query(name: str, project: str | None) -> str:
    """A named query that takes `project` (default 'all'), for one audience: a project's report
    runs it with the query's "every project" test taken out, so that only `project = ? AND
    bucket = 'project'` picks its rows (a project named "all" sees its own rows only)."""
    sql = queries.resolve(name).sql
    if project is not None:
        if sql.count(_EVERY_PROJECT) != 1:
            raise YolocostError(f"queries/{name}.sql: its project test {_EVERY_PROJECT!r} "
                                "is not there once; a project report cannot be scoped")
        sql = sql.replace(_EVERY_PROJECT, "false")
    return sql


def query_rows(con, name: str, month: str, project: str | None) -> list[dict]:
    """The rows of a named query that takes `month` and `project`, for the audience, as dicts
    (floats as `rows` gives them)."""
    if not months.has_column(con, "mart_job_by_month", "month_epochs"):
        return []  # an archived month of a database no build has touched since month_epochs came
    cur = con.execute(scoped_query(name, project), {"month": month, "project": "all" if project is None else project})
    names = [d[0] for d in cur.description]
    return [{n: stable(v) for n, v in zip(names, r)} for r in cur.fetchall()]
