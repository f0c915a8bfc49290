"""`yolocost estimate` and `bench run --max-cost`: the estimate brackets held-out runs of the
sample month, and on a hand-made history its figures, its comparable runs and the cheapest
configuration per mAP50 point are the ones computed by hand here."""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from helpers.builders import CLI_WITHOUT_BENCH, assert_one_line_error, epoch_rows, job_row, result_row, usage_run, yolocost

from yolocost import db, estimate as est
from yolocost.resources import shipped_dir

UTC = dt.timezone.utc


def history_of(path: Path) -> list[est.Run]:
    con = db.connect(path, read_only=True)
    try:
        return est.load_history(con)
    finally:
        con.close()


def request_of(run: est.Run) -> est.Request:
    return est.Request(run.model_type, run.image_tag, run.gpu_model, run.gpus, run.epochs, run.imgsz, run.batch,
                       run.project)


# --------------------------------------------------------------------------- the sample month


def test_leave_one_out_the_range_holds_at_least_80_percent_of_held_out_runs(sample_db):
    """Each finished job of the sample month is held out in turn and estimated, with all of its
    options, from the others, priced as of its own start (the A100 price changes on 15
    October, so today's price would not be the price it paid): its actual cost (GPU time and
    energy, mart_job.cost) must lie inside the range for at least 80 % of the jobs.
    Measured: 266 of 325 held-out jobs (81.8 %); 2 jobs have no comparable run. The GPU-hours,
    which no price touches, fall inside their range for 265 of them (81.5 %); priced at
    today's prices instead, the cost would be inside for 251 (77.2 %), as the runs before 15
    October paid the higher A100 price."""
    history = history_of(sample_db.path)
    actual = {r["job_id"]: r for r in sample_db.query("SELECT job_id, cost, gpu_seconds, start_time FROM mart_job")}
    inside = hours_inside = estimated = 0
    levels = set()
    for run in history:
        others = [h for h in history if h.job_id != run.job_id]
        result = est.estimate_from(others, sample_db.config, request_of(run), actual[run.job_id]["start_time"])
        if not result.found:
            continue
        assert run.job_id not in {p.run.job_id for p in result.runs}
        estimated += 1
        levels.add(result.level)
        inside += result.cost.low <= actual[run.job_id]["cost"] <= result.cost.high
        hours_inside += result.gpu_hours.low <= actual[run.job_id]["gpu_seconds"] / 3600 <= result.gpu_hours.high
    assert estimated >= 20 and estimated >= 0.95 * len(history)
    assert inside / estimated >= 0.80, f"{inside} of {estimated} held-out runs inside the range"
    assert hours_inside / estimated >= 0.80, f"{hours_inside} of {estimated} held-out runs' GPU-hours inside"
    assert levels >= {"model_type", "family"}  # the sample month needs both widenings


def test_the_named_query_is_the_history(sample_db):
    """estimate_inputs lists every finished job that held a GPU, with the epochs it trained."""
    from yolocost import queries

    columns, rows = queries.run(sample_db.path, queries.resolve("estimate_inputs"), {})
    assert len(rows) == len(history_of(sample_db.path))
    finished = sample_db.value("SELECT count(*) FROM jobs AS j JOIN mart_job AS m USING (job_id) "
                               "WHERE j.end_time IS NOT NULL AND m.gpu_seconds > 0")
    assert len(rows) == finished
    row = dict(zip(columns, rows[0]))
    last = sample_db.value("SELECT max(epoch) FROM training_progress WHERE job_id = ?", [row["job_id"]])
    assert row["epochs_trained"] == last


# --------------------------------------------------------------------------- a hand-made history

PRICES = [("A100", "2026-01-01", "2.00"), ("A100", "2026-06-01", "3.00"), ("A10G", "1.00")]
NOW = dt.datetime(2026, 7, 1, 12, tzinfo=UTC)  # A100 at 3.00 per GPU-hour
T90_2 = 1.8856  # Student's t, 90 % quantile, 2 degrees of freedom


