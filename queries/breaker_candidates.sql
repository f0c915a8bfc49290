-- title: Breaker candidates
-- description: Stretches of at least the breaker length (default 2 h) in which a job's utilization stayed under the breaker threshold (40 %) while its training loss improved by less than 0.001: what an automatic pause would have saved (GPU time and energy). Savings and GPU-hours are the admin report's figures: the month's stretches' exact amounts rounded to the currency's minor unit (GPU-hours to 0.1 h) so that the rows add up to their rounded total, largest remainder first.
-- param: month MONTH: the month the stretch started in, YYYY-MM
--
-- Why these steps: a pause that never happened is in no ledger, so the report rounds the
-- stretches' exact cost itself (yolocost.report.data.breakers: yolocost.money.to_cents over
-- the month's stretches, largest cost first), and rounding each row on its own could miss its
-- total by a cent. This query applies the same rule: the total rounded half up, every row's
-- amount floored, the units left one each to the largest remainders, ties to the earlier row
-- (cost descending, job, start), in exact integer arithmetic; GPU-hours the same way to 0.1 h,
-- from the hours as the report reads them (10 significant digits). One SELECT (with steps as
-- CTEs), as every named query.
WITH stretches AS (
    SELECT b.*,
           row_number() OVER (ORDER BY b.cost DESC, b.job_id, b.stretch_start) AS position,
           CAST(b.cost * 1000000000 AS HUGEINT) AS nanos,
           CAST(format('{:.10g}', coalesce(b.gpu_hours, 0.0)) AS DECIMAL(38, 18)) AS hours
    FROM mart_breakers AS b
    WHERE b.month = $month
),
floors AS (
    SELECT s.*, m.unit,
           s.nanos // m.nanos_per_unit AS cost_floor,
           s.nanos % m.nanos_per_unit AS cost_rest,
           (sum(s.nanos) OVER () + m.nanos_per_unit // 2) // m.nanos_per_unit AS cost_total,
           CAST(floor(s.hours * 10) AS HUGEINT) AS hours_floor,
           s.hours * 10 - floor(s.hours * 10) AS hours_rest,
           CAST(round(sum(s.hours) OVER (), 1) * 10 AS HUGEINT) AS hours_total
    FROM stretches AS s
    CROSS JOIN minor_unit() AS m  -- the currency's minor unit (sql/macros.sql)
),
rounded AS (
    SELECT *,
           cost_floor + CASE WHEN row_number() OVER (ORDER BY cost_rest DESC, position)
                                  <= cost_total - sum(cost_floor) OVER () THEN 1 ELSE 0 END AS cost_units,
           hours_floor + CASE WHEN row_number() OVER (ORDER BY hours_rest DESC, position)
                                   <= hours_total - sum(hours_floor) OVER () THEN 1 ELSE 0 END AS hours_units
    FROM floors
)
SELECT
    job_id,
    project,
    user_name,
    model_type,
    stretch_start,
    stretch_end,
    round(stretch_hours, 2) AS stretch_hours,
    CAST(hours_units AS DECIMAL(38, 0)) * 0.1 AS gpu_hours,
    round(util_mean, 1) AS util_mean_pct,
    round(loss_improvement, 5) AS loss_improvement,
    CAST(cost_units AS DECIMAL(38, 0)) * unit AS savings
FROM rounded
ORDER BY position
