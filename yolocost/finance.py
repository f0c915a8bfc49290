"""The finance CSV: one month of GPU cost in FOCUS v1.2 column names, and the cents reports print.

One row per local day x project (cost center) x GPU model, plus rows for GPUs held by jobs
without a project label (SubAccountId `(unlabeled)`) and for capacity nobody held
(`(unallocated)`), so the file adds up to the cluster's total cost for the month. Read from
mart_finance_daily (the rows of mart_daily with the image tags, cluster, time zone and
currency). No user or job names are written.

Cents (the currency's minor unit: whole yen for JPY, thousandths for KWD; yolocost.money).
The marts keep money exact; the CSV's BilledCost is rounded with money.allocate:
each project's month total is rounded first (largest remainder over the projects, so the
projects add up to the cluster total rounded half up), then spread over the project's day x
GPU model rows (largest remainder within the project). Reports that print per-project totals
MUST take them from `project_totals_cents(con, month)` and the grand total from
`total_cents(con, month)` (or both from `month_cents`): then every project's rows in the CSV
add up to the figure its report prints, and all rows to the cluster total. Rounding a
project's exact cost on its own can differ by a cent.

FOCUS decisions (v1.2; dates as UTC instants 'YYYY-MM-DDTHH:MM:SSZ' as the spec requires):

* ChargeCategory "Usage"; ChargeClass empty (null: no row corrects an invoiced period);
  ChargeFrequency "Usage-Based"; PricingCategory "Standard".
* BillingPeriodStart/End: local midnight of the month's first day / of the next month's first
  day in the configured time zone, as UTC. ChargePeriodStart/End: the local day's midnight to
  the next local midnight, as UTC (23 or 25 hours on DST change days). x_ChargeDate is the
  local date and x_TimeZone the zone.
* One price, so ListCost = ContractedCost = EffectiveCost = BilledCost (rounded cents), in
  BillingCurrency = the configured currency. Energy (kWh x energy price, where configured) is
  folded into the row's cost, as it is in the reports' totals: x_GpuCost and x_EnergyCost
  give the exact split, x_UnroundedCost the exact sum BilledCost was rounded from.
* PricingQuantity = ConsumedQuantity = GPU-hours (MIG instances as their share of a GPU),
  6 decimals; PricingUnit = ConsumedUnit "GPU-Hours".
* ServiceCategory "AI and Machine Learning", ServiceSubcategory "Machine Learning",
  ServiceName "GPU training cluster".
* ProviderName, PublisherName, InvoiceIssuerName, BillingAccountId, BillingAccountName: the
  cluster name (an internal chargeback: the cluster's operators provide, publish and charge).
* SubAccountId = SubAccountName = the project, `(unlabeled)` or `(unallocated)`;
  SubAccountType "Project". SkuId = the GPU model.
* ChargeDescription: what, which GPU model, who, which day, e.g. "GPU-hours on NVIDIA A10G
  for project vision on 2026-10-03 (energy included)".
* x_ columns: x_Bucket (project | unlabeled | unallocated), x_ChargeDate, x_TimeZone, x_Jobs
  (number of jobs), x_ImageTag (every image tag held that row, sorted, '; '-separated; spend
  per tag is in mart_image_tag_month), x_EffectiveComputeDensity (busy / present seconds,
  6 decimals), x_IdleGpuHours and x_IdleCost (held time under the idle threshold; empty on
  unallocated rows), x_GpuCost, x_EnergyCost, x_EnergyKwh, x_UnroundedCost (exact, 9 decimals).

The file: UTF-8 without BOM, a header row, RFC 4180 (csv module, CRLF line ends, quotes where
needed); text cells that a spreadsheet would run as a formula (= + - @, tab, CR first) get a
leading apostrophe; numbers are written as plain decimals. Rows are ordered by bucket
(projects, unlabeled, unallocated), project, day, GPU model, and nothing in the file depends
on when it was written, so the same database gives the same bytes.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from . import db
from .config import Config
from .errors import YolocostError
from .money import allocate, minor_unit
from .outputs import write_output
from .queries import csv_safe

FOCUS_MANDATORY_COLUMNS = (
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName",
)
FOCUS_OTHER_COLUMNS = (
    "ChargeFrequency", "ConsumedQuantity", "ConsumedUnit", "PricingCategory", "ServiceSubcategory",
    "SkuId", "SubAccountId", "SubAccountName", "SubAccountType",
)
X_COLUMNS = (
    "x_Bucket", "x_ChargeDate", "x_TimeZone", "x_Jobs", "x_ImageTag", "x_EffectiveComputeDensity",
    "x_IdleGpuHours", "x_IdleCost", "x_GpuCost", "x_EnergyCost", "x_EnergyKwh", "x_UnroundedCost",
)
COLUMNS = FOCUS_MANDATORY_COLUMNS + FOCUS_OTHER_COLUMNS + X_COLUMNS

UNIT = "GPU-Hours"
SERVICE_NAME = "GPU training cluster"
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Machine Learning"
BUCKET_ORDER = {"project": 0, "unlabeled": 1, "unallocated": 2}

_NANO = Decimal("0.000000001")
_MICRO = Decimal("0.000001")
_UTC = dt.timezone.utc
_MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


@dataclass(frozen=True)
class DailyRow:
    """One row of mart_finance_daily: local day x project bucket x GPU model, money exact."""

    day: dt.date
    project: str
    bucket: str
    gpu_model: str
    jobs: int
    gpu_seconds: Decimal
    density: float | None
    idle_gpu_hours: float | None
    idle_cost: Decimal | None
    gpu_cost: Decimal
    energy_cost: Decimal
    cost: Decimal
    energy_kwh: float | None
    image_tags: str | None


@dataclass(frozen=True)
class MonthCents:
    """A month's daily rows with their cents (`cents[i]` belongs to `rows[i]`), each project's
    cents (`projects`, keyed like mart_project_month.project, in CSV order) and the total.

    sum(cents) == sum(projects.values()) == total == the month's exact total cost rounded
    half up to the cent; the cents of a project's rows add up to projects[project]."""

    month: str
    cluster: str
    timezone: str
    currency: str
    rows: tuple[DailyRow, ...]
    cents: tuple[Decimal, ...]
    projects: dict[str, Decimal]
    total: Decimal
    exact_total: Decimal


