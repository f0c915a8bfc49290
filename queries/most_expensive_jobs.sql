-- title: Most expensive jobs
-- description: The jobs that cost the most in the month (GPU time plus energy, the cents of the reports), with GPU-hours, density, idle share and, when the job has finished, its mAP50 and cost per mAP point (over the whole job).
-- param: month MONTH: the month, YYYY-MM
-- param: limit INTEGER = 20: how many jobs
SELECT
    m.job_id,
    m.project,
    m.user_name,
    m.model_type,
    m.gpu_models,
    m.gpus,
    l.gpu_hours,
    round(m.density * 100, 1) AS density_pct,
    round(m.idle_gpu_hours / nullif(m.gpu_hours, 0) * 100, 1) AS idle_pct,
    l.cost,
    round(j.map50, 3) AS map50,
    round(j.cost_per_map50_point, 4) AS cost_per_map50_point
FROM mart_job_month AS m
JOIN ledger_job_month AS l USING (month, job_id)
JOIN mart_job_by_month AS j USING (month, job_id)
WHERE m.month = $month
ORDER BY l.cost DESC, m.job_id
LIMIT $limit
