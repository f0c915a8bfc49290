"""`yolocost import-results`: Ultralytics run folders into the training tables, without Prometheus.

For clusters that do not run the benchmark runner's exporter. Each folder is a run folder
of `yolocost bench run` (results.csv plus its JSON run record: labels, epoch end times, the
final validation of the best weights) or a plain Ultralytics training folder (results.csv
only). Rows go into training_progress (every results.csv column of every epoch), job_results
(the record's final mAP, else the box mAP of results.csv's best epoch, best = highest
fitness, the sum of the mAP50-95 columns, as Ultralytics picks best.pt) and, where the record knows the labels, jobs. The load is the
one of `yolocost load`: one transaction that replaces those jobs' rows and rebuilds the
models, and leaves the database as it was on any bad input. Needs no torch.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import duckdb

from . import db
from .runrecord import RunRecord, parse_time
from .config import Config
from .errors import DataError
from .load import RAW_FILES, load_parquet_dir

Progress = Callable[[str], None]
UTC = dt.timezone.utc
MAP50, MAP50_95 = "metrics/mAP50(B)", "metrics/mAP50-95(B)"
FITNESS_PREFIX = "metrics/mAP50-95("  # (B) box, plus (M) masks for segment, (P) keypoints for pose


@dataclass(frozen=True)
class ImportResult:
    jobs: list[str]
    epochs: int
    with_labels: int


def read_results_csv(path: Path) -> list[dict[str, float | None]]:
    """The rows of an Ultralytics results.csv: `epoch` (int) and `time`, then one value per column.

    Header names are stripped (older Ultralytics pads them); NaN and empty cells become None."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            rows = [r for r in reader if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None
    if "epoch" not in header:
        raise DataError(f"{path}: no epoch column (not an Ultralytics results.csv)")
    out = []
    for n, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise DataError(f"{path}: line {n} has {len(row)} cells, the header {len(header)}")
        values: dict[str, float | None] = {}
        for name, cell in zip(header, row):
            try:
                value = float(cell) if cell.strip() else None
            except ValueError:
                raise DataError(f"{path}: line {n}, column {name}: {cell!r} is not a number") from None
            values[name] = value if value is not None and math.isfinite(value) else None
            if name == "time" and value is not None:
                _check_time(path, n, cell, value)
        if values["epoch"] is None or values["epoch"] != int(values["epoch"]) or values["epoch"] < 1:
            raise DataError(f"{path}: line {n}: epoch {row[header.index('epoch')]!r} is not a positive integer")
        values["epoch"] = int(values["epoch"])
        out.append(values)
    epochs = [r["epoch"] for r in out]
    if len(set(epochs)) != len(epochs):
        raise DataError(f"{path}: epoch {next(e for e in epochs if epochs.count(e) > 1)} appears twice")
    return out


MAX_TIME = 10 * 366 * 86400  # seconds: a results.csv `time` beyond ten years is no training's


def _check_time(path: Path, line: int, cell: str, value: float) -> None:
    """`time` (seconds since the training started) dates each epoch: NaN, infinite, negative or
    absurdly large values would date it wrongly (or not at all), so they stop the import."""
    if not math.isfinite(value) or not 0 <= value <= MAX_TIME:
        raise DataError(f"{path}: line {line}, column time: {cell.strip()!r} is not a number of seconds from 0 to "
                        f"{MAX_TIME:,} (the seconds since the training started)")


def epoch_values(row: dict[str, float | None]) -> dict[str, float | None]:
    """The metric columns of a results.csv row: everything but epoch and time."""
    return {k: v for k, v in row.items() if k not in ("epoch", "time")}


