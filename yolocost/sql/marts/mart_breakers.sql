-- mart_breakers: one row per breaker candidate: a stretch of at least breaker_min_hours in
-- which a job's utilization stayed under the breaker threshold and its training loss improved
-- by less than breaker_loss_delta. Its GPU-hours and cost are what an automatic pause would
-- have saved. month = the local month of the stretch (a stretch ends with its month).
-- materialized: by month
SELECT
    r.month,
    r.job_id,
    j.project_name AS project,
    j.bucket,
    j.user_name,
    j.model_type,
    r.run_start AS stretch_start,
    r.run_end AS stretch_end,
    r.run_seconds / 3600.0 AS stretch_hours,
    CAST(r.gpu_seconds AS DOUBLE) / 3600 AS gpu_hours,
    r.gpu_cost,
    r.energy_cost,
    r.gpu_cost + r.energy_cost AS cost,
    r.util_mean,
    r.loss_before,
    r.loss_after,
    r.loss_before - r.loss_after AS loss_improvement
FROM int_breaker_runs AS r
CROSS JOIN settings AS s
JOIN int_jobs AS j ON j.job_id = r.job_id
WHERE r.run_seconds >= s.breaker_min_seconds
  AND r.loss_before IS NOT NULL
  AND r.loss_before - r.loss_after < s.breaker_loss_delta
