-- mart_leaderboard: the value leaderboard, one row per month x model config x image tag over
-- the jobs that finished (have a final validation) and ended in that month: runs, mean mAP50
-- and mAP50-95, mean training hours (wall clock) and GPU-hours, peak memory, mean cost per run,
-- and cost per mAP point = mean cost per run / (mean mAP50 x 100). Means of doubles are taken in
-- job order, so that a rebuild gives the same bits whatever order the jobs are stored in.
-- The jobs are the month's rows of mart_job_by_month (an archived month's as it was archived).
SELECT
    j.month,
    j.model_type,
    j.image_tag,
    count(*) AS runs,
    count(DISTINCT j.project) AS projects,
    avg(j.map50 ORDER BY j.job_id) AS mean_map50,
    avg(j.map50_95 ORDER BY j.job_id) AS mean_map50_95,
    hours(avg(epoch(j.last_interval) - epoch(j.first_interval) + s.grain_seconds ORDER BY j.job_id)) AS mean_training_hours,
    avg(j.gpu_hours ORDER BY j.job_id) AS mean_gpu_hours,
    max(j.mem_peak_mib) AS peak_mem_mib,
    avg(j.density ORDER BY j.job_id) AS mean_density,
    CAST(sum(j.cost) / count(*) AS DECIMAL(38, 9)) AS mean_cost_per_run,
    CAST(sum(j.cost) AS DOUBLE) / count(*) / nullif(avg(j.map50 ORDER BY j.job_id) * 100, 0) AS cost_per_map50_point,
    CAST(sum(j.cost) AS DOUBLE) / count(*) / nullif(avg(j.map50_95 ORDER BY j.job_id) * 100, 0) AS cost_per_map50_95_point
FROM mart_job_by_month AS j
CROSS JOIN settings AS s
WHERE j.ended AND j.map50 IS NOT NULL AND j.first_interval IS NOT NULL
GROUP BY ALL
