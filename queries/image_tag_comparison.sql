-- title: Image tags compared
-- description: Per model type x GPU model x GPUs per run x image tag (a run on two GPUs trains at about half the epochs per GPU-hour of one on one GPU, so tags are compared only among runs on as many GPUs), the runs that finished at least one epoch in the month: runs, epochs finished in the month, GPU-hours, epochs per GPU-hour, peak GPU memory (the largest of the runs' peaks and their median), how many such runs fit on one GPU of that model at the largest peak, cost and cost per epoch; and each tag against the fastest tag of its model type x GPU model x GPUs per run (speed_vs_fastest_pct, memory_vs_fastest_pct). A run is a job's month (mart_job_month, ledger_job_month): its epochs are the epochs whose end falls in the month (mart_job_by_month.month_epochs, months in the configured time zone; an archived month as it was archived), its GPU-hours and cost what it held and was charged in the month. Epochs per GPU-hour = epochs / the runs' exact GPU-seconds held x 3600 (for a run on one GPU: epochs per hour of wall time). Cost is the sum of the runs' cent-ledger cents (the cents the reports print); cost per epoch is a rate on those cents, cost / epochs, shown to 4 decimals. fits_per_gpu = floor(nominal GPU memory / largest peak), the memory of known models (yolocost.gpumemory.GPU_MEMORY_GIB), empty for a model not listed or a run on several models. With project set, only that project's own runs (the project report's table).
-- param: month MONTH: the month, YYYY-MM
-- param: project VARCHAR = all: one project's own runs, or all
--
-- Why the arithmetic: speed is per GPU-hour because a GPU-hour is what is billed, so a tag
-- that trains 15 % fewer epochs per GPU-hour costs about 15 % more per epoch. The memory
-- of each model is the view gpu_memory: the rows of yolocost.gpumemory, which every database
-- yolocost writes holds, keyed as gpufit keys them (lower case, without a leading "NVIDIA " or
-- "Tesla ", runs of spaces as one). No table records images per second (the runner's
-- results.csv has no such column), so there is no such column here. One SELECT, as every named query; the reports'
-- section "Image tags compared" runs this query (yolocost.report.tags.image_tag_comparison).
WITH runs AS (
    -- the month's job-months that finished an epoch (mart_job_by_month.month_epochs: the epochs
    -- that ended in the month, as an archived month was archived)
    SELECT l.job_id, m.model_type, m.gpu_models AS gpu_model, m.gpus, m.image_tag, b.month_epochs AS epochs,
           m.gpu_seconds, m.mem_peak_mib, l.gpu_hours, l.cost
    FROM ledger_job_month AS l
    JOIN mart_job_month AS m ON m.month = l.month AND m.job_id = l.job_id
    JOIN mart_job_by_month AS b ON b.month = l.month AND b.job_id = l.job_id
    WHERE l.month = $month AND b.month_epochs > 0
      AND ($project = 'all' OR (l.project = $project AND l.bucket = 'project'))
),
tags AS (
    SELECT
        model_type,
        gpu_model,
        gpus,
        image_tag,
        count(*) AS runs,
        sum(epochs) AS epochs,
        sum(gpu_hours) AS gpu_hours,
        sum(epochs) * 3600 / nullif(CAST(sum(gpu_seconds) AS DOUBLE), 0) AS epochs_per_gpu_hour,
        max(mem_peak_mib) AS peak_mem_mib,
        median(mem_peak_mib) AS median_peak_mem_mib,
        sum(cost) AS cost
    FROM runs
    GROUP BY model_type, gpu_model, gpus, image_tag
),
compared AS (
    SELECT
        t.*,
        g.memory_gib,
        first_value(t.image_tag) OVER fastest AS fastest_tag,
        first_value(t.epochs_per_gpu_hour) OVER fastest AS fastest_epochs_per_gpu_hour,
        first_value(t.peak_mem_mib) OVER fastest AS fastest_peak_mem_mib
    FROM tags AS t
    LEFT JOIN gpu_memory AS g
        ON g.model_key = lower(regexp_replace(regexp_replace(trim(t.gpu_model), '^(nvidia|tesla)\s+', '', 'i'),
                                              '\s+', ' ', 'g'))
    WINDOW fastest AS (PARTITION BY t.model_type, t.gpu_model, t.gpus
                       ORDER BY t.epochs_per_gpu_hour DESC NULLS LAST, t.image_tag
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
SELECT
    model_type,
    gpu_model,
    gpus,
    image_tag,
    runs,
    epochs,
    gpu_hours,
    round(epochs_per_gpu_hour, 3) AS epochs_per_gpu_hour,
    round(peak_mem_mib / 1024, 2) AS peak_mem_gib,
    round(median_peak_mem_mib / 1024, 2) AS median_peak_mem_gib,
    memory_gib AS gpu_memory_gib,
    CAST(floor(memory_gib * 1024 / nullif(peak_mem_mib, 0)) AS INTEGER) AS fits_per_gpu,
    cost,
    round(CAST(cost AS DOUBLE) / epochs, 4) AS cost_per_epoch,
    fastest_tag,
    round((epochs_per_gpu_hour / fastest_epochs_per_gpu_hour - 1) * 100, 1) AS speed_vs_fastest_pct,
    round((peak_mem_mib / nullif(fastest_peak_mem_mib, 0) - 1) * 100, 1) AS memory_vs_fastest_pct
FROM compared AS c
-- each model type x GPU model's tags fastest first (unrounded, as the window picks the fastest)
ORDER BY coalesce(c.model_type, ''), coalesce(c.gpu_model, ''), c.gpus, c.epochs_per_gpu_hour DESC NULLS LAST,
         c.image_tag
