-- int_breaker_runs: one row per maximal run of consecutive low-utilization grain intervals
-- of a job (utilization under the breaker threshold, intervals exactly one grain apart),
-- with its length, GPU seconds and cost, and the training loss before and during it:
-- loss_before = total loss of the last epoch that ended at or before the run started,
-- loss_after = the lowest of loss_before and the total loss of every epoch that ended inside
-- the run (a run with no epoch ending inside it did not improve: loss_after = loss_before).
-- A run ends with its month (configured time zone): a month's figures come from its own
-- rows only, so that it is built, and archived, on its own.
-- materialized: by month
WITH low AS (
    SELECT
        i.*,
        s.grain_seconds,
        epoch_us(i.interval_start) // 1000000 // s.grain_seconds
            - row_number() OVER (PARTITION BY i.job_id, i.month ORDER BY i.interval_start) AS island
    FROM int_job_intervals AS i
    CROSS JOIN settings AS s
    WHERE i.is_low
),
runs AS (
    SELECT
        job_id,
        month,
        island,
        min(interval_start) AS run_start,
        max(interval_start) + to_seconds(any_value(grain_seconds)) AS run_end,
        count(*) AS intervals,
        sum(seconds_present) AS seconds_present,
        sum(gpu_seconds) AS gpu_seconds,
        sum(gpu_cost) AS gpu_cost,
        sum(energy_cost) AS energy_cost,
        sum(util_mean * seconds_present) / nullif(sum(seconds_present), 0) AS util_mean
    FROM low
    GROUP BY job_id, month, island
),
before AS (
    SELECT
        r.*,
        (SELECT e.train_loss FROM stg_training_epochs AS e
          WHERE e.job_id = r.job_id AND e.ts <= r.run_start AND e.train_loss IS NOT NULL
          ORDER BY e.ts DESC, e.epoch DESC LIMIT 1) AS loss_before,
        (SELECT min(e.train_loss) FROM stg_training_epochs AS e
          WHERE e.job_id = r.job_id AND e.ts > r.run_start AND e.ts < r.run_end) AS loss_within
    FROM runs AS r
)
SELECT
    month,
    job_id,
    run_start,
    run_end,
    epoch(run_end) - epoch(run_start) AS run_seconds,
    intervals,
    seconds_present,
    gpu_seconds,
    gpu_cost,
    energy_cost,
    util_mean,
    loss_before,
    least(loss_before, loss_within) AS loss_after
FROM before
