"""Builders for hand-made fixtures that go through the real loader into a real DuckDB file.

A test lists raw rows (the contract of docs/raw-tables.md) with the small helpers below,
hands them to `build_db`, and queries the marts the real `load_parquet_dir` built:

    usage = [usage_row(t, "g1", "j1") for t in intervals("2026-03-02T00:00Z", 12)]
    db = build_db(tmp_path, usage, jobs=[job_row("j1", project="p1")])
    db.one("SELECT gpu_cost FROM mart_job")["gpu_cost"]  # Decimal('2.930000000')

No mocks: rows are written as Parquet (timestamps tz-aware UTC, seconds as exact
DECIMAL(12,6)), the config is built by `parse_config` from a TOML-shaped dict, and every
query opens the database file read-only and closes it again.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Iterable, Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from yolocost import models, months
from yolocost.config import Config, parse_config
from yolocost.load import load_parquet_dir

UTC = dt.timezone.utc
GRAIN = 300  # default grain, seconds
BUSY_PERCENT = 70.0  # default thresholds: what usage_row derives busy/idle seconds with
IDLE_PERCENT = 5.0
DEFAULT_PRICE = "2.93"
DEFAULT_PRICES = ({"gpu_model": "A100", "price_per_gpu_hour": DEFAULT_PRICE},)
NANO = Decimal("0.000000001")  # money in the marts is DECIMAL(38, 9)
MICRO = Decimal("0.000001")  # seconds in the raw tables are DECIMAL(12, 6)
MJ_PER_KWH = Decimal(3_600_000_000)

# --------------------------------------------------------------------------- time


# the config file of a small EUR cluster (one A100 price) that command tests write beside their data
EUR_CONFIG = """
[cluster]
name = "c1"
timezone = "UTC"
currency = "EUR"
[database]
path = "yc.duckdb"
[[prices]]
gpu_model = "A100"
price_per_gpu_hour = "0.04"
"""


def ts(value: str | dt.datetime) -> dt.datetime:
    """A tz-aware UTC instant from '2026-03-02T00:00Z' (or a datetime; naive = UTC)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def intervals(start: str | dt.datetime, count: int, grain: int = GRAIN) -> list[dt.datetime]:
    """`count` consecutive grain interval starts from `start`."""
    first = ts(start)
    return [first + dt.timedelta(seconds=grain * i) for i in range(count)]


def money(value: Decimal | str | int) -> Decimal:
    """Round half-up to the marts' 9 decimals (what DECIMAL(38, 9) money holds)."""
    return Decimal(value).quantize(NANO, rounding=ROUND_HALF_UP)


def gpu_seconds(seconds: Decimal | int | str, share: Decimal | int = 1) -> Decimal:
    """A row's GPU-seconds as stg_gpu_usage stores them: seconds x share, rounded to 6 decimals."""
    return (Decimal(seconds) * Decimal(share)).quantize(MICRO, rounding=ROUND_HALF_UP)


# --------------------------------------------------------------------------- raw rows


def usage_row(
    t: str | dt.datetime,
    gpu: str,
    job: str | None = None,
    seconds: int | str | Decimal = GRAIN,
    util: float = 80.0,
    busy: int | str | Decimal | None = None,
    idle: int | str | Decimal | None = None,
    mem: float = 1000.0,
    power: float = 300.0,
    energy_mj: int = 0,
    model: str = "A100",
    host: str = "h1",
    mig: str | None = None,
    cluster: str = "c1",
    index: int = 0,
) -> dict[str, Any]:
    """One gpu_usage row (GPU x owner x interval); job None = unallocated.

    Unless given, busy/idle seconds assume the utilization held for the whole interval:
    all `seconds` are busy when util > 70 %, idle when util < 5 % (the default thresholds).
    """
    seconds = Decimal(str(seconds))
    if busy is None:
        busy = seconds if util > BUSY_PERCENT else Decimal(0)
    if idle is None:
        idle = seconds if util < IDLE_PERCENT else Decimal(0)
    return {
        "interval_start": ts(t),
        "cluster": cluster,
        "hostname": host,
        "gpu_uuid": gpu,
        "gpu_index": index,
        "gpu_model": model,
        "mig_profile": mig,
        "job_id": job,
        "seconds_present": seconds,
        "util_mean": float(util),
        "seconds_busy": Decimal(str(busy)),
        "seconds_idle": Decimal(str(idle)),
        "mem_peak_mib": float(mem),
        "power_mean_w": float(power),
        "energy_mj": int(energy_mj),
    }


