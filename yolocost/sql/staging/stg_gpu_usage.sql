-- stg_gpu_usage: one row per GPU x owner x grain interval, from gpu_usage, with the local
-- month and day the interval falls in (configured time zone), the key its price is looked
-- up by, and gpu_seconds: seconds weighted by the share of a physical GPU the row stands
-- for (a MIG instance counts slices/7 of a GPU, slices/4 on an A30, unless its profile has
-- a price of its own). Money and GPU-hours downstream are computed from gpu_seconds.
-- usage_row is the raw row's rowid: a key to join a row's computed figures back to it.
-- The local month and day are computed once per distinct interval (a few thousand a month)
-- and joined to the rows: the time zone conversion per row cost DuckDB 1.5 about 2.5 CPU-s
-- per 10 million rows, and the build reads this view several times.
WITH local_intervals AS (
    SELECT
        i.interval_start,
        strftime(timezone(s.timezone, i.interval_start), '%Y-%m') AS month,
        CAST(timezone(s.timezone, i.interval_start) AS DATE) AS day
    FROM (SELECT DISTINCT interval_start FROM gpu_usage) AS i
    CROSS JOIN settings AS s
)
SELECT
    u.rowid AS usage_row,
    u.interval_start,
    u.cluster,
    u.hostname,
    u.gpu_uuid,
    u.gpu_index,
    u.gpu_model,
    u.mig_profile,
    u.job_id,
    u.job_id IS NULL AS is_unallocated,
    t.month,
    t.day,
    CASE WHEN mig.gpu_model IS NOT NULL THEN mig.gpu_model ELSE u.gpu_model END AS price_key,
    CASE
        WHEN u.mig_profile IS NULL OR mig.gpu_model IS NOT NULL THEN 1.0
        ELSE TRY_CAST(regexp_extract(u.mig_profile, '^([0-9]+)g', 1) AS DOUBLE)
             / CASE WHEN u.gpu_model ILIKE '%A30%' THEN 4 ELSE 7 END
    END AS gpu_share,
    CAST(round(u.seconds_present * gpu_share, 6) AS DECIMAL(18, 6)) AS gpu_seconds,
    CAST(round(u.seconds_idle * gpu_share, 6) AS DECIMAL(18, 6)) AS idle_gpu_seconds,
    u.seconds_present,
    u.seconds_busy,
    u.seconds_idle,
    u.util_mean,
    u.mem_peak_mib,
    u.power_mean_w,
    coalesce(u.energy_mj, 0) AS energy_mj,
    -- to the millijoule in a DECIMAL: sums of it are exact, the same on any number of threads
    CAST(round(u.power_mean_w * u.seconds_present, 3) AS DECIMAL(18, 3)) AS power_energy_j
FROM gpu_usage AS u
JOIN local_intervals AS t ON t.interval_start = u.interval_start
LEFT JOIN (SELECT DISTINCT gpu_model FROM prices) AS mig
    ON u.mig_profile IS NOT NULL AND mig.gpu_model = u.gpu_model || ' ' || u.mig_profile
