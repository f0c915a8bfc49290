"""`yolocost import-results` on hand-written folders: no torch, no training needed.

A plain Ultralytics folder gives the best epoch's mAP (highest mAP50-95, as best.pt is
chosen); a run record gives labels, epoch end times and the final mAP; bad input leaves the
database exactly as it was, with one line of error and exit status 2.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
from helpers.builders import yolocost

from yolocost.runrecord import Attempt, RunRecord

HEADER = ("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
          "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2")
ROWS = ("1,10.5,1.9,2.1,1.3,0.2,0.1,0.15,0.05,1.8,2.0,1.2,0.01,0.01,0.01",
        "2,21.0,1.7,1.8,1.2,0.4,0.3,0.41,0.21,1.6,1.7,1.1,0.008,0.008,0.008",
        "3,31.5,1.6,1.6,1.1,0.5,0.3,0.44,0.19,1.5,1.6,1.0,0.006,0.006,0.006")


def _folder(path: Path, rows=ROWS, header=HEADER) -> Path:
    path.mkdir(parents=True)
    (path / "results.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    (path / "args.yaml").write_text("task: detect\nmodel: yolov8n.yaml\n", encoding="utf-8")
    return path


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "yolocost.toml"
    config.write_text(f'[cluster]\nname = "c1"\n[database]\npath = "{tmp_path / "db.duckdb"}"\n', encoding="utf-8")
    return config


def _import(config: Path, *folders: Path, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return yolocost("--config", str(config), "import-results", *flags, *map(str, folders), timeout=120)


def _rows(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_plain_folder_gives_the_best_epochs_map(tmp_path):
    config = _config(tmp_path)
    result = _import(config, _folder(tmp_path / "train3"))
    assert result.returncode == 0, result.stderr
    assert "imported 1 run(s) (3 epochs, 0 with labels)" in result.stdout
    db = tmp_path / "db.duckdb"
    # epoch 2 has the highest mAP50-95 (0.21), though epoch 3 has the higher mAP50
    assert _rows(db, "SELECT job_id, map50, map50_95, best_epoch FROM job_results") == [("train3", 0.41, 0.21, 2)]
    assert _rows(db, "SELECT count(*) FROM training_progress") == [(3 * 13,)]
    assert _rows(db, "SELECT value FROM training_progress WHERE epoch = 3 AND metric = 'train/dfl_loss'") == [(1.1,)]
    assert _rows(db, "SELECT count(*) FROM jobs") == [(0,)]
    # epoch end times count back from the file's modification time by results.csv's `time`
    ts = dict(_rows(db, "SELECT epoch, epoch(max(ts)) FROM training_progress GROUP BY 1"))
    assert ts[3] - ts[1] == pytest.approx(21.0, abs=1e-3)


def test_run_record_brings_labels_times_and_final_map(tmp_path):
    run = _folder(tmp_path / "runs" / "lb-v8n")
    record = RunRecord(job_id="lb-v8n", labels={"project": "vision", "user": "alice", "model_type": "yolov8n",
                                                "image_tag": "", "image_digest": "sha256:" + "cd" * 32},
                       model="yolov8n.yaml", data="synthetic:0", epochs=3, imgsz=64, batch=4, device="cpu",
                       hostname="node1", gpus=[{"uuid": "GPU-1", "index": 0, "model": "NVIDIA L4", "instance": None}],
                       start_time="2026-11-02T10:00:00+00:00", end_time="2026-11-02T10:01:00+00:00", status="finished",
                       attempts=[Attempt(1, "2026-11-02T10:00:00+00:00", 1, 3, "2026-11-02T10:01:00+00:00", "finished")],
                       epoch_end_times={"1": "2026-11-02T10:00:20+00:00", "2": "2026-11-02T10:00:40+00:00",
                                        "3": "2026-11-02T10:00:55+00:00"},
                       best_epoch=2, results={"map50": 0.43, "map50_95": 0.22, "best_epoch": 2})
    record.save(run)
    result = _import(_config(tmp_path), run)
    assert result.returncode == 0, result.stderr
    db = tmp_path / "db.duckdb"
    assert _rows(db, "SELECT map50, map50_95, best_epoch FROM job_results") == [(0.43, 0.22, 2)]
    job = _rows(db, "SELECT project, user_name, model_type, image_tag, image_digest, gpu_request, gpu_model, "
                    "epochs, imgsz, batch, strftime(start_time, '%H:%M:%S') FROM jobs")
    # an empty tag with a digest is a digest-only image, as the ingest reads job-info labels
    assert job == [("vision", "alice", "yolov8n", None, "sha256:" + "cd" * 32, 1, "NVIDIA L4", 3, 64, 4, "10:00:00")]
    assert _rows(db, "SELECT DISTINCT strftime(ts, '%H:%M:%S') FROM training_progress WHERE epoch = 2") == [
        ("10:00:40",)]


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "results.csv").unlink(), "no results.csv"),
    (lambda d: (d / "results.csv").write_text(HEADER + "\n1,2,x\n"), "line 2 has 3 cells"),
    (lambda d: (d / "results.csv").write_text(HEADER + "\n" + ROWS[0].replace("0.15", "abc") + "\n"),
     "is not a number"),
    (lambda d: (d / "results.csv").write_text(HEADER + "\n" + ROWS[0] + "\n" + ROWS[0] + "\n"), "epoch 1 appears twice"),
    (lambda d: (d / "results.csv").write_text(HEADER + "\n" + ROWS[0].replace("0.15", "15.0") + "\n"),
     "fractions between 0 and 1"),
    (lambda d: (d / "yolocost-run.json").write_text("{not json"), "not a valid run record"),
    # a hand-edited record with the wrong types: refused on load, not an AttributeError in the import
    (lambda d: _edited_record(d, labels=None), "not a valid run record (labels is null, expected a JSON object)"),
    (lambda d: _edited_record(d, gpus=[1]), "not a valid run record (gpus[0] is 1, expected a JSON object)"),
    (lambda d: _edited_record(d, results="x"), 'not a valid run record (results is "x", expected a JSON object)'),
    (lambda d: _edited_record(d, labels={"project": ["a"]}), "labels.project is [\"a\"], expected a string or null"),
])
def test_bad_input_changes_nothing(tmp_path, damage, message):
    config = _config(tmp_path)
    assert _import(config, _folder(tmp_path / "good")).returncode == 0
    db = tmp_path / "db.duckdb"
    before = {t: _rows(db, f"SELECT * FROM {t} ORDER BY ALL") for t in ("training_progress", "job_results", "jobs")}
    stamp = os.stat(db).st_mtime_ns
    bad = _folder(tmp_path / "bad", rows=ROWS[:1])
    damage(bad)
    result = _import(config, tmp_path / "good", bad, flags=("--replace",))  # "good" is stored: a repeat
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1], result.stderr
    assert "Traceback" not in result.stderr
    after = {t: _rows(db, f"SELECT * FROM {t} ORDER BY ALL") for t in before}
    assert after == before
    if message != "fractions between 0 and 1":  # refused before the database was opened
        assert os.stat(db).st_mtime_ns == stamp


def test_a_stored_job_is_not_replaced_without_replace(tmp_path):
    """A run folder named like a job the database holds (an earlier import, or an ingested
    job) would silently replace its epochs and mAP: refused, naming what is stored."""
    config = _config(tmp_path)
    assert _import(config, _folder(tmp_path / "first" / "train3")).returncode == 0
    db = tmp_path / "db.duckdb"
    tables = ("training_progress", "job_results", "jobs")
    before = {t: _rows(db, f"SELECT * FROM {t} ORDER BY ALL") for t in tables}
    stamp = os.stat(db).st_mtime_ns
    # another training folder that Ultralytics also named train3: 2 epochs, mAP50 0.50
    other = ("1,11.0,1.9,2.1,1.3,0.2,0.1,0.20,0.10,1.8,2.0,1.2,0.01,0.01,0.01",
             "2,22.0,1.7,1.8,1.2,0.4,0.3,0.50,0.30,1.6,1.7,1.1,0.008,0.008,0.008")
    again = _folder(tmp_path / "second" / "train3", rows=other)
    fresh = _folder(tmp_path / "second" / "train9")
    refused = _import(config, fresh, again)
    assert refused.returncode == 2, refused.stderr
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error")]
    assert errors == [f"error: {db} already holds training results of 1 job(s): train3 (3 epoch(s), mAP50 0.4100, "
                      "mAP50-95 0.2100); give --replace to replace them"], refused.stderr
    assert {t: _rows(db, f"SELECT * FROM {t} ORDER BY ALL") for t in tables} == before
    assert os.stat(db).st_mtime_ns == stamp  # refused before the database was opened for writing

    replaced = _import(config, fresh, again, flags=("--replace",))
    assert replaced.returncode == 0, replaced.stderr
    assert "replacing the stored training results of job train3 (3 epoch(s)" in replaced.stderr
    assert _rows(db, "SELECT job_id, map50, map50_95, best_epoch FROM job_results ORDER BY 1") == [
        ("train3", 0.50, 0.30, 2), ("train9", 0.41, 0.21, 2)]
    assert _rows(db, "SELECT job_id, count(DISTINCT epoch), count(*) FROM training_progress GROUP BY 1 ORDER BY 1") == [
        ("train3", 2, 2 * 13), ("train9", 3, 3 * 13)]


def _edited_record(folder: Path, **fields) -> None:
    """A valid run record of `folder`, then hand-edited."""
    RunRecord(job_id="bad", labels={"project": "vision"}, model="yolov8n.yaml", data="synthetic:0", epochs=1,
              imgsz=64, batch=4, device="cpu", hostname="node1", status="finished",
              results={"map50": 0.15, "map50_95": 0.05, "best_epoch": 1}).save(folder)
    path = folder / "yolocost-run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}), encoding="utf-8")


SEG_HEADER = ("epoch,time,train/box_loss,train/seg_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
              "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),metrics/precision(M),metrics/recall(M),"
              "metrics/mAP50(M),metrics/mAP50-95(M),val/box_loss,val/seg_loss,val/cls_loss,val/dfl_loss,"
              "lr/pg0,lr/pg1,lr/pg2")
SEG_ROWS = ("1,10.5,1.9,3.0,2.1,1.3,0.2,0.1,0.15,0.05,0.2,0.1,0.12,0.04,1.8,2.9,2.0,1.2,0.01,0.01,0.01",
            # the best box mAP50-95 (0.30), but box + mask = 0.40
            "2,21.0,1.7,2.8,1.8,1.2,0.4,0.3,0.50,0.30,0.3,0.2,0.30,0.10,1.6,2.7,1.7,1.1,0.008,0.008,0.008",
            # box + mask = 0.28 + 0.20 = 0.48: best.pt, as Ultralytics' SegmentMetrics.fitness picks it
            "3,31.5,1.6,2.6,1.6,1.1,0.5,0.3,0.47,0.28,0.4,0.3,0.45,0.20,1.5,2.6,1.6,1.0,0.006,0.006,0.006")


def test_segmentation_best_epoch_sums_box_and_mask_map(tmp_path):
    config = _config(tmp_path)
    result = _import(config, _folder(tmp_path / "seg1", rows=SEG_ROWS, header=SEG_HEADER))
    assert result.returncode == 0, result.stderr
    # best epoch by box + mask mAP50-95; the mAPs reported are the box (B) ones
    assert _rows(tmp_path / "db.duckdb", "SELECT map50, map50_95, best_epoch FROM job_results") == [(0.47, 0.28, 3)]


def test_pose_best_epoch_sums_box_and_keypoint_map():
    from yolocost.results_import import best_row

    rows = [{"epoch": 1, "metrics/mAP50-95(B)": 0.30, "metrics/mAP50-95(P)": 0.05},
            {"epoch": 2, "metrics/mAP50-95(B)": 0.25, "metrics/mAP50-95(P)": 0.20},
            {"epoch": 3, "metrics/mAP50-95(B)": None, "metrics/mAP50-95(P)": None}]
    assert best_row(rows)["epoch"] == 2


def test_resumed_plain_run_keeps_epoch_end_times_in_order(tmp_path):
    """A resumed Ultralytics run restarts results.csv's `time` (seconds since its process
    started training) at the first epoch it trains."""
    resumed = (*ROWS[:2], ROWS[2].replace("3,31.5,", "3,9.0,"),
               "4,18.5,1.5,1.5,1.0,0.55,0.35,0.46,0.2,1.4,1.5,0.9,0.004,0.004,0.004")
    run = _folder(tmp_path / "train4", rows=resumed)
    end = 1_793_000_000.0
    os.utime(run / "results.csv", (end, end))
    result = _import(_config(tmp_path), run)
    assert result.returncode == 0, result.stderr
    assert "time restarts at epoch(s) 3" in result.stderr
    ts = dict(_rows(tmp_path / "db.duckdb", "SELECT epoch, epoch(max(ts)) FROM training_progress GROUP BY 1"))
    # the last process counts back from the file's time; the first from the second's start (18.5 s before)
    assert [ts[e] - end for e in (1, 2, 3, 4)] == pytest.approx([-29.0, -18.5, -9.5, 0.0], abs=1e-3)


def test_two_folders_with_one_job_id_are_refused(tmp_path):
    one, two = _folder(tmp_path / "a" / "train"), _folder(tmp_path / "b" / "train")
    result = _import(_config(tmp_path), one, two)
    assert result.returncode == 2 and "are both job train" in result.stderr
    assert not (tmp_path / "db.duckdb").exists()


def test_record_file_is_json_with_attempts(tmp_path):
    record = RunRecord(job_id="j", labels={}, model="m.yaml", data="d", epochs=1, imgsz=32, batch=1, device=None,
                       hostname="h", attempts=[Attempt(1, "2026-11-02T10:00:00+00:00")])
    path = record.save(tmp_path)
    data = json.loads(path.read_text())
    assert data["attempts"][0]["status"] == "running" and data["version"] == 1
    assert RunRecord.load(tmp_path) == record


def test_a_stored_jobs_labels_are_kept_without_replace(tmp_path):
    """A job the database knows (an ingest stored its labels, which say who pays) keeps them
    when its run folder is imported for its training results; --replace takes the record's."""
    config = _config(tmp_path)
    db = tmp_path / "db.duckdb"
    con = duckdb.connect(str(db))
    con.execute((Path(__file__).resolve().parents[2] / "yolocost" / "sql" / "schema.sql").read_text())
    con.execute("INSERT INTO jobs (job_id, cluster, project, user_name) VALUES ('lb-v8n', 'c1', 'paying', 'bob')")
    con.close()
    run = _folder(tmp_path / "runs" / "lb-v8n")
    RunRecord(job_id="lb-v8n", labels={"project": "vision", "user": "alice"}, model="yolov8n.yaml",
              data="synthetic:0", epochs=3, imgsz=64, batch=4, device="cpu", hostname="node1", gpus=[],
              start_time="2026-11-02T10:00:00+00:00", end_time="2026-11-02T10:01:00+00:00", status="finished",
              attempts=[], epoch_end_times={}, best_epoch=2,
              results={"map50": 0.43, "map50_95": 0.22, "best_epoch": 2}).save(run)
    kept = _import(config, run)
    assert kept.returncode == 0, kept.stderr
    assert "job lb-v8n: keeping its stored labels (project 'paying')" in kept.stderr
    assert _rows(db, "SELECT project, user_name FROM jobs") == [("paying", "bob")]
    assert _rows(db, "SELECT map50, map50_95 FROM job_results") == [(0.43, 0.22)]
    replaced = _import(config, run, flags=("--replace",))
    assert replaced.returncode == 0, replaced.stderr
    assert _rows(db, "SELECT project, user_name FROM jobs") == [("vision", "alice")]
