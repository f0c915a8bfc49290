-- mart_project_month: one row per month x project, plus one '(unlabeled)' row (GPUs held by
-- jobs with no project label) and one '(unallocated)' row (GPUs present but held by nobody).
-- The rows of a month add up exactly to mart_cluster_month.capacity_cost (conservation).
SELECT
    u.month,
    u.project_name AS project,
    u.bucket,
    count(DISTINCT u.job_id) AS jobs,
    count(DISTINCT u.user_name) AS users,
    sum(u.seconds_present) AS seconds_present,
    sum(u.gpu_seconds) AS gpu_seconds,
    CAST(sum(u.gpu_seconds) AS DOUBLE) / 3600 AS gpu_hours,
    CAST(sum(u.seconds_busy) AS DOUBLE) / nullif(CAST(sum(u.seconds_present) AS DOUBLE), 0) AS density,
    CAST(sum(u.idle_gpu_seconds) AS DOUBLE) / 3600 AS idle_gpu_hours,
    sum(u.idle_cost) AS idle_cost,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost,
    CAST(sum(u.energy_mj) AS DOUBLE) / 3.6e9 AS energy_kwh,
    max(u.mem_peak_mib) AS mem_peak_mib
FROM int_usage_priced AS u
GROUP BY u.month, u.project_name, u.bucket
