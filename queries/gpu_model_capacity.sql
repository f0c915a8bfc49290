-- title: Capacity and use by GPU model
-- description: Per GPU model in the month: GPUs, capacity GPU-hours, how much of it jobs held, how much was unlabeled or unallocated (capacity nobody held, whatever share of it was charged to projects), density of the held time and the money (GPU time and energy, the cents of the reports) in each bucket.
-- param: month MONTH: the month, YYYY-MM
SELECT
    l.gpu_model,
    any_value(g.gpus) AS gpus,
    sum(l.gpu_hours) AS capacity_gpu_hours,
    round(any_value(g.attributed_gpu_hours) / nullif(any_value(g.capacity_gpu_hours), 0) * 100, 1) AS held_pct,
    coalesce(sum(l.gpu_hours) FILTER (WHERE l.bucket = 'unlabeled'), 0) AS unlabeled_gpu_hours,
    coalesce(sum(l.gpu_hours) FILTER (WHERE l.unallocated), 0) AS unallocated_gpu_hours,
    round(any_value(g.attributed_density) * 100, 1) AS density_pct,
    sum(l.cost) AS cost,
    coalesce(sum(l.cost) FILTER (WHERE l.unallocated), 0) AS unallocated_cost
FROM ledger_lines($month, NULL) AS l  -- the month's ledger rows, `unallocated` as every document counts it (sql/macros.sql)
JOIN mart_gpu_model_month AS g USING (month, gpu_model)
GROUP BY l.gpu_model
ORDER BY cost DESC, l.gpu_model
