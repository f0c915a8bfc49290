-- mart_image_tag_month: one row per month x project x container image tag (tag as labelled;
-- '(digest only)' and '(empty)' for images without a usable tag) with its tag-policy status,
-- the digests seen, spend, density and idle waste.
SELECT
    u.month,
    u.project_name AS project,
    u.image_tag_label AS image_tag,
    u.tag_status,
    string_agg(DISTINCT u.image_digest, ', ' ORDER BY u.image_digest) AS image_digests,
    count(DISTINCT u.job_id) AS jobs,
    CAST(sum(u.gpu_seconds) AS DOUBLE) / 3600 AS gpu_hours,
    CAST(sum(u.seconds_busy) AS DOUBLE) / nullif(CAST(sum(u.seconds_present) AS DOUBLE), 0) AS density,
    CAST(sum(u.idle_gpu_seconds) AS DOUBLE) / 3600 AS idle_gpu_hours,
    sum(u.idle_cost) AS idle_cost,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost
FROM int_usage_priced AS u
WHERE u.job_id IS NOT NULL
GROUP BY u.month, u.project_name, u.image_tag_label, u.tag_status
