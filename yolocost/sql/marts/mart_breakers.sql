-- mart_breakers: one row per breaker candidate: a stretch of at least breaker_min_hours in
-- which a job's utilization stayed under the breaker threshold and its training loss improved
-- by less than breaker_loss_delta. Its GPU-hours and cost are what an automatic pause would
-- have saved, if the job was truly stalled: loss_later is the lowest total training loss of
-- an epoch that ended after the stretch, up to the end of the job's last interval of the
-- month (a later month's epochs do not count), and improved_later says that it is lower than
-- loss_after by more than breaker_loss_delta: the job recovered, so a pause at the stretch
-- would have been a false stop (its cost is no saving). month = the local month of the
-- stretch (a stretch ends with its month).
-- materialized: by month
WITH month_end AS (
    SELECT i.job_id, i.month, max(i.interval_start) + to_seconds(any_value(s.grain_seconds)) AS job_month_end
    FROM int_job_intervals AS i
    CROSS JOIN settings AS s
    GROUP BY i.job_id, i.month
),
candidates AS (
    SELECT
        r.*,
        (SELECT min(e.train_loss) FROM stg_training_epochs AS e
          WHERE e.job_id = r.job_id AND e.ts >= r.run_end AND e.ts <= m.job_month_end) AS loss_later,
        s.breaker_loss_delta
    FROM int_breaker_runs AS r
    CROSS JOIN settings AS s
    JOIN month_end AS m ON m.job_id = r.job_id AND m.month = r.month
    WHERE r.run_seconds >= s.breaker_min_seconds
      AND r.loss_before IS NOT NULL
      AND r.loss_before - r.loss_after < s.breaker_loss_delta
)
SELECT
    r.month,
    r.job_id,
    j.project_name AS project,
    j.bucket,
    j.user_name,
    j.model_type,
    r.run_start AS stretch_start,
    r.run_end AS stretch_end,
    hours(r.run_seconds) AS stretch_hours,
    hours(r.gpu_seconds) AS gpu_hours,
    r.gpu_cost,
    r.energy_cost,
    r.gpu_cost + r.energy_cost AS cost,
    r.util_mean,
    r.loss_before,
    r.loss_after,
    r.loss_before - r.loss_after AS loss_improvement,
    r.loss_later,
    coalesce(r.loss_later < r.loss_after - r.breaker_loss_delta, false) AS improved_later
FROM candidates AS r
JOIN int_jobs AS j ON j.job_id = r.job_id
