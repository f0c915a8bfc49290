-- mart_finance_daily: one row per local day x project bucket x GPU model (the rows of
-- mart_daily, same measures), with what the finance CSV needs beyond them: the image tags
-- held that day (distinct tag labels, sorted, '; '-separated; NULL on unallocated capacity),
-- the exact GPU-seconds, and the cluster, time zone and currency the days were cut and priced
-- in. No user or job names. The rows of a month add up exactly to mart_cluster_month.total_cost.
-- materialized: by month
SELECT
    d.day,
    d.month,
    d.project,
    d.bucket,
    d.gpu_model,
    d.jobs,
    d.gpu_seconds,
    d.gpu_hours,
    d.density,
    d.idle_gpu_hours,
    d.idle_cost,
    d.gpu_cost,
    d.energy_cost,
    d.cost,
    d.energy_kwh,
    t.image_tags,
    s.cluster,
    s.timezone,
    s.currency
FROM mart_daily AS d
LEFT JOIN (
    SELECT
        u.day,
        u.project_name,
        u.gpu_model,
        string_agg(DISTINCT j.image_tag_label, '; ' ORDER BY j.image_tag_label) AS image_tags
    FROM int_usage_gpu_day AS u
    JOIN int_jobs AS j ON j.job_id = u.job_id
    WHERE u.bucket <> 'unallocated'
    GROUP BY u.day, u.project_name, u.gpu_model
) AS t
    ON t.day = d.day AND t.project_name = d.project AND t.gpu_model = d.gpu_model
CROSS JOIN settings AS s
