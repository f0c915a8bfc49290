"""Run ad-hoc SQL against the database: a named query from `queries/`, a .sql file or a string.

Queries run on a read-only connection unless the caller asks for writes. Each file in
`queries/` starts with a header the listing and the parameter binding read:

    -- title: Top idle wasters
    -- description: Jobs whose GPUs sat under the idle threshold longest, and the cost.
    -- param: month MONTH: the month, YYYY-MM
    -- param: limit INTEGER = 20: how many rows
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import duckdb

from . import db
from .config import Config
from .errors import YolocostError
from .monthstr import is_month
from .resources import shipped_dir

_PARAM = re.compile(r"^(?P<name>[A-Za-z_]\w*)(?:\s+(?P<type>[A-Za-z]+))?(?:\s*=\s*(?P<default>[^:]*?))?\s*(?::\s*(?P<doc>.*))?$")
def _month(text: str) -> str:
    if not is_month(text):
        raise ValueError(text)
    return text


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


_TYPES: dict[str, Callable[[str], Any]] = {"VARCHAR": str, "MONTH": _month, "INTEGER": int, "DOUBLE": _finite,
                                           "DATE": dt.date.fromisoformat}


@dataclass(frozen=True)
class Param:
    name: str
    type: str = "VARCHAR"
    default: str | None = None
    doc: str = ""

    def convert(self, raw: str) -> Any:
        try:
            return _TYPES[self.type](raw)
        except ValueError:
            raise YolocostError(f"parameter {self.name}: {raw!r} is not a valid {self.type}") from None


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    title: str = ""
    description: str = ""
    params: tuple[Param, ...] = field(default_factory=tuple)
    path: Path | None = None


def parse_query(sql: str, name: str, path: Path | None = None) -> Query:
    """Read the `-- key: value` header of a query file."""
    meta: dict[str, str] = {}
    params: list[Param] = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            if line.strip():
                break
            continue
        key, _, value = line[2:].strip().partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "param":
            m = _PARAM.match(value)
            if not m:
                raise YolocostError(f"{path or name}: bad param header {value!r}")
            ptype = (m["type"] or "VARCHAR").upper()
            if ptype not in _TYPES:
                raise YolocostError(f"{path or name}: param {m['name']}: unknown type {ptype}")
            params.append(Param(m["name"], ptype, m["default"], (m["doc"] or "").strip()))
        elif key in ("title", "description"):
            meta[key] = (meta.get(key, "") + " " + value).strip()
    return Query(name, sql, meta.get("title", ""), meta.get("description", ""), tuple(params), path)


def query_dirs(extra: Path | None = None) -> list[Path]:
    dirs = [extra] if extra else []
    return dirs + [shipped_dir("queries")]


def available(extra: Path | None = None) -> list[Query]:
    """Named queries, the user's folder first (its files override shipped ones by name)."""
    return scan(extra)[0]


def scan(extra: Path | None = None) -> tuple[list[Query], dict[str, str]]:
    """The named queries, and a one-line problem per name whose file cannot be read or
    parsed: one bad file (not UTF-8, a bad header) must not break the others."""
    seen: dict[str, Query] = {}
    problems: dict[str, str] = {}
    for folder in query_dirs(extra):
        for path in sorted(folder.glob("*.sql")):
            if path.stem in seen or path.stem in problems:
                continue
            try:
                seen[path.stem] = parse_query(read_sql(path), path.stem, path)
            except YolocostError as exc:
                problems[path.stem] = str(exc)
    return sorted(seen.values(), key=lambda q: q.name), problems


