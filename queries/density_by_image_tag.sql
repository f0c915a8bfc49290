-- title: Density by image tag
-- description: Effective compute density (share of GPU time above the busy threshold) and idle share per container image tag in the month, worst first, with spend and tag-policy status.
-- param: month MONTH: the month, YYYY-MM
SELECT
    image_tag,
    any_value(tag_status) AS tag_status,
    sum(jobs) AS jobs,
    round(sum(gpu_hours), 2) AS gpu_hours,
    round(sum(density * gpu_hours) / nullif(sum(gpu_hours), 0) * 100, 1) AS density_pct,
    round(sum(idle_gpu_hours) / nullif(sum(gpu_hours), 0) * 100, 1) AS idle_pct,
    round(sum(cost), 2) AS cost
FROM mart_image_tag_month
WHERE month = $month
GROUP BY image_tag
ORDER BY density_pct ASC NULLS LAST, cost DESC
