-- stg_jobs: one row per job with its accounting bucket and tag-policy status.
-- bucket: 'project' when the job has a project label, 'unlabeled' when it has none.
-- tag_status: ok | latest | empty | digest_only | nonconforming (against settings.tag_pattern).
-- (A job id that holds GPUs in gpu_usage but has no jobs row is added by int_jobs, as unlabeled.)
SELECT
    j.job_id,
    j.cluster,
    j.project,
    CASE WHEN j.project IS NULL OR trim(j.project) = '' THEN 'unlabeled' ELSE 'project' END AS bucket,
    CASE WHEN j.project IS NULL OR trim(j.project) = '' THEN '(unlabeled)' ELSE j.project END AS project_name,
    coalesce(j.user_name, '(unknown)') AS user_name,
    j.model_type,
    j.image_tag,
    j.image_digest,
    CASE
        WHEN j.image_tag IS NULL AND j.image_digest IS NOT NULL THEN 'digest_only'
        WHEN j.image_tag IS NULL OR trim(j.image_tag) = '' THEN 'empty'
        WHEN j.image_tag = 'latest' THEN 'latest'
        WHEN regexp_full_match(j.image_tag, s.tag_pattern) THEN 'ok'
        ELSE 'nonconforming'
    END AS tag_status,
    CASE
        WHEN j.image_tag IS NULL AND j.image_digest IS NOT NULL THEN '(digest only)'
        WHEN j.image_tag IS NULL OR trim(j.image_tag) = '' THEN '(empty)'
        ELSE j.image_tag
    END AS image_tag_label,
    j.gpu_request,
    j.gpu_model,
    j.start_time,
    j.end_time,
    j.epochs,
    j.imgsz,
    j.batch
FROM jobs AS j
CROSS JOIN settings AS s
