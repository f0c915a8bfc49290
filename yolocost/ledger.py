"""The cent ledger: every month's money and GPU-hours rounded once, stored, and summed everywhere.

The marts keep money exact (DECIMAL(38, 9)). Printed documents need cents, and cents rounded
separately in each document disagree (a project's GPU models rounded one way in a report and
its CSV rows another). So the rounding is done once per month, when the models are built,
and stored in two tables that every report table, card, summary, named query and the finance
CSV sum:

* `ledger_charges`: one row per local day x project bucket x GPU model x charge kind (GPU
  time, energy) x price period x allocation, from mart_charge_daily. `cost` is the row's
  cents: the month's exact total rounded half up, then shared top down with the largest
  remainder over projects, charge kinds, GPU models, days and price periods
  (yolocost.money.allocate_tree), so every row and every group of that tree is within a cent
  of its exact amount and any sum of rows is the same wherever it is taken. `idle_cost`
  (held GPU time under the idle threshold, a part of `cost`), `gpu_hours` and
  `idle_gpu_hours` (to 0.1 h) are rounded the same way, each over its own tree (project,
  GPU model, day, price period).
* `ledger_job_month`: one row per job x month: each project's GPU, energy and idle cents and
  its tenths of GPU-hours shared over the project's jobs by their exact amounts (largest
  remainder), so that users, image tags, density bands and job tables add up to the
  project's figures.

Unallocated capacity ([allocation] unallocated): "none" keeps it in the '(unallocated)'
bucket, charged to no project. "proportional" shares each day x GPU model x charge kind x
price row of it over the labelled projects that held that GPU model that day, by their
GPU-seconds (each share's cents its exact amount rounded down or up, adding up to the
row's cents: yolocost.money.distribute), as separate rows with allocation 'unallocated share'
in each project's bucket (never mixed into its own usage); a day and model no project held
stays unallocated. Totals do not change: the rows of a month still add up to the month's
capacity and energy cost.

Documents read the ledger through two table macros (sql/macros.sql): `ledger_lines(month,
project)` (ledger_charges) and `ledger_jobs(month, project)` (ledger_job_month), which pick an
audience's rows (every row, or one project's own) and say once what counts as capacity
nobody held (`unallocated`) and as a share of it (`shared`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from typing import Callable, Sequence

import duckdb

from . import money
from .db import one_row
from .monthstr import is_month
from .sqltext import values

USAGE = "usage"
SHARE = "unallocated share"
POLICIES = ("none", "proportional")
BUCKET_ORDER = {"project": 0, "unlabeled": 1, "unallocated": 2}
KIND_ORDER = {"gpu": 0, "energy": 1}
HOUR_PLACES = 1  # GPU-hours are printed to 0.1 h
_INSERT_ROWS = 500
VERSION = "2"  # part of each month's build fingerprint (yolocost.months): a change of the rounding rules rebuilds

# {places}: the decimals of the currency's minor unit, so the stored cents read as money
CHARGES_TABLE = """
CREATE TABLE IF NOT EXISTS ledger_charges (
    month          VARCHAR NOT NULL,   -- YYYY-MM, configured time zone
    day            DATE NOT NULL,      -- local day
    bucket         VARCHAR NOT NULL,   -- project | unlabeled | unallocated
    project        VARCHAR NOT NULL,   -- project name, '(unlabeled)' or '(unallocated)'
    gpu_model      VARCHAR NOT NULL,
    charge_kind    VARCHAR NOT NULL,   -- gpu | energy
    allocation     VARCHAR NOT NULL,   -- usage | unallocated share
    sku_price_id   VARCHAR NOT NULL,   -- the price period: '<price key> from <date>', 'energy from <date>'
    unit_price     DECIMAL(38, 9) NOT NULL,  -- per GPU-hour (gpu) or per kWh (energy)
    pricing_unit   VARCHAR NOT NULL,   -- GPU-Hours | kWh
    quantity       DECIMAL(38, 9) NOT NULL,  -- GPU-hours or kWh, exact to 1e-9
    exact_cost     DECIMAL(38, 9) NOT NULL,
    cost           DECIMAL(38, {places}) NOT NULL,  -- the row's cents (minor units of the currency)
    exact_idle_cost DECIMAL(38, 9),          -- gpu rows of held time only
    idle_cost      DECIMAL(38, {places}),
    gpu_hours      DECIMAL(38, 1),           -- gpu rows only, to 0.1 h
    idle_gpu_hours DECIMAL(38, 1),
    gpu_seconds    DECIMAL(38, 6) NOT NULL,  -- held (or, for unallocated, present) GPU-seconds
    idle_gpu_seconds DECIMAL(38, 6),
    seconds_present DECIMAL(38, 6) NOT NULL,
    seconds_busy   DECIMAL(38, 6) NOT NULL,
    jobs           BIGINT NOT NULL
)"""

JOBS_TABLE = """
CREATE TABLE IF NOT EXISTS ledger_job_month (
    month          VARCHAR NOT NULL,
    job_id         VARCHAR NOT NULL,
    bucket         VARCHAR NOT NULL,
    project        VARCHAR NOT NULL,
    gpu_cost       DECIMAL(38, {places}) NOT NULL,
    energy_cost    DECIMAL(38, {places}) NOT NULL,
    cost           DECIMAL(38, {places}) NOT NULL,  -- gpu_cost + energy_cost
    idle_cost      DECIMAL(38, {places}) NOT NULL,
    gpu_hours      DECIMAL(38, 1) NOT NULL,
    idle_gpu_hours DECIMAL(38, 1) NOT NULL
)"""

CHARGE_COLUMNS = ("month", "day", "bucket", "project", "gpu_model", "charge_kind", "allocation", "sku_price_id",
                  "unit_price", "pricing_unit", "quantity", "exact_cost", "cost", "exact_idle_cost", "idle_cost",
                  "gpu_hours", "idle_gpu_hours", "gpu_seconds", "idle_gpu_seconds", "seconds_present", "seconds_busy", "jobs")


@dataclass(frozen=True)
class Charge:
    """One row of ledger_charges (see CHARGES_TABLE)."""

    month: str
    day: dt.date
    bucket: str
    project: str
    gpu_model: str
    charge_kind: str
    allocation: str
    sku_price_id: str
    unit_price: Decimal
    pricing_unit: str
    quantity: Decimal
    exact_cost: Decimal
    cost: Decimal | None
    exact_idle_cost: Decimal | None
    idle_cost: Decimal | None
    gpu_hours: Decimal | None
    idle_gpu_hours: Decimal | None
    gpu_seconds: Decimal
    idle_gpu_seconds: Decimal | None
    seconds_present: Decimal
    seconds_busy: Decimal
    jobs: int

    @property
    def sort_key(self) -> tuple:
        return (BUCKET_ORDER.get(self.bucket, 9), self.bucket, self.project, self.allocation,
                KIND_ORDER[self.charge_kind], self.gpu_model, self.day, self.sku_price_id)


@dataclass(frozen=True)
class StoredCharge(Charge):
    """A ledger_charges row as stored, with the effective compute density of the held time
    behind it as the database's density() macro computes it (sql/macros.sql: the one
    definition the marts, the named queries and the reports use too)."""

    density: float | None


@dataclass(frozen=True)
class JobCents:
    month: str
    job_id: str
    bucket: str
    project: str
    gpu_cost: Decimal
    energy_cost: Decimal
    cost: Decimal
    idle_cost: Decimal
    gpu_hours: Decimal
    idle_gpu_hours: Decimal


# --------------------------------------------------------------------------- rounding


def rounded(figure: Decimal | None) -> Decimal:
    """A rounded row's figure (cost, gpu_hours): None only before round_month."""
    assert figure is not None
    return figure


