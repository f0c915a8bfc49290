"""The rate card section: the prices in effect during the month and what was billed at each.

A GPU model's (or explicitly priced MIG profile's, or the default '*') price per GPU-hour
changes on local dates (table prices, view stg_prices); the energy price per kWh likewise
(energy_prices, stg_energy_prices). Every row of the cent ledger names the price period it
was billed at (ledger_charges.sku_price_id: '<price key> from <date>', 'energy from
<date>'), so the GPU-hours, kWh and cents shown per period are sums of ledger rows, and the
card's total is the month's total (GPU time and energy) of the report's audience: every
bucket for the admins, `bucket = 'project' AND project = ?` for a project.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import duckdb

from .. import ledger, money
from ..monthstr import Month

DEFAULT_KEY = "*"


def _month_days(month: str) -> tuple[dt.date, dt.date]:
    shown = Month.parse(month)
    return shown.first_day, shown.last_day


def price_text(price: Decimal, places: int) -> str:
    """A unit price with the currency's decimals at least, and every further decimal it has
    (0.2134 stays 0.2134; 2.61 is 2.61): a price is never rounded for display."""
    value = Decimal(price).normalize()
    decimals = max(places, -int(value.as_tuple().exponent))
    return f"{Decimal(price):,.{decimals}f}"


def _periods(con, sql: str, first: dt.date, last: dt.date) -> dict[str, dict]:
    """Price periods (sku_price_id -> period) overlapping the month, clipped to its days."""
    out = {}
    for key, since, until, price in con.execute(sql).fetchall():
        end = None if until is None else until - dt.timedelta(days=1)
        if since > last or (end is not None and end < first):
            continue
        sku = f"{'energy' if key is None else key} from {since.isoformat()}"
        out[sku] = {"price_key": key, "effective_from": since, "until": end, "unit_price": Decimal(price),
                    "from": max(since, first).isoformat(), "to": (last if end is None else min(end, last)).isoformat()}
    return out


def _billed(con, month: str, kind: str, project: str | None) -> list[dict[str, Any]]:
    cur = con.execute(f"""
        SELECT sku_price_id, {'gpu_model' if kind == 'gpu' else "''"} AS gpu_model, allocation,
               any_value(unit_price), sum(quantity), sum(cost), sum(gpu_hours)
        FROM ledger_lines(?, ?) WHERE charge_kind = ?
        GROUP BY ALL ORDER BY ALL""", [month, project, kind])
    names = ("sku_price_id", "gpu_model", "allocation", "unit_price", "quantity", "cost", "gpu_hours")
    return [dict(zip(names, r)) for r in cur.fetchall()]


def rate_card(con: duckdb.DuckDBPyConnection, month: str, project: str | None, currency: str) -> dict:
    """Per price period in effect during `month`: its dates, unit price and the GPU-hours
    (or kWh) and cents billed at it for the audience, a project's own use and its share of
    unallocated capacity ([allocation] unallocated = "proportional") on separate rows. The
    admins see every price period of the month, billed or not; a project only those it was
    billed at."""
    places = money.minor_unit(currency)
    zero_cents = money.round_cents(Decimal(0), places)
    first, last = _month_days(month)
    gpu_periods = _periods(con, """
        SELECT price_key, effective_from,
               lead(effective_from) OVER (PARTITION BY price_key ORDER BY effective_from), price_per_gpu_hour
        FROM stg_prices""", first, last)
    energy_periods = _periods(con, """
        SELECT NULL, effective_from, lead(effective_from) OVER (ORDER BY effective_from), price_per_kwh
        FROM stg_energy_prices""", first, last)

    def row(period: dict | None, billed: dict | None, sku: str) -> dict:
        period = period or {"price_key": sku.rsplit(" from ", 1)[0], "effective_from": None, "until": None,
                            "unit_price": Decimal((billed or {})["unit_price"]), "from": "", "to": ""}
        key = period["price_key"]
        out = dict(period, sku_price_id=sku, allocation=(billed or {}).get("allocation") or ledger.USAGE,
                   gpu_model=(billed or {}).get("gpu_model") or (key if key not in (None, DEFAULT_KEY) else ""),
                   price=price_text(period["unit_price"], places),
                   quantity=Decimal(billed["quantity"]) if billed else Decimal(0),
                   gpu_hours=Decimal(billed["gpu_hours"] or 0) if billed else Decimal("0.0"),
                   cents=money.round_cents(Decimal(billed["cost"]), places) if billed else zero_cents)
        out["priced_as"] = "" if key in (None, out["gpu_model"]) else ("default (*)" if key == DEFAULT_KEY else key)
        return out

    def rows(kind: str, periods: dict[str, dict]) -> list[dict]:
        billed = _billed(con, month, kind, project)
        found = [row(periods.get(b["sku_price_id"]), b, b["sku_price_id"]) for b in billed]
        if project is None:  # the admins' card lists every price of the month, billed or not
            seen = {b["sku_price_id"] for b in billed}
            found += [row(p, None, sku) for sku, p in periods.items() if sku not in seen]
        return sorted(found, key=lambda r: (r["gpu_model"], r["priced_as"], r["effective_from"] or first,
                                            r["allocation"] != ledger.USAGE))

    gpu = rows("gpu", gpu_periods)
    energy = rows("energy", energy_periods)
    gpu_cents = sum((r["cents"] for r in gpu), zero_cents)
    energy_cents = sum((r["cents"] for r in energy), zero_cents)
    return {
        "gpu": gpu, "energy": energy,
        "gpu_hours": sum((r["gpu_hours"] for r in gpu), Decimal("0.0")),
        "gpu_cents": gpu_cents,
        "energy_kwh": sum((r["quantity"] for r in energy), Decimal(0)),
        "energy_cents": energy_cents,
        "energy_priced": bool(energy_periods),
        "shares": any(r["allocation"] != ledger.USAGE for r in gpu + energy),
        "cents": gpu_cents + energy_cents,
    }
