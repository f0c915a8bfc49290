-- title: Cost-per-mAP leaderboard
-- description: Every model config and image tag with at least one finished run (final validation) that ended in the month, cheapest mAP50 point first, ranked 1 = best value: runs, mean mAP50 and mAP50-95, training hours, peak memory, the runs' cost, mean cost per run and cost per mAP point. Cost is the sum of the runs' cent-ledger cents (ledger_job_month, every month each run ran in up to this one): the cents the reports print. Mean cost per run is that sum / runs, rounded half up to the currency's minor unit, as the reports print it; cost per mAP point is a rate on the same cents, cost / runs / (mean mAP50 x 100), shown to 4 decimals. With project set, only that project's own runs (the project report's leaderboard).
-- param: month MONTH: the month, YYYY-MM
-- param: project VARCHAR = all: one project's own runs, or all
--
-- Why the arithmetic: money comes from the ledger, never from the exact marts rounded on
-- their own, so each run's cost is its ledger cents and a configuration's cost their sum; a
-- mean or a cost per point is a rate on those cents. The mean is rounded half up in whole
-- minor units of the ledger's currency (not always cents: JPY has none). One SELECT, as
-- every named query; the configurations and their cents come from the macro
-- cost_per_map_board, which yolocost.report.data.leaderboard reads as well.
WITH board AS (
    -- each configuration's runs, means and ledger cents (sql/macros.sql, as the reports read them)
    SELECT b.*
    FROM settings AS s
    CROSS JOIN cost_per_map_board($month, nullif($project, 'all'), s.grain_seconds) AS b
),
rated AS (
    SELECT *,
           CAST(cost AS DOUBLE) / runs / nullif(mean_map50 * 100, 0) AS cost_per_map50_point,
           CAST(cost AS DOUBLE) / runs / nullif(mean_map50_95 * 100, 0) AS cost_per_map50_95_point
    FROM board
)
SELECT
    row_number() OVER (ORDER BY b.cost_per_map50_point ASC NULLS LAST, coalesce(b.model_type, ''),
                       coalesce(b.image_tag, '')) AS rank,
    b.model_type,
    b.image_tag,
    b.runs,
    round(b.mean_map50, 3) AS mean_map50,
    round(b.mean_map50_95, 3) AS mean_map50_95,
    round(b.mean_training_hours, 2) AS mean_training_hours,
    round(b.mean_gpu_hours, 2) AS mean_gpu_hours,
    round(b.peak_mem_mib / 1024, 1) AS peak_mem_gib,
    b.cost,
    -- half up: (2 x minor units + runs) // (2 x runs)
    CAST((CAST(b.cost * m.units_per_one AS HUGEINT) * 2 + b.runs) // (2 * b.runs) AS DECIMAL(38, 0)) * m.unit
        AS mean_cost_per_run,
    round(b.cost_per_map50_point, 4) AS cost_per_map50_point,
    round(b.cost_per_map50_95_point, 4) AS cost_per_map50_95_point
FROM rated AS b
CROSS JOIN minor_unit() AS m  -- the currency's minor unit (sql/macros.sql)
ORDER BY rank
