"""One A100 in cluster c: the config and raw folder the bad-input, stderr and CLI tests run the real
CLI on (a database yc.duckdb, one price), shared so both cut the same small month."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

CONFIG = """\
[cluster]
name = "c"
timezone = "UTC"
[database]
path = "yc.duckdb"
[[prices]]
gpu_model = "A100"
price_per_gpu_hour = "2.00"
"""


def write_raw(folder: Path, hours: int = 1, grain: int = 300) -> Path:
    """One A100 of job-1 (project p) busy for `hours` from 2026-10-01 00:00 UTC."""
    folder.mkdir(parents=True, exist_ok=True)
    start = pd.Timestamp("2026-10-01T00:00:00Z")
    pd.DataFrame([{
        "interval_start": start + pd.Timedelta(seconds=grain * k), "cluster": "c", "hostname": "h1",
        "gpu_uuid": "GPU-0", "gpu_index": 0, "gpu_model": "A100", "mig_profile": None, "job_id": "job-1",
        "seconds_present": grain, "util_mean": 80.0, "seconds_busy": grain, "seconds_idle": 0,
        "mem_peak_mib": 1000.0, "power_mean_w": 250.0, "energy_mj": 250 * 1000 * grain,
    } for k in range(3600 // grain * hours)]).to_parquet(folder / "gpu_usage.parquet", index=False)
    pd.DataFrame([{"job_id": "job-1", "project": "p", "user_name": "u"}]).to_parquet(folder / "jobs.parquet", index=False)
    return folder