def _hours(seconds: Decimal | None) -> Decimal:
    """Exact hours (to 60 digits: a tenth-of-an-hour boundary is never misread)."""
    with localcontext() as ctx:
        ctx.prec = 60
        return Decimal(0) if seconds is None else Decimal(seconds) / 3600


def _owner(row: Charge) -> tuple:
    return (BUCKET_ORDER.get(row.bucket, 9), row.bucket, row.project, row.allocation)


def round_month(rows: Sequence[Charge], places: int) -> list[Charge]:
    """The month's rows with cost, idle_cost, gpu_hours and idle_gpu_hours rounded top down
    (see the module doc), in ledger order."""
    rows = sorted(rows, key=lambda r: r.sort_key)
    cents = money.allocate_tree([r.exact_cost for r in rows],
                                [(_owner(r), r.charge_kind, r.gpu_model, r.day, r.sku_price_id) for r in rows], places)
    path = [(_owner(r), r.gpu_model, r.day, r.sku_price_id) for r in rows]
    gpu = [i for i, r in enumerate(rows) if r.charge_kind == "gpu"]
    held = [i for i in gpu if rows[i].bucket != "unallocated"]
    hours = money.allocate_tree([_hours(rows[i].gpu_seconds) for i in gpu], [path[i] for i in gpu], HOUR_PLACES)
    idle = money.allocate_tree([rows[i].exact_idle_cost or Decimal(0) for i in held], [path[i] for i in held], places)
    idle_hours = money.allocate_tree([_hours(rows[i].idle_gpu_seconds) for i in held], [path[i] for i in held],
                                     HOUR_PLACES)
    out = [replace(r, cost=c, idle_cost=None, idle_gpu_hours=None, gpu_hours=None) for r, c in zip(rows, cents)]
    for i, h in zip(gpu, hours):
        out[i] = replace(out[i], gpu_hours=h)
    # idle time is part of the row's time and its cost part of the row's GPU cost: rounded
    # separately, a fully idle row could show a cent or a tenth more idle than in all
    idle = _capped(held, idle, [rounded(out[i].cost) for i in held], rows)
    idle_hours = _capped(held, idle_hours, [rounded(out[i].gpu_hours) for i in held], rows)
    for i, c, h in zip(held, idle, idle_hours):
        out[i] = replace(out[i], idle_cost=c, idle_gpu_hours=h)
    return out


