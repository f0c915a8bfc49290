"""The finance CSV: one month of GPU cost in FOCUS column names (1.2, or 1.3 with split cost
allocation), and the cents reports print.

One row per local day x project (cost center) x GPU model x charge (GPU time; energy where an
energy price is configured) x price period, plus rows for GPUs held by jobs without a project
label (`(unlabeled)`) and for capacity nobody held (`(unallocated)`), so the file adds up to
the cluster's total cost for the month. The rows are those of the cent ledger
(yolocost.ledger, table ledger_charges): cents rounded once when the models were built, which
every report, the summary and the named queries sum too, so a figure has the same cents in
all of them. No user or job names are written. docs/finance-csv.md is the column reference.

Cents are the currency's minor unit (whole yen for JPY, thousandths for KWD; yolocost.money).

FOCUS decisions (dates as UTC instants 'YYYY-MM-DDTHH:MM:SSZ' as the spec requires):

* ChargeCategory "Usage"; ChargeClass empty (null: no row corrects an invoiced period);
  ChargeFrequency "Usage-Based"; PricingCategory "Standard"; InvoiceId '<cluster>-<YYYY-MM>',
  one invoice per billing period.
* BillingPeriodStart/End: local midnight of the month's first day / of the next month's first
  day in the configured time zone, as UTC. ChargePeriodStart/End: the local day's midnight to
  the next local midnight, as UTC (23 or 25 hours on DST change days). x_ChargeDate is the
  local date and x_TimeZone the zone.
* GPU time and energy are separate rows (x_ChargeKind gpu | energy; SkuMeter "GPU Time" |
  "Energy"), and a price change splits a day's rows. One price per row: ListUnitPrice =
  ContractedUnitPrice = the configured price per GPU-hour (PricingUnit "GPU-Hours") or per kWh
  (PricingUnit "kWh") as configured; SkuPriceId names the SKU price without amount or dates,
  as FOCUS requires (the GPU model or priced MIG profile, '<model> at the default price',
  'Energy'), x_PricePeriod the price period ('<price key> from <date the price took effect>',
  'energy from <date>'; the reports' price table shows the same id); SkuPriceDetails {"GpuCount": 1} for a GPU-hour ({"x_MigProfile": ...} for an explicitly
  priced MIG profile; null for energy). BilledCost = ListCost = ContractedCost = EffectiveCost
  = the row's cents.
* PricingQuantity = ConsumedQuantity: GPU-hours (MIG instances as their share of a GPU) or
  kWh, 9 decimals, as the ledger holds them; a MIG profile priced on its own is billed per
  instance-hour (PricingUnit "Instance-Hours"). ListCost is ListUnitPrice x PricingQuantity
  rounded down or up to a whole minor unit (the month's largest-remainder rounding decides
  which, so that the rows add up to the month's total): |ListUnitPrice x PricingQuantity -
  ListCost| < 1 minor unit + 10^-9 per grain interval in the row (each interval's cost is held
  to 10^-9 before the day's sum; x_UnroundedCost is that sum).
* ServiceCategory "AI and Machine Learning", ServiceSubcategory "Machine Learning",
  ServiceName "GPU training cluster".
* ProviderName, PublisherName (1.3: also ServiceProviderName, HostProviderName),
  InvoiceIssuerName, BillingAccountId, BillingAccountName: the cluster name (an internal
  chargeback: the cluster's operators provide, publish and charge).
* 1.2: SubAccountId = SubAccountName = the project, `(unlabeled)` or `(unallocated)`;
  SubAccountType "Project". SkuId = the GPU model (or MIG profile priced on its own) for GPU
  time, "Energy" for energy. Tags: the row's labels as a JSON object: the job's `project`
  label (rows of a project only) and yolocost's own keys, prefixed `yolocost/` as FOCUS asks
  of provider-defined tags (bucket, allocation, gpu_model, charge_kind).
* 1.3: each row is an allocated charge of an origin charge, one GPU model's capacity of one
  local day at one price (GPU time or energy; x_OriginChargeId names it). FOCUS columns take
  the origin's values (ChargeDescription, Tags {yolocost/gpu_model, yolocost/charge_kind}, SubAccount* null: the
  capacity is the cluster's), the allocation columns name the payer: AllocatedResourceId =
  AllocatedResourceName = the project or `(unlabeled)`, null for capacity nobody held;
  AllocatedTags {project (a project's rows only), yolocost/bucket, yolocost/allocation}; AllocatedMethodId HeldGpuTime | MeteredEnergy
  (…UnallocatedShared where capacity nobody held was shared); AllocatedMethodDetails
  {"Elements": [{AllocatedRatio, UsageUnit, UsageQuantity}], "x_OriginChargeId"}, the ratio
  the row's quantity over the origin's, 12 decimals, adding up to exactly 1 per origin.
* With `[allocation] unallocated = "proportional"`, capacity nobody held is charged to the
  projects that held that GPU model that day, in proportion to their GPU-hours, in rows of
  their own: x_Allocation "share of unallocated capacity" (own use: "usage").
* ChargeDescription (1.2): what, which GPU model, who, which day, e.g. "GPU-hours on NVIDIA
  A10G for project vision on 2026-10-03".
* x_ columns: x_Bucket (project | unlabeled | unallocated), x_ChargeKind, x_Allocation,
  x_GpuModel, x_ChargeDate, x_TimeZone, x_Jobs (jobs that held the GPU model that day),
  x_ImageTag (every image tag held that day on that GPU model, sorted, '; '-separated),
  x_EffectiveComputeDensity (busy / present seconds, 6 decimals), x_IdleGpuHours (held time
  under the idle threshold, 6 decimals) and x_IdleCost (its cents, the part of BilledCost the
  reports call idle waste; GPU rows of held time only), x_UnroundedCost (exact, 9 decimals),
  x_PricePeriod.

The file: UTF-8 without BOM, a header row, RFC 4180 (csv module, CRLF line ends, quotes where
needed); text cells that a spreadsheet would run as a formula (= + - @, tab, CR first) get a
leading apostrophe; numbers are written as plain decimals. Rows are ordered by bucket
(projects, unlabeled, unallocated), project, day, GPU model, charge kind, allocation and
price, and nothing in the file depends on when it was written, so the same database gives
the same bytes.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb

from . import db, ledger, money, months
from .config import FOCUS_VERSIONS, Config
from .errors import YolocostError
from .money import minor_unit
from .monthstr import Month, check_month
from .outputs import write_in_own_folder, write_output
from .csvsafe import csv_safe

DEFAULT_FOCUS_VERSION = "1.2"  # the version focus-validator can check offline (docs/focus-validator.md)

FOCUS_MANDATORY_COLUMNS = (
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName",
)
FOCUS_OTHER_COLUMNS = (
    "ChargeFrequency", "ConsumedQuantity", "ConsumedUnit", "ContractedUnitPrice", "InvoiceId", "ListUnitPrice",
    "PricingCategory", "ServiceSubcategory", "SkuId", "SkuMeter", "SkuPriceDetails", "SkuPriceId", "SubAccountId",
    "SubAccountName", "SubAccountType", "Tags",
)
# new in 1.3: the providers' split (ProviderName and PublisherName stay, deprecated) and split cost allocation
FOCUS_13_COLUMNS = (
    "HostProviderName", "ServiceProviderName", "AllocatedMethodId", "AllocatedMethodDetails",
    "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags",
)
X_COLUMNS = (
    "x_Bucket", "x_ChargeKind", "x_Allocation", "x_GpuModel", "x_ChargeDate", "x_TimeZone", "x_Jobs",
    "x_ImageTag", "x_EffectiveComputeDensity", "x_IdleGpuHours", "x_IdleCost", "x_UnroundedCost", "x_PricePeriod",
)
COLUMNS = FOCUS_MANDATORY_COLUMNS + FOCUS_OTHER_COLUMNS + X_COLUMNS
COLUMNS_13 = FOCUS_MANDATORY_COLUMNS + FOCUS_OTHER_COLUMNS + FOCUS_13_COLUMNS + X_COLUMNS + ("x_OriginChargeId",)
COLUMNS_BY_VERSION = {"1.2": COLUMNS, "1.3": COLUMNS_13}

SERVICE_NAME = "GPU training cluster"
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Machine Learning"
BUCKET_ORDER = ledger.BUCKET_ORDER
ALLOCATION_LABELS = {ledger.USAGE: "usage", ledger.SHARE: "share of unallocated capacity"}

_NANO = Decimal("0.000000001")
_MICRO = Decimal("0.000001")
_UTC = dt.timezone.utc


@dataclass(frozen=True)
class MonthCents:
    """A month's ledger rows (`rows`, in CSV order) with the image tags held on each day x
    project x GPU model (`image_tags`), each project's cents (`projects`: own usage and any
    share of unallocated capacity, keyed like mart_project_month.project, in CSV order) and
    the total. sum(row cents) == sum(projects.values()) == total."""

    month: str
    cluster: str
    timezone: str
    currency: str
    rows: tuple[ledger.StoredCharge, ...]
    image_tags: dict[tuple, str]
    projects: dict[str, Decimal]
    total: Decimal
    exact_total: Decimal

    @property
    def cents(self) -> tuple[Decimal, ...]:
        return tuple(ledger.rounded(r.cost) for r in self.rows)


@dataclass(frozen=True)
class FinanceExport:
    """What export_finance wrote: the file, its number of data rows and the BilledCost total."""

    path: Path
    month: str
    rows: int
    total: Decimal
    currency: str
    warning: str | None = None  # the database holds only part of the month


# --------------------------------------------------------------------------- reading the ledger


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[tuple]:
    with db.models_needed("the finance export"):
        return con.execute(sql, params).fetchall()


def _sort_key(row: ledger.Charge) -> tuple:
    return (BUCKET_ORDER.get(row.bucket, 9), row.bucket, row.project, row.day, row.gpu_model,
            ledger.KIND_ORDER.get(row.charge_kind, 9), row.allocation != ledger.USAGE, row.sku_price_id)


def month_cents(con: duckdb.DuckDBPyConnection, month: str) -> MonthCents:
    """One month of the cent ledger, in CSV order (see the module doc).

    `con` is an open connection to the database (read-only is enough). A month without
    usage rows is a YolocostError naming the months the database holds.
    """
    check_month(month)
    settings = _fetch(con, "SELECT cluster, timezone, currency FROM settings", [])
    rows = sorted(_stored(con, month), key=_sort_key)
    if not rows or not settings:
        months = [r[0] for r in _fetch(con, "SELECT DISTINCT month FROM ledger_charges ORDER BY month", [])]
        held = ", ".join(months) if months else "none"
        raise YolocostError(f"no usage data for {month} in the database (months held: {held})")
    cluster, timezone, currency = settings[0]
    tags = {tuple(r[:4]): r[4] for r in _fetch(con, """
        SELECT day, bucket, project, gpu_model, image_tags FROM mart_finance_daily
        WHERE month = ? AND image_tags IS NOT NULL""", [month])}
    places = minor_unit(currency)
    zero = Decimal(0).scaleb(-places)
    projects: dict[str, Decimal] = {}
    for r in rows:
        projects[r.project] = projects.get(r.project, zero) + ledger.rounded(r.cost)
    total = sum((ledger.rounded(r.cost) for r in rows), zero)
    exact_total = sum((r.exact_cost for r in rows), Decimal(0))
    quantum = Decimal(1).scaleb(-places)
    return MonthCents(month, cluster, timezone, currency, tuple(rows), tags,
                      {k: v.quantize(quantum) for k, v in projects.items()}, total.quantize(quantum), exact_total)


def _stored(con: duckdb.DuckDBPyConnection, month: str) -> list[ledger.StoredCharge]:
    with db.models_needed("the finance export"):
        return ledger.stored(con, month)


def project_totals_cents(con: duckdb.DuckDBPyConnection, month: str) -> dict[str, Decimal]:
    """Each project's billed total for `month` in cents (GPU time and energy, own usage plus
    any share of unallocated capacity), as the finance CSV's rows of that SubAccountId add up.

    Keys are mart_project_month.project: project names plus '(unlabeled)' and '(unallocated)'
    where the month has such time (the latter absent when all of it was shared). The values
    add up to total_cents(con, month).
    """
    return dict(month_cents(con, month).projects)


def total_cents(con: duckdb.DuckDBPyConnection, month: str) -> Decimal:
    """The month's total cost (capacity GPU cost + energy; mart_cluster_month.total_cost)
    in cents as the ledger has it: the sum of the finance CSV's BilledCost."""
    return month_cents(con, month).total


