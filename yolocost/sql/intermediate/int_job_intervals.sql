-- int_job_intervals: one row per job x grain interval in which the job held a GPU: its GPU
-- seconds and cost in that interval, its utilization (the mean over all its GPU samples:
-- util weighted by seconds present) and whether it counts as low for the breaker.
-- materialized: by month
SELECT
    u.job_id,
    u.interval_start,
    any_value(u.month) AS month,
    sum(u.seconds_present) AS seconds_present,
    sum(u.gpu_seconds) AS gpu_seconds,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.util_mean * u.seconds_present) / nullif(sum(u.seconds_present), 0) AS util_mean,
    sum(u.util_mean * u.seconds_present) / nullif(sum(u.seconds_present), 0)
        < any_value(s.breaker_util_percent) AS is_low
FROM int_usage_priced AS u
CROSS JOIN settings AS s
WHERE u.job_id IS NOT NULL
GROUP BY u.job_id, u.interval_start
