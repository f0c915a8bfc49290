-- mart_daily: one row per local day x project bucket x GPU model (the finance grain): GPU-hours,
-- cost, energy, density and idle waste. Days add up to their month in mart_project_month.
SELECT
    u.day,
    u.month,
    u.project_name AS project,
    u.bucket,
    u.gpu_model,
    count(DISTINCT u.job_id) AS jobs,
    sum(u.gpu_seconds) AS gpu_seconds,
    CAST(sum(u.gpu_seconds) AS DOUBLE) / 3600 AS gpu_hours,
    CAST(sum(u.seconds_busy) AS DOUBLE) / nullif(CAST(sum(u.seconds_present) AS DOUBLE), 0) AS density,
    CAST(sum(u.idle_gpu_seconds) AS DOUBLE) / 3600 AS idle_gpu_hours,
    sum(u.idle_cost) AS idle_cost,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost,
    CAST(sum(u.energy_mj) AS DOUBLE) / 3.6e9 AS energy_kwh
FROM int_usage_priced AS u
GROUP BY u.day, u.month, u.project_name, u.bucket, u.gpu_model
