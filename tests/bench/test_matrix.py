"""`yolocost bench matrix`: a TOML list of runs with one set of labels, one after another."""

from __future__ import annotations

import json

import pytest
from helpers.benchkit import bench_env

from yolocost.bench.matrix import load_matrix
from yolocost.errors import YolocostError

MATRIX = """
job_prefix = "lb"
[labels]
project = "vision"
user = "alice"
image_tag = "train-yolo-nano-cpu"
[defaults]
epochs = 1
imgsz = 32
batch = 4
images = 8
device = "cpu"
metrics_port = 0
train_args = { workers = 0 }
[[run]]
model = "yolov8n.yaml"
[[run]]
name = "y26n"
model = "yolo26n.yaml"
"""


def test_matrix_file_is_parsed_into_runs(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(MATRIX + '\n[[run]]\nname = "v8n-big"\nmodel = "yolov8n.yaml"\nimgsz = 64\ndata = "d.yaml"\n')
    runs = load_matrix(path)
    assert [r.job_id for r in runs] == ["lb-yolov8n", "lb-y26n", "lb-v8n-big"]
    assert {r.project for r in runs} == {"vision"} and {r.image_tag for r in runs} == {"train-yolo-nano-cpu"}
    assert [r.imgsz for r in runs] == [32, 32, 64] and runs[2].data == tmp_path / "d.yaml"
    assert runs[1].labels["model_type"] == "yolo26n" and runs[0].train_args == {"workers": 0}


@pytest.mark.parametrize("extra, message", [
    ("\n[[run]]\nmodel = 'yolov8n.yaml'\n", "job id lb-yolov8n appears twice"),
    ("\n[[run]]\nname = 'x'\n", "run[2].model: missing"),
    ("\n[[run]]\nmodel = 'a.yaml'\nepoch = 3\n", "run[2].epoch: unknown key"),
    ("\n[[run]]\nmodel = 'a.yaml'\nepochs = '3'\n", "run[2].epochs: has the wrong type"),
    ("\n[[run]]\nmodel = 'a.yaml'\nname = 'bad id'\n", "must be letters, digits"),
    ("\nproject = 'x'\n", "project: unknown key"),
])
def test_bad_matrix_is_one_line(tmp_path, extra, message):
    path = tmp_path / "m.toml"
    path.write_text(MATRIX + extra if "project" not in extra else extra + MATRIX)
    with pytest.raises(YolocostError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_matrix(path)


def test_matrix_runs_every_config_and_skips_finished_ones(bench_ready, tmp_path, cli):
    path = tmp_path / "leaderboard.toml"
    path.write_text(MATRIX)
    (tmp_path / "home").mkdir()
    cmd = ["bench", "matrix", str(path), "--out", str(tmp_path / "runs")]
    first = cli(*cmd, env=bench_env(tmp_path / "home"), timeout=600)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["lb-yolov8n", "lb-y26n"]
    assert all("finished" in line and "attempts 1" in line for line in lines)
    for job in ("lb-yolov8n", "lb-y26n"):
        record = json.loads((tmp_path / "runs" / job / "yolocost-run.json").read_text())
        assert record["status"] == "finished" and record["labels"]["project"] == "vision"
    # loss columns are whatever the model calls them: yolo26 has an l1_loss where yolov8 has dfl_loss
    header = (tmp_path / "runs" / "lb-y26n" / "results.csv").read_text().splitlines()[0]
    assert "train/l1_loss" in header and "train/dfl_loss" not in header
    again = cli(*cmd, env=bench_env(tmp_path / "home"), timeout=600)
    assert again.returncode == 0 and again.stdout.count("skipped (finished before)") == 2
    # a damaged record fails its run only; the others go on
    (tmp_path / "runs" / "lb-yolov8n" / "yolocost-run.json").write_text("{not json")
    damaged = cli(*cmd, env=bench_env(tmp_path / "home"), timeout=600)
    assert damaged.returncode == 2, damaged.stderr
    assert "lb-yolov8n" in damaged.stderr and "Traceback" not in damaged.stderr
    assert damaged.stdout.count("skipped (finished before)") == 1 and "failed" in damaged.stdout
    assert damaged.stderr.strip().splitlines()[-1].startswith("error: 1 of 2 run(s) failed: lb-yolov8n")
