-- title: Cost by user
-- description: Each user's GPU-hours, cost, density and idle waste in the month, per project they worked in, most expensive first (the cents of the reports: sums of ledger_job_month).
-- param: month MONTH: the month, YYYY-MM
SELECT
    m.user_name,
    l.project,
    count(*) AS jobs,
    sum(l.gpu_hours) AS gpu_hours,
    round(density(sum(m.seconds_busy), sum(m.seconds_present)) * 100, 1) AS density_pct,
    sum(l.idle_gpu_hours) AS idle_gpu_hours,
    sum(l.idle_cost) AS idle_cost,
    sum(l.cost) AS cost
FROM ledger_job_month AS l
JOIN mart_job_month AS m USING (month, job_id)
WHERE l.month = $month
GROUP BY m.user_name, l.project
ORDER BY cost DESC, m.user_name, l.project
