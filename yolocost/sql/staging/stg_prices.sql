-- stg_prices: one row per price period of a GPU model (or 'model profile' for an explicitly
-- priced MIG profile; '*' = the configured default), with the UTC instants it starts and
-- ends at: effective_from is a local date in the configured time zone.
SELECT
    p.gpu_model AS price_key,
    row_number() OVER (ORDER BY p.gpu_model, p.effective_from) AS price_id,
    p.price_per_gpu_hour,
    p.effective_from,
    CAST(p.price_per_gpu_hour * 1000000 AS HUGEINT) AS price_micro,
    timezone(s.timezone, CAST(p.effective_from AS TIMESTAMP)) AS valid_from,
    coalesce(
        lead(timezone(s.timezone, CAST(p.effective_from AS TIMESTAMP)))
            OVER (PARTITION BY p.gpu_model ORDER BY p.effective_from),
        TIMESTAMPTZ '9999-12-31 00:00:00+00'
    ) AS valid_to
FROM prices AS p
CROSS JOIN settings AS s
