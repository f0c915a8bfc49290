"""Jobs that "fit a smaller GPU": whose peak GPU memory a cheaper, smaller GPU model would hold.

The data holds each GPU's framebuffer in use (DCGM_FI_DEV_FB_USED: gpu_usage.mem_peak_mib, a
job-month's peak in mart_job_month) but not its size (FB_FREE is not scraped), so the memory
of each GPU model comes from yolocost.gpumemory.GPU_MEMORY_GIB: the nominal memory of known
models, keyed by the model name as dcgm-exporter's `modelName` (or nvidia-smi) writes it,
without a leading "NVIDIA " or "Tesla " and without regard to case (the named query
image_tag_comparison reads the same table). A model that is not in the table gets no note,
nor is it ever suggested.

A job-month gets a note when
* it ran on one GPU (a job on several GPUs gets none: the smaller model would need a host
  with as many, which the note does not check), on one GPU model, a whole GPU (a MIG slice
  gets none: it is already a part of a GPU; the marts tell it by its GPU-seconds, a fraction
  of its seconds held, or, for a profile with a price of its own, by its GPU cost, below any
  price of its GPU model), and its peak memory is known;
* some other GPU model has a configured price (the prices table; the default '*' names no
  model) and a memory smaller than the job's GPU's and at least FIT_MARGIN larger than the
  job's peak (peak <= 80 % of that GPU's memory: headroom for the batch that peaks between two
  samples, the CUDA context and the allocator's fragmentation, and for nominal sizes a little
  above what the driver hands out), and its price per GPU-hour is below the job's GPU's.
The note names the cheapest such model (ties: the smaller memory, then the name), both prices
per GPU-hour in effect at the job's last interval held in the month (the job's GPU's own price,
or the default '*' where it has none), their difference, and that difference over the job's
GPU-hours of the month (the ledger's tenths, as the job table prints them), rounded half up to
the currency's minor unit per job: the same cents in every table, and a table's total is the
sum of its rows. It is an estimate (the job might run longer on a slower GPU), not a charge.
"""

from __future__ import annotations

import bisect
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb

from ..gpumemory import VENDOR_PREFIX, memory_gib
from ..money import Currency

FIT_MARGIN = Decimal("0.8")  # the peak may use at most this share of the smaller GPU's memory
MIB_PER_GIB = 1024
PAID_BELOW = Decimal("0.999")  # a job billed under this share of its model's lowest price ran on a priced MIG profile
DEFAULT_KEY = "*"


def short_name(model: str) -> str:
    """The model's name less a leading "NVIDIA " or "Tesla " (for the PDF's narrow listing)."""
    return VENDOR_PREFIX.sub("", model.strip())