# --------------------------------------------------------------------------- FOCUS rows


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _local_midnight(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    # a midnight skipped by a DST change maps (fold=0) to the day's first real instant
    return dt.datetime(day.year, day.month, day.day, tzinfo=tz)


def _next_day(day: dt.date) -> dt.date:
    return day + dt.timedelta(days=1)


def _fixed(value: Decimal | int | None, quantum: Decimal) -> str:
    """A decimal as plain digits with a fixed number of decimals ('' for None)."""
    if value is None:
        return ""
    out = Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP)
    return f"{abs(out) if out == 0 else out:f}"


def _price(value: Decimal) -> str:
    """A unit price as configured: its own decimals (up to 9, as the ledger holds it), at least two."""
    out = Decimal(value).quantize(_NANO).normalize()
    return f"{out.quantize(Decimal('0.01')) if int(out.as_tuple().exponent) > -2 else out:f}"


def _float(value: float | None, decimals: int = 6) -> str:
    if value is None or not math.isfinite(value):
        return ""
    out = f"{value:.{decimals}f}"
    return out[1:] if out.startswith("-") and float(out) == 0 else out


def _description(row: ledger.Charge) -> str:
    what = "Energy drawn by" if row.charge_kind == "energy" else "GPU-hours on"
    on = f"{what} {row.gpu_model}"
    day = row.day.isoformat()
    if row.allocation == ledger.SHARE:
        return (f"Share of unallocated capacity: {on} held by no job, charged to project {row.project} "
                f"by its GPU-hours on that GPU model on {day}")
    if row.bucket == "unallocated":
        return f"Unallocated capacity: {on} held by no job on {day}"
    if row.bucket == "unlabeled":
        return f"{on} for jobs without a project label on {day}"
    return f"{on} for project {row.project} on {day}"


