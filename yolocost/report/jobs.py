"""The job table of a project report: every job the project ran in the month.

One row per job of mart_job_month (a job that crosses a month boundary has a row in each
month it held a GPU). Cost, idle cost and GPU-hours are the stored ones of ledger_job_month:
the project's own-usage cents and tenths of GPU-hours shared over its jobs once, when the
models were built (yolocost.ledger), so the rows add up exactly to the project's own-usage
total in ledger_charges (allocation 'usage'). Nothing is rounded here: money is only checked
to be whole minor units of the currency. Density (busy / present seconds, a ratio) comes
from mart_job_month; mAP50 and mAP50-95 (final validation, best weights) and the start and
end from the month's row of mart_job_by_month (an archived month's as it was archived).
Start is the job's start label (or its first interval held); end is empty for a job that
had not ended by the last data. The image digest (mart_job_by_month.image_digest, what really
ran whatever its tag said) is kept whole: the CSV's `image_digest` and the HTML have all of it
(the HTML cell shows it whole, with it also as the cell's title), only the PDF's aligned listing
shortens it to the algorithm and 12 hex digits (`short_digest`). A job whose peak GPU memory a
cheaper, smaller GPU model would hold carries the note `fits` (yolocost.report.gpufit), the
saving per job in whole minor units; the table counts such jobs and sums their savings.

Every table is read with `WHERE project = ? AND bucket = 'project'`: no other project's row
is read. The same rows make the HTML section `jobs`, the PDF's appendix and the report's
`project-<slug>.csv` (`to_csv`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from ..money import Currency
from ..csvsafe import csv_safe
from ..db import one_row
from . import gpufit
from .listing import LANDSCAPE, aligned

# the CSV's columns in file order; numbers are plain decimals, text goes through csv_safe
CSV_COLUMNS = ("job_id", "user", "model_type", "gpu_models", "image_tag", "image_digest", "start", "end",
               "gpu_hours", "density", "idle_cost", "cost", "currency", "map50", "map50_95")
_TEXT = frozenset({"job_id", "user", "model_type", "gpu_models", "image_tag", "image_digest", "currency"})
SHORT_HEX = 12  # hex digits of a digest where space is short (the PDF listing)
RATIO_DECIMALS = 6  # density and mAP in the CSV

SQL = """
SELECT l.job_id, m.user_name, m.model_type, m.gpu_models, m.image_tag, m.tag_status, j.image_digest,
       coalesce(j.start_time, j.first_interval) AS start_time, j.end_time,
       l.gpu_hours, l.idle_gpu_hours, m.seconds_busy, m.seconds_present, m.density,
       l.gpu_cost, l.energy_cost, l.idle_cost, l.cost, j.map50, j.map50_95,
       m.mem_peak_mib, m.gpu_seconds, m.last_interval, m.gpu_cost AS exact_gpu_cost, m.gpus,
       density(sum(m.seconds_busy) OVER (), sum(m.seconds_present) OVER ()) AS all_jobs_density
FROM ledger_jobs(?, ?) AS l
JOIN mart_job_month AS m
  ON m.month = l.month AND m.job_id = l.job_id AND m.project = l.project AND m.bucket = 'project'
LEFT JOIN mart_job_by_month AS j
  ON j.month = l.month AND j.job_id = l.job_id AND j.project = l.project AND j.bucket = 'project'
ORDER BY l.cost DESC, l.job_id"""

SHARE_SQL = "SELECT sum(cost) FROM ledger_lines(?, ?) WHERE shared"


def _minor(value: Any, places: int) -> Decimal:
    """A stored amount in the currency's minor units (DECIMAL(38, 4) holds 12.3400 for 12.34),
    with exactly `places` decimals; anything finer is a bug in the ledger, not a rounding case."""
    amount = Decimal(0) if value is None else Decimal(value)
    whole = amount.quantize(Decimal(1).scaleb(-places))
    if whole != amount:
        raise ValueError(f"{amount} is not a whole number of minor units ({places} decimals)")
    return whole


def _ratio(value: float | None) -> float | None:
    """Floats to 10 significant digits (as yolocost.report.data.rows): stable between runs."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.10g}")


