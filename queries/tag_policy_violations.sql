-- title: Tag-policy violations with spend
-- description: Jobs that ran images tagged 'latest', with an empty tag, by digest only or with a tag not matching the policy pattern, with the digest that identifies what really ran and the money spent on them (the cents of the reports).
-- param: month MONTH: the month, YYYY-MM
SELECT
    v.tag_status,
    v.image_tag,
    v.image_digest,
    v.project,
    v.user_name,
    v.job_id,
    l.gpu_hours,
    l.cost
FROM mart_tag_violations AS v
JOIN ledger_job_month AS l USING (month, job_id)
WHERE v.month = $month
ORDER BY l.cost DESC, v.job_id
