-- int_jobs: stg_jobs materialized once (one row per job with its accounting bucket, labels and
-- tag-policy status), plus every job id that held a GPU (int_usage_jobs) but has no jobs row,
-- as unlabeled with the labels stg_jobs gives a row with none; and job_rank: the job's place
-- in job_id order, so that the running totals of int_usage_priced can sort by an integer
-- instead of the id.
SELECT
    *,
    row_number() OVER (ORDER BY job_id) AS job_rank
FROM (
    SELECT * FROM stg_jobs
    UNION ALL BY NAME
    SELECT
        job_id,
        'unlabeled' AS bucket,
        '(unlabeled)' AS project_name,
        '(unknown)' AS user_name,
        'empty' AS tag_status,
        '(empty)' AS image_tag_label
    FROM (SELECT DISTINCT job_id FROM int_usage_jobs)
    WHERE job_id NOT IN (SELECT job_id FROM stg_jobs)
)
