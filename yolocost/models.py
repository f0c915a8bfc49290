"""Build the layered SQL models: staging views, then intermediate and mart tables.

Each file under `sql/<layer>/` holds one SELECT and is named after the relation it creates.
Staging is a thin view over the raw tables; intermediate and mart relations are
materialized as tables so that reports, exports and ad-hoc queries read stored results.
Within a layer, a relation is built after the ones it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .resources import SQL_DIR

LAYERS = (("staging", "VIEW"), ("intermediate", "TABLE"), ("marts", "TABLE"))


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
    def description(self) -> str:
        """The header comment, without the leading `-- name:`."""
        lines = []
        for line in self.sql.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line[2:].strip())
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


def build(con: duckdb.DuckDBPyConnection) -> list[Model]:
    """(Re)create every model; call inside a transaction so a failure changes nothing."""
    models = discover()
    for model in models:
        con.execute(f"CREATE OR REPLACE {model.kind} {model.name} AS\n{model.sql}")
    return models


def mart_names() -> list[str]:
    return [m.name for m in discover() if m.layer == "marts"]