def read_sql(path: Path) -> str:
    """A query file's text; unreadable or not UTF-8 is a one-line error naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise YolocostError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                            "save the query as UTF-8") from None
    except OSError as exc:
        raise YolocostError(f"{path}: cannot read: {exc.strerror or exc}") from None


def resolve(target: str, extra: Path | None = None) -> Query:
    """A named query, a path to a .sql file, or literal SQL."""
    found, problems = scan(extra)
    by_name = {q.name: q for q in found}
    if target in by_name:
        return by_name[target]
    if target in problems:
        raise YolocostError(f"query {target}: {problems[target]}")
    if target.endswith(".sql"):
        path = Path(target)
        if not path.is_file():
            raise YolocostError(f"{target}: no such query file (and no named query {path.stem!r})")
        return parse_query(read_sql(path), path.stem, path)
    if target.lstrip().startswith("--"):  # SQL that opens with a comment (no word boundary after --)
        return parse_query(target, "sql")
    if re.match(r"^\s*(select|with|from|pivot|unpivot|describe|show|summarize|explain|table|values|"
                r"insert|update|delete|create|drop|alter|copy|export|attach|set)\b", target, re.I):
        return parse_query(target, "sql")
    names = ", ".join(sorted(by_name)) or "none"
    raise YolocostError(f"unknown query {target!r}: not a named query ({names}), a .sql file or SQL")


def bind(query: Query, given: dict[str, str]) -> dict[str, Any]:
    """Values for the query's declared parameters. A query that declares none (SQL given on
    the command line, a file without a header) takes any name as text; one that declares
    some refuses a name it does not declare, so a typo is not silently ignored."""
    values: dict[str, Any] = {}
    declared = {p.name: p for p in query.params}
    unknown = sorted(set(given) - set(declared)) if declared else []
    if unknown:
        raise YolocostError(f"query {query.name} has no parameter {', '.join(unknown)} "
                            f"(it takes {', '.join(declared)})")
    for name, raw in given.items():
        values[name] = declared[name].convert(raw) if name in declared else raw
    for p in query.params:
        if p.name not in values:
            if p.default is None:
                raise YolocostError(f"query {query.name} needs --param {p.name}=... ({p.doc or p.type})")
            values[p.name] = p.convert(p.default)
    used = set(re.findall(r"\$([A-Za-z_]\w*)", re.sub(r"--[^\n]*", "", query.sql)))
    return {k: v for k, v in values.items() if k in used}


def run(database: Path, query: Query, params: dict[str, str], *, write: bool = False,
        timezone: str | None = None, memory_limit: str | None = None,
        config: Config | None = None) -> tuple[list[str], list[tuple]]:
    """Run a query; returns column names and rows. Read-only unless `write`. Timestamps come
    back in `timezone` (the configured one: months and days in the marts are cut there).
    `memory_limit` is the configured [database] memory_limit, which a query obeys too. With
    `config`, a month the query takes (a MONTH parameter) built with other settings or prices
    than the config's is refused (yolocost.months.as_built)."""
    values = bind(query, params)
    if _no_statement(query.sql):
        raise YolocostError(f"query {query.name}: holds no SQL statement (only comments or blank lines)")
    con = db.connect(database, read_only=not write, sandboxed=not write, memory_limit=memory_limit,
                     timezone=timezone or "UTC")
    try:
        if config is not None:
            _check_months(con, config, query, values)
        try:
            cur = con.execute(query.sql, values)
            if cur.description is None:
                return [], []
            return [d[0] for d in cur.description], cur.fetchall()
        except duckdb.Error as exc:  # raised while executing or while reading the rows
            first = str(exc).splitlines()[0]
            if not write and "read-only" in first.lower():
                first += " (add --write to allow changes)"
            if not write and "configuration has been locked" in first:
                first += " (a read-only query runs under the configured settings, [database] memory_limit among them)"
            raise YolocostError(f"query {query.name}: {first}") from None
    finally:
        con.close()


def _check_months(con: duckdb.DuckDBPyConnection, config: Config, query: Query, values: dict[str, Any]) -> None:
    """Refuse a month parameter naming a month whose stored figures are stale."""
    from . import months

    for p in query.params:
        if p.type == "MONTH" and p.name in values:
            months.as_built(con, config, values[p.name])


def _no_statement(sql: str) -> bool:
    """Whether the SQL is only comments and blanks (DuckDB would return no result at all)."""
    try:
        return not duckdb.extract_statements(sql)
    except duckdb.Error:
        return False  # a syntax error: running it gives DuckDB's message
