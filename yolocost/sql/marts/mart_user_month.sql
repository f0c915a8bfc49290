-- mart_user_month: one row per month x project x user (a user who works in two projects has a
-- row in each, so a project report can show its own users only). Unallocated capacity has no user.
-- materialized: by month
SELECT
    month, project, bucket, user_name, jobs, seconds_present, gpu_hours, density,
    idle_gpu_hours, idle_cost, gpu_cost, energy_cost, cost
FROM int_usage_rollup
WHERE grouping_set = 'month_project_user' AND bucket <> 'unallocated'
