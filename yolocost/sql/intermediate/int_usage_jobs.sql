-- int_usage_jobs: one row per month x job id that held a GPU in it (gpu_usage), so that
-- int_jobs knows every job of every month, archived ones included, without reading their
-- usage rows again.
-- materialized: by month
SELECT DISTINCT month, job_id
FROM stg_gpu_usage
WHERE job_id IS NOT NULL
