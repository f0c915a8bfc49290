-- Macros the SQL models (sql/staging, intermediate, marts), the named queries (queries/*.sql)
-- and the reports share, kept in every database file yolocost writes
-- (yolocost.db.create_definitions, in each write's transaction, before the models are built),
-- so that a named query run with the duckdb command line on the file finds them too.

-- The measures' arithmetic, each written once so that every model, query and report that
-- shows a measure computes it alike. A scalar macro is its expression put in place of the
-- call: a figure computed through one has the bits of the expression written out. Each is one
-- DOUBLE division, meant for exact sums (integer or DECIMAL seconds and energy): sum first,
-- then convert, so that a figure does not depend on the order its rows were added in.

-- hours(seconds): seconds as hours (GPU-hours from GPU-seconds, wall-clock hours).
CREATE OR REPLACE MACRO hours(seconds) AS CAST(seconds AS DOUBLE) / 3600;

-- density(busy_seconds, present_seconds): effective compute density, the share of the GPU's
-- present time it was busy (above the busy threshold); NULL where no time was present. Called
-- on sums, so that it is a ratio of sums (every interval weighs what it lasted), not a mean.
CREATE OR REPLACE MACRO density(busy_seconds, present_seconds) AS
    CAST(busy_seconds AS DOUBLE) / nullif(CAST(present_seconds AS DOUBLE), 0);

-- kwh(energy_mj): energy in millijoules (DCGM's energy counter, gpu_usage.energy_mj) as kWh
-- (1 kWh = 3.6e9 mJ).
CREATE OR REPLACE MACRO kwh(energy_mj) AS CAST(energy_mj AS DOUBLE) / 3.6e9;

-- kwh_of_joules(energy_j): energy in joules (the power readings times the present seconds,
-- stg_gpu_usage.power_energy_j, the energy counter's cross-check) as kWh (1 kWh = 3.6e6 J).
CREATE OR REPLACE MACRO kwh_of_joules(energy_j) AS CAST(energy_j AS DOUBLE) / 3.6e6;

-- The table macros below read tables. DuckDB resolves the tables of a macro when it creates
-- it, and the tables these read (the ledger, the marts) exist only once a build has made them.
-- So each names its tables in a parameter with a default, read through query_table(): the
-- macro can be created with the raw tables, and a call finds the tables of the moment (of the
-- types they have then).

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
    hours(avg(epoch(j.last_interval) - epoch(j.first_interval) + grain_seconds ORDER BY j.job_id))
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

-- The cent ledger (yolocost.ledger) as the documents read it. Each audience's rows and what
-- counts as capacity nobody held are said here once; every report section, the summary and
-- the month's totals read the ledger through these two.

-- ledger_lines(in_month, of_project): the month's ledger_charges rows an audience sees: every
-- row (of_project NULL: the admin report, the summary, the month's totals) or one project's own
-- (bucket 'project': its usage and its share of unallocated capacity, never another project's
-- row). `unallocated`: capacity nobody held, as every document counts it: the unallocated
-- bucket, and whatever share of it the "proportional" policy charged to projects (`shared`,
-- allocation 'unallocated share', yolocost.ledger.SHARE).
CREATE OR REPLACE MACRO ledger_lines(in_month, of_project, ledger_table := 'ledger_charges') AS TABLE
SELECT *,
       bucket = 'unallocated' OR allocation = 'unallocated share' AS unallocated,
       allocation = 'unallocated share' AS shared
FROM query_table(ledger_table)
WHERE month = in_month AND (of_project IS NULL OR (project = of_project AND bucket = 'project'));

-- ledger_jobs(in_month, of_project): the month's ledger_job_month rows (each job's cents and
-- tenths of the month) an audience sees: every job, or one project's own.
CREATE OR REPLACE MACRO ledger_jobs(in_month, of_project, ledger_table := 'ledger_job_month') AS TABLE
SELECT *
FROM query_table(ledger_table)
WHERE month = in_month AND (of_project IS NULL OR (project = of_project AND bucket = 'project'));
