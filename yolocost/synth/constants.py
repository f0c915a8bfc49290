"""Fixed parameters of the demo month and the accounting thresholds the ground truth uses."""

from __future__ import annotations

DEMO_SEED = 20261001
DEMO_MONTH = "2026-10"
DEMO_TIMEZONE = "Europe/Berlin"
DEMO_CLUSTER = "demo-cluster"

# One dcgm-exporter scrape every SAMPLE_SECONDS; raw rows at GRAIN_SECONDS.
SAMPLE_SECONDS = 30
GRAIN_SECONDS = 300
SAMPLES_PER_GRAIN = GRAIN_SECONDS // SAMPLE_SECONDS

# Metric thresholds (the product defaults), as integers or decimal strings.
BUSY_UTIL = 70  # busy: util > 70
IDLE_UTIL = 5  # idle: util < 5
BREAKER_UTIL = 40  # low for the breaker: job util < 40
BREAKER_LOSS_DELTA = "0.001"  # improvement below this over the run
BREAKER_MIN_HOURS = 2

THRESHOLDS = {
    "busy": BUSY_UTIL,
    "idle": IDLE_UTIL,
    "breaker_util": BREAKER_UTIL,
    "breaker_loss_delta": float(BREAKER_LOSS_DELTA),
    "breaker_min_hours": BREAKER_MIN_HOURS,
}
