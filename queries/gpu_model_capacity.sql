-- title: Capacity and use by GPU model
-- description: Per GPU model in the month: GPUs, capacity GPU-hours, how much of it jobs held, how much was unlabeled or unallocated, density of the held time and the money in each bucket.
-- param: month MONTH: the month, YYYY-MM
SELECT
    gpu_model,
    gpus,
    round(capacity_gpu_hours, 1) AS capacity_gpu_hours,
    round(attributed_gpu_hours / nullif(capacity_gpu_hours, 0) * 100, 1) AS held_pct,
    round(unlabeled_gpu_hours, 1) AS unlabeled_gpu_hours,
    round(unallocated_gpu_hours, 1) AS unallocated_gpu_hours,
    round(attributed_density * 100, 1) AS density_pct,
    round(capacity_cost, 2) AS capacity_cost,
    round(unallocated_cost, 2) AS unallocated_cost
FROM mart_gpu_model_month
WHERE month = $month
ORDER BY capacity_cost DESC
