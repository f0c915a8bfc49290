"""The generated time window: a calendar month in the cluster time zone plus one day each side.

All instants are kept as integer UTC epoch seconds; samples are numbered from the window
start, one every SAMPLE_SECONDS, and grain intervals are UTC epoch multiples of GRAIN_SECONDS.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from ..monthstr import Month
from .constants import GRAIN_SECONDS, SAMPLE_SECONDS

UTC = dt.timezone.utc


def _local_midnight(day: dt.date, tz: ZoneInfo) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=tz).timestamp())


def iso_utc(epoch: int) -> str:
    """An epoch second as ISO 8601 UTC text, e.g. 2026-09-29T22:00:00Z."""
    return dt.datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Window:
    month: str
    timezone: str
    start: int  # first sample instant (local midnight of the day before the month)
    end: int  # exclusive (local midnight of the second day of the next month)
    month_start: int
    month_end: int
    months: tuple[tuple[str, int, int], ...]  # local calendar months touched: (label, start, end)

    @classmethod
    def for_month(cls, month: str, timezone: str) -> "Window":
        this = Month.parse(month, "month")
        tz = ZoneInfo(timezone)
        first, nxt = this.first_day, this.next().first_day
        day_before = first - dt.timedelta(days=1)
        day_after = nxt + dt.timedelta(days=1)
        start, end = _local_midnight(day_before, tz), _local_midnight(day_after, tz)
        if start % GRAIN_SECONDS or end % GRAIN_SECONDS:
            raise ValueError(f"time zone {timezone}: local midnight is not on the {GRAIN_SECONDS} s grain")
        months = []
        for touched in (this.previous(), this, this.next()):
            lo = max(start, _local_midnight(touched.first_day, tz))
            hi = min(end, _local_midnight(touched.next().first_day, tz))
            months.append((str(touched), lo, hi))
        return cls(month, timezone, start, end, _local_midnight(first, tz), _local_midnight(nxt, tz), tuple(months))

    @property
    def n_samples(self) -> int:
        return (self.end - self.start) // SAMPLE_SECONDS

    @property
    def n_grains(self) -> int:
        return (self.end - self.start) // GRAIN_SECONDS

    def sample_at(self, epoch: int) -> int:
        """Index of the sample at or after an instant."""
        return -(-(epoch - self.start) // SAMPLE_SECONDS)

    def instant(self, sample: int) -> int:
        return self.start + sample * SAMPLE_SECONDS

    def local(self, day_offset: int, hour: int, minute: int = 0, second: int = 0) -> int:
        """Epoch of a local wall time `day_offset` days after the first of the month."""
        tz = ZoneInfo(self.timezone)
        day = Month.parse(self.month, "month").first_day + dt.timedelta(days=day_offset)
        return int(dt.datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=tz).timestamp())

    def local_date_midnight(self, iso_date: str) -> int:
        """Epoch of local midnight starting the given YYYY-MM-DD date (price effective dates)."""
        return _local_midnight(dt.date.fromisoformat(iso_date), ZoneInfo(self.timezone))
