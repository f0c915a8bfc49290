"""Reading rendered reports in tests: a section of a page, its table cells as text, and the
figures a report collects (yolocost.report.sections.collect) from a built database."""

from __future__ import annotations

import html
import re
from pathlib import Path

import duckdb

from yolocost import queries
from yolocost.report import sections

_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S)
_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)


def section(page: str, sid: str) -> str:
    """The inside of <section id="sid"> of a rendered page."""
    return re.search(rf'<section id="{sid}">(.*?)</section>', page, re.S).group(1)


def cells(fragment: str) -> list[list[str]]:
    """Each table row of an HTML fragment as its cells' text (tags dropped, entities decoded)."""
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in _CELL.findall(r)] for r in _ROW.findall(fragment)]


def collect(db, month: str, project: str | None) -> dict:
    """What a report of `project` (None: the admins') collects for `month` from a BuiltDb."""
    con = duckdb.connect(str(db.path), read_only=True)
    try:
        return sections.collect(con, month, project, timezone=db.config.timezone, grain_seconds=db.config.grain_seconds,
                                currency=db.config.currency)
    finally:
        con.close()


def named_query(db, name: str, **params: str) -> list[dict]:
    """The rows of a named query (queries/NAME.sql) run on a BuiltDb as `yolocost query` runs it."""
    columns, rows = queries.run(Path(db.path), queries.resolve(name), params)
    return [dict(zip(columns, r)) for r in rows]
