-- stg_energy_prices: one row per energy price period with its UTC start and end instants.
SELECT
    row_number() OVER (ORDER BY e.effective_from) AS energy_price_id,
    e.price_per_kwh,
    e.effective_from,
    CAST(e.price_per_kwh * 1000000 AS HUGEINT) AS price_micro,
    timezone(s.timezone, CAST(e.effective_from AS TIMESTAMP)) AS valid_from,
    coalesce(
        lead(timezone(s.timezone, CAST(e.effective_from AS TIMESTAMP))) OVER (ORDER BY e.effective_from),
        TIMESTAMPTZ '9999-12-31 00:00:00+00'
    ) AS valid_to
FROM energy_prices AS e
CROSS JOIN settings AS s