def _origin_description(row: ledger.Charge) -> str:
    """What the origin charge of a 1.3 allocated charge is: the GPU model's capacity of a day."""
    day = row.day.isoformat()
    if row.charge_kind == "energy":
        return f"Energy drawn by {row.gpu_model} GPUs on {day}, allocated by metered energy"
    return f"GPU-hours of {row.gpu_model} capacity on {day}, allocated by held GPU time"


def _json(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


TAG_PREFIX = "yolocost/"  # FOCUS: tags yolocost defines carry its own key prefix; the job's `project` label does not


def _payer_tags(row: ledger.Charge) -> dict:
    """The payer's tags: the job's own `project` label where it has one (never a made-up value
    for jobs without it or capacity nobody held), and yolocost's bucket and allocation."""
    tags = {f"{TAG_PREFIX}bucket": row.bucket, f"{TAG_PREFIX}allocation": ALLOCATION_LABELS[row.allocation]}
    if row.bucket == "project":
        tags["project"] = row.project
    return tags


def _origin_tags(row: ledger.Charge) -> dict:
    return {f"{TAG_PREFIX}gpu_model": row.gpu_model, f"{TAG_PREFIX}charge_kind": row.charge_kind}


def _tags(row: ledger.Charge) -> str:
    return _json({**_payer_tags(row), **_origin_tags(row)})


DEFAULT_PRICE_KEY = "*"


def price_key(row: ledger.Charge) -> str:
    """The price the row was billed at: the GPU model, 'model profile' for an explicitly priced
    MIG profile, '*' for the default price, 'energy' (sku_price_id '<key> from <date>')."""
    return row.sku_price_id.rsplit(" from ", 1)[0]


def _mig_priced(row: ledger.Charge) -> bool:
    """Whether the row is time of a MIG profile priced on its own (price key '<model> <profile>')."""
    return row.charge_kind == "gpu" and price_key(row).startswith(row.gpu_model + " ")


def _sku_id(row: ledger.Charge) -> str:
    if row.charge_kind == "energy":
        return "Energy"
    return price_key(row) if _mig_priced(row) else row.gpu_model


def _pricing_unit(row: ledger.Charge) -> str:
    """GPU-Hours, kWh, or Instance-Hours for a MIG profile priced on its own: its price is per
    hour of one instance, and its quantity counts instance-hours (not a share of a GPU)."""
    return "Instance-Hours" if _mig_priced(row) else row.pricing_unit


def _sku_price_id(row: ledger.Charge) -> str:
    """FOCUS's SkuPriceId: the SKU price without its amount or dates (which FOCUS excludes, so
    the id stays the same across a price change and billing periods and the change shows in
    ListUnitPrice): the GPU model or explicitly priced MIG profile, the model 'at the default
    price', 'Energy'. The price period is x_PricePeriod."""
    if row.charge_kind == "energy":
        return "Energy"
    return f"{row.gpu_model} at the default price" if price_key(row) == DEFAULT_PRICE_KEY else _sku_id(row)


def _sku_price_details(row: ledger.Charge) -> str:
    """FOCUS's SkuPriceDetails of the row's price, per one PricingUnit: a GPU-hour is one GPU
    (GpuCount 1); an explicitly priced MIG profile is one instance of it (x_MigProfile, no
    GpuCount: the instance is a slice of a GPU); energy has no SKU properties (null)."""
    if row.charge_kind == "energy":
        return ""
    if _mig_priced(row):
        return _json({"x_MigProfile": price_key(row)[len(row.gpu_model) + 1:]})
    return _json({"GpuCount": 1})


SKU_METERS = {"gpu": "GPU Time", "energy": "Energy"}
RATIO_PLACES = 12  # AllocatedRatio decimals: shares of one origin charge add up to exactly 1
_RATIO = Decimal(1).scaleb(-RATIO_PLACES)
ALLOCATION_METHODS = {
    # (charge kind, capacity nobody held shared over projects?) -> AllocatedMethodId
    ("gpu", False): "HeldGpuTime",
    ("gpu", True): "HeldGpuTimeUnallocatedShared",
    ("energy", False): "MeteredEnergy",
    ("energy", True): "MeteredEnergyUnallocatedShared",
}


def origin_key(row: ledger.Charge) -> tuple:
    """The origin charge a ledger row is allocated from (FOCUS 1.3): one GPU model's capacity
    of one local day, GPU time or energy, at one price."""
    return (row.day, row.gpu_model, row.charge_kind, row.sku_price_id)


def origin_charge_id(row: ledger.Charge) -> str:
    return f"{row.day.isoformat()}/{row.charge_kind}/{row.gpu_model}/{row.sku_price_id}"


def allocated_ratios(rows: Sequence[ledger.Charge]) -> list[Decimal]:
    """Each row's AllocatedRatio of its origin charge: its quantity (held GPU-hours, kWh) over
    the origin's, to RATIO_PLACES decimals by largest remainder so the ratios add up to
    exactly 1 (a charge without any quantity is shared equally)."""
    weights = [Decimal(r.quantity) for r in rows]
    if not any(weights):
        weights = [Decimal(1)] * len(rows)
    return money.apportion(Decimal(1), weights, RATIO_PLACES)


def _allocation_columns(data: MonthCents) -> dict[int, dict[str, str]]:
    """The 1.3 columns of each row (by index in data.rows) that its origin charge decides or
    that say how it was allocated."""
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(data.rows):
        groups.setdefault(origin_key(row), []).append(i)
    out: dict[int, dict[str, str]] = {}
    for members in groups.values():
        rows = [data.rows[i] for i in members]
        shared = any(r.allocation == ledger.SHARE for r in rows)
        method = ALLOCATION_METHODS[(rows[0].charge_kind, shared)]
        origin = origin_charge_id(rows[0])
        tags = _json(_origin_tags(rows[0]))
        for i, row, ratio in zip(members, rows, allocated_ratios(rows)):
            held = row.bucket != "unallocated"
            details = {"Elements": [{"AllocatedRatio": _Number(ratio.quantize(_RATIO)), "UsageUnit": _pricing_unit(row),
                                     "UsageQuantity": _Number(Decimal(row.quantity).quantize(_NANO))}],
                       "x_OriginChargeId": origin}
            out[i] = {
                "ChargeDescription": _origin_description(row),
                "SubAccountId": "", "SubAccountName": "", "SubAccountType": "",
                "Tags": tags,
                "AllocatedMethodId": method,
                "AllocatedMethodDetails": _json_numbers(details),
                "AllocatedResourceId": row.project if held else "",
                "AllocatedResourceName": row.project if held else "",
                "AllocatedTags": _json(_payer_tags(row)),
                "x_OriginChargeId": origin,
            }
    return out


class _Number(str):
    """A decimal written into JSON as a number, digit for digit (json would go through float),
    in plain notation (never 0E-9)."""

    def __new__(cls, value: Decimal) -> "_Number":
        return super().__new__(cls, f"{Decimal(value):f}")


def _json_numbers(value) -> str:
    """JSON text with _Number values as plain decimal numbers (sorted keys, compact)."""
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json_numbers(v)}"
                              for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_numbers(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def invoice_id(data: MonthCents) -> str:
    """One invoice per billing period: the cluster's chargeback for the month."""
    return f"{data.cluster}-{data.month}"


def check_focus_version(version: str) -> str:
    if version not in FOCUS_VERSIONS:
        raise YolocostError(f"FOCUS version {version!r} is not one yolocost writes (one of {', '.join(FOCUS_VERSIONS)})")
    return version


def focus_rows(data: MonthCents, version: str = DEFAULT_FOCUS_VERSION) -> list[dict[str, str]]:
    """The CSV's rows as {column: text} in file order (numbers as plain decimals, text raw).

    1.2: one row per ledger row, the project as SubAccount. 1.3: the same rows as allocated
    charges of their origin charge (a GPU model's capacity of a day at one price), the
    project in the Allocated* columns and the origin's dimensions (description, tags) in
    FOCUS's own; the money is the same cents."""
    check_focus_version(version)
    tz = ZoneInfo(data.timezone)
    period_start, period_end = (_utc(t) for t in months.local_window(data.month, tz))
    cent = Decimal(1).scaleb(-minor_unit(data.currency))
    invoice = invoice_id(data)
    allocation = _allocation_columns(data) if version == "1.3" else {}
    out = []
    for i, row in enumerate(data.rows):
        billed = _fixed(row.cost, cent)
        quantity = _fixed(row.quantity, _NANO)
        price = _price(row.unit_price)
        idle = row.charge_kind == "gpu" and row.bucket != "unallocated" and row.allocation == ledger.USAGE
        cells = {
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
            "PricingQuantity": quantity,
            "PricingUnit": _pricing_unit(row),
            "ProviderName": data.cluster,
            "PublisherName": data.cluster,
            "ServiceCategory": SERVICE_CATEGORY,
            "ServiceName": SERVICE_NAME,
            "ChargeFrequency": "Usage-Based",
            "ConsumedQuantity": quantity,
            "ConsumedUnit": _pricing_unit(row),
            "ContractedUnitPrice": price,
            "InvoiceId": invoice,
            "ListUnitPrice": price,
            "PricingCategory": "Standard",
            "ServiceSubcategory": SERVICE_SUBCATEGORY,
            "SkuId": _sku_id(row),
            "SkuMeter": SKU_METERS[row.charge_kind],
            "SkuPriceDetails": _sku_price_details(row),
            "SkuPriceId": _sku_price_id(row),
            "SubAccountId": row.project,
            "SubAccountName": row.project,
            "SubAccountType": "Project",
            "Tags": _tags(row),
            "HostProviderName": data.cluster,
            "ServiceProviderName": data.cluster,
            "x_Bucket": row.bucket,
            "x_ChargeKind": row.charge_kind,
            "x_Allocation": ALLOCATION_LABELS[row.allocation],
            "x_GpuModel": row.gpu_model,
            "x_ChargeDate": row.day.isoformat(),
            "x_TimeZone": data.timezone,
            "x_Jobs": str(int(row.jobs)),
            "x_ImageTag": (data.image_tags.get((row.day, row.bucket, row.project, row.gpu_model), "")
                           if row.allocation == ledger.USAGE else ""),
            "x_EffectiveComputeDensity": _float(row.density),
            "x_IdleGpuHours": _fixed(Decimal(row.idle_gpu_seconds or 0) / 3600, _MICRO) if idle else "",
            "x_IdleCost": _fixed(row.idle_cost or 0, cent) if idle else "",
            "x_UnroundedCost": _fixed(row.exact_cost, _NANO),
            "x_PricePeriod": row.sku_price_id,
        }
        cells.update(allocation.get(i, {}))
        out.append({c: cells[c] for c in COLUMNS_BY_VERSION[version]})
    return out


# columns holding numbers: written as they are (a negative number must stay a number)
_NUMERIC = frozenset({
    "BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity", "ConsumedQuantity",
    "ContractedUnitPrice", "ListUnitPrice", "x_Jobs", "x_EffectiveComputeDensity", "x_IdleGpuHours", "x_IdleCost",
    "x_UnroundedCost",
})


def to_csv(rows: list[dict[str, str]], version: str = DEFAULT_FOCUS_VERSION) -> str:
    """The CSV text: header, then rows; text cells neutralized against formula injection."""
    columns = COLUMNS_BY_VERSION[version]
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row[c] if c in _NUMERIC else csv_safe(row[c]) for c in columns])
    return buf.getvalue()


