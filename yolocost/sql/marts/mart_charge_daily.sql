-- mart_charge_daily: one row per local day x project bucket x GPU model x charge kind x price:
-- the exact charges the cent ledger (yolocost.ledger, table ledger_charges) rounds once.
-- charge_kind 'gpu' is GPU time (quantity in GPU-hours at the model's price per GPU-hour,
-- MIG instances as their share of a GPU), 'energy' the energy the GPUs drew (quantity in kWh
-- at the energy price; only where an energy price is configured). A price that changes
-- during a day gives that day two rows. sku_price_id names the price period ('<price key>
-- from <local date>', 'energy from <local date>'); the GPU-second, busy and idle columns
-- are the day's held time behind both kinds. Money exact, DECIMAL(38, 9); the rows of a
-- month add up exactly to mart_cluster_month.total_cost.
-- materialized: by month
WITH gpu_rows AS (
    SELECT
        u.day,
        any_value(u.month) AS month,
        u.bucket,
        u.project_name AS project,
        u.gpu_model,
        'gpu' AS charge_kind,
        p.price_key || ' from ' || strftime(p.effective_from, '%Y-%m-%d') AS sku_price_id,
        any_value(CAST(p.price_per_gpu_hour AS DECIMAL(38, 9))) AS unit_price,
        'GPU-Hours' AS pricing_unit,
        -- hours to 1e-9 in integers (DuckDB divides decimals as doubles): units of 1e-6 s / 3.6, half up
        CAST((CAST(sum(u.gpu_seconds) * 1000000 AS HUGEINT) * 10 + 18) // 36 AS DECIMAL(38, 0))
            * CAST(0.000000001 AS DECIMAL(18, 9)) AS quantity,
        sum(u.gpu_cost) AS cost,
        CASE WHEN u.bucket = 'unallocated' THEN NULL ELSE sum(u.idle_cost) END AS idle_cost,
        sum(u.gpu_seconds) AS gpu_seconds,
        CASE WHEN u.bucket = 'unallocated' THEN NULL ELSE sum(u.idle_gpu_seconds) END AS idle_gpu_seconds,
        sum(u.seconds_present) AS seconds_present,
        sum(u.seconds_busy) AS seconds_busy,
        sum(u.energy_mj) AS energy_mj,
        count(DISTINCT u.job_id) AS jobs
    FROM int_usage_gpu_day AS u
    JOIN stg_prices AS p ON p.price_id = u.price_id
    GROUP BY u.day, u.bucket, u.project_name, u.gpu_model, p.price_key, p.effective_from
),
energy_rows AS (
    SELECT
        u.day,
        any_value(u.month) AS month,
        u.bucket,
        u.project_name AS project,
        u.gpu_model,
        'energy' AS charge_kind,
        'energy from ' || strftime(e.effective_from, '%Y-%m-%d') AS sku_price_id,
        any_value(CAST(e.price_per_kwh AS DECIMAL(38, 9))) AS unit_price,
        'kWh' AS pricing_unit,
        -- kWh to 1e-9: mJ / 3.6, half up
        CAST((CAST(sum(u.energy_mj) AS HUGEINT) * 10 + 18) // 36 AS DECIMAL(38, 0))
            * CAST(0.000000001 AS DECIMAL(18, 9)) AS quantity,
        sum(u.energy_cost) AS cost,
        CAST(NULL AS DECIMAL(38, 9)) AS idle_cost,
        sum(u.gpu_seconds) AS gpu_seconds,
        CAST(NULL AS DECIMAL(38, 6)) AS idle_gpu_seconds,
        sum(u.seconds_present) AS seconds_present,
        sum(u.seconds_busy) AS seconds_busy,
        sum(u.energy_mj) AS energy_mj,
        count(DISTINCT u.job_id) AS jobs
    FROM int_usage_gpu_day AS u
    JOIN stg_energy_prices AS e ON e.energy_price_id = u.energy_price_id
    GROUP BY u.day, u.bucket, u.project_name, u.gpu_model, e.effective_from
)
SELECT * FROM gpu_rows
UNION ALL
SELECT * FROM energy_rows
