-- mart_image_tag_month: one row per month x project x container image tag (tag as labelled;
-- '(digest only)' and '(empty)' for images without a usable tag) with its tag-policy status,
-- the digests seen, spend, density and idle waste.
-- materialized: by month
SELECT
    month, project, image_tag, tag_status, image_digests, jobs, gpu_hours, density,
    idle_gpu_hours, idle_cost, gpu_cost, energy_cost, cost
FROM int_usage_rollup
WHERE grouping_set = 'month_project_image_tag' AND bucket <> 'unallocated'
