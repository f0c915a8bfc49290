-- mart_daily: one row per local day x project bucket x GPU model (the finance grain): GPU-hours,
-- cost, energy, density and idle waste. Days add up to their month in mart_project_month.
-- materialized: by month
SELECT
    day, month, project, bucket, gpu_model, jobs, gpu_seconds, gpu_hours, density,
    idle_gpu_hours, idle_cost, gpu_cost, energy_cost, cost, energy_kwh
FROM int_usage_rollup
WHERE grouping_set = 'day_project_gpu_model'