def job_table(con: duckdb.DuckDBPyConnection, month: str, project: str, timezone: str, currency: str) -> dict:
    """The project's jobs of the month, most expensive first, with the totals the rows add up to."""
    shown = Currency(currency)
    places = shown.places
    tz = ZoneInfo(timezone)
    book = gpufit.PriceBook(con)  # before the jobs' query: a query on the connection ends the one before
    cur = con.execute(SQL, [month, project])
    names = [d[0] for d in cur.description]
    jobs = []
    all_jobs_density = None
    for values in cur.fetchall():
        r = dict(zip(names, values))
        start, end = r.pop("start_time"), r.pop("end_time")
        r["fits"] = gpufit.smaller_gpu(gpufit.Job(r["gpu_models"], r["mem_peak_mib"], r.pop("gpu_seconds"),
                                                  r["seconds_present"], r.pop("last_interval"),
                                                  Decimal(r["gpu_hours"]), r.pop("exact_gpu_cost"), r.pop("gpus")),
                                      book, shown)
        r.pop("seconds_busy")
        all_jobs_density = r.pop("all_jobs_density")  # the same on every row
        r["start"] = _when(start, tz)
        r["end"] = _when(end, tz)
        for key in ("gpu_cost", "energy_cost", "idle_cost", "cost"):
            r[key] = _minor(r[key], places)
        r["gpu_hours"] = Decimal(r["gpu_hours"])
        r["idle_gpu_hours"] = Decimal(r["idle_gpu_hours"])
        for key in ("density", "map50", "map50_95"):
            r[key] = _ratio(r[key])
        jobs.append(r)
    share = one_row(con.execute(SHARE_SQL, [month, project]))[0]
    zero_cents = _minor(0, places)
    table = {
        "rows": jobs,
        "currency": currency,
        "timezone": timezone,
        "jobs": len(jobs),
        "cost": sum((j["cost"] for j in jobs), zero_cents),
        "idle_cost": sum((j["idle_cost"] for j in jobs), zero_cents),
        "gpu_hours": sum((j["gpu_hours"] for j in jobs), Decimal("0.0")),
        "idle_gpu_hours": sum((j["idle_gpu_hours"] for j in jobs), Decimal("0.0")),
        "density": _ratio(all_jobs_density),
        "unallocated_share": _minor(share, places) if share is not None else None,
        "fit_jobs": sum(1 for j in jobs if j["fits"]),
        "fit_saving": sum((j["fits"]["saving"] for j in jobs if j["fits"]), zero_cents),
        "fit_margin": float(gpufit.FIT_MARGIN),
    }
    table["listing"] = listing(table)
    return table


# --------------------------------------------------------------------------- the PDF appendix
#
# The PDF prints the job list as aligned text (listing.py), in blocks of a page or less, each
# with the column header; the HTML keeps the sortable table.

LISTING_HEADER = ("Job", "User", "Model", "GPU model", "Smaller GPU (saving)", "Image tag", "Digest", "Start", "End",
                  "GPU-hours", "Density", "Idle cost", "Cost", "mAP50", "mAP50-95")
_RIGHT = frozenset(LISTING_HEADER[9:])
HEADING_PT = 150  # the appendix's heading and notes on its first page (the smaller-GPU note too)