def _job(job_id, start, hours, model="yolov8m", gpu="A100", tag="train-yolov8-medium-cu121", imgsz=640,
         epochs=10, trained=10, map50=None, ended=True, gpu_index=0):
    """Usage rows (hours x 12 five-minute rows on one GPU), the jobs row, one progress row per
    trained epoch and the result."""
    intervals = int(hours * 12)
    first = dt.datetime.fromisoformat(start).replace(tzinfo=UTC)
    end = first + dt.timedelta(minutes=5 * intervals)
    usage = usage_run(first, intervals, f"{gpu}-{gpu_index}", job_id, model=gpu, index=gpu_index)
    job = job_row(job_id, model_type=model, image_tag=tag, gpu_model=gpu, start=first, end=end if ended else None,
                  epochs=epochs, imgsz=imgsz)
    progress = [row for e in range(1, trained + 1) for row in epoch_rows(job_id, e, end, loss=1.0)]
    results = [result_row(job_id, map50, map50 * 0.7)] if map50 is not None else []
    return usage, job, progress, results


def _history(built_db, specs):
    usage, jobs, progress, results = [], [], [], []
    for spec in specs:
        u, j, p, r = _job(**spec)
        usage += u
        jobs.append(j)
        progress += p
        results += r
    return built_db(usage, jobs=jobs, progress=progress, results=results, prices=PRICES)


HAND = [
    # yolov8m on one A100 at 640, tag T1: requested 15 epochs, stopped after 10; 2 GPU-hours
    dict(job_id="a1", start="2026-03-02T00:00", hours=2, epochs=15, trained=10, map50=0.60, gpu_index=0),
    # the same on another tag, no training progress (its 10 requested epochs count); 3 GPU-hours
    dict(job_id="a2", start="2026-03-02T00:00", hours=3, tag="train-yolov8-medium-cu124", trained=0, map50=0.62,
         gpu_index=1),
    # the same at image size 320: 1 GPU-hour, 4 at 640
    dict(job_id="a3", start="2026-03-02T00:00", hours=1, imgsz=320, map50=0.58, gpu_index=2),
    # the family on an A10G: yolov8s, 20 epochs in 2 GPU-hours; yolov8n, 10 epochs in 1
    dict(job_id="a4", start="2026-03-03T00:00", hours=2, model="yolov8s", gpu="A10G", epochs=20, trained=20,
         map50=0.50, gpu_index=0),
    dict(job_id="a5", start="2026-03-03T00:00", hours=1, model="yolov8n", gpu="A10G", map50=0.40, gpu_index=1),
    # another family, and a run that has not finished: never comparable
    dict(job_id="b1", start="2026-03-04T00:00", hours=1, model="yolo11m", map50=0.99, gpu_index=0),
    dict(job_id="c1", start="2026-03-04T00:00", hours=1, ended=False, gpu_index=1),
]
REQUEST = est.Request("yolov8m", image_tag="train-yolov8-medium-cu121", gpu_model="A100", gpus=1, epochs=20,
                      imgsz=640)


