-- mart_job_by_month: one row per month x job that the month's documents show, with the job's
-- row of mart_job (all months together: labels, start and end, cost, mAP, cost per mAP point)
-- as that month shows it. held: the job held a GPU in the month (mart_job_month); ended: the
-- month is the job's last (its end label, else its last interval held: the value
-- leaderboard's month). An open month shows mart_job as it is now; an archived month shows
-- the rows it was archived with (archived_job_by_month, written by prune; a row with no
-- job_id only marks the month as kept), so that a later load of a job's labels, progress or
-- results, or of its usage in a later month, changes what the open months show and nothing else.
-- month_epochs: the job's epochs that ended in the month (stg_training_epochs, local month;
-- 0 for none), what the image-tag comparison and the Ultralytics version share count per month.
-- A month archived before this column existed has it empty (no epochs counted).
WITH month_epochs AS (
    SELECT strftime(timezone(s.timezone, e.ts), '%Y-%m') AS month, e.job_id, count(*) AS month_epochs
    FROM stg_training_epochs AS e
    CROSS JOIN settings AS s
    GROUP BY ALL
),
shown AS (
    SELECT month, job_id, bool_or(held) AS held, bool_or(ended) AS ended
    FROM (
        SELECT month, job_id, true AS held, false AS ended FROM mart_job_month
        UNION ALL
        SELECT
            strftime(timezone(s.timezone, coalesce(j.end_time, j.last_interval)), '%Y-%m') AS month,
            j.job_id,
            false AS held,
            true AS ended
        FROM mart_job AS j
        CROSS JOIN settings AS s
        WHERE coalesce(j.end_time, j.last_interval) IS NOT NULL
    )
    GROUP BY month, job_id
)
SELECT c.month, c.held, c.ended, j.*, coalesce(e.month_epochs, 0) AS month_epochs
FROM shown AS c
JOIN mart_job AS j ON j.job_id = c.job_id
LEFT JOIN month_epochs AS e ON e.month = c.month AND e.job_id = c.job_id
WHERE c.month NOT IN (SELECT month FROM archived_job_by_month)
UNION ALL BY NAME
SELECT * FROM archived_job_by_month WHERE job_id IS NOT NULL
