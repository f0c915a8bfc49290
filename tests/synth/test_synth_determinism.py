"""The same seed gives the same bytes; another seed gives another month."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from yolocost import synth

TABLES = ("gpu_usage", "jobs", "training_progress", "job_results")


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory):
    runs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        runs[name] = synth.generate(tmp_path_factory.mktemp(f"small-{name}"), seed=seed, scale=0.25).files
    return runs


def test_same_seed_same_bytes(small_runs):
    for name in list(TABLES) + ["ground_truth"]:
        assert small_runs["a"][name].read_bytes() == small_runs["b"][name].read_bytes(), name


def test_other_seed_differs(small_runs):
    for name in TABLES:
        a = pq.read_table(small_runs["a"][name])
        c = pq.read_table(small_runs["c"][name])
        assert not a.equals(c), name


def test_parquet_types(small_runs):
    usage = pq.read_schema(small_runs["a"]["gpu_usage"])
    assert str(usage.field("interval_start").type) == "timestamp[us, tz=UTC]"
    for col in ("seconds_present", "seconds_busy", "seconds_idle", "gpu_index"):
        assert str(usage.field(col).type) == "int32", col
    assert str(usage.field("energy_mj").type) == "int64"
    for col in ("cluster", "hostname", "gpu_uuid", "gpu_model", "mig_profile", "job_id"):
        assert str(usage.field(col).type) == "string", col
    assert usage.metadata is None or b"pandas" not in usage.metadata
    jobs = pq.read_schema(small_runs["a"]["jobs"])
    assert str(jobs.field("start_time").type) == "timestamp[us, tz=UTC]"
    assert str(jobs.field("end_time").type) == "timestamp[us, tz=UTC]"
    meta = pq.ParquetFile(small_runs["a"]["gpu_usage"]).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
