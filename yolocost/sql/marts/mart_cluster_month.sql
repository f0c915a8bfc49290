-- mart_cluster_month: one row per month: capacity (every second every GPU was present),
-- attributed (held by a job), unlabeled (held by a job with no project), unallocated (held by
-- nobody), in GPU-hours and money, plus energy, density and idle waste of attributed time.
-- capacity_cost = attributed_cost + unallocated_cost exactly; gpu_cost excludes energy.
-- materialized: by month
SELECT
    u.month,
    any_value(s.cluster) AS cluster,
    any_value(s.currency) AS currency,
    count(DISTINCT u.gpu_uuid) AS gpus,
    count(DISTINCT u.job_id) AS jobs,
    count(DISTINCT j.project) AS projects,
    count(DISTINCT j.user_name) AS users,
    sum(u.gpu_seconds) AS capacity_gpu_seconds,
    hours(sum(u.gpu_seconds)) AS capacity_gpu_hours,
    hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket <> 'unallocated')) AS attributed_gpu_hours,
    coalesce(hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket = 'unlabeled')), 0) AS unlabeled_gpu_hours,
    coalesce(hours(sum(u.gpu_seconds) FILTER (WHERE u.bucket = 'unallocated')), 0) AS unallocated_gpu_hours,
    density(sum(u.seconds_busy) FILTER (WHERE u.bucket <> 'unallocated'),
        sum(u.seconds_present) FILTER (WHERE u.bucket <> 'unallocated')) AS density,
    coalesce(hours(sum(u.idle_gpu_seconds) FILTER (WHERE u.bucket <> 'unallocated')), 0) AS idle_gpu_hours,
    coalesce(sum(u.idle_cost) FILTER (WHERE u.bucket <> 'unallocated'), 0) AS idle_cost,
    sum(u.gpu_cost) AS capacity_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket <> 'unallocated'), 0) AS attributed_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'project'), 0) AS project_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'unlabeled'), 0) AS unlabeled_cost,
    coalesce(sum(u.gpu_cost) FILTER (WHERE u.bucket = 'unallocated'), 0) AS unallocated_cost,
    sum(u.energy_mj) AS energy_mj,
    kwh(sum(u.energy_mj)) AS energy_kwh,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS total_cost
FROM int_usage_gpu_day AS u
LEFT JOIN int_jobs AS j ON j.job_id = u.job_id
CROSS JOIN settings AS s
GROUP BY u.month
