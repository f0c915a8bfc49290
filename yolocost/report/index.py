"""The month index: `index.html` in a month folder, listing what yolocost wrote there.

It lists the admin report, each project's report under the project's name as written (a
file name carries only its slug), the summary, the finance CSV and any per-project CSVs,
with relative links and sizes; and says what the files are of: the cluster, the currency,
the month's total cost (the cent ledger's sum, the cents the admin report prints) and the
data the month holds (first and last interval in local time, days with data out of the
month's days, "partial" when that is not the whole month). Read from the intermediate
tables and the ledger, which keep a month after its raw rows are pruned.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import quote
from zoneinfo import ZoneInfo

import duckdb

from .. import db
from ..monthstr import Month

INDEX = "index.html"
SUMMARY = "summary.html"
# the files of a month folder that yolocost writes (and so the index lists)
_PROJECT_FILE = re.compile(r"project-(?P<slug>.+)\.(?P<ext>html|pdf|csv)")
_KIND = {"html": "HTML", "pdf": "PDF", "csv": "CSV"}


@dataclass(frozen=True)
class Coverage:
    """What usage data a month holds, in the configured time zone."""

    first: dt.datetime  # start of the first interval with data
    last: dt.datetime  # end of the last interval with data
    days: int  # local days with data
    month_days: int
    partial: bool
    timezone: str


def coverage(con: duckdb.DuckDBPyConnection, month: str, timezone: str, grain_seconds: int) -> Coverage | None:
    """The month's data coverage from the marts, which archived months keep (None: no data)."""
    with db.models_needed("the month index"):
        first, last, days = db.one_row(con.execute(
            "SELECT min(first_interval), max(last_interval), count(DISTINCT day) FROM mart_host_day WHERE month = ?",
            [month]))
    if first is None:
        return None
    tz = ZoneInfo(timezone)
    shown = Month.parse(month)
    month_days = shown.days
    start = dt.datetime(shown.year, shown.month, 1, tzinfo=tz)
    end = dt.datetime(shown.next().year, shown.next().month, 1, tzinfo=tz)
    first = first.astimezone(tz)
    last = (last + dt.timedelta(seconds=grain_seconds)).astimezone(tz)
    partial = days < month_days or first > start or last < end
    return Coverage(first, last, int(days), month_days, partial, timezone)


def human_size(size: float) -> str:
    """Bytes as a reader reads them: '812 B', '4.7 kB', '5.2 MB' (powers of 1000)."""
    if size < 1000:
        return f"{size} B"
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")


def _entry(name: str, size: int) -> dict:
    ext = name.rsplit(".", 1)[-1]
    return {"name": name, "href": quote(name), "size": size, "size_text": human_size(size),
            "kind": _KIND.get(ext, ext.upper())}


def listing(month: str, files: dict[str, int], slugs: dict[str, str]) -> dict:
    """The index's documents from `files` ({file name: size}) of the month folder: the admin
    report, the summary, the finance CSV, then one row per project (by name; a slug no
    project of the month has shows as its file name). `slugs` maps project name -> slug."""
    names = {s: p for p, s in slugs.items()}
    finance_csv = f"finance-{month}.csv"

    def files_of(*wanted: str) -> list[dict]:
        return [_entry(n, files[n]) for n in wanted if n in files]

    documents = []
    for title, audience, wanted in (
        ("Admin report", "department admins: every project", ("admin.html", "admin.pdf")),
        ("Summary", "one page: totals and cost by project", (SUMMARY,)),
        ("Finance CSV", "FOCUS columns, one row per day x project x GPU model", (finance_csv,)),
    ):
        found: list = files_of(*wanted)  # then a project's file names
        if found:
            documents.append({"title": title, "audience": audience, "files": found})
    projects: dict[str, list[str]] = {}
    for name in files:
        m = _PROJECT_FILE.fullmatch(name)
        if m:
            projects.setdefault(m.group("slug"), []).append(name)
    rows = []
    order = {"html": 0, "pdf": 1, "csv": 2}
    for slug_, found in projects.items():
        found.sort(key=lambda n: order[n.rsplit(".", 1)[-1]])
        rows.append({"project": names.get(slug_), "slug": slug_, "files": [_entry(n, files[n]) for n in found]})
    rows.sort(key=lambda r: (r["project"] is None, r["project"] or r["slug"]))
    return {"documents": documents, "projects": rows}


def month_files(folder: Path, staged: Sequence[Path], current_slugs: Iterable[str], month: str) -> dict[str, int]:
    """{file name: size} of the month folder as it will be once the staged files are moved in:
    the staged files, and the files yolocost writes that are there already (a report of a
    project the month no longer holds is left out: the run removes it)."""
    current = set(current_slugs)
    out: dict[str, int] = {}
    known = {"admin.html", "admin.pdf", SUMMARY, f"finance-{month}.csv"}
    for path in sorted(folder.iterdir()):
        m = _PROJECT_FILE.fullmatch(path.name)
        if path.name in known or (m and (m.group("ext") == "csv" or m.group("slug") in current)):
            try:
                if path.is_file():  # follows a link: a report published elsewhere through one
                    out[path.name] = path.stat().st_size
            except OSError:
                continue
    for path in staged:
        out[path.name] = path.stat().st_size
    out.pop(INDEX, None)
    return out
