-- title: Estimate inputs
-- description: The history `yolocost estimate` rests on: one row per finished job (an end time and GPU-hours) with its labels, GPU model and count, image size, batch, epochs requested and trained (the last epoch of its training progress, else the requested epochs), GPU-seconds (exact) and GPU-hours, energy (mJ and kWh), mAP50 and cost at the prices of its time (the cent ledger's: the job's cents of every month it ran in, as the project reports' job tables show them). All months together.
SELECT
    m.job_id,
    m.project,
    m.model_type,
    m.image_tag,
    m.gpu_model,
    coalesce(m.gpu_request, nullif(m.gpus, 0)) AS gpus,
    j.imgsz,
    j.batch,
    m.epochs AS epochs_requested,
    coalesce(p.last_epoch, m.epochs) AS epochs_trained,
    m.gpu_seconds,
    m.gpu_hours,
    m.energy_mj,
    m.energy_kwh,
    m.map50,
    m.map50_95,
    l.cost,
    m.start_time,
    m.end_time
FROM mart_job AS m
LEFT JOIN jobs AS j ON j.job_id = m.job_id
LEFT JOIN (SELECT job_id, max(epoch) AS last_epoch FROM training_progress GROUP BY job_id) AS p
    ON p.job_id = m.job_id
-- money from the cent ledger, not mart_job's exact cost: a job's cents in each month, summed
LEFT JOIN (SELECT job_id, sum(cost) AS cost FROM ledger_job_month GROUP BY job_id) AS l
    ON l.job_id = m.job_id
WHERE m.end_time IS NOT NULL
  AND m.gpu_seconds > 0
  AND m.model_type IS NOT NULL
ORDER BY m.end_time, m.job_id
