"""The per-sample model behaves like a YOLO training job seen through DCGM, and the grain
derivation reads it exactly as an ingest would (energy counter reset included)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from yolocost import synth
from yolocost.synth.grain import counter_deltas, grain_rows
from yolocost.synth.plan import plan_month
from yolocost.synth.samples import NO_OWNER
from yolocost.synth.timeline import DIP, LOAD, STALL, STEADY, TAIL


@pytest.fixture(scope="module")
def plan():
    return plan_month(synth.DEMO_SEED, synth.DEMO_MONTH, synth.DEMO_TIMEZONE, 1.0)


@pytest.fixture(scope="module")
def a100_samples(plan):
    host = next(h for h in plan.hosts if h.name == "gpu-a100-02")
    return host, list(plan.host_samples(host))


def test_counter_deltas_read_a_drop_as_a_reset():
    counter = np.array([1000, 1500, 2100, 40, 700, 1300], np.int64)
    assert counter_deltas(counter).tolist() == [0, 500, 600, 40, 660, 600]
    assert counter_deltas(np.array([5], np.int64)).tolist() == [0]


def test_one_energy_counter_reset_mid_month(plan, a100_samples):
    resets = plan.incidents.resets
    assert len(resets) == 1
    reset = resets[0]
    assert plan.window.month_start + 10 * 86400 < reset.at < plan.window.month_end - 5 * 86400
    _, samples = a100_samples
    drops = {s.gpu.uuid: int((np.diff(s.energy_mj) < 0).sum()) for s in samples}
    assert drops[reset.gpu.uuid] == 1 and sum(drops.values()) == 1
    s = next(s for s in samples if s.gpu.uuid == reset.gpu.uuid)
    at = int(np.flatnonzero(np.diff(s.energy_mj) < 0)[0]) + 1
    assert s.sample[at] == reset.sample
    assert s.energy_mj[at] == s.energy_increment_mj[at]  # restarted from 0
    # read correctly, the counter gives back the true increments; read naively, it does not
    assert (counter_deltas(s.energy_mj)[1:] == s.energy_increment_mj[1:]).all()
    true = s.energy_increment_mj[1:].sum()
    assert np.diff(s.energy_mj).sum() != true
    assert np.clip(np.diff(s.energy_mj), 0, None).sum() != true


def test_grain_rows_match_the_table(demo, a100_samples):
    host, samples = a100_samples
    u = demo.usage[demo.usage.hostname == host.name]
    ids = np.array([j for j in sorted(demo.jobs.job_id)] + [None], dtype=object)
    for s in samples:
        rows = grain_rows(s, pd.Timestamp(demo.truth["window_start"]).value // 10**9)
        mine = u[u.gpu_index == s.gpu.index].reset_index(drop=True)
        assert len(mine) == len(rows)
        assert (mine.interval_start.astype("int64") // 10**6 == rows.interval_start).all()
        assert mine.job_id.fillna("-").tolist() == [x or "-" for x in ids[rows.owner]]
        assert (mine.seconds_present == rows.seconds_present).all()
        assert (mine.energy_mj == rows.energy_mj).all()
        assert np.allclose(mine.util_mean, rows.util_mean)
        assert (mine.seconds_busy == rows.seconds_busy).all() and (mine.seconds_idle == rows.seconds_idle).all()


def test_job_sample_shapes(plan, a100_samples):
    host, samples = a100_samples
    by_uuid = {s.gpu.uuid: s for s in samples}
    checked = 0
    for job in plan.jobs:
        p = job.run.placement
        if p.host.name != host.name:
            continue
        gpu = host.gpus[p.gpu_indices[0]]
        s = by_uuid[gpu.uuid]
        held = s.owner == job.code
        phases = job.run.timeline.phases(int(held.sum()))
        util = s.util[held]
        load = util[phases == LOAD]
        assert 10 <= len(load) <= 40 and load.max() <= 15 and (load < 5).any()
        steady = util[phases == STEADY]
        assert steady.min() >= 75 and steady.max() <= 95
        dips = util[phases == DIP]
        assert len(dips) >= job.reported and dips.min() >= 20 and dips.max() <= 40
        tail = util[phases == TAIL]
        if job.end_time is not None:
            assert 20 <= len(tail) < 180 and tail.max() < 40
        stall = util[phases == STALL]
        if len(stall):
            assert 360 <= len(stall) <= 960 and stall.min() >= 10 and stall.max() <= 35
        mem = s.fb_used_mib[held]
        assert mem.max() <= gpu.kind.memory_mib
        power = s.power_w[held]
        assert power.min() >= 0.9 * gpu.kind.idle_w - 0.01 and power.max() <= gpu.kind.tdp_w
        assert np.corrcoef(util, power)[0, 1] > 0.9
        checked += 1
    assert checked >= 10
    idle = np.concatenate([s.util[s.owner == NO_OWNER] for s in samples])
    assert idle.max() <= 2


def test_stalled_jobs_plan(plan):
    stalled = [j for j in plan.jobs if j.run.placement.spec.stall is not None]
    assert len(stalled) >= 3
    assert {j.run.placement.spec.stall.kind for j in stalled} == {"hang", "slow", "final"}
    for j in stalled:
        start, end = j.run.timeline.stall
        assert 3 * 120 <= end - start <= 8 * 120
        assert (j.run.placement.start + start) % 10 == 0  # whole grain intervals
        loss = j.curves.total_loss()[: j.reported]
        ts = j.epoch_ts
        t0 = plan.window.instant(j.run.placement.start + start)
        t1 = plan.window.instant(j.run.placement.start + end)
        during = loss[(ts > t0) & (ts < t1)]
        before = loss[ts <= t0][-1]
        assert before - (during.min() if len(during) else before) < 0.0005