@dataclass(frozen=True)
class FinanceExport:
    """What export_finance wrote: the file, its number of data rows and the BilledCost total."""

    path: Path
    month: str
    rows: int
    total: Decimal
    currency: str
    warning: str | None = None  # the database holds only part of the month


# --------------------------------------------------------------------------- reading and rounding


def check_month(month: str) -> str:
    """`month` if it reads YYYY-MM, else a one-line YolocostError."""
    if not isinstance(month, str) or not _MONTH.fullmatch(month):
        raise YolocostError(f"month {month!r} is not YYYY-MM (e.g. 2026-10)")
    return month


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[tuple]:
    try:
        return con.execute(sql, params).fetchall()
    except duckdb.CatalogException as exc:
        first = str(exc).splitlines()[0]
        raise YolocostError(f"the database lacks a model the finance export reads ({first}); "
                            "rebuild the models with `yolocost build`") from None


def month_cents(con: duckdb.DuckDBPyConnection, month: str) -> MonthCents:
    """Read one month from mart_finance_daily and round it to cents (see the module doc).

    `con` is an open connection to the database (read-only is enough). A month without
    usage rows is a YolocostError naming the months the database holds.
    """
    check_month(month)
    records = _fetch(con, """
        SELECT day, project, bucket, gpu_model, jobs, gpu_seconds, density, idle_gpu_hours,
               idle_cost, gpu_cost, energy_cost, cost, energy_kwh, image_tags,
               cluster, timezone, currency
        FROM mart_finance_daily WHERE month = ?""", [month])
    if not records:
        months = [r[0] for r in _fetch(con, "SELECT DISTINCT month FROM mart_finance_daily ORDER BY month", [])]
        held = ", ".join(months) if months else "none"
        raise YolocostError(f"no usage data for {month} in the database (months held: {held})")
    cluster, timezone, currency = records[0][14:17]
    rows = [DailyRow(*r[:14]) for r in records]
    # the order fixes the tie-breaking of the rounding, so it is total and independent of DuckDB
    rows.sort(key=lambda r: (BUCKET_ORDER.get(r.bucket, 9), r.bucket, r.project, r.day, r.gpu_model))
    allocation = allocate([r.cost for r in rows], [r.project for r in rows], minor_unit(currency))
    exact_total = sum((r.cost for r in rows), Decimal(0))
    return MonthCents(month, cluster, timezone, currency, tuple(rows), tuple(allocation.parts),
                      dict(allocation.groups), allocation.total, exact_total)


