-- int_usage_gpu_day: int_usage_priced summed per local day x GPU (host, uuid, model) x owner
-- (job_id NULL = unallocated) x GPU price and energy price in effect (a price that changes
-- during the day splits the day's row in two): seconds, GPU-seconds, money, energy, peak
-- memory and the first and last interval held. Every measure is a sum, a min or a max, so the marts that need no
-- finer grain than a day read these ~150 times fewer rows; labels come from int_jobs by job_id.
-- materialized: by month
SELECT
    u.day,
    any_value(u.month) AS month,
    u.hostname,
    u.gpu_uuid,
    u.gpu_model,
    u.job_id,
    u.price_id,
    u.energy_price_id,
    any_value(u.bucket) AS bucket,
    any_value(u.project_name) AS project_name,
    count(*) AS intervals,
    min(u.interval_start) AS first_interval,
    max(u.interval_start) AS last_interval,
    sum(u.seconds_present) AS seconds_present,
    sum(u.seconds_busy) AS seconds_busy,
    sum(u.seconds_idle) AS seconds_idle,
    sum(u.gpu_seconds) AS gpu_seconds,
    sum(u.idle_gpu_seconds) AS idle_gpu_seconds,
    sum(u.gpu_cost) AS gpu_cost,
    sum(u.idle_cost) AS idle_cost,
    sum(u.energy_cost) AS energy_cost,
    sum(u.energy_mj) AS energy_mj,
    sum(u.power_energy_j) AS power_energy_j,
    max(u.mem_peak_mib) AS mem_peak_mib
FROM int_usage_priced AS u
GROUP BY u.day, u.hostname, u.gpu_uuid, u.gpu_model, u.job_id, u.price_id, u.energy_price_id
