"""How much of a month the database holds, and the trend of the last months.

A month the database holds only in part (a month still running, one ingested in part) is
labelled partial with its coverage wherever a report names it, and no change is computed
against it: 24 hours of September against all of October is no trend. Coverage comes from
mart_month_coverage (distinct grain intervals with data / the intervals of the local
calendar month).

The trend section lists the report's month and up to TREND_MONTHS - 1 months before it that
hold data: cost, GPU-hours, density and idle cost per month. The admin's figures come from
the cent ledger (ledger_charges, summed as the headline sums it) and density from
mart_cluster_month; a project's from its own rows only (`project = ? AND bucket = 'project'`)
of the ledger and mart_project_month.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Iterable

import duckdb

from .. import ledger
from ..db import one_row
from ..monthstr import Month
from .reading import project_sums, rows

TREND_MONTHS = 12


# --------------------------------------------------------------------------- coverage


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def month_name(month: str) -> str:
    """'2026-09' -> 'September 2026' (English month names, whatever the locale)."""
    shown = Month.parse(month)
    return f"{_MONTHS[shown.month - 1]} {shown.year:04d}"


def _tenths_down(value: Fraction) -> str:
    """A non-negative fraction truncated to one decimal: a partial month never reads as whole."""
    tenths = math.floor(value * 10)
    return f"{tenths // 10}.{tenths % 10}"


def _percent(intervals: int, month_intervals: int) -> str:
    """Coverage as a whole percent, one decimal where that would read 0 or 100 for a partial month."""
    percent = Fraction(intervals * 100, month_intervals)
    whole = math.floor(percent + Fraction(1, 2))
    if 0 < intervals < month_intervals and whole in (0, 100):
        tenths = _tenths_down(percent)
        return "< 0.1 %" if tenths == "0.0" else f"{tenths} %"
    return f"{whole} %"


def describe(row: dict, grain_seconds: int) -> dict:
    """A mart_month_coverage row with the words a report prints: `note` ('partial: 1.0 of 30
    days, 3 %'; '' for a whole month), `text` ('September 2026 is partial: 1.0 of 30 days
    (3 %)') and `percent` ('3 %'). Days held are the held intervals' length in days (truncated
    to a tenth; hours under a day), against the month's calendar days."""
    month = row["month"]
    month_days = Month.parse(month).days
    held_days = Fraction(row["intervals"] * grain_seconds, 86400)
    percent = _percent(row["intervals"], row["month_intervals"])
    held = f"{_tenths_down(held_days)}" if held_days >= 1 else f"{_tenths_down(held_days * 24)} h"
    partial = row["partial"]
    return {**row, "name": month_name(month), "month_days": month_days, "held_days": float(held_days),
            "percent": percent,
            "note": f"partial: {held} of {month_days} days, {percent}" if partial else "",
            "text": f"{month_name(month)} is partial: {held} of {month_days} days ({percent})" if partial else ""}


def coverage(con: duckdb.DuckDBPyConnection, months: Iterable[str]) -> dict[str, dict]:
    """The coverage of each of `months` that holds data, by month (see `describe`)."""
    wanted = sorted(set(months))
    if not wanted:
        return {}
    grain = one_row(con.execute("SELECT grain_seconds FROM settings"))[0]
    found = rows(con, f"""
        SELECT month, month_start, month_end, first_interval, data_end, intervals, month_intervals, coverage, partial
        FROM mart_month_coverage WHERE month IN ({', '.join('?' for _ in wanted)}) ORDER BY month""", wanted)
    return {r["month"]: describe(r, grain) for r in found}


def comparison(con: duckdb.DuckDBPyConnection, month: str, previous: str) -> dict:
    """Whether `month` may be compared with `previous`: `note` says why not ('September 2026 is
    partial: ...', both months' reasons joined) and is '' when both months are whole. A
    previous month without data has no figures to compare with and no note."""
    found = coverage(con, [month, previous])
    current, old = found.get(month), found.get(previous)
    reasons = [c["text"] for c in (old, current) if c is not None and c["partial"]]
    return {"current": current, "previous": old, "note": "; ".join(reasons),
            "comparable": current is not None and old is not None and not reasons}


# --------------------------------------------------------------------------- trend


def ledger_sums(con: duckdb.DuckDBPyConnection, months: list[str], project: str | None) -> dict[str, dict]:
    """Each month's money and GPU-hours from the cent ledger, as the headline sums them: the
    cluster's total cents, GPU-hours held by jobs and idle waste (yolocost.ledger.month_totals);
    or one project's own use (`cents`), what it is billed (`billed_cents`: plus any share of
    unallocated capacity), GPU-hours and idle waste, from its own rows only
    (reading.project_sums). Months without rows are absent."""
    if project is not None:
        return {m: {**r, "cents": r["total_cents"]} for m, r in project_sums(con, months, project).items()}
    out = {}
    for m in months:
        t = ledger.month_totals(con, m)
        if t is not None:
            out[m] = {"month": m, "cents": t["total"], "billed_cents": t["total"], "gpu_hours": t["held_gpu_hours"],
                      "idle_gpu_hours": t["idle_gpu_hours"], "idle_cost": t["idle_cost"]}
    return out


def trend_months(con: duckdb.DuckDBPyConnection, month: str) -> list[str]:
    """The report's month and up to TREND_MONTHS - 1 months before it that hold data, oldest first."""
    found = rows(con, "SELECT month FROM mart_month_coverage WHERE month <= ? ORDER BY month DESC LIMIT ?",
                 [month, TREND_MONTHS])
    return sorted(r["month"] for r in found)


def trend(con: duckdb.DuckDBPyConnection, month: str, project: str | None) -> dict:
    """One row per month of the trend: cost (cents), GPU-hours, density, idle cost and coverage."""
    months = trend_months(con, month)
    covered = coverage(con, months)
    if not months:
        return {"rows": [], "partial": [], "months_max": TREND_MONTHS, "shared": False}
    marks = ", ".join("?" for _ in months)
    if project is None:
        density = rows(con, f"SELECT month, density FROM mart_cluster_month WHERE month IN ({marks})", months)
    else:
        density = rows(con, f"""
            SELECT month, density FROM mart_project_month
            WHERE month IN ({marks}) AND project = ? AND bucket = 'project'""", [*months, project])
    densities = {r["month"]: r["density"] for r in density}
    money = ledger_sums(con, months, project)
    out = []
    for m in months:
        r = money.get(m, {})
        cov = covered[m]
        out.append({
            "month": m, "name": cov["name"], "held": m in money,
            "cents": r.get("cents", Decimal(0)), "billed_cents": r.get("billed_cents", Decimal(0)),
            "gpu_hours": r.get("gpu_hours", Decimal(0)), "density": densities.get(m),
            "idle_gpu_hours": r.get("idle_gpu_hours", Decimal(0)), "idle_cost": r.get("idle_cost", Decimal(0)),
            "coverage": cov["coverage"], "percent": cov["percent"], "partial": cov["partial"], "note": cov["note"],
        })
    return {"rows": out, "partial": [covered[m]["text"] for m in months if covered[m]["partial"]],
            "months_max": TREND_MONTHS, "shared": any(r["billed_cents"] != r["cents"] for r in out)}
