-- Raw tables: what ingest, `yolocost load` and the synthetic generator write.
-- Every figure in the marts is recomputed from these without going back to Prometheus.
-- Timestamps are UTC instants; months and days are cut in the configured time zone by the views.

-- gpu_usage: one row per GPU (or MIG instance) x owner x grain interval.
-- job_id NULL means the GPU was present but held by nobody (unallocated capacity).
-- seconds_* are the owner's seconds in the interval (a shared GPU's seconds split between
-- its owners so that the rows of one GPU and interval add up to its present seconds).
CREATE TABLE IF NOT EXISTS gpu_usage (
    interval_start  TIMESTAMPTZ NOT NULL,
    cluster         VARCHAR NOT NULL,
    hostname        VARCHAR NOT NULL,
    gpu_uuid        VARCHAR NOT NULL,
    gpu_index       INTEGER,
    gpu_model       VARCHAR NOT NULL,
    mig_profile     VARCHAR,
    job_id          VARCHAR,
    seconds_present DECIMAL(12, 6) NOT NULL,
    util_mean       DOUBLE NOT NULL,
    seconds_busy    DECIMAL(12, 6) NOT NULL,
    seconds_idle    DECIMAL(12, 6) NOT NULL,
    mem_peak_mib    DOUBLE,
    power_mean_w    DOUBLE,
    energy_mj       BIGINT,
    energy_power_mj BIGINT
);
-- files created before the power-based energy cross-check existed
ALTER TABLE gpu_usage ADD COLUMN IF NOT EXISTS energy_power_mj BIGINT;

-- jobs: one row per job (a training run, a pod or a Slurm job) with its accounting labels.
-- project NULL = unlabeled (reported as its own bucket, never dropped).
-- image_tag NULL with image_digest set = digest-only image; '' = empty tag.
CREATE TABLE IF NOT EXISTS jobs (
    job_id       VARCHAR PRIMARY KEY,
    cluster      VARCHAR,
    project      VARCHAR,
    user_name    VARCHAR,
    model_type   VARCHAR,
    image_tag    VARCHAR,
    image_digest VARCHAR,
    gpu_request  INTEGER,
    gpu_model    VARCHAR,
    start_time   TIMESTAMPTZ,
    end_time     TIMESTAMPTZ,
    epochs       INTEGER,
    imgsz        INTEGER,
    batch        INTEGER
);

-- training_progress: one row per job x epoch x metric (Ultralytics results.csv column names:
-- train/box_loss, train/cls_loss, train/dfl_loss, metrics/mAP50(B), metrics/mAP50-95(B), ...).
CREATE TABLE IF NOT EXISTS training_progress (
    job_id VARCHAR NOT NULL,
    ts     TIMESTAMPTZ NOT NULL,
    epoch  INTEGER NOT NULL,
    metric VARCHAR NOT NULL,
    value  DOUBLE
);

-- job_results: one row per finished job: final validation of the best weights.
CREATE TABLE IF NOT EXISTS job_results (
    job_id     VARCHAR PRIMARY KEY,
    map50      DOUBLE,
    map50_95   DOUBLE,
    best_epoch INTEGER
);

-- prices: price of one GPU-hour per GPU model (or 'GPU model + MIG profile') from a local
-- date on, until the next entry of the same model. gpu_model '*' is the explicit default.
CREATE TABLE IF NOT EXISTS prices (
    gpu_model          VARCHAR NOT NULL,
    effective_from     DATE NOT NULL,
    price_per_gpu_hour DECIMAL(18, 6) NOT NULL
);

-- energy_prices: price of one kWh from a local date on.
CREATE TABLE IF NOT EXISTS energy_prices (
    effective_from DATE NOT NULL,
    price_per_kwh  DECIMAL(18, 6) NOT NULL
);

-- settings: one row, the configuration the views need (written from the config file on every build).
CREATE TABLE IF NOT EXISTS settings (
    cluster                VARCHAR,
    timezone               VARCHAR,
    currency               VARCHAR,
    grain_seconds          INTEGER,
    busy_util_percent      DOUBLE,
    idle_util_percent      DOUBLE,
    breaker_util_percent   DOUBLE,
    breaker_loss_delta     DOUBLE,
    breaker_min_seconds    DOUBLE,
    tag_pattern            VARCHAR,
    unallocated_policy     VARCHAR,  -- [allocation] unallocated the ledger was built with
    idle_reclaim_seconds   DOUBLE,   -- [policies]: quiet time before idle reclaim stops a job
    idle_reclaim_util_percent DOUBLE,
    idle_reclaim_protect_seconds DOUBLE,
    idle_reclaim_grace_seconds DOUBLE  -- [policies] start-up grace: at most this long before the first epoch end
);

-- month_builds: one row per month with usage rows (configured time zone): when its models
-- were built, from how many usage rows, and the fingerprint of the model definitions,
-- settings and prices they were built with (yolocost.months). archived_at: when prune removed
-- its usage rows; the month's marts and ledger rows are then its archive, kept as built.
-- built_with: what the fingerprint covers, readable (JSON: settings, prices and energy prices
-- before the month's end, the models' version); NULL for a month built by an older version.
-- A read names from it what changed since the build, and shows an archived month with its
-- own settings and currency.
CREATE TABLE IF NOT EXISTS month_builds (
    month       VARCHAR PRIMARY KEY,
    built_at    TIMESTAMPTZ NOT NULL,
    fingerprint VARCHAR NOT NULL,
    usage_rows  BIGINT NOT NULL,
    archived_at TIMESTAMPTZ,
    built_with  VARCHAR
);

-- ingest_notes: what an ingest's window was billed without, or from, beyond the usage rows:
-- one row per GPU whose samples could not be counted (kind 'uncounted', with --allow-uncounted:
-- samples and their seconds) and one per window whose answers were partial (kind 'partial',
-- accepted by [prometheus] accept_partial_responses: the store's first warning in detail).
-- Replaced with the window's usage rows; never pruned. Reports list them for the months the
-- window overlaps.
CREATE TABLE IF NOT EXISTS ingest_notes (
    window_start TIMESTAMPTZ NOT NULL,
    window_end   TIMESTAMPTZ NOT NULL,
    cluster      VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    hostname     VARCHAR,
    gpu_uuid     VARCHAR,
    samples      BIGINT,
    seconds      DECIMAL(18, 6),
    detail       VARCHAR
);

-- loads: one row per loaded window (ingest or Parquet load), newest last.
CREATE TABLE IF NOT EXISTS loads (
    loaded_at    TIMESTAMPTZ NOT NULL,
    source       VARCHAR NOT NULL,
    window_start TIMESTAMPTZ,
    window_end   TIMESTAMPTZ,
    rows_usage   BIGINT
);
