"""One generated demo month per test run, shared by the synth tests."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd
import pytest
from helpers.shared import once

from yolocost import synth


@dataclass
class Month:
    result: synth.GenerateResult
    usage: pd.DataFrame
    jobs: pd.DataFrame
    progress: pd.DataFrame
    results: pd.DataFrame
    truth: dict


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Month:
    result = once(tmp_path_factory, "demo-month", synth.generate)[1]
    files = result.files
    return Month(
        result,
        pd.read_parquet(files["gpu_usage"]),
        pd.read_parquet(files["jobs"]),
        pd.read_parquet(files["training_progress"]),
        pd.read_parquet(files["job_results"]),
        json.loads(files["ground_truth"].read_text(encoding="utf-8")),
    )
