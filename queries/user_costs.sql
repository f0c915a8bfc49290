-- title: Cost by user
-- description: Each user's GPU-hours, cost, density and idle waste in the month, per project they worked in, most expensive first.
-- param: month MONTH: the month, YYYY-MM
SELECT
    user_name,
    project,
    jobs,
    round(gpu_hours, 2) AS gpu_hours,
    round(density * 100, 1) AS density_pct,
    round(idle_gpu_hours, 2) AS idle_gpu_hours,
    round(cost, 2) AS cost
FROM mart_user_month
WHERE month = $month
ORDER BY cost DESC, user_name, project
