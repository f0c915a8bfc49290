-- stg_gpu_usage: one row per GPU x owner x grain interval, from gpu_usage, with the local
-- month and day the interval falls in (configured time zone), the key its price is looked
-- up by, and gpu_seconds: seconds weighted by the share of a physical GPU the row stands
-- for (a MIG instance counts slices/7 of a GPU, slices/4 on an A30, unless its profile has
-- a price of its own). Money and GPU-hours downstream are computed from gpu_seconds.
-- usage_row is the raw row's rowid: a key to join a row's computed figures back to it.
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
    strftime(timezone(s.timezone, u.interval_start), '%Y-%m') AS month,
    CAST(timezone(s.timezone, u.interval_start) AS DATE) AS day,
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
CROSS JOIN settings AS s
LEFT JOIN (SELECT DISTINCT gpu_model FROM prices) AS mig
    ON u.mig_profile IS NOT NULL AND mig.gpu_model = u.gpu_model || ' ' || u.mig_profile
