-- title: Month-over-month change by project
-- description: Each project's billed cost (the cents of the reports and the finance CSV: own use plus any share of unallocated capacity) and GPU-hours in the month against the month before, with the change in money and percent; unlabeled and unallocated capacity as their own rows. A month the data does not cover fully is marked partial: compare percentages only between full months.
-- param: month MONTH: the month, YYYY-MM
WITH months AS (
    SELECT $month AS cur, strftime(CAST($month || '-01' AS DATE) - INTERVAL 1 MONTH, '%Y-%m') AS prev
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
    round((coalesce(cur.cost, 0) - prev.cost) / nullif(prev.cost, 0) * 100, 1) AS change_pct,
    coalesce(prev.gpu_hours, 0) AS previous_gpu_hours,
    coalesce(cur.gpu_hours, 0) AS gpu_hours
FROM cur
FULL OUTER JOIN prev USING (project)
ORDER BY abs(change) DESC, project
