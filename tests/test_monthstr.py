"""The Month type (`yolocost/monthstr.py`): the one spelling of a month, YYYY-MM."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from yolocost.errors import YolocostError
from yolocost.monthstr import Month, check_month, is_month


def test_a_month_reads_and_writes_yyyy_mm():
    month = Month.parse("2026-10")
    assert (month.year, month.month) == (2026, 10)
    assert str(month) == "2026-10" and str(Month(987, 3)) == "0987-03"
    assert month.first_day == dt.date(2026, 10, 1)
    assert Month.containing(dt.date(2026, 2, 28)) == Month(2026, 2)
    assert Month.containing(dt.datetime(2025, 12, 31, 23, 59)) == Month(2025, 12)


def test_previous_and_next_cross_the_year():
    assert str(Month.parse("2026-01").previous()) == "2025-12"
    assert str(Month.parse("2026-10").previous()) == "2026-09"
    assert str(Month.parse("2025-12").next()) == "2026-01"
    assert str(Month.parse("2026-02").next()) == "2026-03"
    assert Month(2025, 12) < Month(2026, 1) < Month(2026, 2)


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "2026-4", "26-04", "2026-04-01", " 2026-04", "march", "", None, 202604])
def test_anything_else_is_refused_naming_the_field(text):
    assert not is_month(text)
    with pytest.raises(YolocostError, match=f"^--as-month must read YYYY-MM \\(month 01 to 12\\), got {re.escape(repr(text))}$"):
        Month.parse(text, field="--as-month")
    with pytest.raises(YolocostError, match="^--month must read YYYY-MM"):
        check_month(text)


def test_check_month_gives_back_the_text():
    assert check_month("2026-10") == "2026-10" and is_month("2026-10")


def test_a_month_number_outside_1_to_12_is_no_month():
    with pytest.raises(ValueError):
        Month(2026, 13)


def test_digits_of_other_scripts_are_not_a_year():
    # "２０２６" is four digits to a regex's \d, but no month a command or SQL should take as 2026
    assert not is_month("２０２６-10") and not is_month("2026-１0")


def test_a_month_knows_its_days():
    assert (Month(2024, 2).days, Month(2026, 2).days, Month(2026, 4).days, Month(2026, 12).days) == (29, 28, 30, 31)
    assert Month(2026, 12).last_day == dt.date(2026, 12, 31) and Month(2024, 2).last_day == dt.date(2024, 2, 29)
