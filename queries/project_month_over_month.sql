-- title: Month-over-month change by project
-- description: Each project's billed cost (the cents of the reports and the finance CSV: own use plus any share of unallocated capacity) and GPU-hours in the month against the month before, with the change in money and percent; unlabeled and unallocated capacity as their own rows. A month the database holds only in part is no trend: `partial` then says which month and how much of it the database holds, in the reports' words ("September 2026 is partial: 1.0 of 30 days (3 %)"), and change_pct is left empty, as the reports show no change; `partial` is empty when both months are whole.
-- param: month MONTH: the month, YYYY-MM
--
-- Why the coverage step: the reports compare two months only when both are whole
-- (mart_month_coverage.partial; yolocost.report.trend.comparison) and name the partial one
-- with its coverage. This query reads the same rows and writes the same words (days held
-- truncated to a tenth, hours under a day; the whole percent, to a truncated tenth where it
-- would read 0 or 100), in integer arithmetic. One SELECT (with steps as CTEs), as every
-- named query.
WITH months AS (
    SELECT $month AS cur, strftime(CAST($month || '-01' AS DATE) - INTERVAL 1 MONTH, '%Y-%m') AS prev
),
coverage AS (
    -- the reports' sentence for each of the two months that the database holds only in part
    SELECT c.month,
           strftime(CAST(c.month || '-01' AS DATE), '%B %Y') || ' is partial: '
           || CASE WHEN c.intervals * s.grain_seconds >= 86400
                   THEN CAST(c.intervals * s.grain_seconds * 10 // 86400 // 10 AS VARCHAR) || '.'
                        || CAST(c.intervals * s.grain_seconds * 10 // 86400 % 10 AS VARCHAR)
                   ELSE CAST(c.intervals * s.grain_seconds // 360 // 10 AS VARCHAR) || '.'
                        || CAST(c.intervals * s.grain_seconds // 360 % 10 AS VARCHAR) || ' h' END
           || ' of ' || CAST(day(last_day(CAST(c.month || '-01' AS DATE))) AS VARCHAR) || ' days ('
           || CASE WHEN c.intervals > 0 AND c.intervals < c.month_intervals
                        AND (200 * c.intervals + c.month_intervals) // (2 * c.month_intervals) IN (0, 100)
                   THEN CASE WHEN 1000 * c.intervals // c.month_intervals = 0 THEN '< 0.1'
                             ELSE CAST(1000 * c.intervals // c.month_intervals // 10 AS VARCHAR) || '.'
                                  || CAST(1000 * c.intervals // c.month_intervals % 10 AS VARCHAR) END
                   ELSE CAST((200 * c.intervals + c.month_intervals) // (2 * c.month_intervals) AS VARCHAR) END
           || ' %)' AS text
    FROM mart_month_coverage AS c
    CROSS JOIN settings AS s
    WHERE c.partial AND c.month IN (SELECT cur FROM months UNION ALL SELECT prev FROM months)
),
note AS (
    -- the previous month first, as the reports join them; NULL when both months are whole
    SELECT nullif(concat_ws('; ',
                            (SELECT text FROM coverage WHERE month = (SELECT prev FROM months)),
                            (SELECT text FROM coverage WHERE month = (SELECT cur FROM months))), '') AS partial
),
billed AS (
    SELECT month, project, sum(cost) AS cost, sum(gpu_hours) FILTER (WHERE allocation = 'usage') AS gpu_hours
    FROM ledger_charges
    WHERE month IN (SELECT cur FROM months UNION ALL SELECT prev FROM months)
    GROUP BY month, project
),
cur AS (SELECT * FROM billed WHERE month = (SELECT cur FROM months)),
prev AS (SELECT * FROM billed WHERE month = (SELECT prev FROM months))
SELECT
    coalesce(cur.project, prev.project) AS project,
    coalesce(prev.cost, 0) AS previous_cost,
    coalesce(cur.cost, 0) AS cost,
    coalesce(cur.cost, 0) - coalesce(prev.cost, 0) AS change,
    CASE WHEN n.partial IS NULL
         THEN round((coalesce(cur.cost, 0) - prev.cost) / nullif(prev.cost, 0) * 100, 1) END AS change_pct,
    coalesce(prev.gpu_hours, 0) AS previous_gpu_hours,
    coalesce(cur.gpu_hours, 0) AS gpu_hours,
    n.partial
FROM cur
FULL OUTER JOIN prev USING (project)
CROSS JOIN note AS n
ORDER BY abs(change) DESC, project