def listing(table: dict) -> dict:
    """The job list as aligned text lines for the PDF (listing.aligned): `header`, `blocks`
    of row lines, the `rule` and `total` lines, and the `font_size` (pt, at most 7) that
    fits the widest line on a landscape A4 page."""
    cash = Currency(table["currency"]).format

    cells = []
    for j in table["rows"]:
        fits = j.get("fits")
        cells.append((
            j["job_id"], j.get("user_name") or "", j.get("model_type") or "", j.get("gpu_models") or "",
            f"{gpufit.short_name(fits['model'])} ({cash(fits['saving'])})" if fits else "",
            j.get("image_tag") or "", short_digest(j.get("image_digest")),
            j["start"]["text"] if j["start"] else "", j["end"]["text"] if j["end"] else "",
            f"{j['gpu_hours']:,.1f}", "" if j["density"] is None else f"{j['density'] * 100:.1f} %",
            cash(j["idle_cost"]), cash(j["cost"]), "" if j["map50"] is None else f"{j['map50']:.3f}",
            "" if j["map50_95"] is None else f"{j['map50_95']:.3f}"))
    fit_total = f"{table['fit_jobs']} ({cash(table['fit_saving'])})" if table.get("fit_jobs") else ""
    total = ("Total", f"{table['jobs']} job{'' if table['jobs'] == 1 else 's'}", "", "", fit_total, "", "", "", "",
             f"{table['gpu_hours']:,.1f}", "" if table["density"] is None else f"{table['density'] * 100:.1f} %",
             cash(table["idle_cost"]), cash(table["cost"]), "", "")
    return aligned(LISTING_HEADER, cells, total, _RIGHT, LANDSCAPE, HEADING_PT)


def short_digest(digest: str | None) -> str:
    """A digest as its algorithm and first 12 hex digits ('sha256:c4c608487dc4'), for where a
    whole one (71 characters for sha256) does not fit; the CSV and the HTML keep it whole."""
    if not digest:
        return ""
    return digest[:digest.find(":") + 1 + SHORT_HEX]


def _when(moment: dt.datetime | None, tz: ZoneInfo) -> dict | None:
    """A moment in the report's time zone: `text` to show, `iso` (ISO 8601 with the offset,
    for the CSV) and `epoch` (seconds, to sort by)."""
    if moment is None:
        return None
    local = moment.astimezone(tz)
    return {"text": local.strftime("%Y-%m-%d %H:%M"), "iso": local.isoformat(), "epoch": int(moment.timestamp())}


def _plain(value: Any, decimals: int = RATIO_DECIMALS) -> str:
    """A number as plain digits ('' for none): Decimals as stored, floats to `decimals`."""
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return f"{value:f}"
    out = f"{value:.{decimals}f}"
    return out[1:] if out.startswith("-") and float(out) == 0 else out


def csv_rows(table: dict) -> list[dict[str, str]]:
    """The CSV's rows as {column: text}, in the report's order."""
    out = []
    for j in table["rows"]:
        out.append({
            "job_id": j["job_id"], "user": j["user_name"] or "", "model_type": j["model_type"] or "",
            "gpu_models": j["gpu_models"] or "", "image_tag": j["image_tag"] or "",
            "image_digest": j["image_digest"] or "",
            "start": j["start"]["iso"] if j["start"] else "", "end": j["end"]["iso"] if j["end"] else "",
            "gpu_hours": _plain(j["gpu_hours"]), "density": _plain(j["density"]),
            "idle_cost": _plain(j["idle_cost"]), "cost": _plain(j["cost"]), "currency": table["currency"],
            "map50": _plain(j["map50"]), "map50_95": _plain(j["map50_95"]),
        })
    return out


def to_csv(table: dict) -> str:
    """The job table as CSV text: RFC 4180 (CRLF line ends, quotes where needed), a header
    row, one row per job; text cells neutralized against formula injection
    (yolocost.csvsafe), numbers as plain decimals, money in whole minor units of the
    currency. Nothing depends on when it is written: the same database gives the same bytes."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in csv_rows(table):
        writer.writerow([csv_safe(row[c]) if c in _TEXT else row[c] for c in CSV_COLUMNS])
    return buf.getvalue()
