"""`yolocost bench run` recovering from how earlier attempts ended, and refusing bad inputs
before an attempt is counted. Runs under helpers/netguard.py (no socket call may leave loopback)."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers.benchkit import GPU_UUID, TINY, bench_env, yolocost_cmd

from yolocost.results_import import read_results_csv


def _tiny(**changes: str) -> list[str]:
    args = list(TINY)
    for option, value in changes.items():
        args[args.index(f"--{option}") + 1] = value
    return args


def _run(root, job: str, *extra: str) -> subprocess.CompletedProcess:
    # subprocess.run of yolocost_cmd, not the cli fixture: the run goes through netguard.py
    home, netlog = root / "home", root / "network.log"
    home.mkdir(exist_ok=True)
    netlog.touch()
    cmd = yolocost_cmd("bench", "run", "--job-id", job, "--out", str(root / "runs"), "--metrics-port", "0", *extra,
                       netlog=netlog)
    return subprocess.run(cmd, env=bench_env(home, CUDA_VISIBLE_DEVICES=GPU_UUID), capture_output=True, text=True,
                          timeout=600)


def _record(root, job: str) -> dict:
    return json.loads((root / "runs" / job / "yolocost-run.json").read_text())


def test_killed_after_the_last_epoch_is_finished_by_validating_the_best_weights(bench_ready, tmp_path):
    first = _run(tmp_path, "last-epoch", *_tiny(epochs="2"), "--stop-after-epoch", "2")
    assert first.returncode == -9, first.stderr
    second = _run(tmp_path, "last-epoch", *_tiny(epochs="2"))
    assert second.returncode == 0, second.stderr
    assert "validating the best weights" in second.stderr and "epoch 1/" not in second.stderr
    record = _record(tmp_path, "last-epoch")
    assert record["status"] == "finished" and [a["status"] for a in record["attempts"]] == ["interrupted", "finished"]
    rows = read_results_csv(tmp_path / "runs" / "last-epoch" / "results.csv")
    assert [r["epoch"] for r in rows] == [1, 2]
    assert 0 <= record["results"]["map50_95"] <= record["results"]["map50"] <= 1
    assert record["results"]["best_epoch"] in (1, 2)
    assert (tmp_path / "network.log").read_text() == ""


def test_without_last_pt_the_job_trains_again_with_the_options_given(bench_ready, tmp_path):
    first = _run(tmp_path, "again", *_tiny(epochs="2"), "--project", "old", "--stop-after-epoch", "1")
    assert first.returncode == -9, first.stderr
    (tmp_path / "runs" / "again" / "weights" / "last.pt").unlink()
    second = _run(tmp_path, "again", *_tiny(epochs="2"), "--project", "new")
    assert second.returncode == 0, second.stderr
    assert "training again from scratch" in second.stderr and "epoch 1/2" in second.stderr
    record = _record(tmp_path, "again")
    assert record["labels"]["project"] == "new" and record["epochs"] == 2
    attempts = record["attempts"]
    assert len(attempts) == 2 and attempts[1]["start_epoch"] == 1 and attempts[1]["last_epoch"] == 2
    # the epochs of the first attempt were trained again: their end times are the second attempt's
    assert all(t > attempts[1]["started_at"] for t in record["epoch_end_times"].values())


@pytest.mark.parametrize("extra, message", [
    (("--model", "yolov8x-nosuch.yaml"), "--model yolov8x-nosuch.yaml: "),
    (("--model", "yolov8n.pt"), "downloads nothing"),
    (("--device", "0,1"), "one device per job"),
])
def test_bad_model_or_device_is_one_line_and_counts_no_attempt(bench_ready, tmp_path, extra, message):
    args = list(TINY)
    option = extra[0]
    args[args.index(option) + 1] = extra[1]
    result = _run(tmp_path, "bad", *args)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "runs" / "bad" / "yolocost-run.json").exists()
    assert (tmp_path / "network.log").read_text() == ""


def test_missing_dataset_is_one_line_and_nothing_is_downloaded(bench_ready, tmp_path):
    data = tmp_path / "data.yaml"
    data.write_text(f"path: {tmp_path / 'nowhere'}\ntrain: images/train\nval: images/val\nnames: ['part']\n"
                    "download: https://example.com/parts.zip\n", encoding="utf-8")
    result = _run(tmp_path, "no-data", *TINY, "--data", str(data))
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"data {data}" in errors[0], result.stderr
    assert not (tmp_path / "runs" / "no-data" / "yolocost-run.json").exists()
    assert (tmp_path / "network.log").read_text() == ""


def test_a_second_process_on_the_same_job_is_refused(tmp_path):
    from yolocost import db

    run_dir = tmp_path / "runs" / "busy"
    run_dir.mkdir(parents=True)
    with db.exclusive(run_dir / "yolocost-run.json", "bench run of job busy"):
        result = _run(tmp_path, "busy", *TINY)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "bench run of job busy, pid" in errors[0], result.stderr
    assert not (run_dir / "yolocost-run.json").exists()


def test_a_port_in_use_is_one_line_and_counts_no_attempt(bench_ready, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        home, netlog = tmp_path / "home", tmp_path / "network.log"
        home.mkdir()
        # subprocess.run of yolocost_cmd, not the cli fixture: the run goes through netguard.py
        cmd = yolocost_cmd("bench", "run", "--job-id", "port", "--out", str(tmp_path / "runs"), "--metrics-addr",
                           "127.0.0.1", "--metrics-port", str(port), *TINY, netlog=netlog)
        result = subprocess.run(cmd, env=bench_env(home, CUDA_VISIBLE_DEVICES=GPU_UUID), capture_output=True,
                                text=True, timeout=600)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot serve metrics on 127.0.0.1:{port}" in errors[0], result.stderr
    assert not (tmp_path / "runs" / "port" / "yolocost-run.json").exists()
