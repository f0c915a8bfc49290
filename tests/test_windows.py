"""The windows commands act on, from the text of their options (`yolocost/windows.py`)."""

from __future__ import annotations

import datetime as dt

import pytest
from helpers.builders import make_config

from yolocost.errors import YolocostError
from yolocost.windows import ingest_window, load_window, retention_now

UTC = dt.timezone.utc


def test_a_month_is_its_calendar_month_in_the_configured_time_zone(tmp_path):
    config = make_config(tmp_path, timezone="Europe/Berlin")
    assert ingest_window(config, "2026-10", None, None) == (dt.datetime(2026, 9, 30, 22, tzinfo=UTC),
                                                            dt.datetime(2026, 10, 31, 23, tzinfo=UTC))


def test_start_and_end_are_read_in_the_configured_time_zone_unless_they_have_an_offset(tmp_path):
    config = make_config(tmp_path, timezone="Europe/Berlin")
    assert ingest_window(config, None, "2026-10-01", "2026-10-02T00:00+00:00") == (
        dt.datetime(2026, 9, 30, 22, tzinfo=UTC), dt.datetime(2026, 10, 2, tzinfo=UTC))


@pytest.mark.parametrize("month, start, end, message", [
    ("2026-10", "2026-10-01", None, "give either --month or --start/--end, not both"),
    (None, "2026-10-01", None, "give the window: --month YYYY-MM, or --start and --end"),
    (None, None, None, "give the window: --month YYYY-MM, or --start and --end"),
    (None, "yesterday", "2026-10-02", "--start must be an ISO date or date-time"),
])
def test_a_window_that_is_not_one_is_one_line(tmp_path, month, start, end, message):
    with pytest.raises(YolocostError, match=message):
        ingest_window(make_config(tmp_path), month, start, end)


def test_a_load_without_window_takes_its_rows_span(tmp_path):
    config = make_config(tmp_path)
    assert load_window(config, None) is None
    assert load_window(config, ("2026-10-02", "2026-10-03")) == (dt.datetime(2026, 10, 2, tzinfo=UTC),
                                                                  dt.datetime(2026, 10, 3, tzinfo=UTC))
    with pytest.raises(YolocostError, match="--window END must be an ISO date"):
        load_window(config, ("2026-10-02", "soon"))


def test_retention_counts_back_from_now_or_a_past_time(tmp_path):
    config = make_config(tmp_path)
    now = dt.datetime(2026, 11, 15, 12, tzinfo=UTC)
    assert retention_now(config, None, now) == now
    assert retention_now(config, "2026-11-01", now) == dt.datetime(2026, 11, 1, tzinfo=UTC)
    with pytest.raises(YolocostError, match="--as-of 2026-12-01 is in the future"):
        retention_now(config, "2026-12-01", now)
