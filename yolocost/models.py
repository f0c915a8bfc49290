"""Build the layered SQL models: staging views, then intermediate and mart tables.

Each file under `sql/<layer>/` holds one SELECT and is named after the relation it creates.
Staging is a thin view over the raw tables; intermediate and mart relations are
materialized as tables so that reports, exports and ad-hoc queries read stored results.
Within a layer, a relation is built after the ones it names.

A model whose header says `-- materialized: by month` has a `month` column, and a month's
rows come from that month's usage rows alone. A build names the months it rebuilds: their
usage rows are read through a view in the schema `build_scope` that holds only those months'
rows; every by-month model is computed with names resolving to `build_scope` first, its
rows replace the same months' rows of the stored table, and `build_scope` gets a view of
just those rows for the models after it. Other months' rows, archived ones among them
(yolocost.months), are neither read nor changed. The other models (jobs,
the job totals over all months, the leaderboard) are small and rebuilt whole from the
stored tables.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import duckdb

from .db import one_row
from .errors import YolocostError
from .resources import SQL_DIR
from .sqltext import literal

LAYERS = (("staging", "VIEW"), ("intermediate", "TABLE"), ("marts", "TABLE"))
BY_MONTH = "-- materialized: by month"
SCOPE = "build_scope"  # the schema a build computes its months in (dropped before it commits)


@dataclass(frozen=True)
class Model:
    name: str
    layer: str
    kind: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def by_month(self) -> bool:
        """Built and stored one month at a time (see the module's docstring)."""
        return BY_MONTH in self.header

    @property
    def header(self) -> list[str]:
        lines = []
        for line in self.sql.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line.rstrip())
        return lines

    @property
    def description(self) -> str:
        """The header comment, without the leading `-- name:` and the materialization line."""
        lines = [line[2:].strip() for line in self.header if line != BY_MONTH]
        text = " ".join(lines)
        return text.split(":", 1)[1].strip() if text.startswith(self.name + ":") else text


def discover(sql_dir: Path = SQL_DIR) -> list[Model]:
    """All models in build order: by layer, and within a layer after their dependencies."""
    ordered: list[Model] = []
    for layer, kind in LAYERS:
        models = {p.stem: Model(p.stem, layer, kind, p) for p in sorted((sql_dir / layer).glob("*.sql"))}
        ordered.extend(_dependency_order(models))
    return ordered


def _dependency_order(models: dict[str, Model]) -> list[Model]:
    code = {name: re.sub(r"--[^\n]*", "", m.sql) for name, m in models.items()}
    deps = {
        name: {other for other in models if other != name and re.search(rf"\b{other}\b", code[name])}
        for name in models
    }
    done: list[str] = []
    while len(done) < len(models):
        ready = sorted(n for n in models if n not in done and deps[n] <= set(done))
        if not ready:
            raise RuntimeError(f"circular references among SQL models: {sorted(set(models) - set(done))}")
        done.extend(ready)
    return [models[n] for n in done]


def build(con: duckdb.DuckDBPyConnection, months: Sequence[str],
          windows: Sequence[tuple[dt.datetime, dt.datetime]],
          after_pricing: Callable[[duckdb.DuckDBPyConnection], None] = lambda _: None) -> list[Model]:
    """Rebuild `months` of every by-month model from the usage rows in `windows` (UTC
    [start, end) of those months), then every other model; call inside a transaction so
    that a failure changes nothing. `after_pricing` is called once the months' int_usage_priced
    rows are in place (names resolving to build_scope first), before the models after it."""
    models = discover()
    rows = " OR ".join(f"(interval_start >= {literal(s)} AND interval_start < {literal(e)})" for s, e in windows)
    _drop_scope(con)
    # No model's rows are stored in an order anything relies on (none ends with an ORDER BY;
    # readers sort, and the running totals order by their own keys). Preserving the insertion
    # order makes DuckDB 1.5 write a large table through its ordered batch insert: writing
    # int_usage_priced of the 1,000-GPU month took 42.6 s of operator time, 15.1 s without.
    # DuckDB 1.5 also estimates the running totals of int_usage_priced (a window over range
    # joins) far above their real size, and so built the hash table of the join that puts them
    # back on the usage rows from the 9.6M wide rows instead (11.8 s against 3.7 s the other way
    # round, and 0.4 GB more memory). Without that optimizer each join keeps the build side the
    # join order gave it (the smaller estimate); no other model was slower. Both are reset
    # before the ledger and the rest of the write.
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")
    con.execute(f"CREATE SCHEMA {SCOPE}")
    # rowid as a column: stg_gpu_usage keys its rows by the raw table's rowid
    con.execute(f"CREATE VIEW {SCOPE}.gpu_usage AS SELECT rowid AS rowid, * FROM main.gpu_usage WHERE {rows or 'false'}")
    for model in models:
        if model.layer == "staging":  # the stored views read every row; the scoped ones, the months'
            con.execute(f"CREATE OR REPLACE VIEW main.{model.name} AS\n{model.sql}")
            con.execute(f"CREATE VIEW {SCOPE}.{model.name} AS\n{model.sql}")
        elif model.by_month:
            con.execute(f"SET search_path = '{SCOPE},main'")
            _replace_months(con, model, months)
            if model.name == "int_usage_priced":
                after_pricing(con)
        else:
            con.execute("SET search_path = 'main'")
            con.execute(f"CREATE OR REPLACE TABLE main.{model.name} AS\n{model.sql}")
    # not in a `finally`: after an error the transaction is aborted, and the connection is
    # closed by its caller (a RESET then would hide the error behind "transaction aborted")
    con.execute("RESET search_path")
    con.execute("RESET preserve_insertion_order")
    con.execute("RESET disabled_optimizers")
    _drop_scope(con)
    return models


