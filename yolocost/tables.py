"""Results as text for a terminal, CSV or JSON: the one renderer of the commands that print
rows (`query`, `whatif`, `estimate`).

- JSON (`json_text`): characters as they are, a one-space indent; exact decimals as text,
  times in ISO 8601, NaN and infinity as null (`plain`).
- CSV (`to_csv`): text cells guarded against formula injection (`csvsafe.csv_safe`), nested
  values (lists, structs) as their JSON text.
- Text (`to_table`): aligned columns two spaces apart, numbers right-aligned, East Asian wide
  characters counted as two columns (`aligned`); an exact decimal with the digits it has, as
  CSV and JSON write it (thousands grouped).
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import unicodedata
from typing import Any, Callable, Mapping, Sequence

from .csvsafe import csv_safe


def plain(value: Any) -> Any:
    """A value as JSON has it: exact decimals as text, times in ISO 8601, nested values too."""
    if isinstance(value, decimal.Decimal):
        return f"{value:f}"  # the digits as stored: 0.000000000, where str() writes 0E-9
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # UUID, and whatever else a query returns


def json_text(value: Any) -> str:
    """`value` as the commands print JSON (no newline at the end)."""
    return json.dumps(plain(value), ensure_ascii=False, indent=1)


def _csv_cell(value: Any) -> Any:
    """A CSV cell: nested values (lists, structs) as their JSON text."""
    value = plain(value)
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


def to_csv(columns: list[str], rows: list[tuple]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_safe(c) for c in columns])  # a PIVOT puts label values into the header
    for row in rows:
        writer.writerow([csv_safe(v) if isinstance(v, str) else _csv_cell(v) for v in row])
    return buf.getvalue()


def to_json(columns: list[str], rows: list[tuple]) -> str:
    return json_text([{c: v for c, v in zip(columns, row)} for row in rows])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if value != 0 and abs(value) < 0.001:  # would read as 0 at four decimals
            return f"{value:.3g}"
        return f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 1e15 else repr(value)
    if isinstance(value, decimal.Decimal):  # as stored: 0.002 (a dinar ledger's amount) is not 0.00
        return f"{value:,f}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(plain(value), ensure_ascii=False)
    return str(value)


def display_width(text: str) -> int:
    """Columns a string takes in a terminal: East Asian wide characters take two, combining
    marks and invisible format characters (a zero-width space) none."""
    return sum(0 if unicodedata.category(ch) in ("Mn", "Me", "Cf") else 2 if unicodedata.east_asian_width(ch) in "WF"
               else 1 for ch in text)


def column_widths(lines: Sequence[Sequence[str]]) -> list[int]:
    """The display width of each column: its widest cell among `lines` (header included)."""
    return [max(display_width(line[i]) for line in lines) for i in range(len(lines[0]))]


def pad(text: str, width: int, to_right: bool) -> str:
    """`text` filled with blanks to `width` display columns, on the left when `to_right`."""
    fill = " " * (width - display_width(text))
    return fill + text if to_right else text + fill


def aligned(values: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    """One line of cells padded to `widths`, two spaces apart, right-aligned where `right`
    says; no blanks at the end."""
    return "  ".join(pad(v, w, r) for v, w, r in zip(values, widths, right)).rstrip()


def to_table(columns: list[str], rows: list[tuple], max_width: int = 48,
             shown_as: Mapping[int, Callable[[Any], str]] | None = None) -> str:
    """An aligned text table; numbers right-aligned, long cells cut with an ellipsis.
    `shown_as` maps a column's index to how its values are written (e.g. money in the
    currency's decimals); the rest are written by type."""
    if not columns:
        return "(no result)\n"
    writers = [(shown_as or {}).get(i, _cell) for i in range(len(columns))]
    cells = [[_cell(v) if v is None else write(v) for v, write in zip(row, writers)] for row in rows]
    cells = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in cells]
    numeric = [all(isinstance(r[i], (int, float, decimal.Decimal)) or r[i] is None for r in rows) for i in range(len(columns))]
    widths = column_widths([columns, *cells])
    out = [aligned(columns, widths, numeric), "  ".join("-" * w for w in widths)]
    out += [aligned(row, widths, numeric) for row in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"


FORMATTERS = {"table": to_table, "csv": to_csv, "json": to_json}
