"""Months as the commands, the reports and the queries take them: `Month`, written YYYY-MM.

The one definition of how a month is spelt. Kept below every other module (it imports none
of them), so that any layer reads a month given on the command line or in a query parameter
the same way. A bad month is one message naming the field it came from (a query parameter
says it the way it says any parameter of the wrong type). Range rules (which years
a command accepts) stay with the commands that need them."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from .errors import YolocostError

_SPELLING = re.compile(r"([0-9]{4})-(0[1-9]|1[0-2])")  # four ASCII digits of year, a month 01 to 12


@dataclass(frozen=True, order=True)
class Month:
    """A calendar month, ordered by time; `str()` writes it YYYY-MM."""

    year: int
    month: int  # 1 to 12

    def __post_init__(self) -> None:
        if not 1 <= self.month <= 12:
            raise ValueError(f"no month {self.month} in a year")

    @classmethod
    def parse(cls, text: object, field: str = "--month") -> Month:
        """The month `text` names, or a one-line error naming `field` (an option, a parameter)."""
        found = _SPELLING.fullmatch(text) if isinstance(text, str) else None
        if found is None:
            raise YolocostError(f"{field} must read YYYY-MM (month 01 to 12), got {text!r}")
        return cls(int(found[1]), int(found[2]))

    @classmethod
    def containing(cls, day: dt.date) -> Month:
        """The month a date (or the local date of a date-time) falls in."""
        return cls(day.year, day.month)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"

    def previous(self) -> Month:
        return Month(self.year - 1, 12) if self.month == 1 else Month(self.year, self.month - 1)

    def next(self) -> Month:
        return Month(self.year + 1, 1) if self.month == 12 else Month(self.year, self.month + 1)

    @property
    def first_day(self) -> dt.date:
        return dt.date(self.year, self.month, 1)

    @property
    def last_day(self) -> dt.date:
        return self.next().first_day - dt.timedelta(days=1)

    @property
    def days(self) -> int:
        """Calendar days in the month (28 to 31)."""
        return self.last_day.day


def is_month(text: object) -> bool:
    """Whether `text` is a month written YYYY-MM (month 01 to 12)."""
    return isinstance(text, str) and _SPELLING.fullmatch(text) is not None


def check_month(text: object, field: str = "--month") -> str:
    """`text` itself when it is a month written YYYY-MM, else the one-line error of Month.parse."""
    return str(Month.parse(text, field))