def _capped(indices: list[int], parts: list[Decimal], caps: list[Decimal], rows: Sequence[Charge]) -> list[Decimal]:
    """`parts` kept under `caps` within each owner (money.cap): sums move between an owner's rows."""
    out = list(parts)
    owners: dict[tuple, list[int]] = {}
    for k, i in enumerate(indices):
        owners.setdefault(_owner(rows[i]), []).append(k)
    for members in owners.values():
        for k, v in zip(members, money.cap([parts[k] for k in members], [caps[k] for k in members])):
            out[k] = v
    return out


def share_unallocated(rows: Sequence[Charge], places: int) -> list[Charge]:
    """The "proportional" policy on rounded rows: each unallocated row's cents (and tenths of
    GPU-hours) shared over the labelled projects that held its GPU model on its day, by their
    GPU-seconds; rows no project can take stay unallocated. Returns the new month's rows."""
    weights: dict[tuple, dict[str, Decimal]] = {}
    for r in rows:
        if r.bucket == "project" and r.charge_kind == "gpu" and r.allocation == USAGE:
            by_project = weights.setdefault((r.day, r.gpu_model), {})
            by_project[r.project] = by_project.get(r.project, Decimal(0)) + Decimal(r.gpu_seconds)
    out = []
    for r in rows:
        shares = weights.get((r.day, r.gpu_model), {})
        if r.bucket != "unallocated" or not any(shares.values()):
            out.append(r)
            continue
        names = sorted(p for p, w in shares.items() if w > 0)
        w = [shares[p] for p in names]
        whole = sum(w, Decimal(0))
        tenths = money.apportion(r.gpu_hours, w, HOUR_PLACES) if r.gpu_hours is not None else [None] * len(names)
        with localcontext() as ctx:
            ctx.prec = 60
            fractions = [x / whole for x in w]
            # each share's cents are its exact amount rounded down or up (never further), so a
            # share row, like every other, is within a cent of its price x quantity
            cents = money.distribute([r.exact_cost * f for f in fractions], rounded(r.cost), places)
        q9 = Decimal("0.000000001")
        q6 = Decimal("0.000001")
        for name, f, c, h in zip(names, fractions, cents, tenths):
            out.append(replace(
                r, bucket="project", project=name, allocation=SHARE, cost=c, gpu_hours=h,
                quantity=(r.quantity * f).quantize(q9), exact_cost=(r.exact_cost * f).quantize(q9),
                gpu_seconds=(r.gpu_seconds * f).quantize(q6), seconds_present=(r.seconds_present * f).quantize(q6),
                seconds_busy=(r.seconds_busy * f).quantize(q6), jobs=0))
    return sorted(out, key=lambda r: r.sort_key)


