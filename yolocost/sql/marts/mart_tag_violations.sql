-- mart_tag_violations: one row per month x job whose image tag breaks the tag policy
-- ('latest', empty, digest-only or not matching the configured pattern), with the image
-- digest that identifies what really ran and the spend on it.
-- materialized: by month
SELECT
    m.month,
    m.job_id,
    m.project,
    m.user_name,
    m.image_tag,
    m.tag_status,
    j.image_digest,
    m.gpu_hours,
    m.cost
FROM mart_job_month AS m
JOIN int_jobs AS j ON j.job_id = m.job_id
WHERE m.tag_status <> 'ok'
