-- title: Month-over-month change by project
-- description: Each project's cost and GPU-hours in the month against the month before, with the change in money and percent; unlabeled and unallocated capacity included as their own rows.
-- param: month MONTH: the month, YYYY-MM
WITH cur AS (SELECT * FROM mart_project_month WHERE month = $month),
prev AS (
    SELECT * FROM mart_project_month
    WHERE month = strftime(CAST($month || '-01' AS DATE) - INTERVAL 1 MONTH, '%Y-%m')
)
SELECT
    coalesce(cur.project, prev.project) AS project,
    round(coalesce(prev.cost, 0), 2) AS previous_cost,
    round(coalesce(cur.cost, 0), 2) AS cost,
    round(coalesce(cur.cost, 0) - coalesce(prev.cost, 0), 2) AS change,
    round((coalesce(cur.cost, 0) - prev.cost) / nullif(prev.cost, 0) * 100, 1) AS change_pct,
    round(coalesce(prev.gpu_hours, 0), 1) AS previous_gpu_hours,
    round(coalesce(cur.gpu_hours, 0), 1) AS gpu_hours
FROM cur
FULL OUTER JOIN prev USING (project, bucket)
ORDER BY abs(change) DESC, project