def _drop_scope(con: duckdb.DuckDBPyConnection) -> None:
    """Drop build_scope object by object: DuckDB 1.5 fails the commit of a transaction that
    dropped, by DROP SCHEMA ... CASCADE, a table named like one it wrote in main."""
    for kind, catalog in (("VIEW", "duckdb_views()"), ("TABLE", "duckdb_tables()")):
        names = con.execute(f"SELECT {'view_name' if kind == 'VIEW' else 'table_name'} FROM {catalog} "
                            f"WHERE database_name = current_database() AND schema_name = '{SCOPE}'").fetchall()
        for (name,) in names:
            con.execute(f"DROP {kind} {SCOPE}.{name}")
    con.execute(f"DROP SCHEMA IF EXISTS {SCOPE}")


def _columns(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str]:
    # literals, not parameters: the ingest binds none (see sqltext)
    return dict(con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_catalog = current_database() "
        f"AND table_schema = {literal(schema)} AND table_name = {literal(table)} ORDER BY ordinal_position").fetchall())


def _replace_months(con: duckdb.DuckDBPyConnection, model: Model, months: Sequence[str]) -> None:
    """Replace the stored rows of `months` in a by-month model with the ones its SELECT gives
    now (names resolve to build_scope first), then make build_scope.<name> a view of just those
    rows for the models built after it. Other months stay as they are; a stored table that
    lacks a column this version computes gets it (NULL in other months)."""
    name, listed = model.name, ", ".join(literal(m) for m in months) or "NULL"
    stored = _columns(con, "main", name)
    built = {r[0]: r[1] for r in con.execute(f"DESCRIBE {model.sql}").fetchall()}
    changed = [c for c, kind in built.items() if c in stored and stored[c] != kind]
    # rows of other months (archived ones among them), which this build keeps as they are
    kept = one_row(con.execute(
        f"SELECT count(*) FROM main.{name} WHERE NOT coalesce(month IN ({listed}), false)"))[0] if stored else 0
    if changed and kept:
        raise YolocostError(
            f"{name}: column(s) {', '.join(changed)} changed type in this version, and the table holds "
            f"archived months ({kept:,} rows) that cannot be rebuilt; keep the version that built them")
    if stored and not kept:
        # every stored row is of a month rebuilt now: the table is made anew rather than
        # emptied and refilled (the same rows either way). DuckDB 1.5 fills a table whose rows
        # the same transaction deleted at half the speed it creates one: int_usage_priced of
        # the 1,000-GPU month, 29.8 s of operator time to insert against 15.1 to create
        con.execute(f"DROP TABLE main.{name}")
        stored = {}
    if not stored:
        con.execute(f"CREATE TABLE main.{name} AS\n{model.sql}")
    else:
        for column, kind in built.items():
            if column not in stored:
                con.execute(f'ALTER TABLE main.{name} ADD COLUMN "{column}" {kind}')
        con.execute(f"DELETE FROM main.{name} WHERE month IN ({listed})")
        con.execute(f"INSERT INTO main.{name} BY NAME\n{model.sql}")
    con.execute(f"CREATE VIEW {SCOPE}.{name} AS SELECT * FROM main.{name} WHERE month IN ({listed})")


def mart_names() -> list[str]:
    return [m.name for m in discover() if m.layer == "marts"]