def test_estimate_cheapest_alternative_and_map_by_hand(built_db):
    built = _history(built_db, HAND)
    con = db.connect(built.path, read_only=True)
    try:
        result = est.estimate(con, built.config, REQUEST, NOW)
    finally:
        con.close()
    # exact (tag T1, A100, 1 GPU, 640): a1 only; same model type on 1 A100: a1, a2, a3
    assert result.levels == (("exact", 1), ("model_type", 3))
    assert result.level == "model_type"
    assert sorted(p.run.job_id for p in result.runs) == ["a1", "a2", "a3"]
    # scaled to 20 epochs and 640: a1 2 h x 20/10 = 4, a2 3 h x 20/10 = 6, a3 1 h x 20/10 x (640/320)^2 = 8
    assert sorted(p.gpu_hours for p in result.runs) == [4, 6, 8]
    assert result.gpu_hours.central == 6
    # three runs: the 80 % log-normal prediction interval of 4, 6, 8 GPU-hours
    logs = [math.log(4), math.log(6), math.log(8)]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = T90_2 * sd * math.sqrt(1 + 1 / 3)
    low, high = math.exp(mean - half), math.exp(mean + half)
    assert float(result.gpu_hours.low) == pytest.approx(low, rel=1e-12)
    assert float(result.gpu_hours.high) == pytest.approx(high, rel=1e-12)
    # priced at the A100 price in effect on 1 July (3.00), no energy price
    assert result.cost.central == Decimal("18.00")
    assert float(result.cost.low) == pytest.approx(3 * low, rel=1e-12)
    assert float(result.cost.high) == pytest.approx(3 * high, rel=1e-12)
    # mean mAP50 (0.60 + 0.62 + 0.58) / 3 = 0.60: 18.00 / 60 = 0.30 per point
    assert result.map50 == pytest.approx(0.60)
    assert round(result.cost_per_map50_point, 6) == Decimal("0.300000")
    # cheapest per point in the yolov8 family, at 20 epochs:
    #   yolov8m 1 x A100 640: a1 12.00, a2 18.00 -> median 15.00 / 61 = 0.246
    #   yolov8m 1 x A100 320: a3 2 h x 3.00 = 6.00 / 58 = 0.103
    #   yolov8s 1 x A10G 640: a4 2 h x 20/20 x 1.00 = 2.00 / 50 = 0.040
    #   yolov8n 1 x A10G 640: a5 1 h x 20/10 x 1.00 = 2.00 / 40 = 0.050
    alt = result.alternative
    assert (alt.model_type, alt.gpu_model, alt.gpus, alt.imgsz, alt.runs) == ("yolov8s", "A10G", 1, 640, 1)
    assert alt.cost == Decimal("2.00") and alt.map50 == pytest.approx(0.50)
    assert alt.cost_per_map50_point == Decimal("0.04") and not alt.same_as_request
    data = est.to_dict(result)
    assert data["cost"]["central"] == "18.00" and data["cost_per_map50_point"] == "0.30"
    assert data["cost"]["low"] == f"{Decimal(3 * low):.2f}" and data["cost"]["high"] == f"{Decimal(3 * high):.2f}"
    assert data["cheapest_per_map50_point"] == {
        "model_type": "yolov8s", "gpu_model": "A10G", "gpus": 1, "imgsz": 640, "runs": 1, "cost": "2.00",
        "map50": 0.5, "cost_per_map50_point": "0.04", "same_as_request": False}


def test_widening_to_the_family_and_no_history(built_db):
    built = _history(built_db, HAND)
    history = history_of(built.path)
    assert {r.job_id for r in history} == {"a1", "a2", "a3", "a4", "a5", "b1"}  # c1 has not finished
    # yolov8l: no run of its own; the yolov8 family on any GPU: a1..a5, as they ran (no option scales)
    result = est.estimate_from(history, built.config, est.Request("yolov8l"), NOW)
    assert result.levels == (("exact", 0), ("model_type", 0), ("family", 5)) and result.level == "family"
    # as they ran, priced now: a1 2 h, a2 3 h, a3 1 h at 3.00; a4 2 h, a5 1 h at 1.00
    assert sorted(p.cost for p in result.runs) == [1, 2, 3, 6, 9]
    assert result.cost.central == 3
    assert any("widened" in n for n in result.notes)
    # on an A10G only a4 and a5 compare: fewer than 3 even in the family, said so
    result = est.estimate_from(history, built.config, est.Request("yolov8m", gpu_model="A10G"), NOW)
    assert result.level == "family" and len(result.runs) == 2 and any("only 2" in n for n in result.notes)
    # no run of the family at all
    result = est.estimate_from(history, built.config, est.Request("yolo26n", gpus=2), NOW)
    assert not result.found and result.cost is None
    assert est.to_dict(result)["message"] == ("no finished run of yolo26n or of its family yolo26 on 2 in the "
                                              "database: no estimate")


