-- mart_gpu_model_month: one row per month x GPU model: capacity (every present second),
-- attributed to labelled projects, unlabeled, unallocated, in GPU-hours and money.
-- materialized: by month
SELECT
    u.month,
    u.gpu_model,
    count(DISTINCT u.gpu_uuid) AS gpus,
    hours(sum(u.gpu_seconds)) AS capacity_gpu_hours,
    hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket <> 'unallocated')) AS attributed_gpu_hours,
    hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket = 'unlabeled')) AS unlabeled_gpu_hours,
    hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket = 'unallocated')) AS unallocated_gpu_hours,
    density(sum(u.seconds_busy), sum(u.seconds_present)) AS density,
    density(sum(u.seconds_busy) FILTER (WHERE u.bucket <> 'unallocated'),
        sum(u.seconds_present) FILTER (WHERE u.bucket <> 'unallocated')) AS attributed_density,
    sum(u.gpu_cost) AS capacity_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket <> 'unallocated'), 0) AS attributed_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'unlabeled'), 0) AS unlabeled_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'unallocated'), 0) AS unallocated_cost,
    sum(u.energy_cost) AS energy_cost,
    max(u.mem_peak_mib) AS mem_peak_mib
FROM int_usage_gpu_day AS u
GROUP BY u.month, u.gpu_model
