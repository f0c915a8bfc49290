"""Shared fixtures: hand-made raw data loaded by the real loader into a real DuckDB file."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from helpers.builders import BuiltDb, build_db, yolocost
from helpers.shared import once, private_copy


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


def _loaded_sample(tmp_path_factory, name: str, config, raw) -> BuiltDb:
    """The raw folder loaded under `config` once per run; this worker's copy of the database."""
    from yolocost.load import load_parquet_dir

    def build(folder):
        load_parquet_dir(config.with_database(folder / "sample.duckdb"), raw)
        assert not (folder / "sample.duckdb.wal").exists(), "the load left a WAL behind"

    folder, _ = once(tmp_path_factory, name, build)
    database = private_copy(folder / "sample.duckdb", tmp_path_factory.mktemp(name) / "sample.duckdb")
    return BuiltDb(config.with_database(database), raw)


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory) -> BuiltDb:
    """The bundled sample month (sample_data/) loaded once per run with its own config; each
    worker reads its own copy of the database."""
    from yolocost.config import load_config
    from yolocost.resources import shipped_dir

    sample = shipped_dir("sample_data")
    return _loaded_sample(tmp_path_factory, "sample-db", load_config(sample / "yolocost.toml"), sample)


@pytest.fixture(scope="session")
def sample_built(sample_db, tmp_path_factory):
    """sample_built(**settings) -> BuiltDb: the sample month loaded under its config with
    `dataclasses.replace(config, **settings)` (another currency, allocation policy), once per
    run for each setting (none: sample_db itself); each worker reads its own copy."""
    import dataclasses

    made: dict[str, BuiltDb] = {}

    def get(**settings) -> BuiltDb:
        if not settings:
            return sample_db
        name = "sample-db-" + "-".join(f"{key}-{value}" for key, value in sorted(settings.items()))
        if name not in made:
            config = dataclasses.replace(sample_db.config, **settings)
            made[name] = _loaded_sample(tmp_path_factory, name, config, sample_db.raw_dir)
        return made[name]

    return get


@pytest.fixture(scope="session")
def synthetic_sample(tmp_path_factory):
    """The synthetic Prometheus sample (3 days, every attribution mode), written once per run."""
    from yolocost.synth import write_prometheus_sample

    return once(tmp_path_factory, "synthetic-sample", lambda folder: write_prometheus_sample(folder / "sample"))[1]


def _backfilled_copy(tmp_path_factory, name: str, metrics_files) -> Path:
    """The OpenMetrics files backfilled by promtool once per run; this worker's copy of the TSDB."""
    from helpers.promserver import backfill, skip_or_fail_without_prometheus

    skip_or_fail_without_prometheus()

    def build(folder):
        for metrics in metrics_files:
            backfill(metrics, folder / "data")

    folder, _ = once(tmp_path_factory, name, build)
    return private_copy(folder / "data", tmp_path_factory.mktemp(name) / "data")


@pytest.fixture(scope="session")
def prom_sample(synthetic_sample, tmp_path_factory):
    """The synthetic Prometheus sample backfilled into a real Prometheus on loopback (one
    server per worker): (PrometheusSample, PrometheusServer)."""
    from helpers.promserver import PrometheusServer

    data = _backfilled_copy(tmp_path_factory, "prom-sample", [synthetic_sample.files["metrics"]])
    with PrometheusServer(data) as server:
        yield synthetic_sample, server


@pytest.fixture(scope="session")
def vm_sample(synthetic_sample, tmp_path_factory):
    """The same sample imported into a real VictoriaMetrics on loopback once per worker:
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
    """SAMPLE_WINDOWS written once per run: {name: PrometheusSample}."""
    from yolocost.synth import write_prometheus_sample
    from yolocost.synth.scenario import HostChoice

    hosts = (HostChoice("gpu-a100-03", "k8s", (2,)), HostChoice("gpu-a100-02", "slurm", (3,)),
             HostChoice("gpu-a10g-04", "job_info", (0,)))

    def build(folder):
        return {name: write_prometheus_sample(folder / name, start_day=day, days=days, hours=hours, hosts=hosts)
                for name, (day, days, hours) in SAMPLE_WINDOWS.items()}

    return once(tmp_path_factory, "window-samples", build)[1]


@pytest.fixture(scope="session")
def prom_windows(window_samples, tmp_path_factory):
    """Every window sample in one real Prometheus (they lie days apart): PrometheusServer."""
    from helpers.promserver import PrometheusServer

    data = _backfilled_copy(tmp_path_factory, "prom-windows", [s.files["metrics"] for s in window_samples.values()])
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


@pytest.fixture(scope="session")
def raw_months(tmp_path_factory) -> dict:
    """helpers.months.MONTHS' raw folders, written once per run: {month: folder}."""
    from helpers.months import write_months

    return once(tmp_path_factory, "raw-months", write_months)[1]


@pytest.fixture(scope="session")
def two_months(raw_months, tmp_path_factory):
    """July and August loaded, month by month, into one database once per run: its config
    (copy the database, do not write it)."""
    from helpers.months import load_two_months

    return once(tmp_path_factory, "two-months", lambda folder: load_two_months(raw_months, folder))[1]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`yolocost demo --out FOLDER` run by the real CLI once per run: (CompletedProcess, FOLDER).
    Read it; copy the folder to run in it again."""
    folder, result = once(tmp_path_factory, "demo", lambda base: yolocost("demo", "--out", str(base / "demo"),
                                                                          timeout=300))
    return result, folder / "demo"
