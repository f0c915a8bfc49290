"""Python values written into SQL text as literals.

DuckDB 1.5 imports pandas and pyarrow (74 MiB, most of a second) the first time it binds a
query parameter, whatever its type, so the commands that need neither (ingest, load of the
settings) write their few values into the statement instead. Each literal keeps the value
exactly: strings quoted (a NUL goes in as chr(0)), floats through their shortest repr,
decimals with their own scale, times with their offset."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal


def literal(value: object) -> str:
    """`value` (None, bool, int, float, Decimal, str, date or datetime) as a DuckDB SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return f"'{value!r}'::DOUBLE"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"no SQL literal for {value}")
        scale = max(0, -int(value.as_tuple().exponent))
        return f"'{value:f}'::DECIMAL(38, {min(scale, 38)})"
    if isinstance(value, str):
        return "(" + " || chr(0) || ".join("'" + part.replace("'", "''") + "'" for part in value.split("\0")) + ")"
    if isinstance(value, dt.datetime):
        kind = "TIMESTAMP" if value.tzinfo is None else "TIMESTAMPTZ"
        return f"'{value.isoformat(sep=' ')}'::{kind}"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def values(rows: list[tuple]) -> str:
    """Rows as the body of a VALUES list: `(a, b), (c, d)`."""
    return ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
