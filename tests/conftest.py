"""Shared fixtures: hand-made raw data loaded by the real loader into a real DuckDB file."""

from __future__ import annotations

import itertools

import pytest
from helpers.builders import BuiltDb, build_db, yolocost


@pytest.fixture(scope="session")
def cli():
    """The real `yolocost` CLI in a subprocess: cli(*args, cwd=, env=, input=, timeout=, text=,
    check=, preexec_fn=) -> CompletedProcess with stdout and stderr captured (helpers.builders.yolocost)."""
    return yolocost


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
def synthetic_sample(tmp_path_factory):
    """The synthetic Prometheus sample (3 days, every attribution mode), written once per session."""
    from yolocost.synth import write_prometheus_sample

    return write_prometheus_sample(tmp_path_factory.mktemp("synthetic-sample") / "sample")


@pytest.fixture(scope="session")
def prom_sample(synthetic_sample, tmp_path_factory):
    """The synthetic Prometheus sample backfilled into a real Prometheus on loopback once per
    session: (PrometheusSample, PrometheusServer)."""
    from helpers.promserver import PrometheusServer, backfill, skip_or_fail_without_prometheus

    skip_or_fail_without_prometheus()
    root = tmp_path_factory.mktemp("prom-sample")
    backfill(synthetic_sample.files["metrics"], root / "data")
    with PrometheusServer(root / "data") as server:
        yield synthetic_sample, server


@pytest.fixture(scope="session")
def vm_sample(synthetic_sample, tmp_path_factory):
    """The same sample imported into a real VictoriaMetrics on loopback once per session:
    (PrometheusSample, VictoriaMetricsServer)."""
    from helpers.vmserver import VictoriaMetricsServer, fail_without_victoriametrics

    fail_without_victoriametrics()
    with VictoriaMetricsServer(tmp_path_factory.mktemp("vm-sample") / "data") as server:
        server.import_openmetrics(synthetic_sample.files["metrics"])
        yield synthetic_sample, server


# Short windows of the same cluster for what the 3-day sample does not cross, on three GPUs
# (an A100 with its pods, a Slurm A100, a job-info A10G): (start day, whole days, hours more)
SAMPLE_WINDOWS = {
    "price-change": (13, 1, 12),  # 14 Oct 00:00 to 15 Oct 12:00: the A100 price changes at 15 Oct 00:00
    "dst-day": (24, 1, 0),  # 25 Oct, Europe/Berlin: 25 hours (CEST to CET)
    "month-end": (30, 1, 12),  # 31 Oct 00:00 to 1 Nov 12:00: October into November
}


@pytest.fixture(scope="session")
def window_samples(tmp_path_factory) -> dict:
    """SAMPLE_WINDOWS written once per session: {name: PrometheusSample}."""
    from yolocost.synth import write_prometheus_sample
    from yolocost.synth.scenario import HostChoice

    hosts = (HostChoice("gpu-a100-03", "k8s", (2,)), HostChoice("gpu-a100-02", "slurm", (3,)),
             HostChoice("gpu-a10g-04", "job_info", (0,)))
    root = tmp_path_factory.mktemp("window-samples")
    return {name: write_prometheus_sample(root / name, start_day=day, days=days, hours=hours, hosts=hosts)
            for name, (day, days, hours) in SAMPLE_WINDOWS.items()}


@pytest.fixture(scope="session")
def prom_windows(window_samples, tmp_path_factory):
    """Every window sample in one real Prometheus (they lie days apart): PrometheusServer."""
    from helpers.promserver import PrometheusServer, backfill, skip_or_fail_without_prometheus

    skip_or_fail_without_prometheus()
    data = tmp_path_factory.mktemp("prom-windows") / "data"
    for sample in window_samples.values():
        backfill(sample.files["metrics"], data)
    with PrometheusServer(data) as server:
        yield server


@pytest.fixture(scope="session")
def vm_windows(window_samples, tmp_path_factory):
    """Every window sample in one real VictoriaMetrics: VictoriaMetricsServer."""
    from helpers.vmserver import VictoriaMetricsServer, fail_without_victoriametrics

    fail_without_victoriametrics()
    with VictoriaMetricsServer(tmp_path_factory.mktemp("vm-windows") / "data") as server:
        for sample in window_samples.values():
            server.import_openmetrics(sample.files["metrics"])
        yield server

