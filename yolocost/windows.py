"""The time a command acts on, from the text of its options: the window an ingest, a load or
a build replaces (a calendar month, or two ISO instants) and the time retention counts back
from, as UTC. A bad or contradictory value is one line naming the option (`what`)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from . import months
from .config import Config
from .errors import YolocostError
from .monthstr import Month

UTC = dt.timezone.utc
Window = tuple[dt.datetime, dt.datetime]


def month_window(config: Config, month: str, what: str = "the month") -> Window:
    """[first, next first) of a calendar month in the configured time zone, as UTC instants
    (yolocost.months.window), for a month from 1970-01 to 9998-12."""
    if not 1970 <= Month.parse(month, what).year <= 9998:
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


def ingest_window(config: Config, month: str | None, start: str | None, end: str | None) -> Window:
    """[start, end) in UTC from `--month` (a calendar month in the configured time zone) or from
    `--start` and `--end` (both, and not with --month)."""
    if month and (start or end):
        raise YolocostError("give either --month or --start/--end, not both")
    if month:
        return month_window(config, month, "--month")
    if start and end:
        return parse_instant(start, config, "--start"), parse_instant(end, config, "--end")
    raise YolocostError("give the window: --month YYYY-MM, or --start and --end")


def load_window(config: Config, window: tuple[str, str] | None) -> Window | None:
    """[start, end) in UTC from `--window START END`; None without it (the load takes the span
    of its rows)."""
    if not window:
        return None
    return parse_instant(window[0], config, "--window START"), parse_instant(window[1], config, "--window END")


def retention_now(config: Config, as_of: str | None, now: dt.datetime) -> dt.datetime:
    """The time retention counts back from: `--as-of`, else now; never a time still to come."""
    if as_of is None:
        return now
    when = parse_instant(as_of, config, "--as-of")
    if when > now:
        raise YolocostError(f"--as-of {as_of} is in the future: retention counts back from a time that has come")
    return when
