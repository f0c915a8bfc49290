-- title: Density by image tag
-- description: Effective compute density (share of GPU time above the busy threshold) and idle share per container image tag in the month, worst first, with spend (the cents of the reports) and tag-policy status.
-- param: month MONTH: the month, YYYY-MM
SELECT
    m.image_tag,
    any_value(m.tag_status) AS tag_status,
    count(*) AS jobs,
    sum(l.gpu_hours) AS gpu_hours,
    round(density(sum(m.seconds_busy), sum(m.seconds_present)) * 100, 1) AS density_pct,
    round(sum(m.idle_gpu_hours) / nullif(sum(m.gpu_hours), 0) * 100, 1) AS idle_pct,
    sum(l.cost) AS cost
FROM mart_job_month AS m
JOIN ledger_job_month AS l USING (month, job_id)
WHERE m.month = $month
GROUP BY m.image_tag
ORDER BY density_pct ASC NULLS LAST, cost DESC
