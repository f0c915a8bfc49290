-- int_usage_rollup: the standard measures of int_usage_priced (GPU-hours, density, idle waste,
-- GPU, energy and total cost, energy, peak memory) rolled up once for every grouping the
-- per-dimension marts report, so each measure has a single definition. grouping_set names the
-- grouping: month_project | month_project_user | month_project_image_tag | day_project_gpu_model.
-- Columns not in a row's grouping are NULL. density = busy seconds / present seconds (the
-- conversions and the ratio are the macros of sql/macros.sql: hours, density, kwh). Idle
-- waste counts held time only: it is NULL on rows of unallocated capacity.
-- materialized: by month
SELECT
    CASE
        WHEN GROUPING(u.day) = 0 THEN 'day_project_gpu_model'
        WHEN GROUPING(j.user_name) = 0 THEN 'month_project_user'
        WHEN GROUPING(j.image_tag_label) = 0 THEN 'month_project_image_tag'
        ELSE 'month_project'
    END AS grouping_set,
    u.month,
    u.day,
    u.project_name AS project,
    u.bucket,
    j.user_name,
    j.image_tag_label AS image_tag,
    j.tag_status,
    u.gpu_model,
    count(DISTINCT u.job_id) AS jobs,
    count(DISTINCT j.user_name) AS users,
    string_agg(DISTINCT j.image_digest, ', ' ORDER BY j.image_digest) AS image_digests,
    sum(u.seconds_present) AS seconds_present,
    sum(u.gpu_seconds) AS gpu_seconds,
    hours(sum(u.gpu_seconds)) AS gpu_hours,
    density(sum(u.seconds_busy), sum(u.seconds_present)) AS density,
    hours(sum(u.idle_gpu_seconds) FILTER (WHERE u.bucket <> 'unallocated')) AS idle_gpu_hours,
    sum(u.idle_cost) FILTER (WHERE u.bucket <> 'unallocated') AS idle_cost,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost,
    kwh(sum(u.energy_mj)) AS energy_kwh,
    max(u.mem_peak_mib) AS mem_peak_mib
FROM int_usage_gpu_day AS u
LEFT JOIN int_jobs AS j ON j.job_id = u.job_id
GROUP BY GROUPING SETS (
    (u.month, u.project_name, u.bucket),
    (u.month, u.project_name, u.bucket, j.user_name),
    (u.month, u.project_name, u.bucket, j.image_tag_label, j.tag_status),
    (u.day, u.month, u.project_name, u.bucket, u.gpu_model)
)