class PriceBook:
    """The configured GPU prices (stg_prices: price key, valid from, valid to) by key and moment."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self._periods: dict[str, list[tuple[dt.datetime, dt.datetime, Decimal]]] = {}
        for key, since, until, price in con.execute("""
                SELECT price_key, valid_from, valid_to, price_per_gpu_hour FROM stg_prices
                ORDER BY price_key, valid_from""").fetchall():
            self._periods.setdefault(key, []).append((since, until, Decimal(price)))
        self._starts = {k: [p[0] for p in v] for k, v in self._periods.items()}

    def at(self, key: str, moment: dt.datetime) -> Decimal | None:
        """The price per GPU-hour of `key` in effect at `moment` (None: none yet, or no such key)."""
        periods = self._periods.get(key)
        if not periods:
            return None
        i = bisect.bisect_right(self._starts[key], moment) - 1
        if i < 0 or not periods[i][0] <= moment < periods[i][1]:
            return None
        return periods[i][2]

    def lowest(self, key: str) -> Decimal | None:
        """The lowest price `key` ever had (the default's for a model without a price)."""
        periods = self._periods.get(key) or self._periods.get(DEFAULT_KEY)
        return min(p[2] for p in periods) if periods else None

    def models(self) -> list[str]:
        """The GPU models with a configured price and a known memory (candidates to name)."""
        return sorted(k for k in self._periods if k != DEFAULT_KEY and memory_gib(k) is not None)


@dataclass(frozen=True)
class Job:
    """What the note needs of one job-month (mart_job_month, and ledger_job_month's tenths)."""

    gpu_models: str | None
    mem_peak_mib: float | None
    gpu_seconds: Any
    seconds_present: Any
    last_interval: dt.datetime | None
    gpu_hours: Decimal
    gpu_cost: Any = None  # exact (mart_job_month): what it paid for GPU time
    gpus: int = 1  # GPUs it held in the month (mart_job_month.gpus)


def smaller_gpu(job: Job, book: PriceBook, currency: Currency) -> dict | None:
    """The note for one job-month (see the module's doc), or None."""
    model = job.gpu_models
    if not model or "," in model or job.mem_peak_mib is None or job.last_interval is None:
        return None
    if (job.gpus or 1) > 1:  # several GPUs: a smaller model would need a host with as many, not checked
        return None
    if job.gpu_seconds is None or job.seconds_present is None:
        return None
    if Decimal(job.gpu_seconds) < Decimal(job.seconds_present):  # a MIG slice: a fraction of a GPU
        return None
    if job.gpu_cost is not None and job.gpu_seconds and (lowest := book.lowest(model)) is not None:
        paid = Decimal(job.gpu_cost) * 3600 / Decimal(job.gpu_seconds)  # per GPU-hour, on average
        if paid < lowest * PAID_BELOW:  # a MIG profile with a price of its own
            return None
    own_gib = memory_gib(model)
    if own_gib is None:
        return None
    moment = job.last_interval
    own_price = book.at(model, moment)
    if own_price is None:
        own_price = book.at(DEFAULT_KEY, moment)
    if own_price is None:
        return None
    peak = Decimal(repr(float(job.mem_peak_mib)))
    best = None
    for candidate in book.models():
        gib = memory_gib(candidate)
        assert gib is not None  # book.models() are those of a known memory
        price = book.at(candidate, moment)
        if candidate == model or price is None or gib >= own_gib or price >= own_price:
            continue
        if peak > FIT_MARGIN * gib * MIB_PER_GIB:
            continue
        rank = (price, gib, candidate)
        if best is None or rank < best[0]:
            best = (rank, candidate, gib, price)
    if best is None:
        return None
    _, candidate, gib, price = best
    difference = own_price - price
    saving = currency.round(difference * job.gpu_hours)
    fit = {"model": candidate, "memory_gib": gib, "own_memory_gib": own_gib, "peak_gib": float(peak) / MIB_PER_GIB,
           "price": price, "own_price": own_price, "difference": difference, "saving": saving}
    fit.update(note_texts(fit, currency))
    return fit


def note_texts(fit: dict, currency: Currency) -> dict[str, str]:
    """The note in words: `text` ('fits NVIDIA L4: 1.95 less per GPU-hour, 23.40 over the job')
    and `detail` (the memory and prices behind it, for a title or a footnote)."""
    from .ratecard import price_text

    places = currency.places
    return {"difference_text": price_text(fit["difference"], places),
            "text": (f"fits {fit['model']}: {price_text(fit['difference'], places)} less per GPU-hour, "
                     f"{currency.format(fit['saving'])} over the job"),
            "detail": (f"peak {fit['peak_gib']:,.1f} GiB of the {fit['own_memory_gib']} GiB GPU; "
                       f"{fit['model']} has {fit['memory_gib']} GiB "
                       f"(the peak is at most {FIT_MARGIN * 100:.0f} % of it); "
                       f"{price_text(fit['own_price'], places)} -> {price_text(fit['price'], places)} per GPU-hour")}


# the month's job-months with what the note needs, scoped like every section
SQL = """
SELECT l.job_id, l.project, l.bucket, coalesce(m.user_name, '(no user)') AS user_name, m.model_type,
       m.gpu_models, m.mem_peak_mib, m.gpu_seconds, m.seconds_present, m.last_interval, m.gpu_cost AS exact_gpu_cost,
       m.gpus, l.gpu_hours, l.cost
FROM ledger_jobs(?, ?) AS l
JOIN mart_job_month AS m ON m.month = l.month AND m.job_id = l.job_id"""


def jobs_that_fit(con: duckdb.DuckDBPyConnection, month: str, project: str | None, currency: Currency,
                  top: int) -> dict:
    """The section `gpu_fit`: every job-month of the audience that fits a smaller GPU, the
    largest saving first: the first `top` as `rows`, the rest summed as `other` (or None), and
    `jobs`, `gpu_hours` and `saving` of them all (sums of the rows' tenths and cents) and the
    rule's margin."""
    book = PriceBook(con)  # before the jobs' query: a query on the connection ends the one before
    cur = con.execute(SQL, [month, project])
    names = [d[0] for d in cur.description]
    found = []
    for values in cur.fetchall():
        r = dict(zip(names, values))
        fit = smaller_gpu(Job(r["gpu_models"], r["mem_peak_mib"], r["gpu_seconds"], r["seconds_present"],
                              r["last_interval"], Decimal(r["gpu_hours"]), r["exact_gpu_cost"], r["gpus"]), book, currency)
        if fit is not None:
            found.append({k: r[k] for k in ("job_id", "project", "bucket", "user_name", "model_type", "gpu_models")}
                         | {"gpu_hours": Decimal(r["gpu_hours"]), "fit": fit})
    found.sort(key=lambda j: (-j["fit"]["saving"], -j["fit"]["difference"], j["job_id"]))

    def summed(items: list[dict]) -> dict:
        return {"jobs": len(items), "gpu_hours": sum((j["gpu_hours"] for j in items), Decimal("0.0")),
                "saving": sum((j["fit"]["saving"] for j in items), currency.zero)}

    rest = found[top:]
    return {"rows": found[:top], "other": summed(rest) if rest else None, "margin": float(FIT_MARGIN),
            **summed(found)}
