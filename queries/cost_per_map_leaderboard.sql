-- title: Cost-per-mAP leaderboard
-- description: Model configs and image tags of the jobs that finished in the month, cheapest mAP50 point first: runs, mean mAP50 and mAP50-95, training hours, peak memory, mean cost per run and cost per mAP point.
-- param: month MONTH: the month, YYYY-MM
SELECT
    model_type,
    image_tag,
    runs,
    round(mean_map50, 3) AS mean_map50,
    round(mean_map50_95, 3) AS mean_map50_95,
    round(mean_training_hours, 2) AS mean_training_hours,
    round(mean_gpu_hours, 2) AS mean_gpu_hours,
    round(peak_mem_mib / 1024, 1) AS peak_mem_gib,
    round(mean_cost_per_run, 2) AS mean_cost_per_run,
    round(cost_per_map50_point, 4) AS cost_per_map50_point,
    round(cost_per_map50_95_point, 4) AS cost_per_map50_95_point
FROM mart_leaderboard
WHERE month = $month
ORDER BY cost_per_map50_point ASC NULLS LAST, model_type, image_tag
