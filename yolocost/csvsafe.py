"""The CSV-injection guard every CSV yolocost writes uses (query results, the finance CSV, a
project's job CSV): a text cell a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import unicodedata
from typing import Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")  # OWASP's list, and LF and NUL that some readers skip


def csv_safe(value: Any) -> Any:
    """Neutralize a text cell a spreadsheet would run as a formula (OWASP CSV injection): a
    leading `'` makes it text.

    Also when the sign follows leading blanks (` =1+1`: some spreadsheets trim them) or is a
    fullwidth or small form (`＝`, `﹢`: some fold them to ASCII)."""
    if isinstance(value, str) and (value.startswith(_FORMULA_START) or _folded_start(value) in "=+-@"):
        return "'" + value
    return value


def _folded_start(value: str) -> str:
    """The first non-blank character as a spreadsheet may read it: ＝ and ﹦ fold to =."""
    rest = value.lstrip()
    return unicodedata.normalize("NFKC", rest[0])[:1] if rest else "x"
