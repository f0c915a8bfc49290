"""mart_month_coverage on hand-made months: how much of each local calendar month the database
holds, in a zone with DST and without."""

from __future__ import annotations

import datetime as dt

from helpers.builders import intervals, job_row, ts, usage_row

HOUR = 3600


def hours(start: str, count: int, gpu: str = "GPU-0", job: str | None = "j1", **kw) -> list[dict]:
    """`count` hourly rows of one GPU and owner from `start` (UTC)."""
    return [usage_row(t, gpu, job, seconds=HOUR, **kw) for t in intervals(start, count, HOUR)]


def coverage(db) -> dict[str, dict]:
    return db.by("mart_month_coverage", "month")


def test_a_whole_month_and_a_month_with_one_day(built_db):
    # June 2026 in UTC: 30 days x 24 hours, every hour held by j1 on GPU-0 (and GPU-1 for a
    # while: two GPUs in one hour are one interval)
    june = hours("2026-06-01T00:00Z", 30 * 24) + hours("2026-06-10T00:00Z", 5, gpu="GPU-1", index=1)
    # 10 September: 12 hours held, 12 hours present but held by nobody (they count too), and
    # an hour on 11 September whose only row has no second present (it does not count)
    september = (hours("2026-09-10T00:00Z", 12) + hours("2026-09-10T12:00Z", 12, job=None)
                 + [usage_row("2026-09-11T05:00Z", "GPU-0", "j1", seconds=0)])
    db = built_db(june + september, jobs=[job_row("j1")], ingest={"grain_seconds": HOUR})
    found = coverage(db)
    assert set(found) == {"2026-06", "2026-09"}

    whole = found["2026-06"]
    assert whole["intervals"] == whole["month_intervals"] == 720
    assert whole["coverage"] == 1.0 and whole["partial"] is False
    assert whole["month_start"] == ts("2026-06-01T00:00Z") and whole["month_end"] == ts("2026-07-01T00:00Z")
    assert whole["first_interval"] == ts("2026-06-01T00:00Z")
    assert whole["data_end"] == ts("2026-07-01T00:00Z")  # start of the last hour + the grain

    day = found["2026-09"]
    assert day["intervals"] == 24 and day["month_intervals"] == 720
    assert day["coverage"] == 24 / 720 and day["partial"] is True  # 1/30
    assert day["first_interval"] == ts("2026-09-10T00:00Z") and day["data_end"] == ts("2026-09-11T00:00Z")


def test_dst_months_in_europe_berlin(built_db):
    """October 2026 in Berlin runs from 30 Sep 22:00 UTC to 31 Oct 23:00 UTC: 31 x 24 + 1 =
    745 hours (25 October has 25). March 2026 has 31 x 24 - 1 = 743 (29 March has 23)."""
    october = hours("2026-09-30T22:00Z", 745)
    march = hours("2026-03-28T23:00Z", 23)  # local 29 March, the 23-hour day, and nothing else
    august = hours("2026-08-14T22:00Z", 24 + 12)  # local 15 August 00:00 to 16 August 12:00
    db = built_db(october + march + august, jobs=[job_row("j1")], timezone="Europe/Berlin",
                  ingest={"grain_seconds": HOUR})
    found = coverage(db)
    assert set(found) == {"2026-03", "2026-08", "2026-10"}

    oct_ = found["2026-10"]
    assert oct_["month_start"] == ts("2026-09-30T22:00Z") and oct_["month_end"] == ts("2026-10-31T23:00Z")
    assert oct_["intervals"] == oct_["month_intervals"] == 745
    assert oct_["coverage"] == 1.0 and oct_["partial"] is False

    mar = found["2026-03"]
    assert mar["month_start"] == ts("2026-02-28T23:00Z") and mar["month_end"] == ts("2026-03-31T22:00Z")
    assert mar["month_intervals"] == 743 and mar["intervals"] == 23
    assert mar["coverage"] == 23 / 743 and mar["partial"] is True

    aug = found["2026-08"]
    assert aug["month_intervals"] == 31 * 24 and aug["intervals"] == 36
    assert aug["coverage"] == 36 / 744 and aug["partial"] is True


def test_one_hour_short_of_a_dst_month_is_partial(built_db):
    """The 745th hour of October (local 31 October 23:00-24:00) missing: 744 of 745."""
    db = built_db(hours("2026-09-30T22:00Z", 744), jobs=[job_row("j1")], timezone="Europe/Berlin",
                  ingest={"grain_seconds": HOUR})
    oct_ = coverage(db)["2026-10"]
    assert oct_["intervals"] == 744 and oct_["month_intervals"] == 745
    assert oct_["partial"] is True and oct_["coverage"] == 744 / 745
    assert oct_["data_end"] == ts("2026-10-31T22:00Z") == ts("2026-10-31T23:00Z") - dt.timedelta(hours=1)