def test_nine_runs_or_more_take_the_type_6_percentiles(built_db):
    """Ten runs of 1..10 GPU-hours: the k-th of 10 is the k/11 quantile, so the 10th
    percentile lies at 1.1 (1 + 0.1 x (2 - 1)), the median at 5.5, the 90th at 9.9."""
    specs = [dict(job_id=f"r{k:02d}", start="2026-03-02T00:00", hours=k, gpu_index=k) for k in range(1, 11)]
    built = _history(built_db, specs)
    result = est.estimate_from(history_of(built.path), built.config, est.Request("yolov8m"), NOW)
    assert result.level == "exact" and len(result.runs) == 10
    assert (result.gpu_hours.low, result.gpu_hours.central, result.gpu_hours.high) == (
        Decimal("1.1"), Decimal("5.5"), Decimal("9.9"))
    assert (result.cost.low, result.cost.high) == (Decimal("3.3"), Decimal("29.7"))
    assert result.range_method.startswith("10th-90th percentile")


def test_family_names():
    assert [est.family(m) for m in ("yolov8m", "yolo11s", "yolov10n", "yolo26x", "yolo11n-tuned", "rtdetr")] == [
        "yolov8", "yolo11", "yolov10", "yolo26", "yolo11", "rtdetr"]


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def sample_cwd(sample_db, tmp_path):
    """A folder whose yolocost.toml is the sample month's config with the sample database."""
    text = (shipped_dir("sample_data") / "yolocost.toml").read_text(encoding="utf-8")
    text = text.replace('path = "yolocost.duckdb"', f'path = "{sample_db.path}"')
    assert str(sample_db.path) in text
    (tmp_path / "yolocost.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_json_for_a_hook(sample_cwd, sample_db):
    result = yolocost("estimate", "--model-type", "yolov8m", "--gpu-model", "NVIDIA A10G", "--gpus", "1",
                      "--epochs", "100", "-f", "json", cwd=sample_cwd)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["request", "currency", "as_of", "found", "message", "level", "levels_tried", "runs",
                          "job_ids", "varies", "range_method", "gpu_hours", "cost", "energy_kwh", "map50",
                          "cost_per_map50_point", "cheapest_per_map50_point", "notes"]
    assert data["found"] and data["currency"] == "USD" and data["runs"] == len(data["job_ids"]) >= 3
    assert data["request"] == {"model_type": "yolov8m", "gpu_model": "NVIDIA A10G", "gpus": 1, "epochs": 100}
    for key in ("low", "central", "high"):
        assert Decimal(data["cost"][key]).as_tuple().exponent == -2
    assert Decimal(data["cost"]["low"]) <= Decimal(data["cost"]["central"]) <= Decimal(data["cost"]["high"])
    # the runs it names are yolov8m jobs on one A10G that finished
    ids = ", ".join(f"'{j}'" for j in data["job_ids"])
    rows = sample_db.query(f"SELECT model_type, gpu_model, gpu_request, end_time FROM mart_job WHERE job_id IN ({ids})")
    assert len(rows) == data["runs"]
    assert all(r["model_type"] == "yolov8m" and r["gpu_model"] == "NVIDIA A10G" and r["gpu_request"] == 1
               and r["end_time"] is not None for r in rows)
    table = yolocost("estimate", "--model-type", "yolov8m", "--gpu-model", "NVIDIA A10G", "--gpus", "1",
                     "--epochs", "100", cwd=sample_cwd)
    assert table.returncode == 0 and f"{data['cost']['central']}" in table.stdout


def test_no_history_is_exit_0_with_a_message(sample_cwd):
    result = yolocost("estimate", "--model-type", "yolo26n", "-f", "json", cwd=sample_cwd)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert not data["found"] and data["cost"] is None and data["runs"] == 0
    assert "no finished run of yolo26n" in data["message"]
    table = yolocost("estimate", "--model-type", "yolo26n", cwd=sample_cwd)
    assert table.returncode == 0 and "no estimate" in table.stdout


@pytest.mark.parametrize("args, needle", [
    (("--model-type", "yolov8m", "--bogus", "1"), "No such option '--bogus'"),
    ((), "Missing option '--model-type'"),
    (("--model-type", "yolov8m", "--gpus", "two"), "--gpus: 'two' is not a whole number above 0"),
    (("--model-type", "yolov8m", "--epochs", "0"), "--epochs: '0' is not a whole number above 0"),
    (("--model-type", "yolov8m", "-f", "xml"), "'xml' is not one of"),
    (("--model-type", " "), "--model-type: empty"),
])
def test_bad_options_are_one_line(sample_cwd, args, needle):
    assert_one_line_error(yolocost("estimate", *args, cwd=sample_cwd), needle)


def test_a_missing_database_is_one_line(tmp_path):
    assert_one_line_error(yolocost("--db", str(tmp_path / "none.duckdb"), "estimate", "--model-type", "yolov8m",
                                   cwd=tmp_path), "database not found")


# the real CLI in a Python that cannot import torch or Ultralytics: a bench run that passes the
# cost check ends at "needs the bench extra"; one that is refused never gets that far
NO_TORCH = CLI_WITHOUT_BENCH + "main()\n"


def _bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # python -c, not the cli fixture: the CLI runs where importing the bench extra fails
    return subprocess.run([sys.executable, "-c", NO_TORCH, "bench", "run", "--job-id", "j1", "--out",
                           str(cwd / "runs"), "--metrics-port", "0", "--model", "yolov8m.yaml", "--epochs", "100",
                           *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_bench_run_prints_the_estimate_and_max_cost_refuses(sample_cwd, sample_db):
    from yolocost.config import load_config

    config = load_config(sample_cwd / "yolocost.toml")
    con = db.connect(config.database, read_only=True)
    try:
        expected = est.estimate(con, config, est.Request("yolov8m", gpus=1, epochs=100, imgsz=640, batch=16),
                                dt.datetime.now(UTC))
    finally:
        con.close()
    high = expected.cost.high.quantize(Decimal("0.01"))
    # below the upper estimate: refused before anything is imported or written
    refused = _bench(sample_cwd, "--max-cost", str(high - 1))
    line = assert_one_line_error(refused, f"up to {est.to_dict(expected)['cost']['high']} USD",
                                 f"above --max-cost {high - 1}", "not started")
    assert "bench extra" not in line and not (sample_cwd / "runs").exists()
    assert est.summary_line(expected) in refused.stderr  # the estimate's line came first
    # at or above it: the check passes and the run goes on (to the missing bench extra here)
    allowed = _bench(sample_cwd, "--max-cost", str(high + 1))
    assert_one_line_error(allowed, "the benchmark runner needs the bench extra")
    assert est.summary_line(expected) in allowed.stderr
    # no comparable run, or no database: nothing to check the amount against, so refused
    assert_one_line_error(_bench(sample_cwd, "--model", "yolo26n.yaml", "--max-cost", "1000"),
                          "no finished run of yolo26n", "not started")
    (sample_cwd / "elsewhere").mkdir()
    nodb = _bench(sample_cwd / "elsewhere", "--max-cost", "1000")
    assert_one_line_error(nodb, "--max-cost: no database at", "not started")
    assert_one_line_error(_bench(sample_cwd, "--max-cost", "ten"), "--max-cost: 'ten' is not an amount above 0")


# --------------------------------------------------------------------------- the cost limit of a bench run


@pytest.mark.parametrize("text", ["ten", "0", "-5", "NaN", "sNaN", "Infinity", ""])
def test_a_cost_limit_is_an_amount_above_0(text):
    from yolocost.errors import YolocostError

    with pytest.raises(YolocostError, match=r"--max-cost: .* is not an amount above 0"):
        est.CostLimit.parse(text)
    assert est.CostLimit.parse(" 99.50 ") == est.CostLimit(" 99.50 ", Decimal("99.50"))


def test_without_a_database_only_a_run_with_a_limit_is_refused(tmp_path):
    from helpers.builders import make_config

    from yolocost.errors import YolocostError

    config = make_config(tmp_path)
    request = est.Request("yolov8m", gpus=1, epochs=100)
    lines: list[str] = []
    est.before_run(config, request, None, dt.datetime.now(UTC), lines.append)
    assert lines == [] and not config.database.exists()
    with pytest.raises(YolocostError, match="--max-cost: no database at .*; not started "
                                             r"\(leave out --max-cost 250 to train without the check\)"):
        est.before_run(config, request, est.CostLimit.parse("250"), dt.datetime.now(UTC), lines.append)