def project_totals_cents(con: duckdb.DuckDBPyConnection, month: str) -> dict[str, Decimal]:
    """Each project's total cost (GPU + energy) for `month` in cents, as the finance CSV has it.

    Keys are mart_project_month.project: project names plus '(unlabeled)' and '(unallocated)'
    where the month has such time. The values add up to total_cents(con, month), and each
    equals the sum of BilledCost over that project's rows in the finance CSV. Reports print
    these instead of rounding mart_project_month.cost themselves.
    """
    return dict(month_cents(con, month).projects)


def total_cents(con: duckdb.DuckDBPyConnection, month: str) -> Decimal:
    """The month's total cost (capacity GPU cost + energy; mart_cluster_month.total_cost)
    rounded half up to the cent: the sum of the finance CSV's BilledCost."""
    return month_cents(con, month).total


# --------------------------------------------------------------------------- FOCUS rows


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _local_midnight(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    # a midnight skipped by a DST change maps (fold=0) to the day's first real instant
    return dt.datetime(day.year, day.month, day.day, tzinfo=tz)


def _next_day(day: dt.date) -> dt.date:
    return day + dt.timedelta(days=1)


def _fixed(value: Decimal | None, quantum: Decimal) -> str:
    """A decimal as plain digits with a fixed number of decimals ('' for None)."""
    if value is None:
        return ""
    out = Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP)
    return f"{abs(out) if out == 0 else out:f}"


def _float(value: float | None, decimals: int = 6) -> str:
    if value is None or not math.isfinite(value):
        return ""
    out = f"{value:.{decimals}f}"
    return out[1:] if out.startswith("-") and float(out) == 0 else out


def _description(row: DailyRow) -> str:
    on = f"on {row.gpu_model}"
    if row.bucket == "unallocated":
        what = f"Unallocated capacity: GPU-hours {on} held by no job"
    elif row.bucket == "unlabeled":
        what = f"GPU-hours {on} for jobs without a project label"
    else:
        what = f"GPU-hours {on} for project {row.project}"
    energy = " (energy included)" if row.energy_cost else ""
    return f"{what} on {row.day.isoformat()}{energy}"


