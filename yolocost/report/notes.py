"""What a month's bill was made without: the ingest's notes (`ingest_notes`, schema.sql) of the
windows that overlap the month, for the reports to say."""

from __future__ import annotations

from decimal import Decimal

import duckdb

from .. import months
from ..config import Config
from ..sqltext import literal


def month_notes(con: duckdb.DuckDBPyConnection, config: Config, month: str) -> dict | None:
    """{"uncounted": [{hostname, gpu_uuid, samples, seconds}], "uncounted_seconds",
    "partial": [the stores' first warnings]} for the month, or None when it has none."""
    if not months.has_table(con, "ingest_notes"):  # a database of an older version
        return None
    start, end = months.window(config, month)
    overlap = f"window_start < {literal(end)} AND window_end > {literal(start)} AND cluster = {literal(config.cluster)}"
    uncounted = con.execute(
        f"SELECT hostname, gpu_uuid, sum(samples), sum(seconds) FROM ingest_notes WHERE kind = 'uncounted' AND {overlap} "
        "GROUP BY ALL ORDER BY 4 DESC, 1, 2").fetchall()
    partial = [d for (d,) in con.execute(
        f"SELECT DISTINCT detail FROM ingest_notes WHERE kind = 'partial' AND {overlap} ORDER BY 1").fetchall()]
    if not uncounted and not partial:
        return None
    rows = [{"hostname": h, "gpu_uuid": g, "samples": int(n), "seconds": Decimal(s)} for h, g, n, s in uncounted]
    return {"uncounted": rows, "uncounted_seconds": sum((r["seconds"] for r in rows), Decimal(0)), "partial": partial}
