"""A real tiny training scraped by a real Prometheus, then `yolocost ingest` into the marts.

The runner serves its job-info and training series on loopback; Prometheus scrapes it every
second. This machine has no GPU, so the test plays the scheduler: it hands the run a GPU by
UUID in CUDA_VISIBLE_DEVICES (training itself runs on the CPU) and serves stand-in dcgm series
for that UUID and this host from a small exporter on loopback (the runner's own dcgm-named
collector fed with fixed readings), as dcgm-exporter would on a GPU node. The figures in the
database are checked against the run record and results.csv.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import socket
import time
from decimal import Decimal

import pytest
from helpers.benchkit import GPU_UUID, TINY, bench_env
from helpers.livescrape import query as _query
from helpers.promserver import PrometheusServer, free_port, scrape_job, skip_or_fail_without_prometheus

from yolocost.results_import import MAP50, MAP50_95, best_row, epoch_values, read_results_csv

GRAIN, SCRAPE = 60, 1  # the smallest grain the config allows; Prometheus scrapes every second
GPU_MODEL = "NVIDIA A100-SXM4-80GB"
PRICE = Decimal("2.61")
UTC = dt.timezone.utc


def stand_in_dcgm(port: int):
    """dcgm series for GPU_UUID on this host: busy at 90 %, 2 GiB used, 250 W, energy counting up."""
    from prometheus_client import CollectorRegistry, start_http_server

    from yolocost.bench.nvml import DcgmCollector, Gpu, Reading

    gpu = Gpu(uuid=GPU_UUID, index=0, model=GPU_MODEL)
    start = time.time()
    read = lambda: [Reading(gpu, 90.0, 2048.0, 250.0, 1e6 + (time.time() - start) * 250_000)]  # noqa: E731
    registry = CollectorRegistry()
    registry.register(DcgmCollector(read, socket.gethostname()))
    server, _ = start_http_server(port, addr="127.0.0.1", registry=registry)
    return server


def _instant(prom, query: str, at: float) -> float:
    """The single value of an instant query (0 when it returns nothing)."""
    import requests

    answer = requests.get(prom.url + "/api/v1/query", params={"query": query, "time": at}, timeout=30).json()
    result = answer["data"]["result"]
    return sum(float(r["value"][1]) for r in result)


@pytest.fixture(scope="module")
def e2e(bench_ready, tmp_path_factory, cli):
    skip_or_fail_without_prometheus()
    root = tmp_path_factory.mktemp("bench-e2e")
    (root / "home").mkdir()
    runner_port, dcgm_port = free_port(), free_port()
    dcgm = stand_in_dcgm(dcgm_port)
    scrapes = scrape_job("bench", [f"127.0.0.1:{runner_port}"]) + scrape_job("dcgm", [f"127.0.0.1:{dcgm_port}"])
    try:
        with PrometheusServer(root / "prom", scrape_configs=scrapes) as prom:
            prom.wait_for_targets(2)  # the runner's target is down until it serves: scraped from its first second
            started = time.monotonic()
            run = cli(
                "bench", "run", "--job-id", "e2e-v8n", "--out", str(root / "runs"),
                "--project", "vision", "--user", "alice", "--image-tag", "train-yolov8-nano-cu121",
                "--image-digest", "sha256:" + "ab" * 32, "--metrics-addr", "127.0.0.1",
                "--metrics-port", str(runner_port), "--gpu-sampler", "--linger", "3", *TINY,
                env=bench_env(root / "home", CUDA_VISIBLE_DEVICES=GPU_UUID), timeout=600)
            training_seconds = time.monotonic() - started
            assert run.returncode == 0, run.stderr
            run_dir = root / "runs" / "e2e-v8n"
            record = json.loads((run_dir / "yolocost-run.json").read_text())
            begin = dt.datetime.fromisoformat(record["start_time"])
            end = dt.datetime.fromisoformat(record["end_time"])
            # the ingest reads whole grain intervals that have passed: wait for the one the job ended in
            window_end = math.ceil((end.timestamp() + 2) / GRAIN) * GRAIN
            time.sleep(max(0.0, window_end + 2 - time.time()))
            config = root / "yolocost.toml"
            config.write_text(
                f'[cluster]\nname = "bench"\n[database]\npath = "{root / "yolocost.duckdb"}"\n'
                f'[prometheus]\nurl = "{prom.url}"\nscrape_interval_seconds = {SCRAPE}\n'
                f'[ingest]\ngrain_seconds = {GRAIN}\n'
                f'[[prices]]\ngpu_model = "{GPU_MODEL}"\nprice_per_gpu_hour = "{PRICE}"\n', encoding="utf-8")
            window_start = begin.timestamp() // GRAIN * GRAIN - GRAIN
            ingest = cli(
                "--config", str(config), "ingest",
                "--start", dt.datetime.fromtimestamp(window_start, UTC).isoformat(),
                "--end", dt.datetime.fromtimestamp(window_end, UTC).isoformat(), timeout=300)
            assert ingest.returncode == 0, ingest.stderr + prom.log_tail()
            held_samples = _instant(prom, 'count_over_time(yolocost_job_info{job_id="e2e-v8n"}[1h])', window_end)
    finally:
        dcgm.shutdown()
        dcgm.server_close()
    print(f"training {training_seconds:.1f} s; results {record['results']}; {held_samples:g} job-info samples; "
          f"{ingest.stdout.strip()}")
    return {"held_samples": held_samples, "run": run, "record": record, "run_dir": run_dir, "db": root / "yolocost.duckdb", "ingest": ingest,
            "config": config, "root": root}


def test_run_record_and_folder(e2e):
    record, run_dir = e2e["record"], e2e["run_dir"]
    assert record["status"] == "finished" and len(record["attempts"]) == 1
    assert record["gpus"] == [{"uuid": GPU_UUID, "index": None, "model": None, "instance": None}]
    assert record["labels"] == {"project": "vision", "user": "alice", "model_type": "yolov8n",
                                "image_tag": "train-yolov8-nano-cu121", "image_digest": "sha256:" + "ab" * 32}
    for name in ("results.csv", "args.yaml", "weights/best.pt", "weights/last.pt"):
        assert (run_dir / name).is_file(), name
    assert 0 <= record["results"]["map50"] <= 1 and 0 <= record["results"]["map50_95"] <= 1
    assert e2e["run"].stdout.startswith("job e2e-v8n finished")  # the result on stdout, epochs on stderr
    assert "epoch 3/3" in e2e["run"].stderr and "epoch" not in e2e["run"].stdout.replace("best epoch", "")


def test_job_with_its_labels(e2e):
    (job,) = _query(e2e["db"], "SELECT * FROM jobs")
    record = e2e["record"]
    assert job["job_id"] == "e2e-v8n"
    assert (job["project"], job["user_name"], job["model_type"]) == ("vision", "alice", "yolov8n")
    assert (job["image_tag"], job["image_digest"]) == (record["labels"]["image_tag"], record["labels"]["image_digest"])
    assert (job["gpu_request"], job["gpu_model"]) == (1, GPU_MODEL)
    assert (job["epochs"], job["imgsz"], job["batch"]) == (3, 64, 4)


def test_epochs_equal_results_csv(e2e):
    rows = read_results_csv(e2e["run_dir"] / "results.csv")
    got = {(r["epoch"], r["metric"]): r for r in _query(e2e["db"], "SELECT * FROM training_progress")}
    want = {(row["epoch"], name): value for row in rows for name, value in epoch_values(row).items()}
    assert set(got) == set(want) and {e for e, _ in got} == {1, 2, 3}
    assert {"train/box_loss", "train/cls_loss", "train/dfl_loss", MAP50, MAP50_95} <= {m for _, m in got}
    for key, value in want.items():
        assert got[key]["value"] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        ended = dt.datetime.fromisoformat(e2e["record"]["epoch_end_times"][str(key[0])])
        assert abs((got[key]["ts"] - ended).total_seconds()) < 0.001, key


def test_final_map_and_cost_per_map_point(e2e):
    record = e2e["record"]
    (result,) = _query(e2e["db"], "SELECT * FROM job_results")
    assert result["map50"] == pytest.approx(record["results"]["map50"], rel=1e-12)
    assert result["map50_95"] == pytest.approx(record["results"]["map50_95"], rel=1e-12)
    assert result["best_epoch"] == record["results"]["best_epoch"]
    (job,) = _query(e2e["db"], "SELECT * FROM mart_job")
    # GPU time: one second per scraped job-info sample (each one met a dcgm sample of the GPU);
    # a sample that falls on a step boundary by scrape jitter may move by one
    assert abs(float(job["gpu_seconds"]) - e2e["held_samples"]) <= 1, (job["gpu_seconds"], e2e["held_samples"])
    # and the runner was scraped for its whole attempt, a second or so at either end aside
    held = dt.datetime.fromisoformat(record["end_time"]) - dt.datetime.fromisoformat(record["start_time"])
    assert held.total_seconds() - 2 <= float(job["gpu_seconds"]) <= held.total_seconds() + 1, held
    assert job["gpu_cost"] == (job["gpu_seconds"] * PRICE / 3600).quantize(Decimal("1e-9"))
    (board,) = _query(e2e["db"], "SELECT * FROM mart_leaderboard")
    assert (board["model_type"], board["image_tag"], board["runs"]) == ("yolov8n", "train-yolov8-nano-cu121", 1)
    assert board["mean_map50"] == pytest.approx(record["results"]["map50"], rel=1e-12)
    assert board["mean_gpu_hours"] == pytest.approx(float(job["gpu_seconds"]) / 3600, rel=1e-9)
    assert record["results"]["map50"] > 0, "the tiny training should reach a non-zero mAP50"
    expected = float(job["cost"]) / (record["results"]["map50"] * 100)
    assert board["cost_per_map50_point"] == pytest.approx(expected, rel=1e-9)
    assert job["cost_per_map50_point"] == pytest.approx(expected, rel=1e-9)


def test_import_results_of_a_plain_ultralytics_folder(e2e, tmp_path, cli):
    """Without its run record the folder is a plain Ultralytics run: its mAP is the best epoch's."""
    import shutil

    plain = tmp_path / "train7"
    plain.mkdir()
    for name in ("results.csv", "args.yaml"):
        shutil.copy(e2e["run_dir"] / name, plain / name)
    db = tmp_path / "import.duckdb"
    result = cli("--config", str(e2e["config"]), "--db", str(db), "import-results", str(plain), str(e2e["run_dir"]),
                 timeout=120)
    assert result.returncode == 0, result.stderr
    best = best_row(read_results_csv(plain / "results.csv"))
    got = {r["job_id"]: r for r in _query(db, "SELECT * FROM job_results")}
    assert (got["train7"]["map50"], got["train7"]["map50_95"], got["train7"]["best_epoch"]) == (
        best[MAP50], best[MAP50_95], best["epoch"])
    record = e2e["record"]["results"]
    assert (got["e2e-v8n"]["map50"], got["e2e-v8n"]["map50_95"]) == (record["map50"], record["map50_95"])
    assert [r["job_id"] for r in _query(db, "SELECT job_id FROM jobs")] == ["e2e-v8n"]  # labels only from a record
    counts = _query(db, "SELECT job_id, count(DISTINCT epoch) AS n FROM training_progress GROUP BY 1 ORDER BY 1")
    assert counts == [{"job_id": "e2e-v8n", "n": 3}, {"job_id": "train7", "n": 3}]
