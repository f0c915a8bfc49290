-- Macros the named queries (queries/*.sql) and the reports share, kept in every database file
-- yolocost writes (yolocost.db.create_definitions, in each write's transaction), so that a
-- named query run with the duckdb command line on the file finds them too.
--
-- DuckDB resolves the tables of a macro when it creates it, and the tables these read (the
-- ledger, the marts) exist only once a build has made them. So each names its tables in a
-- parameter with a default, read through query_table(): the macro can be created with the raw
-- tables, and a call finds the tables of the moment (of the types they have then).

-- minor_unit(): the currency's minor unit as the cent ledger stores money. ledger_charges.cost
-- is DECIMAL(38, places); `unit` is one minor unit as a value of that type (coalesce takes the
-- type of the ledger's cost), `units_per_one` the units in one (100 for cents, 1 for JPY),
-- `nanos_per_unit` the nano-units in one unit (exact integer rounding to the unit).
CREATE OR REPLACE MACRO minor_unit(ledger_table := 'ledger_charges') AS TABLE
SELECT numeric_scale AS places,
       CAST(10 ** numeric_scale AS BIGINT) AS units_per_one,
       CAST(10 ** (9 - numeric_scale) AS BIGINT) AS nanos_per_unit,
       coalesce((SELECT cost FROM query_table(ledger_table) WHERE false),
                CAST(10 ** (4 - numeric_scale) AS BIGINT) * CAST(0.0001 AS DECIMAL(38, 4))) AS unit
FROM information_schema.columns
WHERE table_catalog = current_database() AND table_schema = 'main'
  AND table_name = ledger_table AND column_name = 'cost';

-- cost_per_map_board(month, project, grain_seconds): the value leaderboard's configurations,
-- one row per model config x image tag over the jobs that finished (have a final validation)
-- and ended in `month` (mart_job_by_month), of every project (project NULL) or of one
-- project's own runs. Money is the cent ledger's: `cost` is the sum of the runs' ledger cents
-- of every month each ran in up to this one (ledger_job_month), so a configuration's spend is
-- a sum of printed cents. Training hours are wall clock, the last interval counted whole
-- (`grain_seconds`). Means of doubles are taken in job order, so the same data give the same
-- bits. The named query cost_per_map_leaderboard ranks and rounds these rows; the reports'
-- leaderboard (yolocost.report.data.leaderboard) reads them whole.
CREATE OR REPLACE MACRO cost_per_map_board(in_month, of_project, grain_seconds,
                                           jobs_table := 'mart_job_by_month',
                                           ledger_table := 'ledger_job_month') AS TABLE
SELECT
    j.model_type,
    j.image_tag,
    count(*) AS runs,
    avg(j.map50 ORDER BY j.job_id) AS mean_map50,
    avg(j.map50_95 ORDER BY j.job_id) AS mean_map50_95,
    avg(epoch(j.last_interval) - epoch(j.first_interval) + grain_seconds ORDER BY j.job_id) / 3600
        AS mean_training_hours,
    avg(j.gpu_hours ORDER BY j.job_id) AS mean_gpu_hours,
    max(j.mem_peak_mib) AS peak_mem_mib,
    avg(j.density ORDER BY j.job_id) AS mean_density,
    coalesce(sum(c.cents), 0) AS cost
FROM query_table(jobs_table) AS j
LEFT JOIN (SELECT job_id, sum(cost) AS cents FROM query_table(ledger_table) WHERE month <= in_month
           GROUP BY job_id) AS c USING (job_id)
WHERE j.month = in_month AND j.ended AND j.map50 IS NOT NULL AND j.first_interval IS NOT NULL
  AND (of_project IS NULL OR (j.project = of_project AND j.bucket = 'project'))
GROUP BY j.model_type, j.image_tag;
