-- title: Policy savings
-- description: What each stopping policy (idle reclaim, breaker) would have saved per job in the month, when it would have stopped the job, and whether the job's loss or mAP50 improved after that point (a false positive). Replayed at the grain of the usage rows: exact to one grain.
-- param: month MONTH: the month, YYYY-MM
-- param: policy VARCHAR = all: idle_reclaim, breaker or all
SELECT
    policy,
    job_id,
    project,
    user_name,
    model_type,
    trigger_start,
    stop_at,
    round(saved_gpu_hours, 2) AS saved_gpu_hours,
    round(saved_cost, 2) AS saved,
    false_positive,
    fp_reason,
    grain_seconds
FROM mart_policy_savings
WHERE month = $month AND ($policy = 'all' OR policy = $policy)
ORDER BY policy, saved_cost DESC, job_id
