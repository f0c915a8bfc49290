-- title: Tag-policy violations with spend
-- description: Jobs that ran images tagged 'latest', with an empty tag, by digest only or with a tag not matching the policy pattern, with the digest that identifies what really ran and the money spent on them.
-- param: month MONTH: the month, YYYY-MM
SELECT
    tag_status,
    image_tag,
    image_digest,
    project,
    user_name,
    job_id,
    round(gpu_hours, 2) AS gpu_hours,
    round(cost, 2) AS cost
FROM mart_tag_violations
WHERE month = $month
ORDER BY cost DESC, job_id