# --------------------------------------------------------------------------- the export


def default_path(config: Config, month: str) -> Path:
    """Where `yolocost export finance` writes by default: <report_dir>/<month>/finance-<month>.csv."""
    return Path(config.report_dir) / month / f"finance-{month}.csv"


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` in one step, so a reader never sees half a file; a symlink is written
    through and /dev/stdout written in place (yolocost.outputs)."""
    write_output(path, text, make_parents=True)


def finance_csv(con: duckdb.DuckDBPyConnection, month: str, path: Path,
                version: str = DEFAULT_FOCUS_VERSION) -> tuple[str, FinanceExport]:
    """The finance CSV of `month` as text, and what writing it to `path` gives (nothing is
    written: `yolocost report` writes it with the month's other files)."""
    data = month_cents(con, month)
    rows = focus_rows(data, version)
    return to_csv(rows, version), FinanceExport(Path(path), month, len(rows), data.total, data.currency,
                                       partial_month_warning(data))


def write_finance_csv(con: duckdb.DuckDBPyConnection, month: str, path: Path,
                      version: str = DEFAULT_FOCUS_VERSION) -> FinanceExport:
    """Write the finance CSV of `month` from an open connection (see export_finance)."""
    text, export = finance_csv(con, month, path, version)
    _write_atomically(Path(path), text)
    return export


def _write_export(con: duckdb.DuckDBPyConnection, config: Config, month: str, path: Path,
                  in_month_folder: bool, version: str) -> FinanceExport:
    """The default path is in the month folder, yolocost's own: what stands there is replaced,
    never written through (yolocost.outputs); a path the user named is written by the rule
    of result files."""
    if not in_month_folder:
        return write_finance_csv(con, month, path, version)
    text, export = finance_csv(con, month, path, version)
    write_in_own_folder(path, text, config.reports_private)
    return export


def partial_month_warning(data: MonthCents) -> str | None:
    """A line saying which days of the month the database holds, when that is not every day
    (a month still running, an ingest of part of it): the CSV's total is then that part's."""
    shown = Month.parse(data.month)
    first, month_days = shown.first_day, shown.days
    days = sorted({r.day for r in data.rows})
    if len(days) >= month_days:
        return None
    return (f"the database holds {days[0]}..{days[-1]} of {first:%B %Y} ({len(days)} of {month_days} days): "
            "the CSV covers only that")


def export_finance(config: Config, month: str, out: Path | None = None,
                   focus_version: str | None = None) -> FinanceExport:
    """Write the finance CSV of `month` (YYYY-MM) in FOCUS `focus_version` (default: the
    config's [reports] focus_version) from config.database to `out` (default:
    default_path(config, month)); returns the path, row count and BilledCost total."""
    check_month(month)
    focus_version = check_focus_version(focus_version or config.focus_version)
    path = Path(out) if out is not None else default_path(config, month)
    con = db.connect(config.database, read_only=True)
    try:
        built = months.as_built(con, config, month)  # a stale month is refused, before anything is written
        export = _write_export(con, config, month, path, out is None, focus_version)
    finally:
        con.close()
    if built.note:
        export = dataclasses.replace(export, warning="; ".join(filter(None, [export.warning, built.note])))
    return export
