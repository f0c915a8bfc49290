"""Deterministic synthetic GPU cluster months with their ground truth.

`generate()` simulates a shared cluster training YOLO models for one calendar month (plus a
day each side) at 30 s samples, derives the raw tables at the 5-minute grain exactly as an
ingest would, and computes the expected figures (cost, seconds, energy, breakers) directly
from the samples, so the SQL models can be checked against them. `write_prometheus_sample()`
writes a few days of the same cluster as OpenMetrics for a Prometheus backfill, with the raw
tables a perfect ingest of them must produce.
"""

from .constants import (DEMO_CLUSTER, DEMO_MONTH, DEMO_SEED, DEMO_TIMEZONE, GRAIN_SECONDS, SAMPLE_SECONDS,
                        THRESHOLDS)
from .generate import FILES, GenerateResult, generate
from .promsample import SAMPLE_FILES, PrometheusSample, write_prometheus_sample
from .prices import DEMO_ENERGY_PRICES, DEMO_PRICES
from .tags import TAG_PATTERN, tag_status

__all__ = [
    "DEMO_CLUSTER",
    "DEMO_ENERGY_PRICES",
    "DEMO_MONTH",
    "DEMO_PRICES",
    "DEMO_SEED",
    "DEMO_TIMEZONE",
    "FILES",
    "GRAIN_SECONDS",
    "GenerateResult",
    "PrometheusSample",
    "SAMPLE_FILES",
    "SAMPLE_SECONDS",
    "TAG_PATTERN",
    "THRESHOLDS",
    "generate",
    "tag_status",
    "write_prometheus_sample",
]
