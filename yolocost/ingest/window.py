"""The ingest window from what a user typed: a calendar month or two ISO instants, as UTC.

Kept apart from the fetch so that commands which only need a window (load, build, prune)
read it the same way. Messages name the field (`what`); a command passes its option's name
there when it wants the message to name the option.
"""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

from .. import months
from ..config import Config
from ..errors import YolocostError

UTC = dt.timezone.utc


def month_window(config: Config, month: str, what: str = "the month") -> tuple[dt.datetime, dt.datetime]:
    """[first, next first) of a calendar month in the configured time zone, as UTC instants."""
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month or ""):
        raise YolocostError(f"{what} must read YYYY-MM, got {month!r}")
    if not 1970 <= int(month[:4]) <= 9998:
        raise YolocostError(f"{what} must lie between 1970-01 and 9998-12, got {month!r}")
    return months.window(config, month)


def parse_instant(text: str, config: Config, what: str) -> dt.datetime:
    """An ISO date or date-time; without an offset it is read in the configured time zone."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise YolocostError(f"{what} must be an ISO date or date-time such as 2026-10-01T00:00, got {text!r}") from None
    out_of_range = YolocostError(f"{what} must lie between 1970 and 9998 (UTC), got {text!r}")
    if not 1970 <= value.year <= 9998:  # outside, the arithmetic on UTC instants overflows
        raise out_of_range
    if value.tzinfo is None:
        value = value.replace(tzinfo=ZoneInfo(config.timezone))
    value = value.astimezone(UTC)
    if value.year < 1970:  # 1970-01-01 east of UTC: before the epoch
        raise out_of_range
    return value
