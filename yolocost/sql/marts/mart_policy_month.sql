-- mart_policy_month: one row per month x what-if policy (idle_reclaim, breaker), also when it
-- would have stopped nothing: the rule as the month was built with it, the grain (the
-- resolution of the replay), the jobs replayed (every job that held a GPU in the month), the
-- jobs it would have stopped, the false positives among them, and the GPU-seconds and cost it
-- would have saved (the sums of mart_policy_savings).
-- materialized: by month
WITH policies AS (
    SELECT * FROM (VALUES ('idle_reclaim', 1), ('breaker', 2)) AS p(policy, policy_order)
),
replayed AS (
    SELECT month, count(DISTINCT job_id) AS jobs_replayed FROM int_job_intervals GROUP BY month
),
stopped AS (
    SELECT
        month,
        policy,
        count(*) AS jobs_stopped,
        count(*) FILTER (WHERE false_positive) AS false_positives,
        sum(saved_gpu_seconds) AS saved_gpu_seconds,
        sum(saved_gpu_cost) AS saved_gpu_cost,
        sum(saved_energy_cost) AS saved_energy_cost,
        sum(saved_cost) AS saved_cost
    FROM mart_policy_savings
    GROUP BY month, policy
)
SELECT
    c.month,
    p.policy,
    p.policy_order,
    CASE p.policy
        WHEN 'idle_reclaim' THEN printf(
            'release a job after %g min under %g %% utilization with no epoch ending, except until its first epoch ends (at most %g min after its start), %g min before each epoch end and after the last',
            s.idle_reclaim_seconds / 60, s.idle_reclaim_util_percent, coalesce(s.idle_reclaim_grace_seconds, 0) / 60,
            s.idle_reclaim_protect_seconds / 60)
        ELSE printf('stop a job after %g h under %g %% utilization with its training loss improving by less than %g',
            hours(s.breaker_min_seconds), s.breaker_util_percent, s.breaker_loss_delta)
    END AS rule,
    s.grain_seconds,
    coalesce(r.jobs_replayed, 0) AS jobs_replayed,
    coalesce(t.jobs_stopped, 0) AS jobs_stopped,
    coalesce(t.false_positives, 0) AS false_positives,
    coalesce(t.saved_gpu_seconds, 0) AS saved_gpu_seconds,
    hours(coalesce(t.saved_gpu_seconds, 0)) AS saved_gpu_hours,
    coalesce(t.saved_gpu_cost, 0) AS saved_gpu_cost,
    coalesce(t.saved_energy_cost, 0) AS saved_energy_cost,
    coalesce(t.saved_cost, 0) AS saved_cost
FROM mart_cluster_month AS c
CROSS JOIN policies AS p
CROSS JOIN settings AS s
LEFT JOIN replayed AS r ON r.month = c.month
LEFT JOIN stopped AS t ON t.month = c.month AND t.policy = p.policy
