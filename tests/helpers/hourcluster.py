"""A tiny hand-made cluster hour in a real Prometheus, for the ingest error and atomicity tests.

The OpenMetrics file (written below from Python) holds two GPUs on host h1 for one hour,
scraped every 30 s with a 7.413 s offset, inside a three-hour window [H-24h, H-21h), H being
the current hour of the machine clock (past, and well clear of Prometheus' head block):

* GPU-aaa (label `Hostname`) is held by pod ns/p1 (namespace/pod/container on its dcgm
  series) for the first 30 minutes at 90 % utilization, then carries no owner labels and
  reads 0 % (unallocated, idle).
* GPU-bbb (label `hostname`, lowercase) reads 50 % all hour; `yolocost_job_info` gives it
  to job j2 (bob, proj) for the second 30 minutes.
* power is 100 W everywhere; the energy counter grows 3,000,000 mJ per sample;
  kube_pod_labels gives ns/p1 project alpha and user ann, kube_pod_container_info its image.

Every file is backfilled once per session; each test that needs a server with particular
flags gets its own Prometheus on a copy of the blocks (one TSDB directory per process). The
session fixtures (backfilled, prom, prometheus, yc, good_db, prior_db) live in
tests/ingest/conftest.py; the test modules import this one as `h`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb

from helpers import promserver
from helpers.builders import assert_one_line_error  # noqa: F401 (the tests call h.assert_one_line_error)
from helpers.builders import cli_argv, yolocost
from helpers.promserver import free_port  # noqa: F401 (the tests call h.free_port)

UTC = dt.timezone.utc
CLI_TIMEOUT = 120  # seconds; a hung ingest fails the test instead of the session

# ---- the fixture data, in one place (the tests compute their expectations from these)
SCRAPE = 30  # seconds between samples
OFFSET = 7.413  # first sample this long after the hour
SAMPLES = 120  # one hour per series
HALF = 60  # samples in 30 minutes: the owner changes after these
GRAIN = 300  # the default grain of the config below
UTIL_A_POD, UTIL_A_FREE, UTIL_B = 90.0, 0.0, 50.0
MEM_A_POD, MEM_A_FREE, MEM_B = 30000.0, 100.0, 20000.0
POWER_W = 100.0
ENERGY_STEP_MJ = 3_000_000
ENERGY_BASE_A, ENERGY_BASE_B = 1_000_000_000, 500_000_000
MODEL = "NVIDIA A100-SXM4-80GB"
IMAGE_TAG = "train-yolov8-medium-cu121"
IMAGE_DIGEST = "sha256:" + "0123456789abcdef" * 4
# basic auth: the harness' fixed test user and password (it holds their bcrypt hash; neither
# python bcrypt nor htpasswd is installed here)
AUTH_USER, AUTH_PASSWORD = promserver.TEST_USER, promserver.TEST_PASSWORD


def _hour(t: dt.datetime) -> dt.datetime:
    return t.replace(minute=0, second=0, microsecond=0)


WINDOW_START = _hour(dt.datetime.now(UTC)) - dt.timedelta(hours=24)
DATA_START = WINDOW_START + dt.timedelta(hours=1)  # the hour that holds samples
WINDOW_END = WINDOW_START + dt.timedelta(hours=3)


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def sample_time(k: int) -> float:
    return DATA_START.timestamp() + OFFSET + SCRAPE * k


# training progress of job j2 (variant "scraped_twice"): epoch -> (sample its end is first
# served at, {results.csv column: value}); the final validation, served from RESULT_AT on
EPOCHS = {1: (HALF + 10, {"metrics/mAP50(B)": 0.25, "train/box_loss": 1.5}),
          2: (HALF + 30, {"metrics/mAP50(B)": 0.5, "train/box_loss": 1.25})}
RESULTS, RESULT_AT = {"map50": 0.5, "map50_95": 0.3125, "best_epoch": 2}, HALF + 40
# the bench runner's endpoint as two scrape targets see it (two scrape jobs, or an HA pair)
RUNNER_TARGETS = ('instance="h1:9101",job="bench"', 'instance="h1:9101",job="bench-copy"')


def openmetrics(*, energy: bool = True, util: bool = True, training_targets: tuple[str, ...] = (),
                results: dict[str, float] = RESULTS, job_info_extra: str = "", uuid: bool = True,
                from_sample: int = 0) -> str:
    """The fixture hour as OpenMetrics text: each family declared as a gauge, series ascending;
    with `training_targets`, job j2's training progress (and `results`) as scraped by each of
    them; `job_info_extra` adds labels to j2's job-info; without `uuid` no series names its GPU;
    `from_sample` leaves out the samples before it (a server that no longer holds them)."""
    gpu_a = f'gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="{MODEL}",Hostname="h1",instance="h1:9400",job="dcgm"'
    gpu_b = f'gpu="1",UUID="GPU-bbb",device="nvidia1",modelName="{MODEL}",hostname="h1",instance="h1:9400",job="dcgm"'
    pod = ',namespace="ns",pod="p1",container="train"'
    owned, free, all_hour = range(HALF), range(HALF, SAMPLES), range(SAMPLES)
    families = {
        "DCGM_FI_DEV_GPU_UTIL": (UTIL_A_POD, UTIL_A_FREE, UTIL_B),
        "DCGM_FI_DEV_FB_USED": (MEM_A_POD, MEM_A_FREE, MEM_B),
        "DCGM_FI_DEV_POWER_USAGE": (POWER_W, POWER_W, POWER_W),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": None,
    }
    if not util:
        del families["DCGM_FI_DEV_GPU_UTIL"]
    if not energy:
        del families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    lines = []

    def family(name: str, series: list[tuple[str, range, object]]) -> None:
        lines.append(f"# TYPE {name} gauge")
        for labels, ks, value in series:
            for k in (k for k in ks if k >= from_sample):
                v = value(k) if callable(value) else value
                lines.append(f"{name}{{{labels}}} {v:.17g} {sample_time(k):.3f}")

    for name, values in families.items():
        if values is None:  # the energy counter: one running value per GPU across the owner change
            a = lambda k: ENERGY_BASE_A + ENERGY_STEP_MJ * k  # noqa: E731
            b = lambda k: ENERGY_BASE_B + ENERGY_STEP_MJ * k  # noqa: E731
            family(name, [(gpu_a + pod, owned, a), (gpu_a, free, a), (gpu_b, all_hour, b)])
        else:
            family(name, [(gpu_a + pod, owned, values[0]), (gpu_a, free, values[1]), (gpu_b, all_hour, values[2])])
    family("yolocost_job_info",
           [(f'job_id="j2",user="bob",project="proj",Hostname="h1",UUID="GPU-bbb"{job_info_extra}', free, 1)])
    family("kube_pod_labels", [('namespace="ns",pod="p1",label_project="alpha",label_user="ann"', all_hour, 1)])
    if training_targets:
        family("yolocost_epoch_end_time_seconds",
               [(f'job_id="j2",epoch="{e}",{t}', range(at, SAMPLES), sample_time(at))
                for t in training_targets for e, (at, _) in EPOCHS.items()])
        family("yolocost_epoch_metric",
               [(f'job_id="j2",epoch="{e}",name="{name}",{t}', range(at, SAMPLES), value)
                for t in training_targets for e, (at, values) in EPOCHS.items() for name, value in values.items()])
        family("yolocost_job_result",
               [(f'job_id="j2",name="{name}",{t}', range(RESULT_AT, SAMPLES), value)
                for t in training_targets for name, value in results.items()])
    family("kube_pod_container_info",
           [(f'namespace="ns",pod="p1",container="train",image="reg/yolo:{IMAGE_TAG}",'
             f'image_id="docker-pullable://reg/yolo@{IMAGE_DIGEST}"', all_hour, 1)])
    lines.append("# EOF")
    text = "\n".join(lines) + "\n"
    return text if uuid else text.replace('UUID="GPU-aaa",', "").replace('UUID="GPU-bbb"', 'UUID=""')


VARIANTS = {
    "full": {},
    "no_energy": {"energy": False},
    "no_util": {"util": False},
    "scraped_twice": {"training_targets": RUNNER_TARGETS},
    # a failed final validation (NaN mAP50) and a job-info count no INTEGER holds
    "odd_values": {"training_targets": RUNNER_TARGETS[:1], "results": {**RESULTS, "map50": math.nan},
                   "job_info_extra": ',epochs="99999999999",imgsz="640"'},
    "no_uuid": {"uuid": False},
    "second_half_only": {"from_sample": HALF},
}


# ---- the database: contents as plain rows, for before/after comparisons


def relations(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(name, kind) of every table and view in the database's main schema."""
    return con.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = current_database() ORDER BY 1"
    ).fetchall()


