"""Shared fixtures: hand-made raw data loaded by the real loader into a real DuckDB file."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from builders import BuiltDb, build_db  # noqa: E402


@pytest.fixture
def built_db(tmp_path):
    """Factory: built_db(usage, jobs=..., progress=..., results=..., prices=..., **config) -> BuiltDb.

    Each call gets its own folder under tmp_path (raw Parquet files and database file).
    """
    counter = itertools.count(1)

    def make(usage, **kwargs) -> BuiltDb:
        folder = tmp_path / f"db{next(counter)}"
        folder.mkdir()
        return build_db(folder, usage, **kwargs)

    return make


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory) -> BuiltDb:
    """The bundled sample month (sample_data/) loaded once per session with its own config."""
    from yolocost.config import load_config
    from yolocost.load import load_parquet_dir
    from yolocost.resources import shipped_dir

    sample = shipped_dir("sample_data")
    config = load_config(sample / "yolocost.toml").with_database(tmp_path_factory.mktemp("sample") / "sample.duckdb")
    load_parquet_dir(config, sample)
    return BuiltDb(config, sample)


@pytest.fixture(scope="session")
def prom_sample(tmp_path_factory):
    """The synthetic Prometheus sample (3 days, every attribution mode), backfilled into a
    real Prometheus on loopback once per session: (PrometheusSample, PrometheusServer)."""
    from promserver import PrometheusServer, backfill, skip_or_fail_without_prometheus

    from yolocost.synth import write_prometheus_sample

    skip_or_fail_without_prometheus()
    root = tmp_path_factory.mktemp("prom-sample")
    result = write_prometheus_sample(root / "sample")
    backfill(result.files["metrics"], root / "data")
    with PrometheusServer(root / "data") as server:
        yield result, server

