-- title: Top idle wasters
-- description: Jobs whose idle GPU time (under the idle threshold, default 5 % utilization) cost the most in the month, with its hours and the job's overall density (the cents of the reports).
-- param: month MONTH: the month, YYYY-MM
-- param: limit INTEGER = 20: how many jobs
SELECT
    m.job_id,
    m.project,
    m.user_name,
    m.model_type,
    l.idle_gpu_hours,
    l.idle_cost,
    l.gpu_hours,
    round(m.idle_gpu_hours / nullif(m.gpu_hours, 0) * 100, 1) AS idle_pct,
    round(m.density * 100, 1) AS density_pct,
    l.cost
FROM mart_job_month AS m
JOIN ledger_job_month AS l USING (month, job_id)
WHERE m.month = $month AND l.idle_cost > 0
ORDER BY l.idle_cost DESC, l.idle_gpu_hours DESC, m.job_id
LIMIT $limit
