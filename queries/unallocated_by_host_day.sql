-- title: Unallocated capacity by host and day
-- description: GPU-hours and cost of GPUs that were present but held by no job, per host and local day, largest first: machines to consolidate, lend or switch off. The cost is GPU time (the energy is not split by host) in the cents of the cent ledger: each day and GPU model's cents of capacity nobody held (the finance CSV's "(unallocated)" GPU rows of that day and model, with any share of them the "proportional" policy charged to projects) shared over the model's hosts that day by their exact amounts, largest remainder first, so the rows add up to the ledger per day and GPU model and to the admin report's unallocated GPU cost. Capacity and unallocated GPU-hours are the ledger's tenths shared the same way; the percentage is of the exact hours.
-- param: month MONTH: the month, YYYY-MM
-- param: min_hours DOUBLE = 1: hide host-days with fewer unallocated GPU-hours (as shown, to 0.1 h)
--
-- Why these steps: ledger_charges holds the month's cents per day x GPU model but no host, and
-- money shown anywhere is a sum of the ledger's cents (yolocost.ledger). So this query does
-- not round the exact amounts of mart_host_day (each host-day rounded on its own, the rows
-- missed the ledger by a cent here and there); it shares each day x GPU model's cents (and
-- tenths of GPU-hours) over that day's hosts of the model with Hamilton's method, as
-- yolocost.money.apportion does: every host gets its exact quota (total x weight / sum of
-- the weights) floored to the unit, and the units left go one each to the largest remainders,
-- ties to the host whose name sorts first. Weights are mart_host_day's exact amounts taken as
-- whole numbers of nano-units, so quotas and remainders are exact integer arithmetic.
-- One SELECT (with steps as CTEs), as every named query.
WITH ledger AS (
    -- per day x GPU model: GPU cents and tenths of GPU-hours of capacity nobody held (as the
    -- admin report counts it: the unallocated bucket and any share of it charged to projects),
    -- and the tenths of all capacity
    SELECT day, gpu_model,
           coalesce(sum(cost) FILTER (WHERE charge_kind = 'gpu' AND unallocated), 0) AS cents,
           coalesce(sum(gpu_hours) FILTER (WHERE unallocated), 0) AS unallocated_tenths,
           coalesce(sum(gpu_hours), 0) AS capacity_tenths
    FROM ledger_lines($month, NULL)  -- the month's ledger rows (sql/macros.sql)
    GROUP BY day, gpu_model
),
amounts AS (
    -- per host-day: its day x model totals in whole units (cents, tenths) and its own exact
    -- amounts in whole nano-units, the weights the totals are shared by
    SELECT h.day, h.hostname, h.gpu_model, h.gpus,
           h.capacity_gpu_hours AS exact_capacity_gpu_hours,
           h.unallocated_gpu_hours AS exact_unallocated_gpu_hours,
           CAST(coalesce(l.cents, 0) * m.units_per_one AS HUGEINT) AS cost_total,
           CAST(coalesce(l.unallocated_tenths, 0) * 10 AS HUGEINT) AS unallocated_total,
           CAST(coalesce(l.capacity_tenths, 0) * 10 AS HUGEINT) AS capacity_total,
           CAST(h.unallocated_cost * 1000000000 AS HUGEINT) AS cost_weight,
           CAST(CAST(h.unallocated_gpu_hours AS DECIMAL(38, 9)) * 1000000000 AS HUGEINT) AS unallocated_weight,
           CAST(CAST(h.capacity_gpu_hours AS DECIMAL(38, 9)) * 1000000000 AS HUGEINT) AS capacity_weight
    FROM mart_host_day AS h
    CROSS JOIN minor_unit() AS m  -- the currency's minor unit (sql/macros.sql)
    LEFT JOIN ledger AS l ON l.day = h.day AND l.gpu_model = h.gpu_model
    WHERE h.month = $month
),
quotas AS (
    -- each host's quota total x weight / sum of weights, as its floor and remainder
    SELECT *,
           coalesce(cost_total * cost_weight // nullif(sum(cost_weight) OVER g, 0), 0) AS cost_floor,
           coalesce(cost_total * cost_weight % nullif(sum(cost_weight) OVER g, 0), 0) AS cost_rest,
           coalesce(unallocated_total * unallocated_weight // nullif(sum(unallocated_weight) OVER g, 0), 0)
               AS unallocated_floor,
           coalesce(unallocated_total * unallocated_weight % nullif(sum(unallocated_weight) OVER g, 0), 0)
               AS unallocated_rest,
           coalesce(capacity_total * capacity_weight // nullif(sum(capacity_weight) OVER g, 0), 0) AS capacity_floor,
           coalesce(capacity_total * capacity_weight % nullif(sum(capacity_weight) OVER g, 0), 0) AS capacity_rest
    FROM amounts
    WINDOW g AS (PARTITION BY day, gpu_model)
),
shares AS (
    -- the units the floors leave over go one each to the largest remainders
    SELECT *,
           cost_floor + CASE WHEN row_number() OVER (PARTITION BY day, gpu_model ORDER BY cost_rest DESC, hostname)
                                  <= cost_total - sum(cost_floor) OVER g THEN 1 ELSE 0 END AS cost_units,
           unallocated_floor
               + CASE WHEN row_number() OVER (PARTITION BY day, gpu_model ORDER BY unallocated_rest DESC, hostname)
                           <= unallocated_total - sum(unallocated_floor) OVER g THEN 1 ELSE 0 END AS unallocated_units,
           capacity_floor
               + CASE WHEN row_number() OVER (PARTITION BY day, gpu_model ORDER BY capacity_rest DESC, hostname)
                           <= capacity_total - sum(capacity_floor) OVER g THEN 1 ELSE 0 END AS capacity_units
    FROM quotas
    WINDOW g AS (PARTITION BY day, gpu_model)
)
SELECT
    s.day,
    s.hostname,
    s.gpu_model,
    s.gpus,
    CAST(s.capacity_units AS DECIMAL(38, 0)) * 0.1 AS capacity_gpu_hours,
    CAST(s.unallocated_units AS DECIMAL(38, 0)) * 0.1 AS unallocated_gpu_hours,
    round(s.exact_unallocated_gpu_hours / nullif(s.exact_capacity_gpu_hours, 0) * 100, 1) AS unallocated_pct,
    CAST(s.cost_units AS DECIMAL(38, 0)) * m.unit AS unallocated_cost
FROM shares AS s
CROSS JOIN minor_unit() AS m
WHERE s.unallocated_units >= $min_hours * 10
ORDER BY unallocated_cost DESC, s.day, s.hostname, s.gpu_model
