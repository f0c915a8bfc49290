-- mart_user_month: one row per month x project x user (a user who works in two projects has a
-- row in each, so a project report can show its own users only). Unallocated capacity has no user.
SELECT
    u.month,
    u.project_name AS project,
    u.bucket,
    u.user_name,
    count(DISTINCT u.job_id) AS jobs,
    sum(u.seconds_present) AS seconds_present,
    CAST(sum(u.gpu_seconds) AS DOUBLE) / 3600 AS gpu_hours,
    CAST(sum(u.seconds_busy) AS DOUBLE) / nullif(CAST(sum(u.seconds_present) AS DOUBLE), 0) AS density,
    CAST(sum(u.idle_gpu_seconds) AS DOUBLE) / 3600 AS idle_gpu_hours,
    sum(u.idle_cost) AS idle_cost,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost
FROM int_usage_priced AS u
WHERE u.job_id IS NOT NULL
GROUP BY u.month, u.project_name, u.bucket, u.user_name
