-- mart_job_month: one row per job x month (configured time zone) in which it held a GPU. A job
-- that crosses a month boundary has a row in each month; the rows add up to mart_job.
-- density = busy seconds / present seconds; idle = seconds under the idle threshold.
-- materialized: by month
SELECT
    u.month,
    u.job_id,
    any_value(j.project_name) AS project,
    any_value(j.bucket) AS bucket,
    any_value(j.user_name) AS user_name,
    any_value(j.model_type) AS model_type,
    any_value(j.image_tag_label) AS image_tag,
    any_value(j.tag_status) AS tag_status,
    string_agg(DISTINCT u.gpu_model, ', ' ORDER BY u.gpu_model) AS gpu_models,
    count(DISTINCT u.gpu_uuid) AS gpus,
    min(u.first_interval) AS first_interval,
    max(u.last_interval) AS last_interval,
    sum(u.seconds_present) AS seconds_present,
    sum(u.seconds_busy) AS seconds_busy,
    sum(u.seconds_idle) AS seconds_idle,
    sum(u.gpu_seconds) AS gpu_seconds,
    sum(u.idle_gpu_seconds) AS idle_gpu_seconds,
    hours(sum(u.gpu_seconds)) AS gpu_hours,
    hours(sum(u.idle_gpu_seconds)) AS idle_gpu_hours,
    density(sum(u.seconds_busy), sum(u.seconds_present)) AS density,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.gpu_cost) + sum(u.energy_cost) AS cost,
    sum(u.idle_cost) AS idle_cost,
    sum(u.energy_mj) AS energy_mj,
    kwh(sum(u.energy_mj)) AS energy_kwh,
    sum(u.power_energy_j) AS power_energy_j,
    kwh_of_joules(sum(u.power_energy_j)) AS power_energy_kwh,
    max(u.mem_peak_mib) AS mem_peak_mib
FROM int_usage_gpu_day AS u
JOIN int_jobs AS j ON j.job_id = u.job_id
GROUP BY u.month, u.job_id