def focus_rows(data: MonthCents) -> list[dict[str, str]]:
    """The CSV's rows as {column: text} in file order (numbers as plain decimals, text raw)."""
    tz = ZoneInfo(data.timezone)
    year, mon = (int(x) for x in data.month.split("-"))
    period_start = _utc(dt.datetime(year, mon, 1, tzinfo=tz))
    period_end = _utc(dt.datetime(year + mon // 12, mon % 12 + 1, 1, tzinfo=tz))
    cent = Decimal(1).scaleb(-minor_unit(data.currency))
    out = []
    for row, cents in zip(data.rows, data.cents):
        billed = _fixed(cents, cent)
        hours = _fixed(Decimal(row.gpu_seconds) / Decimal(3600), _MICRO)
        held = row.bucket != "unallocated"
        out.append({
            "BilledCost": billed,
            "BillingAccountId": data.cluster,
            "BillingAccountName": data.cluster,
            "BillingCurrency": data.currency,
            "BillingPeriodEnd": period_end,
            "BillingPeriodStart": period_start,
            "ChargeCategory": "Usage",
            "ChargeClass": "",
            "ChargeDescription": _description(row),
            "ChargePeriodEnd": _utc(_local_midnight(_next_day(row.day), tz)),
            "ChargePeriodStart": _utc(_local_midnight(row.day, tz)),
            "ContractedCost": billed,
            "EffectiveCost": billed,
            "InvoiceIssuerName": data.cluster,
            "ListCost": billed,
            "PricingQuantity": hours,
            "PricingUnit": UNIT,
            "ProviderName": data.cluster,
            "PublisherName": data.cluster,
            "ServiceCategory": SERVICE_CATEGORY,
            "ServiceName": SERVICE_NAME,
            "ChargeFrequency": "Usage-Based",
            "ConsumedQuantity": hours,
            "ConsumedUnit": UNIT,
            "PricingCategory": "Standard",
            "ServiceSubcategory": SERVICE_SUBCATEGORY,
            "SkuId": row.gpu_model,
            "SubAccountId": row.project,
            "SubAccountName": row.project,
            "SubAccountType": "Project",
            "x_Bucket": row.bucket,
            "x_ChargeDate": row.day.isoformat(),
            "x_TimeZone": data.timezone,
            "x_Jobs": str(int(row.jobs)),
            "x_ImageTag": row.image_tags or "",
            "x_EffectiveComputeDensity": _float(row.density),
            "x_IdleGpuHours": _float(row.idle_gpu_hours) if held else "",
            "x_IdleCost": _fixed(row.idle_cost if row.idle_cost is not None else 0, _NANO) if held else "",
            "x_GpuCost": _fixed(row.gpu_cost, _NANO),
            "x_EnergyCost": _fixed(row.energy_cost, _NANO),
            "x_EnergyKwh": _float(row.energy_kwh),
            "x_UnroundedCost": _fixed(row.cost, _NANO),
        })
    return out


# columns holding numbers: written as they are (a negative number must stay a number)
_NUMERIC = frozenset({
    "BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity", "ConsumedQuantity",
    "x_Jobs", "x_EffectiveComputeDensity", "x_IdleGpuHours", "x_IdleCost", "x_GpuCost", "x_EnergyCost",
    "x_EnergyKwh", "x_UnroundedCost",
})


def to_csv(rows: list[dict[str, str]]) -> str:
    """The CSV text: header, then rows; text cells neutralized against formula injection."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([row[c] if c in _NUMERIC else csv_safe(row[c]) for c in COLUMNS])
    return buf.getvalue()


# --------------------------------------------------------------------------- the export


def default_path(config: Config, month: str) -> Path:
    """Where `yolocost export finance` writes by default: <report_dir>/<month>/finance-<month>.csv."""
    return Path(config.report_dir) / month / f"finance-{month}.csv"


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` in one step, so a reader never sees half a file; a symlink is written
    through and /dev/stdout written in place (yolocost.outputs)."""
    write_output(path, text, make_parents=True)


def write_finance_csv(con: duckdb.DuckDBPyConnection, month: str, path: Path) -> FinanceExport:
    """Write the finance CSV of `month` from an open connection (see export_finance)."""
    data = month_cents(con, month)
    rows = focus_rows(data)
    _write_atomically(Path(path), to_csv(rows))
    return FinanceExport(Path(path), month, len(rows), data.total, data.currency, partial_month_warning(data))


def partial_month_warning(data: MonthCents) -> str | None:
    """A line saying which days of the month the database holds, when that is not every day
    (a month still running, an ingest of part of it): the CSV's total is then that part's."""
    import calendar

    first = dt.date(int(data.month[:4]), int(data.month[5:]), 1)
    month_days = calendar.monthrange(first.year, first.month)[1]
    days = sorted({r.day for r in data.rows})
    if len(days) >= month_days:
        return None
    return (f"the database holds {days[0]}..{days[-1]} of {first:%B %Y} ({len(days)} of {month_days} days): "
            "the CSV covers only that")


def export_finance(config: Config, month: str, out: Path | None = None) -> FinanceExport:
    """Write the finance CSV of `month` (YYYY-MM) from config.database to `out`
    (default: default_path(config, month)); returns the path, row count and BilledCost total."""
    check_month(month)
    path = Path(out) if out is not None else default_path(config, month)
    con = db.connect(config.database, read_only=True)
    try:
        return write_finance_csv(con, month, path)
    finally:
        con.close()
