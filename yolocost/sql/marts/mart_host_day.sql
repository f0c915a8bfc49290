-- mart_host_day: one row per local day x host x GPU model: capacity, attributed and
-- unallocated GPU-hours and cost, so ops can see which machines sat idle and when; the
-- first and last interval held (the month index reads the month's data span from them).
-- materialized: by month
SELECT
    u.day,
    u.month,
    u.hostname,
    u.gpu_model,
    count(DISTINCT u.gpu_uuid) AS gpus,
    hours(sum(u.gpu_seconds)) AS capacity_gpu_hours,
    coalesce(hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket <> 'unallocated')), 0) AS attributed_gpu_hours,
    coalesce(hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket = 'unallocated')), 0) AS unallocated_gpu_hours,
    sum(u.gpu_cost) AS capacity_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'unallocated'), 0) AS unallocated_cost,
    density(sum(u.seconds_busy), sum(u.seconds_present)) AS density,
    min(u.first_interval) AS first_interval,
    max(u.last_interval) AS last_interval
FROM int_usage_gpu_day AS u
GROUP BY u.day, u.month, u.hostname, u.gpu_model