# physical row ids exposed by a view (stg_gpu_usage.usage_row): a replaced window gets new
# ones, so they are not part of what a rerun must leave identical
ROW_KEYS = ("usage_row",)
WALL_CLOCK = ("built_at",)  # month_builds: when a month was built


def snapshot(db_path: Path, *, skip: tuple[str, ...] = ()) -> dict[str, object]:
    """Every table's and view's full contents (ordered) plus the definitions, read-only."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        out: dict[str, object] = {
            "_definitions": con.execute(
                "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = current_database() "
                "UNION ALL SELECT view_name, sql FROM duckdb_views() WHERE NOT internal "
                "AND database_name = current_database() ORDER BY ALL").fetchall(),
        }
        for name, _kind in relations(con):
            if name not in skip:
                columns = [c for (c,) in con.execute(f'SELECT column_name FROM (DESCRIBE "{name}")').fetchall()
                           if c not in ROW_KEYS + WALL_CLOCK]
                select = ", ".join(f'"{c}"' for c in columns)
                out[name] = con.execute(f'SELECT {select} FROM "{name}" ORDER BY ALL').fetchall()
        return out
    finally:
        con.close()


def file_state(db_path: Path) -> dict[str, str | None]:
    """sha256 of the database file and of its WAL (None where absent)."""
    out = {}
    for p in (db_path, db_path.with_name(db_path.name + ".wal")):
        out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
    return out


def state(db_path: Path) -> dict[str, object]:
    """The snapshot with `loads` minus loaded_at (the wall-clock time of each load)."""
    out = snapshot(db_path, skip=("loads",))
    out["loads"] = query(db_path, "SELECT source, window_start, window_end, rows_usage FROM loads ORDER BY ALL")
    return out


@contextlib.contextmanager
def unchanged(db_path: Path) -> Iterator[None]:
    """The database file (bytes, WAL) and every relation's contents are the same afterwards."""
    files, before = file_state(db_path), snapshot(db_path)
    yield
    assert file_state(db_path) == files, "the database file changed"
    after = snapshot(db_path)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"relations changed: {changed}"


