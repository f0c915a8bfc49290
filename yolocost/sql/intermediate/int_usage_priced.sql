-- int_usage_priced: one row per GPU x owner x grain interval with its owner's bucket and
-- project and its money, in DECIMAL(38,9). Cost is gpu_seconds x price per GPU-hour / 3600
-- (plus energy mJ x price per kWh / 3.6e9), rounded with cumulative rounding inside each
-- month x price period: in the order interval_start, gpu_uuid, job_id (NULLS FIRST), a row's
-- cost is round(running total up to it) - round(running total before it), so the rows of a
-- month and price add up exactly to round(all their seconds x price / 3600), and
-- conservation (projects + unlabeled + unallocated = capacity x price) holds to the last
-- decimal. price_id is NULL for a GPU model with no price (the loader refuses such data).
-- The running totals are taken over a narrow projection (integer ranks stand for gpu_uuid
-- and job_id, in the same order) and joined back by usage_row: a window over the wide rows
-- would sort and spill gigabytes. The integer arithmetic splits each total at multiples of
-- 3600000 so that it stays in BIGINT: floor((c x p + h) / D) = (c // D) x p + ((c % D) x p
-- + h) // D. Other labels (user, image tag, ...) come from int_jobs by job_id.
-- materialized: by month
WITH gpus AS (
    SELECT gpu_uuid, row_number() OVER (ORDER BY gpu_uuid) AS gpu_rank
    FROM (SELECT DISTINCT gpu_uuid FROM gpu_usage)
),
keyed AS (
    SELECT
        u.usage_row,
        u.month,
        u.interval_start,
        g.gpu_rank,
        j.job_rank,
        CAST(u.gpu_seconds * 1000000 AS BIGINT) AS gpu_units,
        u.energy_mj,
        coalesce(p.price_id, d.price_id) AS price_id,
        e.energy_price_id
    FROM stg_gpu_usage AS u
    JOIN gpus AS g ON g.gpu_uuid = u.gpu_uuid
    LEFT JOIN int_jobs AS j ON j.job_id = u.job_id
    LEFT JOIN stg_prices AS p
        ON p.price_key = u.price_key AND u.interval_start >= p.valid_from AND u.interval_start < p.valid_to
    LEFT JOIN stg_prices AS d
        ON d.price_key = '*' AND u.interval_start >= d.valid_from AND u.interval_start < d.valid_to
    LEFT JOIN stg_energy_prices AS e
        ON u.interval_start >= e.valid_from AND u.interval_start < e.valid_to
),
running AS (
    SELECT
        usage_row,
        price_id,
        energy_price_id,
        CAST(sum(gpu_units) OVER (
            PARTITION BY month, price_id ORDER BY interval_start, gpu_rank, job_rank NULLS FIRST
            ROWS UNBOUNDED PRECEDING
        ) AS BIGINT) AS cum_units,
        CAST(sum(energy_mj) OVER (
            PARTITION BY month, energy_price_id ORDER BY interval_start, gpu_rank, job_rank NULLS FIRST
            ROWS UNBOUNDED PRECEDING
        ) AS BIGINT) AS cum_mj,
        gpu_units,
        energy_mj
    FROM keyed
),
nanos AS (
    SELECT
        r.usage_row,
        r.price_id,
        r.energy_price_id,
        (r.cum_units // 3600000 - (r.cum_units - r.gpu_units) // 3600000) * p.price_micro
            + ((r.cum_units % 3600000) * p.price_micro + 1800000) // 3600000
            - (((r.cum_units - r.gpu_units) % 3600000) * p.price_micro + 1800000) // 3600000 AS gpu_nanos,
        (r.cum_mj // 3600000 - (r.cum_mj - r.energy_mj) // 3600000) * e.price_micro
            + ((r.cum_mj % 3600000) * e.price_micro + 1800000) // 3600000
            - (((r.cum_mj - r.energy_mj) % 3600000) * e.price_micro + 1800000) // 3600000 AS energy_nanos
    FROM running AS r
    LEFT JOIN (SELECT price_id, CAST(price_micro AS BIGINT) AS price_micro FROM stg_prices) AS p
        ON p.price_id = r.price_id
    LEFT JOIN (SELECT energy_price_id, CAST(price_micro AS BIGINT) AS price_micro FROM stg_energy_prices) AS e
        ON e.energy_price_id = r.energy_price_id
),
units AS (
    SELECT
        u.*,
        n.price_id,
        n.energy_price_id,
        n.gpu_nanos,
        coalesce(n.energy_nanos, 0) AS energy_nanos,
        CAST(u.gpu_seconds * 1000000 AS BIGINT) AS gpu_units,
        CAST(u.idle_gpu_seconds * 1000000 AS BIGINT) AS idle_units
    FROM stg_gpu_usage AS u
    JOIN nanos AS n ON n.usage_row = u.usage_row
)
SELECT
    u.interval_start,
    u.month,
    u.day,
    u.hostname,
    u.gpu_uuid,
    u.gpu_model,
    u.mig_profile,
    u.job_id,
    CASE WHEN u.job_id IS NULL THEN 'unallocated' ELSE j.bucket END AS bucket,
    CASE WHEN u.job_id IS NULL THEN '(unallocated)' ELSE j.project_name END AS project_name,
    u.price_key,
    u.price_id,
    u.energy_price_id,
    u.seconds_present,
    u.seconds_busy,
    u.seconds_idle,
    u.gpu_seconds,
    u.idle_gpu_seconds,
    u.util_mean,
    u.mem_peak_mib,
    u.energy_mj,
    u.power_energy_j,
    CAST(u.gpu_nanos AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS gpu_cost,
    -- idle cost is the idle share of the row's own cost (rounded half up), so it never exceeds
    -- it; in BIGINT where the product fits, else in HUGEINT
    CAST(CASE
        WHEN u.gpu_units = 0 THEN 0
        WHEN u.gpu_nanos < 2147483648 AND u.idle_units < 2147483648
            THEN (u.gpu_nanos * u.idle_units * 2 + u.gpu_units) // (2 * u.gpu_units)
        ELSE (CAST(u.gpu_nanos AS HUGEINT) * u.idle_units * 2 + u.gpu_units) // (2 * u.gpu_units)
    END AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS idle_cost,
    CAST(u.energy_nanos AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS energy_cost
FROM units AS u
LEFT JOIN int_jobs AS j ON j.job_id = u.job_id