def fitness(row: dict) -> float | None:
    """Ultralytics' fitness of an epoch (ultralytics/utils/metrics.py, 8.4: DetMetrics weighs only
    mAP50-95; SegmentMetrics and PoseMetrics add their mask or keypoint mAP50-95 to the box's):
    the sum of every `metrics/mAP50-95(...)` column, NaN as 0; None when none has a value."""
    values = [v for k, v in row.items() if k.startswith(FITNESS_PREFIX)]
    if all(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def best_row(rows: list[dict]) -> dict | None:
    """The epoch Ultralytics keeps as best.pt: highest fitness (the first of equals)."""
    scored = [(f, r) for r in rows if (f := fitness(r)) is not None]
    return max(scored, key=lambda fr: fr[0])[1] if scored else None


@dataclass
class _Run:
    job_id: str
    folder: Path
    rows: list[dict]
    record: RunRecord | None


def _read_run(folder: Path) -> _Run:
    folder = Path(folder)
    csv_path = folder / "results.csv"
    if not csv_path.is_file():
        raise DataError(f"{folder}: no results.csv (not an Ultralytics run folder)")
    record = RunRecord.load(folder)
    rows = read_results_csv(csv_path)
    return _Run(record.job_id if record else folder.resolve().name, folder, rows, record)


def _epoch_times(run: _Run, progress: Progress = lambda _: None) -> dict[int, dt.datetime]:
    """When each epoch ended: the record's times; else from results.csv's `time` (seconds since
    the training process started) counted back from the file's modification time (the last
    epoch's end).

    A resumed run restarts `time`: a drop splits the file into stretches, one per process.
    The last stretch counts back from the modification time; an earlier one from the start
    of the stretch after it (its first epoch's end less its `time`), as if the resume had
    followed at once: the gap is unknown, so those times are early bounds, and kept in order."""
    times = {}
    missing = [r for r in run.rows if r.get("time") is None
               and (run.record is None or run.record.epoch_ended(r["epoch"]) is None)]
    if missing:
        raise DataError(f"{run.folder}: epoch {missing[0]['epoch']} has no time in results.csv and no run record")
    stretches: list[list[dict]] = []
    for row in run.rows:
        previous = stretches[-1][-1] if stretches else None
        if previous is None or (row.get("time") is not None and previous.get("time") is not None
                                and row["time"] < previous["time"]):
            stretches.append([row])
        else:
            stretches[-1].append(row)
    end = (run.folder / "results.csv").stat().st_mtime  # when the stretch being counted ended
    for stretch in reversed(stretches):
        timed = [r for r in stretch if r.get("time") is not None]
        last = timed[-1]["time"] if timed else None
        for row in stretch:
            known = run.record.epoch_ended(row["epoch"]) if run.record else None
            if known is None:
                known = dt.datetime.fromtimestamp(end - (last - row["time"]), UTC)
            times[row["epoch"]] = known
        if timed:
            assert last is not None  # timed[-1]'s
            end -= last  # this process's start: the previous one ended before it
    if len(stretches) > 1 and any(run.record is None or run.record.epoch_ended(r["epoch"]) is None
                                  for s in stretches[:-1] for r in s):
        resumed = ", ".join(str(s[0]["epoch"]) for s in stretches[1:])
        progress(f"{run.folder}: results.csv's time restarts at epoch(s) {resumed} (a resumed run); epoch end "
                 "times before a resume are estimated as if it followed at once")
    return times


def _result(run: _Run) -> tuple | None:
    """(map50, map50_95, best_epoch): the record's final validation, else the best results.csv row."""
    if run.record and run.record.results:
        r = run.record.results
        return r.get("map50"), r.get("map50_95"), r.get("best_epoch")
    best = best_row(run.rows)
    return (best.get(MAP50), best.get(MAP50_95), best["epoch"]) if best else None


def _job(run: _Run, config: Config) -> tuple:
    rec = run.record
    assert rec is not None  # a run imported as a job has a record
    labels = rec.labels
    digest = labels.get("image_digest") or None
    tag = labels.get("image_tag") or (None if digest else "")  # as the ingest reads job-info labels
    models = {g.get("model") for g in rec.gpus} - {None}
    return (rec.job_id, config.cluster, labels.get("project") or None, labels.get("user") or None,
            labels.get("model_type") or None, tag, digest, len(rec.gpus) or None,
            models.pop() if len(models) == 1 else None, parse_time(rec.start_time), parse_time(rec.end_time),
            rec.epochs, rec.imgsz, rec.batch)


def import_results(config: Config, folders: Iterable[Path], progress: Progress = lambda _: None,
                   replace: bool = False) -> ImportResult:
    """Load the run folders into the configured database in one transaction. A job whose
    training progress or results the database already holds is refused unless `replace`; a
    job whose labels it holds keeps them (who pays for it) unless `replace`."""
    runs = [_read_run(Path(f)) for f in folders]
    seen: dict[str, Path] = {}
    for run in runs:
        if run.job_id in seen:
            raise DataError(f"{run.folder} and {seen[run.job_id]} are both job {run.job_id}")
        seen[run.job_id] = run.folder
    stored = stored_results(config, list(seen))
    if stored and not replace:
        held = "; ".join(f"{job} ({what})" for job, what in stored.items())
        raise DataError(f"{config.database} already holds training results of {len(stored)} job(s): {held}; "
                        "give --replace to replace them")
    for job, what in stored.items():
        progress(f"replacing the stored training results of job {job} ({what})")
    labeled = stored_labels(config, list(seen))  # who pays for a job: not changed in passing
    progress_rows, results, jobs = [], [], []
    for run in runs:
        times = _epoch_times(run, progress)
        for row in run.rows:
            progress_rows += [(run.job_id, times[row["epoch"]], row["epoch"], name, value)
                              for name, value in epoch_values(row).items()]
        result = _result(run)
        if result is not None:
            results.append((run.job_id, *result))
        if run.record is not None and run.job_id in labeled and not replace:
            progress(f"job {run.job_id}: keeping its stored labels ({labeled[run.job_id]}); "
                     "--replace takes the run record's")
        elif run.record is not None:
            jobs.append(_job(run, config))
        progress(f"{run.folder}: job {run.job_id}, {len(run.rows)} epoch(s)"
                 + (", labels from its run record" if run.record else ", no run record (no labels)"))
    with tempfile.TemporaryDirectory(prefix="yolocost-import-") as tmp:
        folder = Path(tmp) / "import-results"
        _write_raw(folder, {"training_progress": progress_rows, "job_results": results, "jobs": jobs})
        load_parquet_dir(config, folder, progress)
    return ImportResult([r.job_id for r in runs], sum(len(r.rows) for r in runs), len(jobs))


def stored_labels(config: Config, job_ids: list[str]) -> dict[str, str]:
    """For each of the jobs the database holds a `jobs` row of (from an ingest or an earlier
    import), its project as messages show it; {} without a database."""
    if not Path(config.database).is_file() or not job_ids:
        return {}
    con = db.connect(config.database, read_only=True)
    try:
        rows = con.execute("SELECT job_id, project FROM jobs WHERE job_id IN (SELECT unnest(?::VARCHAR[])) "
                           "ORDER BY job_id", [job_ids]).fetchall()
    except duckdb.CatalogException:  # a database without the jobs table holds none
        return {}
    finally:
        con.close()
    return {job: f"project {project!r}" if project is not None else "no project" for job, project in rows}


def stored_results(config: Config, job_ids: list[str]) -> dict[str, str]:
    """For each of the jobs whose training progress or results the database holds, what it
    holds ('3 epochs, mAP50 0.41, mAP50-95 0.21'), in job id order; {} without a database."""
    if not Path(config.database).is_file() or not job_ids:
        return {}
    con = db.connect(config.database, read_only=True)
    try:
        rows = con.execute(
            "WITH ids AS (SELECT unnest(?::VARCHAR[]) AS job_id), "
            "progress AS (SELECT job_id, count(DISTINCT epoch) AS epochs FROM training_progress "
            "             WHERE job_id IN (SELECT job_id FROM ids) GROUP BY ALL) "
            "SELECT ids.job_id, progress.epochs, r.job_id IS NOT NULL, r.map50, r.map50_95 FROM ids "
            "LEFT JOIN progress USING (job_id) LEFT JOIN job_results r USING (job_id) "
            "WHERE progress.job_id IS NOT NULL OR r.job_id IS NOT NULL ORDER BY ids.job_id",
            [job_ids],
        ).fetchall()
    except duckdb.CatalogException:  # a database without the training tables holds none
        return {}
    finally:
        con.close()
    return {job: _held(epochs, has_result, map50, map50_95) for job, epochs, has_result, map50, map50_95 in rows}


def _held(epochs: int | None, has_result: bool, map50: float | None, map50_95: float | None) -> str:
    parts = [f"{epochs} epoch(s)" if epochs else "no epochs"]
    if has_result:
        parts += [f"mAP50 {map50:.4f}" if map50 is not None else "mAP50 -",
                  f"mAP50-95 {map50_95:.4f}" if map50_95 is not None else "mAP50-95 -"]
    else:
        parts.append("no final mAP")
    return ", ".join(parts)


def _write_raw(folder: Path, rows: dict[str, list[tuple]]) -> None:
    """The rows as the raw Parquet files `yolocost load` reads (and an empty gpu_usage.parquet):
    typed by DuckDB's own raw tables, so a value that does not fit is refused here."""
    folder.mkdir(parents=True)
    con = duckdb.connect()
    try:
        db.create_schema(con)
        con.execute("SET TimeZone = 'UTC'")
        for table, values in rows.items():
            if values:
                marks = ", ".join("?" * len(values[0]))
                try:
                    con.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
                except duckdb.Error as exc:
                    raise DataError(f"{table}: {str(exc).splitlines()[0]}") from None
        for table, (name, _) in RAW_FILES.items():
            con.execute(f"COPY (SELECT * FROM {table}) TO '{folder / name}' (FORMAT parquet)")
    finally:
        con.close()
