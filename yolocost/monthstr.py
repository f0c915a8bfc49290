"""Month names as the commands and the reports take them: `YYYY-MM` strings.

Kept below every other module (it imports none of them), so that any layer can check a
month given on the command line or in a query parameter the same way."""

from __future__ import annotations

import re

from .errors import YolocostError

MONTH_RE = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def is_month(text: object) -> bool:
    """Whether `text` is a month written YYYY-MM (month 01 to 12)."""
    return isinstance(text, str) and MONTH_RE.fullmatch(text) is not None


def check_month(month: str) -> str:
    """The month itself, or a one-line error for anything that is not YYYY-MM."""
    if not is_month(month):
        raise YolocostError(f"--month: {month!r} is not a month (YYYY-MM)")
    return month
