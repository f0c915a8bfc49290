-- stg_training_epochs: one row per job x epoch: when it ended, the total training loss (sum of
-- every train/*loss component, whatever the model calls them) and the validation mAP.
SELECT
    job_id,
    epoch,
    max(ts) AS ts,
    sum(value) FILTER (WHERE metric LIKE 'train/%loss') AS train_loss,
    max(value) FILTER (WHERE metric = 'metrics/mAP50(B)') AS map50,
    max(value) FILTER (WHERE metric = 'metrics/mAP50-95(B)') AS map50_95
FROM training_progress
GROUP BY job_id, epoch
