-- title: Policy savings
-- description: What each stopping policy (idle reclaim, breaker) would have saved per job in the month, when it would have stopped the job, and whether the job's loss or mAP50 improved after that point (a false positive). Replayed at the grain of the usage rows: exact to one grain. Savings and GPU-hours are the figures of `yolocost whatif` and the reports: each job's exact saving rounded half up to the currency's minor unit on its own (GPU-hours to 0.1 h), so a project's or a policy's figure is the sum of its jobs'.
-- param: month MONTH: the month, YYYY-MM
-- param: policy VARCHAR = all: idle_reclaim, breaker or all
--
-- Why the arithmetic: a stop that never happened is in no ledger, so yolocost.whatif rounds
-- each job's exact saving to the cent itself (yolocost.money.round_cents, half up); this
-- query does the same in whole nano-units, to the minor unit of the ledger's currency (not
-- always cents: JPY has none), and GPU-hours from the exact GPU-seconds. One SELECT, as
-- every named query.
SELECT
    p.policy,
    p.job_id,
    p.project,
    p.user_name,
    p.model_type,
    p.trigger_start,
    p.stop_at,
    -- half up to 0.1 h: (microseconds + half an hour's tenth) // a tenth of an hour
    CAST((CAST(p.saved_gpu_seconds * 1000000 AS HUGEINT) * 10 + 1800000000) // 3600000000 AS DECIMAL(38, 0)) * 0.1
        AS saved_gpu_hours,
    CAST((CAST(p.saved_cost * 1000000000 AS HUGEINT) + m.nanos_per_unit // 2) // m.nanos_per_unit AS DECIMAL(38, 0))
        * m.unit AS saved,
    p.false_positive,
    p.fp_reason,
    p.grain_seconds
FROM mart_policy_savings AS p
CROSS JOIN minor_unit() AS m  -- the currency's minor unit (sql/macros.sql)
WHERE p.month = $month AND ($policy = 'all' OR p.policy = $policy)
ORDER BY p.policy, p.saved_cost DESC, p.job_id
