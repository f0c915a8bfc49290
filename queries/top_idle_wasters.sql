-- title: Top idle wasters
-- description: Jobs whose idle GPU time (under the idle threshold, default 5 % utilization) cost the most in the month, with its hours and the job's overall density.
-- param: month MONTH: the month, YYYY-MM
-- param: limit INTEGER = 20: how many jobs
SELECT
    job_id,
    project,
    user_name,
    model_type,
    round(idle_gpu_hours, 2) AS idle_gpu_hours,
    round(idle_cost, 2) AS idle_cost,
    round(gpu_hours, 2) AS gpu_hours,
    round(idle_gpu_hours / nullif(gpu_hours, 0) * 100, 1) AS idle_pct,
    round(density * 100, 1) AS density_pct,
    round(cost, 2) AS cost
FROM mart_job_month
WHERE month = $month AND idle_gpu_hours > 0
ORDER BY idle_cost DESC, job_id
LIMIT $limit
