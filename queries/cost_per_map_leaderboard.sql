-- title: Cost-per-mAP leaderboard
-- description: Model configs and image tags of the jobs that finished in the month, cheapest mAP50 point first: runs, mean mAP50 and mAP50-95, training hours, peak memory, mean cost per run and cost per mAP point. Mean cost per run is the report's leaderboard figure: the exact mean over whole jobs (all the months they ran in) rounded half up to the currency's minor unit; cost per mAP point is a rate, shown to 4 decimals.
-- param: month MONTH: the month, YYYY-MM
--
-- Why the arithmetic: a mean over runs is not a sum of the ledger's cents, so the report
-- rounds mart_leaderboard's exact mean half up to the currency's minor unit when it prints it;
-- this query does the same in whole nano-units, to the minor unit of the ledger's currency
-- (not always cents: JPY has none). One SELECT, as every named query.
WITH minor AS (
    -- the currency's minor unit: ledger_charges.cost is DECIMAL(38, places); `unit` is one
    -- minor unit as a value of that type (coalesce takes the type of the ledger's cost)
    SELECT CAST(10 ** (9 - numeric_scale) AS BIGINT) AS nanos_per_unit,
           coalesce((SELECT cost FROM ledger_charges WHERE false),
                    CAST(10 ** (4 - numeric_scale) AS BIGINT) * CAST(0.0001 AS DECIMAL(38, 4))) AS unit
    FROM information_schema.columns
    WHERE table_catalog = current_database() AND table_schema = 'main'
      AND table_name = 'ledger_charges' AND column_name = 'cost'
)
SELECT
    b.model_type,
    b.image_tag,
    b.runs,
    round(b.mean_map50, 3) AS mean_map50,
    round(b.mean_map50_95, 3) AS mean_map50_95,
    round(b.mean_training_hours, 2) AS mean_training_hours,
    round(b.mean_gpu_hours, 2) AS mean_gpu_hours,
    round(b.peak_mem_mib / 1024, 1) AS peak_mem_gib,
    CAST((CAST(b.mean_cost_per_run * 1000000000 AS HUGEINT) + m.nanos_per_unit // 2) // m.nanos_per_unit
         AS DECIMAL(38, 0)) * m.unit AS mean_cost_per_run,
    round(b.cost_per_map50_point, 4) AS cost_per_map50_point,
    round(b.cost_per_map50_95_point, 4) AS cost_per_map50_95_point
FROM mart_leaderboard AS b
CROSS JOIN minor AS m
WHERE b.month = $month
ORDER BY b.cost_per_map50_point ASC NULLS LAST, b.model_type, b.image_tag