def job_cents(month: str, charges: Sequence[Charge], jobs: Sequence[tuple], places: int) -> list[JobCents]:
    """Each project's own-usage GPU, energy and idle cents and tenths of GPU-hours shared over
    its jobs by their exact amounts (largest remainder, jobs in job_id order). `jobs` rows are
    (job_id, bucket, project, gpu_cost, energy_cost, idle_cost, gpu_seconds, idle_gpu_seconds)."""
    totals: dict[tuple, list[Decimal]] = {}
    for r in charges:
        if r.allocation != USAGE or r.bucket == "unallocated":
            continue
        t = totals.setdefault((r.bucket, r.project), [Decimal(0)] * 5)
        if r.charge_kind == "gpu":
            t[0] += rounded(r.cost)
            t[2] += r.idle_cost or 0
            t[3] += r.gpu_hours or 0
            t[4] += r.idle_gpu_hours or 0
        else:
            t[1] += rounded(r.cost)
    by_project: dict[tuple, list[tuple]] = {}
    for j in sorted(jobs, key=lambda j: j[0]):
        by_project.setdefault((j[1], j[2]), []).append(j)
    zero = Decimal(0)
    out = []
    for key, members in by_project.items():
        gpu, energy, idle, hours, idle_hours = totals.get(key, [zero] * 5)
        gpu_c = money.distribute([j[3] or zero for j in members], gpu, places)
        energy_c = money.distribute([j[4] or zero for j in members], energy, places)
        idle_c = money.distribute([j[5] or zero for j in members], idle, places)
        hours_t = money.distribute([_hours(j[6]) for j in members], hours, HOUR_PLACES)
        idle_t = money.distribute([_hours(j[7]) for j in members], idle_hours, HOUR_PLACES)
        idle_c = money.cap(idle_c, gpu_c)
        idle_t = money.cap(idle_t, hours_t)
        for j, g, e, i, h, ih in zip(members, gpu_c, energy_c, idle_c, hours_t, idle_t):
            out.append(JobCents(month, j[0], j[1], j[2], g, e, g + e, i, h, ih))
    return out


# --------------------------------------------------------------------------- reading and storing


def _charges(con: duckdb.DuckDBPyConnection, month: str) -> list[Charge]:
    found = con.execute(f"""
        SELECT month, day, bucket, project, gpu_model, charge_kind, '{USAGE}', sku_price_id, unit_price,
               pricing_unit, quantity, cost, NULL, idle_cost, NULL, NULL, NULL, gpu_seconds, idle_gpu_seconds,
               seconds_present, seconds_busy, jobs
        FROM mart_charge_daily WHERE month = '{month}'""").fetchall()
    return [Charge(*r) for r in found]


def stored(con: duckdb.DuckDBPyConnection, month: str) -> list[StoredCharge]:
    """The ledger_charges rows of one month as stored (in no particular order), each with its density."""
    found = con.execute(f"""
        SELECT {', '.join(CHARGE_COLUMNS)}, density(seconds_busy, seconds_present)
        FROM ledger_charges WHERE month = ?""", [month]).fetchall()
    return [StoredCharge(*r) for r in found]


# A month's totals as every document prints them: capacity nobody held counts whatever share
# of it the "proportional" policy charged to projects (the admin report's "Unallocated
# capacity"); GPU-hours held by jobs are own use of labelled and unlabeled jobs.
MONTH_TOTALS = """
    SELECT coalesce(sum(cost), 0) AS total,
           coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu'), 0) AS gpu_cost,
           coalesce(sum(cost) FILTER (WHERE charge_kind = 'energy'), 0) AS energy_cost,
           coalesce(sum(cost) FILTER (WHERE unallocated), 0) AS unallocated_cost,
           coalesce(sum(gpu_hours) FILTER (WHERE unallocated), 0) AS unallocated_gpu_hours,
           coalesce(sum(cost) FILTER (WHERE shared), 0) AS share_cost,
           coalesce(sum(gpu_hours), 0) AS capacity_gpu_hours,
           coalesce(sum(gpu_hours) FILTER (WHERE NOT unallocated), 0) AS held_gpu_hours,
           coalesce(sum(idle_cost), 0) AS idle_cost,
           coalesce(sum(idle_gpu_hours), 0) AS idle_gpu_hours,
           count(*) AS rows
    FROM ledger_lines(?, NULL)"""


