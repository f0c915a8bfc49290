-- int_usage_priced: one row per GPU x owner x grain interval with its owner's labels and its
-- money, in DECIMAL(38,9). Cost is gpu_seconds x price per GPU-hour / 3600 (plus energy mJ x
-- price per kWh / 3.6e9), rounded with cumulative rounding inside each month x price period:
-- a row's cost is round(running total up to it) - round(running total before it), so the
-- rows of a month and price add up exactly to round(all their seconds x price / 3600), and
-- conservation (projects + unlabeled + unallocated = capacity x price) holds to the last
-- decimal. price_id is NULL for a GPU model with no price (the loader refuses such data).
WITH priced AS (
    SELECT
        u.*,
        CASE WHEN u.job_id IS NULL THEN 'unallocated' ELSE j.bucket END AS bucket,
        CASE WHEN u.job_id IS NULL THEN '(unallocated)' ELSE j.project_name END AS project_name,
        j.project,
        j.user_name,
        j.model_type,
        j.image_tag,
        j.image_tag_label,
        j.image_digest,
        j.tag_status,
        coalesce(p.price_id, d.price_id) AS price_id,
        coalesce(p.price_micro, d.price_micro) AS price_micro,
        e.energy_price_id,
        coalesce(e.price_micro, 0) AS energy_price_micro,
        CAST(u.gpu_seconds * 1000000 AS HUGEINT) AS gpu_units,
        CAST(u.idle_gpu_seconds * 1000000 AS HUGEINT) AS idle_units
    FROM stg_gpu_usage AS u
    LEFT JOIN stg_jobs AS j ON j.job_id = u.job_id
    LEFT JOIN stg_prices AS p
        ON p.price_key = u.price_key AND u.interval_start >= p.valid_from AND u.interval_start < p.valid_to
    LEFT JOIN stg_prices AS d
        ON d.price_key = '*' AND u.interval_start >= d.valid_from AND u.interval_start < d.valid_to
    LEFT JOIN stg_energy_prices AS e
        ON u.interval_start >= e.valid_from AND u.interval_start < e.valid_to
),
running AS (
    SELECT
        *,
        sum(gpu_units) OVER (
            PARTITION BY month, price_id ORDER BY interval_start, gpu_uuid, job_id NULLS FIRST
            ROWS UNBOUNDED PRECEDING
        ) AS cum_units,
        sum(energy_mj) OVER (
            PARTITION BY month, energy_price_id ORDER BY interval_start, gpu_uuid, job_id NULLS FIRST
            ROWS UNBOUNDED PRECEDING
        ) AS cum_mj
    FROM priced
),
nanos AS (
    SELECT
        *,
        (cum_units * price_micro + 1800000) // 3600000
            - ((cum_units - gpu_units) * price_micro + 1800000) // 3600000 AS gpu_nanos,
        (CAST(cum_mj AS HUGEINT) * energy_price_micro + 1800000) // 3600000
            - (CAST(cum_mj - energy_mj AS HUGEINT) * energy_price_micro + 1800000) // 3600000 AS energy_nanos
    FROM running
)
SELECT
    * EXCLUDE (cum_units, cum_mj, gpu_nanos, energy_nanos),
    CAST(gpu_nanos AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS gpu_cost,
    -- idle cost is the idle share of the row's own cost, so it never exceeds it
    CAST(CASE WHEN gpu_units = 0 THEN 0 ELSE (gpu_nanos * idle_units * 2 + gpu_units) // (2 * gpu_units) END
        AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS idle_cost,
    CAST(energy_nanos AS DECIMAL(38, 0)) * CAST(0.000000001 AS DECIMAL(18, 9)) AS energy_cost
FROM nanos