def usage_run(start: str | dt.datetime, count: int, gpu: str, job: str | None = None, **kw: Any) -> list[dict]:
    """`count` consecutive usage rows of one GPU and owner (same keywords as usage_row)."""
    return [usage_row(t, gpu, job, **kw) for t in intervals(start, count)]


def job_row(
    job_id: str,
    project: str | None = "p1",
    user: str | None = "alice",
    model_type: str | None = "yolov8m",
    image_tag: str | None = "train-yolov8-medium-cu118",
    image_digest: str | None = "sha256:0123abcd",
    gpu_request: int | None = 1,
    gpu_model: str | None = "A100",
    start: str | dt.datetime | None = None,
    end: str | dt.datetime | None = None,
    epochs: int | None = None,
    imgsz: int | None = 640,
    batch: int | None = 16,
    cluster: str = "c1",
) -> dict[str, Any]:
    """One jobs row; project None = unlabeled, image_tag None + digest = digest-only image."""
    return {
        "job_id": job_id,
        "cluster": cluster,
        "project": project,
        "user_name": user,
        "model_type": model_type,
        "image_tag": image_tag,
        "image_digest": image_digest,
        "gpu_request": gpu_request,
        "gpu_model": gpu_model,
        "start_time": ts(start) if start is not None else None,
        "end_time": ts(end) if end is not None else None,
        "epochs": epochs,
        "imgsz": imgsz,
        "batch": batch,
    }


LOSS_SPLIT = (("train/box_loss", 0.5), ("train/cls_loss", 0.25), ("train/dfl_loss", 0.25))


def epoch_rows(
    job: str,
    epoch: int,
    t: str | dt.datetime,
    loss: float | None = None,
    map50: float | None = None,
    map50_95: float | None = None,
) -> list[dict[str, Any]]:
    """training_progress rows of one epoch (long format).

    The total `loss` is split 1/2 : 1/4 : 1/4 into train/box_loss, train/cls_loss and
    train/dfl_loss (power-of-two fractions, so the parts add back to the total exactly).
    """
    rows = []
    if loss is not None:
        rows += [_progress(job, t, epoch, metric, loss * part) for metric, part in LOSS_SPLIT]
    if map50 is not None:
        rows.append(_progress(job, t, epoch, "metrics/mAP50(B)", map50))
    if map50_95 is not None:
        rows.append(_progress(job, t, epoch, "metrics/mAP50-95(B)", map50_95))
    return rows


def losses(job: str, points: Iterable[tuple[str | dt.datetime, float]]) -> list[dict[str, Any]]:
    """training_progress rows for epochs 1..n from (end time, total loss) pairs."""
    rows = []
    for epoch, (t, loss) in enumerate(points, start=1):
        rows += epoch_rows(job, epoch, t, loss)
    return rows


def _progress(job: str, t: str | dt.datetime, epoch: int, metric: str, value: float) -> dict[str, Any]:
    return {"job_id": job, "ts": ts(t), "epoch": epoch, "metric": metric, "value": float(value)}


def result_row(job: str, map50: float | None, map50_95: float | None = None, best_epoch: int | None = None) -> dict:
    """One job_results row: the final validation of the best weights (mAP as 0-1)."""
    return {"job_id": job, "map50": map50, "map50_95": map50_95, "best_epoch": best_epoch}


# --------------------------------------------------------------------------- Parquet schemas

_TS = pa.timestamp("us", tz="UTC")
_SECONDS = pa.decimal128(12, 6)
SCHEMAS = {
    "gpu_usage": pa.schema([
        ("interval_start", _TS), ("cluster", pa.string()), ("hostname", pa.string()),
        ("gpu_uuid", pa.string()), ("gpu_index", pa.int32()), ("gpu_model", pa.string()),
        ("mig_profile", pa.string()), ("job_id", pa.string()), ("seconds_present", _SECONDS),
        ("util_mean", pa.float64()), ("seconds_busy", _SECONDS), ("seconds_idle", _SECONDS),
        ("mem_peak_mib", pa.float64()), ("power_mean_w", pa.float64()), ("energy_mj", pa.int64()),
    ]),
    "jobs": pa.schema([
        ("job_id", pa.string()), ("cluster", pa.string()), ("project", pa.string()),
        ("user_name", pa.string()), ("model_type", pa.string()), ("image_tag", pa.string()),
        ("image_digest", pa.string()), ("gpu_request", pa.int32()), ("gpu_model", pa.string()),
        ("start_time", _TS), ("end_time", _TS), ("epochs", pa.int32()), ("imgsz", pa.int32()),
        ("batch", pa.int32()),
    ]),
    "training_progress": pa.schema([
        ("job_id", pa.string()), ("ts", _TS), ("epoch", pa.int32()), ("metric", pa.string()),
        ("value", pa.float64()),
    ]),
    "job_results": pa.schema([
        ("job_id", pa.string()), ("map50", pa.float64()), ("map50_95", pa.float64()),
        ("best_epoch", pa.int32()),
    ]),
}