def month_totals(con: duckdb.DuckDBPyConnection, month: str) -> dict | None:
    """The month's ledger totals (see MONTH_TOTALS) by name, or None when it holds no row of it."""
    cur = con.execute(MONTH_TOTALS, [month])
    found = dict(zip([d[0] for d in cur.description], one_row(cur)))
    return found if found["rows"] else None


def _jobs(con: duckdb.DuckDBPyConnection, month: str) -> list[tuple]:
    return con.execute(f"""
        SELECT job_id, bucket, project, gpu_cost, energy_cost, idle_cost, gpu_seconds, idle_gpu_seconds
        FROM mart_job_month WHERE month = '{month}'""").fetchall()


def compute_month(con: duckdb.DuckDBPyConnection, month: str, policy: str, places: int
                  ) -> tuple[list[Charge], list[JobCents]]:
    """The ledger rows of one month from the marts (nothing written)."""
    charges = round_month(_charges(con, month), places)
    jobs = job_cents(month, charges, _jobs(con, month), places)
    if policy == "proportional":
        charges = share_unallocated(charges, places)
    return charges, jobs


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple]) -> None:
    for i in range(0, len(rows), _INSERT_ROWS):
        con.execute(f"INSERT INTO {table} VALUES {values(rows[i:i + _INSERT_ROWS])}")


def _month_re(month: str) -> str:
    """The month, checked before it goes into SQL as a literal."""
    if not is_month(month):
        raise ValueError(f"not a month: {month!r}")
    return month


def build(con: duckdb.DuckDBPyConnection, policy: str, currency: str, months: Sequence[str],
          progress: Callable[[str], None] = lambda _: None) -> int:
    """(Re)write the ledger_charges and ledger_job_month rows of `months` from the marts, under
    `policy` for unallocated capacity; other months' rows stay. Call inside the transaction
    that built the marts. Returns the number of months with charges."""
    if policy not in POLICIES:
        raise ValueError(f"unknown unallocated policy {policy!r}")
    places = money.minor_unit(currency)
    _tables(con, places, months)
    listed = ", ".join(f"'{_month_re(m)}'" for m in months) or "NULL"
    con.execute(f"DELETE FROM ledger_charges WHERE month IN ({listed})")
    con.execute(f"DELETE FROM ledger_job_month WHERE month IN ({listed})")
    built = [r[0] for r in con.execute(
        f"SELECT DISTINCT month FROM mart_charge_daily WHERE month IN ({listed}) ORDER BY month").fetchall()]
    for month in built:
        charges, jobs = compute_month(con, month, policy, places)
        _insert(con, "ledger_charges", [tuple(getattr(c, n) for n in CHARGE_COLUMNS) for c in charges])
        _insert(con, "ledger_job_month", [(j.month, j.job_id, j.bucket, j.project, j.gpu_cost, j.energy_cost,
                                           j.cost, j.idle_cost, j.gpu_hours, j.idle_gpu_hours) for j in jobs])
    if built:
        progress(f"rounded {len(built)} month(s) to cents once (ledger_charges, ledger_job_month)")
    return len(built)


def _tables(con: duckdb.DuckDBPyConnection, places: int, months: Sequence[str]) -> None:
    """Create the ledger tables; a table whose cents have other decimals (another currency) is
    made anew when it holds no month but `months`."""
    con.execute(CHARGES_TABLE.format(places=places))
    con.execute(JOBS_TABLE.format(places=places))
    kind = one_row(con.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_catalog = current_database() "
        "AND table_schema = 'main' AND table_name = 'ledger_charges' AND column_name = 'cost'"))[0]
    if kind != f"DECIMAL(38,{places})":
        listed = ", ".join(f"'{_month_re(m)}'" for m in months) or "NULL"
        kept = one_row(con.execute(f"SELECT count(*) FROM ledger_charges WHERE month NOT IN ({listed})"))[0]
        if kept:
            raise ValueError("ledger_charges holds months in another currency")  # months.check_settings refuses first
        con.execute("DROP TABLE ledger_charges")
        con.execute("DROP TABLE ledger_job_month")
        con.execute(CHARGES_TABLE.format(places=places))
        con.execute(JOBS_TABLE.format(places=places))
