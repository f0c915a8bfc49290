"""Staging: the fetched rows as temp tables `incoming_<table>`, shaped like the raw tables.

What the write replaces the window with; the loader's checks and `load.replace_window` read
them from there.
"""

from __future__ import annotations

import contextlib

import duckdb

from ..attribution import JobLabels
from ..config import Config
from ..db import one_row
from ..sqltext import literal
from .rows import Coded, Columns, coded


def stage(con: duckdb.DuckDBPyConnection, table: str, data: Columns, params: list | None = None,
          source: str = "SELECT * FROM fetched") -> None:
    """The temp table incoming_<table>, shaped like the raw table: the columns of `source` (a
    query of `data`, seen as `fetched`) cast to the raw table's types, absent ones NULL.
    Better no `params`: DuckDB 1.5 imports pandas and pyarrow to bind them (sqltext.py)."""
    scanned = {name: column.codes if isinstance(column, Coded) else column for name, column in data.items()}
    columns = ", ".join(column.sql(name) + f' AS "{name}"' if isinstance(column, Coded) else f'"{name}"'
                        for name, column in data.items())
    source = f"WITH fetched AS NOT MATERIALIZED (SELECT {columns} FROM fetched_codes) SELECT * FROM ({source})"
    with registered(con, "fetched_codes", scanned):
        types = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall()
        present = {d[0] for d in con.execute(f"SELECT * FROM ({source}) LIMIT 0", params).description}
        select = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' if c in present else f'CAST(NULL AS {t}) AS "{c}"'
                           for c, t in types)
        # one CREATE ... AS statement: DuckDB 2.0.0 loses rows that a parallel INSERT puts into
        # a temp table created earlier in the same transaction (seen above ~100k rows)
        con.execute(f"CREATE OR REPLACE TEMP TABLE incoming_{table} AS SELECT {select} FROM ({source})", params)


@contextlib.contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, data: Columns):
    """`data` readable as the view `name` for the block. A failed statement aborts the
    transaction, and unregistering then fails too: that error must not hide the first."""
    con.register(name, data)
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister(name)


def stage_usage(con: duckdb.DuckDBPyConnection, config: Config, rows: Columns) -> int:
    """`incoming_gpu_usage` (raw rows, in order) from the grouped sums. Returns its row count."""
    scrape = config.prometheus.scrape_interval_seconds
    stage(con, "gpu_usage", rows, None, f"""
        WITH timed AS (
            SELECT *, (seconds_us * 0.000001)::DECIMAL(12, 6) AS seconds,
                   least(round(busy * {scrape}, 6)::DECIMAL(12, 6), seconds) AS busy_seconds
            FROM fetched
        )
        SELECT to_timestamp(interval_start) AS interval_start, {literal(config.cluster)}::VARCHAR AS cluster, hostname, gpu_uuid, gpu_index,
               gpu_model, mig_profile, job_id, seconds AS seconds_present,
               least(greatest(util / samples, 0), 100) AS util_mean,
               busy_seconds AS seconds_busy,
               least(round(idle * {scrape}, 6)::DECIMAL(12, 6), seconds - busy_seconds) AS seconds_idle,
               mem_peak AS mem_peak_mib, round(power / samples, 3) AS power_mean_w,
               round(energy) AS energy_mj, round(power_energy * {scrape} * 1000) AS energy_power_mj
        FROM timed""")
    return one_row(con.execute("SELECT count(*) FROM incoming_gpu_usage"))[0]


def stage_jobs(con: duckdb.DuckDBPyConnection, config: Config, labels: dict[str, JobLabels]) -> int:
    """`incoming_jobs`: every owner of the incoming usage rows with its labels, its most used
    GPU model and (where no request is known) the most GPUs it held at once."""
    per_job = con.execute(
        "SELECT job_id, mode(gpu_model), max(gpus) FROM (SELECT job_id, interval_start, any_value(gpu_model) "
        "AS gpu_model, count(DISTINCT gpu_uuid) AS gpus FROM incoming_gpu_usage WHERE job_id IS NOT NULL "
        "GROUP BY ALL) GROUP BY job_id ORDER BY job_id"
    ).fetchall()
    cols: dict[str, list] = {k: [] for k in ("job_id", "cluster", "project", "user_name", "model_type", "image_tag",
                                             "image_digest", "gpu_request", "gpu_model", "epochs", "imgsz", "batch")}
    for job_id, model, gpus in per_job:
        j = labels.get(job_id)
        values = dict(job_id=job_id, cluster=config.cluster, gpu_model=model)
        if j is not None:
            values.update(project=j.project, user_name=j.user_name, model_type=j.model_type,
                          image_tag=j.image_tag, image_digest=j.image_digest,
                          gpu_request=j.gpu_request or gpus, epochs=j.epochs, imgsz=j.imgsz, batch=j.batch)
        else:
            values["gpu_request"] = gpus
        for k in cols:
            cols[k].append(values.get(k))
    stage(con, "jobs", {k: coded(v) for k, v in cols.items()})
    return len(per_job)
