"""The time a command acts on, from the text of its options: the window an ingest or a load
replaces and the time retention counts back from. A bad or contradictory value is one line
naming the option."""

from __future__ import annotations

import datetime as dt

from .config import Config
from .errors import YolocostError
from .ingest import month_window, parse_instant

Window = tuple[dt.datetime, dt.datetime]


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
