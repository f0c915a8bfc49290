-- title: Breaker candidates
-- description: Stretches of at least the breaker length (default 2 h) in which a job's utilization stayed under the breaker threshold (40 %) while its training loss improved by less than 0.001: what an automatic pause would have saved.
-- param: month MONTH: the month the stretch started in, YYYY-MM
SELECT
    job_id,
    project,
    user_name,
    model_type,
    stretch_start,
    stretch_end,
    round(stretch_hours, 2) AS stretch_hours,
    round(gpu_hours, 2) AS gpu_hours,
    round(util_mean, 1) AS util_mean_pct,
    round(loss_improvement, 5) AS loss_improvement,
    round(cost, 2) AS savings
FROM mart_breakers
WHERE month = $month
ORDER BY cost DESC, job_id
