-- mart_job: one row per job, all months together: labels, GPU-hours, cost, density, idle
-- waste, peak memory, energy, final mAP (best weights), cost per mAP point (cost / (mAP50 x
-- 100), also per mAP50-95 point), breaker hours and cost, tag-policy status, tag and digest.
WITH usage AS (
    SELECT
        job_id,
        sum(seconds_present) AS seconds_present,
        sum(seconds_busy) AS seconds_busy,
        sum(seconds_idle) AS seconds_idle,
        sum(gpu_seconds) AS gpu_seconds,
        hours(sum(idle_gpu_seconds)) AS idle_gpu_hours,
        sum(gpu_cost) AS gpu_cost,
        sum(energy_cost) AS energy_cost,
        sum(idle_cost) AS idle_cost,
        sum(energy_mj) AS energy_mj,
        kwh_of_joules(sum(power_energy_j)) AS power_energy_kwh,
        max(mem_peak_mib) AS mem_peak_mib,
        max(gpus) AS gpus,
        min(first_interval) AS first_interval,
        max(last_interval) AS last_interval,
        count(*) AS months
    FROM mart_job_month
    GROUP BY job_id
),
breakers AS (
    SELECT job_id, count(*) AS breaker_stretches, sum(gpu_hours) AS breaker_gpu_hours, sum(cost) AS breaker_cost
    FROM mart_breakers
    GROUP BY job_id
)
SELECT
    j.job_id,
    j.project_name AS project,
    j.bucket,
    j.user_name,
    j.model_type,
    j.image_tag_label AS image_tag,
    j.image_digest,
    j.tag_status,
    j.gpu_request,
    j.gpu_model,
    j.start_time,
    j.end_time,
    j.epochs,
    u.first_interval,
    u.last_interval,
    u.months,
    coalesce(u.gpus, 0) AS gpus,
    coalesce(u.seconds_present, 0) AS seconds_present,
    coalesce(u.seconds_busy, 0) AS seconds_busy,
    coalesce(u.seconds_idle, 0) AS seconds_idle,
    coalesce(u.gpu_seconds, 0) AS gpu_seconds,
    coalesce(hours(u.gpu_seconds), 0) AS gpu_hours,
    density(u.seconds_busy, u.seconds_present) AS density,
    coalesce(u.idle_gpu_hours, 0) AS idle_gpu_hours,
    coalesce(u.idle_cost, 0) AS idle_cost,
    coalesce(u.gpu_cost, 0) AS gpu_cost,
    coalesce(u.energy_cost, 0) AS energy_cost,
    coalesce(u.gpu_cost + u.energy_cost, 0) AS cost,
    coalesce(u.energy_mj, 0) AS energy_mj,
    coalesce(kwh(u.energy_mj), 0) AS energy_kwh,
    u.power_energy_kwh,
    u.mem_peak_mib,
    r.map50,
    r.map50_95,
    r.best_epoch,
    CAST(u.gpu_cost + u.energy_cost AS DOUBLE) / nullif(r.map50 * 100, 0) AS cost_per_map50_point,
    CAST(u.gpu_cost + u.energy_cost AS DOUBLE) / nullif(r.map50_95 * 100, 0) AS cost_per_map50_95_point,
    coalesce(b.breaker_stretches, 0) AS breaker_stretches,
    coalesce(b.breaker_gpu_hours, 0) AS breaker_gpu_hours,
    coalesce(b.breaker_cost, 0) AS breaker_cost
FROM int_jobs AS j
LEFT JOIN usage AS u ON u.job_id = j.job_id
LEFT JOIN job_results AS r ON r.job_id = j.job_id
LEFT JOIN breakers AS b ON b.job_id = j.job_id
