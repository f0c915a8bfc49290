-- mart_month_coverage: one row per month with data (calendar month in the configured time
-- zone): how much of the month the database holds, so that months are compared only when
-- both are whole. month_start and month_end are the local midnights of the month's first day
-- and of the next month's first day, as UTC instants (a DST month is an hour longer or
-- shorter); month_intervals = (month_end - month_start) / grain. intervals = the distinct
-- grain intervals in which any GPU was present (held by a job or not); first_interval is the
-- first of them, data_end the end of the last (its start + grain). coverage = intervals /
-- month_intervals; partial = coverage < 1 (a month still running, or ingested in part).
-- materialized: by month
WITH held AS (
    SELECT
        month,
        count(DISTINCT interval_start) FILTER (WHERE seconds_present > 0) AS intervals,
        min(interval_start) FILTER (WHERE seconds_present > 0) AS first_interval,
        max(interval_start) FILTER (WHERE seconds_present > 0) AS last_interval
    FROM int_usage_priced
    GROUP BY month
),
bounds AS (
    SELECT
        h.*,
        s.grain_seconds,
        timezone(s.timezone, CAST(CAST(h.month || '-01' AS DATE) AS TIMESTAMP)) AS month_start,
        timezone(s.timezone, CAST(CAST(h.month || '-01' AS DATE) + INTERVAL 1 MONTH AS TIMESTAMP)) AS month_end
    FROM held AS h
    CROSS JOIN settings AS s
)
SELECT
    month,
    month_start,
    month_end,
    first_interval,
    last_interval + to_seconds(grain_seconds) AS data_end,
    intervals,
    CAST((epoch(month_end) - epoch(month_start)) // grain_seconds AS BIGINT) AS month_intervals,
    CAST(intervals AS DOUBLE) / month_intervals AS coverage,
    intervals < month_intervals AS partial
FROM bounds