def mart_names(db_path: Path) -> list[str]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return [n for n, _ in relations(con) if n.startswith("mart_")]
    finally:
        con.close()


def query(db_path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# ---- running the CLI


@dataclass
class Yolocost:
    """`yolocost ingest` of the fixture window in subprocesses (the tests' one runner,
    helpers.builders.yolocost), with configs written under `folder`."""

    folder: Path
    _n: int = 0

    def config(self, url: str, *, price: str = "2.00", prometheus: str = "") -> Path:
        """A config file for `url` (extra `[prometheus]` lines in `prometheus`)."""
        self._n += 1
        path = self.folder / f"yolocost{self._n}.toml"
        path.write_text(
            f'[cluster]\nname = "t"\n'
            f'[prometheus]\nurl = "{url}"\nretries = 1\n{prometheus}\n'
            f'[pricing]\ndefault_price_per_gpu_hour = "{price}"\n',
            encoding="utf-8",
        )
        return path

    def cli_args(self, config: Path, db: Path, *, start: dt.datetime = WINDOW_START,
                 end: dt.datetime = WINDOW_END, debug: bool = False, extra: tuple[str, ...] = ()) -> list[str]:
        """The arguments of `yolocost ... ingest`, without the command itself."""
        return ["--config", str(config), "--db", str(db), *(["--debug"] if debug else []), "ingest",
                "--start", iso(start), "--end", iso(end), *extra]

    def args(self, config: Path, db: Path, **kw) -> list[str]:
        """The whole command line (`python -m yolocost ...`), for a test that starts it with Popen."""
        return cli_argv(*self.cli_args(config, db, **kw))

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        env = {**os.environ, **(extra or {})}
        env.pop("YOLOCOST_CONFIG", None)
        return env

    def ingest(self, config: Path, db: Path, *, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
        return yolocost(*self.cli_args(config, db, **kw), cwd=self.folder, env=self._env(env), timeout=CLI_TIMEOUT)

    def popen(self, config: Path, db: Path, *, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
        # Popen, not the runner: the tests read its output as it comes, signal it or kill it
        return subprocess.Popen(self.args(config, db, **kw), cwd=self.folder, env=self._env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)


def assert_ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def kill_and_reap(proc: subprocess.Popen) -> None:
    """SIGKILL (if still running), then collect the exit status and close the pipes."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def serve(blocks: Path, flags: tuple[str, ...] = (), auth: bool = False) -> promserver.PrometheusServer:
    """A Prometheus of its own on a copy of the blocks (a TSDB folder serves one process);
    with `auth`, basic auth for AUTH_USER / AUTH_PASSWORD is required."""
    return promserver.PrometheusServer(blocks, copy=True, extra_flags=tuple(flags),
                                       basic_auth={AUTH_USER: AUTH_PASSWORD} if auth else None)


@contextlib.contextmanager
def serve_openmetrics(folder: Path, text: str) -> Iterator[promserver.PrometheusServer]:
    """A Prometheus of its own serving `text` (OpenMetrics ending in `# EOF`), backfilled into
    `folder` with promtool."""
    promserver.skip_or_fail_without_prometheus()
    om = folder / "data.om"
    om.write_text(text, encoding="utf-8")
    promserver.backfill(om, folder / "tsdb")
    with serve(folder / "tsdb") as server:
        yield server
