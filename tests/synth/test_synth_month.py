"""The demo month has the fleet, workload and incidents the reports and checks rely on."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from yolocost import synth

TZ = synth.DEMO_TIMEZONE
MONTH_START = pd.Timestamp("2026-10-01", tz=TZ)
MONTH_END = pd.Timestamp("2026-11-01", tz=TZ)


def test_window_is_the_month_plus_a_day_each_side(demo):
    gt = demo.truth
    assert gt["window_start"] == "2026-09-29T22:00:00Z"  # 2026-09-30 00:00 CEST
    assert gt["window_end"] == "2026-11-01T23:00:00Z"  # 2026-11-02 00:00 CET
    assert demo.usage.interval_start.min() == pd.Timestamp("2026-09-29T22:00Z")
    assert demo.usage.interval_start.max() == pd.Timestamp("2026-11-01T22:55Z")
    assert list(gt["months"]) == ["2026-09", "2026-10", "2026-11"]


def test_fleet(demo):
    u = demo.usage
    gpus = u.drop_duplicates("gpu_uuid")
    assert len(gpus) == 48 == demo.result.gpus
    assert gpus.gpu_model.value_counts().to_dict() == {
        "NVIDIA A100-SXM4-80GB": 24, "NVIDIA A10G": 16, "Tesla V100-SXM2-32GB": 8}
    assert all(re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", g)
               for g in gpus.gpu_uuid)
    assert all(re.fullmatch(r"gpu-(a100|a10g|v100)-\d\d", h) for h in gpus.hostname)
    assert gpus.groupby("hostname").gpu_index.apply(lambda s: sorted(s) == list(range(len(s)))).all()
    assert u.mig_profile.isna().all()
    assert (u.cluster == synth.DEMO_CLUSTER).all()


def test_seconds_add_up_per_gpu_and_interval(demo):
    u = demo.usage
    per = u.groupby(["gpu_uuid", "interval_start"]).seconds_present.sum()
    assert (per == synth.GRAIN_SECONDS).all()
    assert (u.groupby(["gpu_uuid", "interval_start", u.job_id.fillna("-")]).size() == 1).all()
    intervals = per.groupby(level=0).size()
    full = 33 * 24 * 12 + 12  # 33 days and the hour the clocks go back
    down = demo.truth["incidents"]["downtime"]
    assert len(down) == 1
    down_host = down[0]["hostname"]
    hosts = u.drop_duplicates("gpu_uuid").set_index("gpu_uuid").hostname
    for uuid, n in intervals.items():
        assert n == (full - 26 * 12 if hosts[uuid] == down_host else full), uuid
    gap = u[(u.hostname == down_host)].interval_start.drop_duplicates().sort_values().diff().max()
    assert gap == pd.Timedelta(hours=26, minutes=5)


def test_grain_row_values(demo):
    u = demo.usage
    assert (u.seconds_present % synth.SAMPLE_SECONDS == 0).all()
    assert (u.seconds_busy + u.seconds_idle <= u.seconds_present).all()
    assert u.util_mean.between(0, 100).all()
    idle = u[u.job_id.isna()]
    assert idle.util_mean.max() <= 2 and (idle.mem_peak_mib == 0).all()
    assert (idle.seconds_idle == idle.seconds_present).all()
    caps = {"NVIDIA A100-SXM4-80GB": 81920, "NVIDIA A10G": 24576, "Tesla V100-SXM2-32GB": 32768}
    assert (u.mem_peak_mib <= u.gpu_model.map(caps)).all()
    assert (u.groupby("gpu_model").mem_peak_mib.max() > 20000).all()
    assert (u.energy_mj >= 0).all() and (u.power_mean_w > 0).all()
    assert (u.interval_start.astype("int64") % (synth.GRAIN_SECONDS * 10**6) == 0).all()


def test_jobs(demo):
    j = demo.jobs
    assert j.job_id.is_unique and j.job_id.str.fullmatch(r"job-\d{6}").all()
    in_month = j[(j.start_time < MONTH_END) & (j.end_time.isna() | (j.end_time > MONTH_START))]
    assert len(in_month) >= 150
    assert j.project.nunique() >= 5 and "视觉质检" in set(j.project)
    assert j.user_name.nunique() >= 12 and "张伟" in set(j.user_name) and j.user_name.notna().all()
    assert j.groupby("user_name").project.nunique().between(1, 2).all()
    unlabeled = j[j.project.isna()]
    assert len(unlabeled) >= 6 and unlabeled.user_name.notna().all()
    assert set(j.model_type) <= {"yolov8n", "yolov8s", "yolov8m", "yolov8l", "yolo11n", "yolo11s", "yolo11m",
                                 "yolo11l", "yolov10s", "yolov10m"}
    assert j.model_type.nunique() >= 8
    assert (j.imgsz == 640).all() and (j.batch > 0).all() and (j.epochs > 0).all()
    assert {1, 2, 4, 8} <= set(j.gpu_request)
    assert set(j[j.gpu_request == 8].gpu_model) == {"NVIDIA A100-SXM4-80GB"}
    assert j.start_time.min() < MONTH_START
    crossing_start = j[(j.start_time < MONTH_START) & (j.end_time > MONTH_START)]
    crossing_end = j[(j.start_time < MONTH_END) & (j.end_time.isna() | (j.end_time > MONTH_END))]
    spanning = j[(j.start_time < MONTH_START) & (j.end_time > MONTH_END)]
    assert len(crossing_start) and len(crossing_end) and len(spanning)
    assert j.end_time.isna().any()  # still running when the window ends


def test_jobs_hold_their_gpus_on_one_host(demo):
    held = demo.usage.dropna(subset=["job_id"]).groupby("job_id").agg(
        gpus=("gpu_uuid", "nunique"), hosts=("hostname", "nunique"), model=("gpu_model", "first"),
        first=("interval_start", "min"), last=("interval_start", "max"))
    j = demo.jobs.set_index("job_id").join(held)
    assert (j.hosts == 1).all()
    assert (j.gpus == j.gpu_request).all()
    assert (j.model == j.gpu_model).all()
    assert (j["first"] == j.start_time.dt.floor("300s")).all()
    ended = j.end_time.notna()
    assert (j["last"][ended] == (j.end_time[ended] - pd.Timedelta(seconds=1)).dt.floor("300s")).all()


def test_some_gpus_sit_idle_for_long(demo):
    u = demo.usage
    share = u.assign(held=u.seconds_present.where(u.job_id.notna(), 0)).groupby("hostname").apply(
        lambda x: x.held.sum() / x.seconds_present.sum())
    assert share.min() < 0.1  # one V100 host barely used
    assert 0.35 < demo.truth["months"]["2026-10"]["attributed_seconds"] / \
        demo.truth["months"]["2026-10"]["capacity_seconds"] < 0.8


def test_image_tags(demo):
    j = demo.jobs
    assert j.image_digest.str.fullmatch(r"sha256:[0-9a-f]{64}").all()
    status = pd.Series([synth.tag_status(None if pd.isna(t) else t) for t in j.image_tag], index=j.index)
    assert set(status) == {"ok", "latest", "empty", "digest_only", "nonconforming"}
    assert (status == "ok").mean() > 0.6
    assert (j.image_tag == "").any() and j.image_tag.isna().any() and (j.image_tag == "latest").any()
    ok = j.image_tag[status == "ok"]
    assert ok.str.fullmatch(r"(train|finetune|sweep|bench)-(yolov8|yolo11|yolov10)-(fast|medium|full)-cu1\d\d").all()
    gt_status = {k: v["tag_status"] for k, v in demo.truth["jobs"].items()}
    assert dict(zip(j.job_id, status)) == gt_status


def test_training_progress(demo):
    p, j = demo.progress, demo.jobs.set_index("job_id")
    assert set(p.metric) == {"train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/mAP50(B)",
                             "metrics/mAP50-95(B)"}
    assert (p.groupby(["job_id", "epoch"]).size() == 5).all()
    assert (p.groupby(["job_id", "epoch"]).ts.nunique() == 1).all()
    epochs = p.groupby(["job_id", "epoch"]).ts.first().reset_index()
    assert (epochs.groupby("job_id").epoch.apply(lambda e: list(e) == list(range(1, len(e) + 1)))).all()
    assert (epochs.groupby("job_id").ts.apply(lambda t: t.is_monotonic_increasing)).all()
    epochs = epochs.join(j, on="job_id")
    assert (epochs.ts > epochs.start_time).all()
    ended = epochs.end_time.notna()
    assert (epochs.ts[ended] < epochs.end_time[ended]).all()
    assert (epochs.ts < pd.Timestamp(demo.truth["window_end"])).all()
    assert (epochs.ts.astype("int64") % (synth.SAMPLE_SECONDS * 10**6) != 0).all()  # never on a sample instant
    loss = p[p.metric.str.startswith("train/")].groupby(["job_id", "epoch"]).value.sum()
    rises = loss.groupby(level=0).apply(lambda s: (np.diff(s.to_numpy()) > 1e-12).sum())
    assert rises.sum() == 0
    first_last = loss.groupby(level=0).agg(["first", "last"])
    assert (first_last["first"] - first_last["last"] > 0.3).mean() > 0.9


def test_job_results(demo):
    r, j = demo.results, demo.jobs.set_index("job_id")
    assert r.job_id.is_unique
    finished = set(j.index[j.end_time.notna()])
    assert set(r.job_id) == finished
    assert r.map50.between(0, 1).all() and r.map50_95.between(0, 1).all() and (r.map50_95 < r.map50).all()
    size = r.job_id.map(j.model_type).str[-1]
    means = r.groupby(size).map50.mean()
    assert means["n"] < means["s"] < means["m"] < means["l"]
    assert 0.40 < means["n"] < 0.50 and 0.65 < means["l"] < 0.75
    means95 = r.groupby(size).map50_95.mean()
    assert means95["n"] < means95["s"] < means95["m"] < means95["l"]
    best = demo.progress.merge(r, on="job_id")
    best = best[(best.epoch == best.best_epoch) & (best.metric == "metrics/mAP50(B)")]
    assert np.allclose(best.value, best.map50)
