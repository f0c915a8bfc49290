"""The committed sample_data/ is exactly what the generator makes from the demo seed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from yolocost import synth

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"


def test_committed_tables_match_a_fresh_generation(demo):
    for name, file in synth.FILES.items():
        committed = SAMPLE_DATA / file
        assert committed.is_file(), f"{committed} is missing: regenerate sample_data with synth.generate()"
        if file.endswith(".parquet"):
            fresh = pq.read_table(demo.result.files[name])
            kept = pq.read_table(committed)
            assert kept.schema.equals(fresh.schema), name
            assert kept.equals(fresh), f"{file} differs from a fresh generation: regenerate sample_data"


def test_committed_ground_truth_matches(demo):
    kept = json.loads((SAMPLE_DATA / synth.FILES["ground_truth"]).read_text(encoding="utf-8"))
    assert kept == demo.truth


def test_sample_data_is_small():
    size = sum((SAMPLE_DATA / f).stat().st_size for f in synth.FILES.values())
    assert size < 20 * 1024 * 1024
