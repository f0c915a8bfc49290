-- mart_policy_savings: one row per month x policy x job the policy would have stopped in that
-- month: when it would have stopped it, the GPU-seconds and cost of the job's intervals of the
-- month from then on (what it would have saved), and whether the job's training improved after
-- that point (a false positive). Replayed on int_job_intervals, so the resolution is one grain:
-- stop points fall on interval starts, and an interval counts whole.
-- Policies ([policies] and [thresholds] breaker_*, through settings):
--   idle_reclaim: an interval is quiet when the job's utilization is under
--     idle_reclaim_util_percent, the job made no progress in it (no epoch of the job, with its
--     loss, ends in it), it starts after the job's start-up grace, and it does not overlap a
--     protected phase: the idle_reclaim_protect_seconds before each epoch end (Ultralytics
--     validates and saves its checkpoint before it records the epoch) and after the job's last
--     epoch end (the final validation of the best weights). Start-up grace: from the job's
--     start (jobs.start_time, else its first interval of the month) until its first epoch
--     ends (a YOLO job loads and caches its data while the GPU waits for the first batch),
--     but at most idle_reclaim_grace_seconds, so a job that never trains is still released.
--     The job is stopped once a run of consecutive quiet intervals has lasted
--     idle_reclaim_seconds (rounded up to the grain): stop_at = the run's start + that time.
--   breaker: a breaker stretch (int_breaker_runs: consecutive intervals under
--     breaker_util_percent) stops the job once it has lasted breaker_min_seconds (rounded up to
--     the grain) with the training loss improving by less than breaker_loss_delta over what the
--     breaker had seen by then: stop_at = the stretch's start + that time. The decision uses
--     only the epochs before stop_at, so it may stop a stretch that mart_breakers, which sees
--     the whole stretch, does not list; a job with no loss recorded before the stretch is
--     never stopped (as in mart_breakers).
-- Only the first stop of a job in a month counts, and only when the job still held a GPU at
-- stop_at. A false positive is a stopped job with an epoch ending after stop_at (up to the end
-- of its last interval of the month) whose total training loss is lower than the best loss up
-- to stop_at by more than breaker_loss_delta, or whose mAP50 is higher than the best mAP50 up
-- to stop_at (or any loss or mAP50 when none was recorded before); fp_reason says which.
-- A month is replayed on its own: a job crossing a month boundary is replayed in each month
-- from that month's intervals (a quiet run or stretch ends with its month).
-- materialized: by month
WITH iv AS (
    SELECT
        i.job_id,
        i.month,
        i.interval_start,
        i.interval_start + to_seconds(s.grain_seconds) AS interval_end,
        epoch_us(i.interval_start) // 1000000 // s.grain_seconds AS slot,
        i.gpu_seconds,
        i.gpu_cost,
        i.energy_cost,
        i.util_mean
    FROM int_job_intervals AS i
    CROSS JOIN settings AS s
),
epochs AS (
    SELECT e.job_id, e.epoch, e.ts, e.train_loss, e.map50,
           e.ts = max(e.ts) OVER (PARTITION BY e.job_id) AS is_last
    FROM stg_training_epochs AS e
),
grace AS (
    -- the end of each job's start-up grace: its first epoch end, at most grace_seconds after its start
    SELECT
        iv.job_id,
        iv.month,
        least(coalesce(any_value(j.start_time), min(iv.interval_start))
                  + to_seconds(CAST(any_value(s.idle_reclaim_grace_seconds) AS BIGINT)),
              (SELECT min(e.ts) FROM epochs AS e WHERE e.job_id = iv.job_id)) AS grace_end
    FROM iv
    CROSS JOIN settings AS s
    LEFT JOIN stg_jobs AS j ON j.job_id = iv.job_id
    GROUP BY iv.job_id, iv.month
),
quiet AS (
    SELECT
        iv.*,
        iv.slot - row_number() OVER (PARTITION BY iv.job_id, iv.month ORDER BY iv.interval_start) AS island
    FROM iv
    CROSS JOIN settings AS s
    JOIN grace AS g ON g.job_id = iv.job_id AND g.month = iv.month
    WHERE iv.util_mean < s.idle_reclaim_util_percent
      AND iv.interval_start >= g.grace_end
      AND NOT EXISTS (
          SELECT 1 FROM epochs AS e
          WHERE e.job_id = iv.job_id
            AND ((e.ts >= iv.interval_start AND e.ts - to_seconds(s.idle_reclaim_protect_seconds) < iv.interval_end)
                 OR (e.is_last AND e.ts < iv.interval_end
                     AND e.ts + to_seconds(s.idle_reclaim_protect_seconds) > iv.interval_start)))
),
idle_stops AS (
    SELECT
        'idle_reclaim' AS policy,
        q.job_id,
        q.month,
        min(q.interval_start) AS trigger_start,
        max(q.interval_end) AS trigger_end
    FROM quiet AS q
    GROUP BY q.job_id, q.month, q.island
),
breaker_stops AS (
    SELECT
        'breaker' AS policy,
        r.job_id,
        r.month,
        r.run_start AS trigger_start,
        r.run_end AS trigger_end,
        r.loss_before
    FROM int_breaker_runs AS r
    CROSS JOIN settings AS s
    WHERE r.run_seconds >= s.breaker_min_seconds AND r.loss_before IS NOT NULL
),
candidates AS (
    SELECT policy, job_id, month, trigger_start,
           trigger_start + to_seconds(CAST(ceil(s.idle_reclaim_seconds / s.grain_seconds) * s.grain_seconds AS BIGINT))
               AS stop_at,
           trigger_end
    FROM idle_stops CROSS JOIN settings AS s
    UNION ALL
    SELECT b.policy, b.job_id, b.month, b.trigger_start, b.stop_at, b.trigger_end
    FROM (
        SELECT b.*,
               b.trigger_start + to_seconds(CAST(ceil(s.breaker_min_seconds / s.grain_seconds) * s.grain_seconds AS BIGINT))
                   AS stop_at,
               s.breaker_loss_delta
        FROM breaker_stops AS b CROSS JOIN settings AS s
    ) AS b
    WHERE b.loss_before - least(b.loss_before, coalesce(
              (SELECT min(e.train_loss) FROM epochs AS e
                WHERE e.job_id = b.job_id AND e.ts > b.trigger_start AND e.ts < b.stop_at), b.loss_before))
          < b.breaker_loss_delta
),
first_stops AS (
    SELECT policy, job_id, month, arg_min(trigger_start, stop_at) AS trigger_start, min(stop_at) AS stop_at
    FROM candidates
    WHERE stop_at <= trigger_end
    GROUP BY policy, job_id, month
),
saved AS (
    SELECT
        f.policy,
        f.job_id,
        f.month,
        any_value(f.trigger_start) AS trigger_start,
        f.stop_at,
        count(*) AS saved_intervals,
        sum(iv.gpu_seconds) AS saved_gpu_seconds,
        sum(iv.gpu_cost) AS saved_gpu_cost,
        sum(iv.energy_cost) AS saved_energy_cost
    FROM first_stops AS f
    JOIN iv ON iv.job_id = f.job_id AND iv.month = f.month AND iv.interval_start >= f.stop_at
    GROUP BY f.policy, f.job_id, f.month, f.stop_at
),
progress AS (
    SELECT
        v.*,
        (SELECT max(iv.interval_end) FROM iv WHERE iv.job_id = v.job_id AND iv.month = v.month) AS month_end,
        (SELECT min(e.train_loss) FROM epochs AS e WHERE e.job_id = v.job_id AND e.ts <= v.stop_at) AS loss_at_stop,
        (SELECT max(e.map50) FROM epochs AS e WHERE e.job_id = v.job_id AND e.ts <= v.stop_at) AS map50_at_stop
    FROM saved AS v
),
later AS (
    SELECT
        p.*,
        (SELECT min(e.train_loss) FROM epochs AS e
          WHERE e.job_id = p.job_id AND e.ts > p.stop_at AND e.ts <= p.month_end) AS best_loss_after,
        (SELECT max(e.map50) FROM epochs AS e
          WHERE e.job_id = p.job_id AND e.ts > p.stop_at AND e.ts <= p.month_end) AS best_map50_after
    FROM progress AS p
),
judged AS (
    SELECT
        l.*,
        coalesce(l.best_loss_after < l.loss_at_stop - s.breaker_loss_delta
                 OR (l.loss_at_stop IS NULL AND l.best_loss_after IS NOT NULL), false) AS loss_improved,
        coalesce(l.best_map50_after > l.map50_at_stop
                 OR (l.map50_at_stop IS NULL AND l.best_map50_after IS NOT NULL), false) AS map50_improved,
        s.grain_seconds
    FROM later AS l
    CROSS JOIN settings AS s
)
SELECT
    d.month,
    d.policy,
    d.job_id,
    j.project_name AS project,
    j.bucket,
    j.user_name,
    j.model_type,
    d.trigger_start,
    d.stop_at,
    d.grain_seconds,
    d.saved_intervals,
    d.saved_gpu_seconds,
    hours(d.saved_gpu_seconds) AS saved_gpu_hours,
    d.saved_gpu_cost,
    d.saved_energy_cost,
    d.saved_gpu_cost + d.saved_energy_cost AS saved_cost,
    d.loss_at_stop,
    d.best_loss_after,
    d.map50_at_stop,
    d.best_map50_after,
    d.loss_improved OR d.map50_improved AS false_positive,
    nullif(concat_ws('; ',
        CASE WHEN d.loss_improved THEN
            CASE WHEN d.loss_at_stop IS NULL THEN printf('loss %.4f recorded after the stop', d.best_loss_after)
                 ELSE printf('loss %.4f -> %.4f', d.loss_at_stop, d.best_loss_after) END END,
        CASE WHEN d.map50_improved THEN
            CASE WHEN d.map50_at_stop IS NULL THEN printf('mAP50 %.3f recorded after the stop', d.best_map50_after)
                 ELSE printf('mAP50 %.3f -> %.3f', d.map50_at_stop, d.best_map50_after) END END), '') AS fp_reason
FROM judged AS d
JOIN int_jobs AS j ON j.job_id = d.job_id
