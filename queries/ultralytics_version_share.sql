-- title: Ultralytics version share
-- description: Per Ultralytics version, the month's jobs, their GPU-hours and share of all GPU-hours held by jobs in the month (the ledger's tenths), their cost (the runs' ledger cents), and the runs that finished an epoch in the month with their epochs and epochs per GPU-hour (epochs / those runs' exact GPU-seconds x 3600). The version is read from the image tag where the tag names it (yolocost.report.data.ultralytics_version: 'ultralytics-8.3.40', 'ultralytics8.3.40', 'ultralytics-v8.3.40', 'ultralytics:8.3.40', or a part 'u8.3.40' as in 'train-yolov8-medium-cu118-u8.3.40'); jobs whose tag names none are '(unknown)' (no table records the version the runner ran). Epochs per GPU-hour mixes model types and GPU models: compare versions within one of them with image_tag_comparison. With project set, only that project's own jobs.
-- param: month MONTH: the month, YYYY-MM
-- param: project VARCHAR = all: one project's own jobs, or all
--
-- The rule, the same as ultralytics_version in Python: at the start of the tag or after one
-- of - _ . / :, the word "ultralytics" (then optionally - _ or :, then optionally v) or the
-- letter "u", then the version, two or three dot-separated numbers, then the end of the tag
-- or one of - _ / +; any case. "cu118" names no version (its u follows a letter), nor does
-- a bare "v8.3.40" (it may be the image's own version), nor the official image's bare "8.3.40"
-- (the image's repository is not kept, only its tag). One SELECT, as every named query;
-- the reports' section "Image tags compared" runs this query.
WITH runs AS (
    SELECT
        coalesce(nullif(regexp_extract(m.image_tag,
                                       '(?i)(?:^|[-_./:])(?:ultralytics[-_:]?v?|u)(\d+\.\d+(?:\.\d+)?)(?:$|[-_/+])', 1),
                        ''),
                 '(unknown)') AS ultralytics_version,
        l.job_id, l.gpu_hours, l.cost, m.gpu_seconds, nullif(b.month_epochs, 0) AS epochs
    FROM ledger_job_month AS l
    JOIN mart_job_month AS m ON m.month = l.month AND m.job_id = l.job_id
    -- the job's epochs that ended in the month (as an archived month was archived)
    LEFT JOIN mart_job_by_month AS b ON b.month = l.month AND b.job_id = l.job_id
    WHERE l.month = $month
      AND ($project = 'all' OR (l.project = $project AND l.bucket = 'project'))
),
versions AS (
    SELECT
        ultralytics_version,
        count(*) AS jobs,
        sum(gpu_hours) AS gpu_hours,
        sum(cost) AS cost,
        count(epochs) AS runs_with_epochs,
        coalesce(sum(epochs), 0) AS epochs,
        sum(epochs) * 3600 / nullif(CAST(sum(gpu_seconds) FILTER (WHERE epochs IS NOT NULL) AS DOUBLE), 0)
            AS epochs_per_gpu_hour
    FROM runs
    GROUP BY ultralytics_version
)
SELECT
    ultralytics_version,
    jobs,
    gpu_hours,
    round(CAST(gpu_hours AS DOUBLE) / nullif(CAST(sum(gpu_hours) OVER () AS DOUBLE), 0) * 100, 1) AS gpu_hours_share_pct,
    cost,
    runs_with_epochs,
    epochs,
    round(epochs_per_gpu_hour, 3) AS epochs_per_gpu_hour
FROM versions
ORDER BY ultralytics_version = '(unknown)', gpu_hours DESC, ultralytics_version