def write_raw(directory: Path, usage: Sequence[dict], jobs: Sequence[dict] = (),
              progress: Sequence[dict] = (), results: Sequence[dict] = ()) -> Path:
    """Write the raw Parquet files the loader reads (a table with no rows is not written)."""
    directory.mkdir(parents=True, exist_ok=True)
    for table, rows in (("gpu_usage", usage), ("jobs", jobs), ("training_progress", progress),
                        ("job_results", results)):
        if rows or table == "gpu_usage":
            pq.write_table(pa.Table.from_pylist(list(rows), schema=SCHEMAS[table]), directory / f"{table}.parquet")
    return directory


# --------------------------------------------------------------------------- whole months

MONTH_GPUS = 16  # GPUs of month_rows: 12 of the first model, 4 of the second
CROSSING = "cross-aug-sep"  # month_rows' job on GPU 15 from Aug 30 to Sep 2, 2026 (UTC)
CROSSING_SPAN = (np.datetime64("2026-08-30"), np.datetime64("2026-09-02"))


def month_rows(config: Config, month: str, gpu_models: tuple[str, str] = ("A100", "V100"),
               ) -> tuple[pa.Table, list[dict], list[dict]]:
    """One month of usage of the config's cluster at its grain: GPU i is held by job
    <month>-g<i//4>-w<week> for 18 of every 24 hours from the month's first local midnight
    (utilization by GPU), unallocated otherwise; GPU 15 is held by CROSSING over CROSSING_SPAN.
    GPUs 0-11 are gpu_models[0], 12-15 gpu_models[1]. Returns (usage, jobs, results)."""
    grain = config.grain_seconds
    start, end = months.window(config, month)
    n = int((end - start).total_seconds()) // grain
    t0 = np.datetime64(start.astimezone(UTC).replace(tzinfo=None), "us")
    times = t0 + np.arange(n, dtype="int64") * np.int64(grain * 1_000_000)
    hour = (np.arange(n) * grain // 3600) % 24
    day = np.arange(n) * grain // 86400
    cols: dict[str, list] = {k: [] for k in SCHEMAS["gpu_usage"].names}
    jobs: dict[str, dict] = {}
    results = []
    for g in range(MONTH_GPUS):
        model = gpu_models[0] if g < 12 else gpu_models[1]
        held = (hour >= 2) & (hour < 20)
        owner = np.where(held, np.char.add(f"{month}-g{g // 4}-w", (day // 7).astype(str)), None).astype(object)
        if g == 15:
            owner = np.full(n, None, dtype=object)
            owner[(times >= CROSSING_SPAN[0]) & (times < CROSSING_SPAN[1])] = CROSSING
        util = np.where(owner == None, 0.0, 20.0 + 5.0 * g)  # noqa: E711 (element-wise)
        cols["interval_start"].append(times)
        cols["cluster"].append(np.full(n, config.cluster, dtype=object))
        cols["hostname"].append(np.full(n, f"h{g // 4}", dtype=object))
        cols["gpu_uuid"].append(np.full(n, f"GPU-{g:02d}", dtype=object))
        cols["gpu_index"].append(np.full(n, g % 4))
        cols["gpu_model"].append(np.full(n, model, dtype=object))
        cols["mig_profile"].append(np.full(n, None, dtype=object))
        cols["job_id"].append(owner)
        cols["seconds_present"].append(np.full(n, grain))
        cols["util_mean"].append(util)
        cols["seconds_busy"].append(np.where(util > BUSY_PERCENT, grain, 0))
        cols["seconds_idle"].append(np.where(util < IDLE_PERCENT, grain, 0))
        cols["mem_peak_mib"].append(np.full(n, 1000.0))
        cols["power_mean_w"].append(np.full(n, 100.0 + g))
        cols["energy_mj"].append(np.full(n, int((100 + g) * grain * 1000)))
        k = g // 4  # a job holds four GPUs of one model: its labels follow the group
        for job in sorted({o for o in owner if o is not None} - set(jobs)):
            jobs[job] = job_row(job, project=f"p{k % 3}", gpu_model=model, image_tag=f"tag-{k % 2}",
                                model_type=f"yolov8{'nsm'[k % 3]}", cluster=config.cluster)
            if job != CROSSING:
                results.append(result_row(job, 0.3 + k / 100, 0.2 + k / 100, 10))
    arrays = []
    for field in SCHEMAS["gpu_usage"]:
        values = np.concatenate(cols[field.name])
        if pa.types.is_decimal(field.type):
            values = [Decimal(int(v)) for v in values]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMAS["gpu_usage"]), list(jobs.values()), results


def write_month(folder: Path, config: Config, month: str, gpu_models: tuple[str, str] = ("A100", "V100")) -> Path:
    """month_rows written as a raw Parquet folder for `load_parquet_dir`."""
    usage, jobs, results = month_rows(config, month, gpu_models)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(usage, folder / "gpu_usage.parquet")
    pq.write_table(pa.Table.from_pylist(jobs, schema=SCHEMAS["jobs"]), folder / "jobs.parquet")
    pq.write_table(pa.Table.from_pylist(results, schema=SCHEMAS["job_results"]), folder / "job_results.parquet")
    return folder


def by_month_tables() -> list[str]:
    return [m.name for m in models.discover() if m.by_month] + ["ledger_charges", "ledger_job_month"]


def archive(config: Config, month: str) -> dict[str, list]:
    """Every stored row of `month` in the by-month models and the ledger, sorted (the tables a
    prune empties, which hold a row per usage row, left out)."""
    con = duckdb.connect(str(config.database), read_only=True)
    try:
        return {t: sorted(con.execute(f"SELECT * FROM {t} WHERE month = ?", [month]).fetchall(), key=repr)
                for t in by_month_tables() if t not in months.PRUNED}
    finally:
        con.close()


class Profiled:
    """A connection that notes, for every table scan of gpu_usage in every query it runs, the
    rows DuckDB's profiler says the scan read (in `scans`, which connections may share)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, scans: list[int] | None = None):
        self.con, self.scans = con, [] if scans is None else scans
        con.execute("PRAGMA enable_profiling = 'no_output'")

    def execute(self, sql: str, *args):
        result = self.con.execute(sql, *args)
        self._note(json.loads(self.con.get_profiling_information(format="json")))
        return result

    def _note(self, node: dict) -> None:
        if str(node.get("extra_info", {}).get("Table", "")).endswith(".gpu_usage"):
            self.scans.append(node["operator_rows_scanned"])
        for child in node.get("children", []):
            self._note(child)

    def __getattr__(self, name):
        return getattr(self.con, name)


# --------------------------------------------------------------------------- config and database


def _price_entry(entry: dict | Sequence) -> dict:
    """A [[prices]] table from a dict, (model, price) or (model, effective_from, price)."""
    if isinstance(entry, dict):
        return dict(entry)
    if len(entry) == 2:
        return {"gpu_model": entry[0], "price_per_gpu_hour": str(entry[1])}
    return {"gpu_model": entry[0], "effective_from": entry[1], "price_per_gpu_hour": str(entry[2])}


def _energy_entry(entry: dict | Sequence | str) -> dict:
    """An [[energy_prices]] table from a dict, a price, or (effective_from, price)."""
    if isinstance(entry, dict):
        return dict(entry)
    if isinstance(entry, (str, int, Decimal)):
        return {"price_per_kwh": str(entry)}
    return {"effective_from": entry[0], "price_per_kwh": str(entry[1])}


def _merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def make_config(tmp_path: Path, prices: Iterable = DEFAULT_PRICES, energy_prices: Iterable = (),
                timezone: str = "UTC", thresholds: dict | None = None, **sections: Any) -> Config:
    """A Config from a TOML-shaped dict (database in tmp_path); `sections` are merged in."""
    data: dict[str, Any] = {
        "cluster": {"name": "c1", "timezone": timezone},
        "database": {"path": str(Path(tmp_path) / "yolocost.duckdb")},
        "prices": [_price_entry(p) for p in prices],
        "energy_prices": [_energy_entry(e) for e in energy_prices],
    }
    if thresholds:
        data["thresholds"] = dict(thresholds)
    return parse_config(_merge(data, sections))


@dataclass
class BuiltDb:
    """A loaded database: `.config`, `.path`, the raw folder, and read-only query helpers."""

    config: Config
    raw_dir: Path

    @property
    def path(self) -> Path:
        return self.config.database

    def load(self):
        """Run the real loader again on the same raw folder (e.g. to test idempotence)."""
        return load_parquet_dir(self.config, self.raw_dir)

    def query(self, sql: str, params: Sequence | None = None) -> list[dict[str, Any]]:
        """Rows as dicts, from a read-only connection opened and closed for this query."""
        con = duckdb.connect(str(self.path), read_only=True)
        try:
            con.execute("SET TimeZone = 'UTC'")
            cur = con.execute(sql, params or [])
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]
        finally:
            con.close()

    def one(self, sql: str, params: Sequence | None = None) -> dict[str, Any]:
        """The single row `sql` returns (fails when it returns none or several)."""
        rows = self.query(sql, params)
        assert len(rows) == 1, f"expected one row, got {len(rows)}: {sql}"
        return rows[0]

    def value(self, sql: str, params: Sequence | None = None) -> Any:
        """The single value of a one-row, one-column query."""
        row = self.one(sql, params)
        assert len(row) == 1, f"expected one column, got {list(row)}"
        return next(iter(row.values()))

    def by(self, table: str, key: str, where: str = "TRUE") -> dict[Any, dict[str, Any]]:
        """Rows of `table` keyed by the column `key` (which must be unique there)."""
        rows = self.query(f"SELECT * FROM {table} WHERE {where}")
        keyed = {r[key]: r for r in rows}
        assert len(keyed) == len(rows), f"{key} is not unique in {table}"
        return keyed


def build_db(tmp_path: Path, usage: Sequence[dict], jobs: Sequence[dict] = (), progress: Sequence[dict] = (),
             results: Sequence[dict] = (), prices: Iterable = DEFAULT_PRICES, energy_prices: Iterable = (),
             timezone: str = "UTC", thresholds: dict | None = None, name: str = "raw", **config: Any) -> BuiltDb:
    """Write the rows as Parquet under tmp_path/name, load them with the real loader, return the DB.

    `config` holds further TOML sections, e.g. tag_policy={"pattern": "..."},
    pricing={"default_price_per_gpu_hour": "1.00"}, ingest={"grain_seconds": 3600}.
    """
    tmp_path = Path(tmp_path)
    cfg = make_config(tmp_path, prices, energy_prices, timezone, thresholds, **config)
    raw = write_raw(tmp_path / name, usage, jobs, progress, results)
    built = BuiltDb(cfg, raw)
    built.load()
    return built


def sample_config(prom_sample, folder: Path) -> Path:
    """The Prometheus sample's yolocost.toml copied into `folder`, pointing at the test server."""
    sample, server = prom_sample
    text = sample.files["config"].read_text(encoding="utf-8")
    config = folder / "yolocost.toml"
    config.write_text(text.replace('url = "http://127.0.0.1:9090"', f'url = "{server.url}"'), encoding="utf-8")
    return config


CLI_TIMEOUT = 120  # seconds: a hung command fails its test instead of hanging the session


def cli_argv(*args: str | Path) -> list[str]:
    """The real CLI's command line: `python -m yolocost ARGS` with this interpreter."""
    return [sys.executable, "-m", "yolocost", *map(str, args)]


def yolocost(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
             input: str | bytes | None = None, timeout: float | None = CLI_TIMEOUT, text: bool = True,
             check: bool = False, preexec_fn=None) -> subprocess.CompletedProcess:
    """Run the real `yolocost` CLI in a subprocess and capture its stdout and stderr (the one
    runner of the tests; the `cli` fixture returns it). In `cwd` (None: the test's own), whose
    ./yolocost.toml is the config unless --config says otherwise; `env` replaces the whole
    environment (None: this one's); `timeout` in seconds (None: no limit); `preexec_fn` runs in
    the child before the CLI starts (a resource limit, say)."""
    return subprocess.run(cli_argv(*args), cwd=cwd, env=env, input=input, capture_output=True, text=text,
                          timeout=timeout, check=check, preexec_fn=preexec_fn)


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, no traceback, exactly one `error:` line (the last), holding every needle; returns it."""
    assert result.returncode == 2, f"exit {result.returncode}\n{result.stderr}"
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), result.stderr
    errors = [line for line in lines if line.startswith("error")]
    assert errors == [lines[-1]], result.stderr
    for needle in needles:
        assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"
    return errors[0]


# the start of a `python -c` script that runs the real CLI where importing the bench extra
# (torch, torchvision, ultralytics, matplotlib, which ultralytics brings, pynvml,
# prometheus_client) fails, as on a core install; `main()` follows
CLI_WITHOUT_BENCH = textwrap.dedent("""
    import sys
    class NoBench:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision", "ultralytics", "matplotlib", "pynvml",
                                      "prometheus_client"):
                raise ImportError(f"No module named {name!r}")
    sys.meta_path.insert(0, NoBench())
    from yolocost.cli import main
    sys.argv = ["yolocost", *sys.argv[1:]]
""")
