-- int_jobs: stg_jobs materialized once (one row per job with its accounting bucket, labels and
-- tag-policy status), plus job_rank: the job's place in job_id order, so that the running
-- totals of int_usage_priced can sort by an integer instead of the id.
SELECT
    *,
    row_number() OVER (ORDER BY job_id) AS job_rank
FROM stg_jobs
