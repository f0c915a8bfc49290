-- title: Unallocated capacity by host and day
-- description: GPU-hours and cost of GPUs that were present but held by no job, per host and local day, largest first: machines to consolidate, lend or switch off.
-- param: month MONTH: the month, YYYY-MM
-- param: min_hours DOUBLE = 1: hide host-days with fewer unallocated GPU-hours
SELECT
    day,
    hostname,
    gpu_model,
    gpus,
    round(capacity_gpu_hours, 2) AS capacity_gpu_hours,
    round(unallocated_gpu_hours, 2) AS unallocated_gpu_hours,
    round(unallocated_gpu_hours / nullif(capacity_gpu_hours, 0) * 100, 1) AS unallocated_pct,
    round(unallocated_cost, 2) AS unallocated_cost
FROM mart_host_day
WHERE month = $month AND unallocated_gpu_hours >= $min_hours
ORDER BY unallocated_cost DESC, day, hostname
