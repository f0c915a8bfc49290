-- mart_project_month: one row per month x project, plus one '(unlabeled)' row (GPUs held by
-- jobs with no project label) and one '(unallocated)' row (GPUs present but held by nobody).
-- The rows of a month add up exactly to mart_cluster_month.capacity_cost (conservation).
-- materialized: by month
SELECT
    month, project, bucket, jobs, users, seconds_present, gpu_seconds, gpu_hours, density,
    idle_gpu_hours, idle_cost, gpu_cost, energy_cost, cost, energy_kwh, mem_peak_mib
FROM int_usage_rollup
WHERE grouping_set = 'month_project'
