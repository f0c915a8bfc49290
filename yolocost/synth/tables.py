"""The raw tables as Arrow schemas, and deterministic Parquet writing.

Columns follow docs/raw-tables.md. Rows are written sorted and with fixed writer options
(zstd, no pandas index), so the same seed gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TS = pa.timestamp("us", tz="UTC")

GPU_USAGE = pa.schema([
    ("interval_start", TS),
    ("cluster", pa.string()),
    ("hostname", pa.string()),
    ("gpu_uuid", pa.string()),
    ("gpu_index", pa.int32()),
    ("gpu_model", pa.string()),
    ("mig_profile", pa.string()),
    ("job_id", pa.string()),
    ("seconds_present", pa.int32()),
    ("util_mean", pa.float64()),
    ("seconds_busy", pa.int32()),
    ("seconds_idle", pa.int32()),
    ("mem_peak_mib", pa.float64()),
    ("power_mean_w", pa.float64()),
    ("energy_mj", pa.int64()),
])

JOBS = pa.schema([
    ("job_id", pa.string()),
    ("cluster", pa.string()),
    ("project", pa.string()),
    ("user_name", pa.string()),
    ("model_type", pa.string()),
    ("image_tag", pa.string()),
    ("image_digest", pa.string()),
    ("gpu_request", pa.int32()),
    ("gpu_model", pa.string()),
    ("start_time", TS),
    ("end_time", TS),
    ("epochs", pa.int32()),
    ("imgsz", pa.int32()),
    ("batch", pa.int32()),
])

TRAINING_PROGRESS = pa.schema([
    ("job_id", pa.string()),
    ("ts", TS),
    ("epoch", pa.int32()),
    ("metric", pa.string()),
    ("value", pa.float64()),
])

JOB_RESULTS = pa.schema([
    ("job_id", pa.string()),
    ("map50", pa.float64()),
    ("map50_95", pa.float64()),
    ("best_epoch", pa.int32()),
])

WRITER_OPTIONS = dict(
    compression="zstd",
    compression_level=9,
    use_dictionary=True,
    write_statistics=True,
    version="2.6",
    data_page_version="1.0",
)
ROW_GROUP_ROWS = 1_000_000


def timestamps(epoch_seconds) -> pa.Array:
    """Epoch seconds (ints, None for missing) as a UTC microsecond timestamp array."""
    values = [None if v is None else int(v) * 1_000_000 for v in epoch_seconds]
    return pa.array(values, type=pa.int64()).cast(TS)


def timestamps_np(epoch_seconds: np.ndarray) -> pa.Array:
    return pa.array(epoch_seconds.astype(np.int64) * 1_000_000, type=pa.int64()).cast(TS)


def write(path: Path, table: pa.Table) -> None:
    """Write one table in a single pass with the fixed options."""
    pq.write_table(table, str(path), row_group_size=ROW_GROUP_ROWS, **WRITER_OPTIONS)


class StreamWriter:
    """Write a large table in row groups as its parts arrive (one per host)."""

    def __init__(self, path: Path, schema: pa.Schema):
        self._writer = pq.ParquetWriter(str(path), schema, **WRITER_OPTIONS)
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows += table.num_rows

    def close(self) -> None:
        self._writer.close()
