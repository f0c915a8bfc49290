"""ground_truth.json agrees with the raw tables re-derived here in pandas, and adds up."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from yolocost import synth

TZ = synth.DEMO_TIMEZONE
HALF_ULP = Fraction(1, 2 * 10**12)  # money strings are rounded to 12 places


def _price_table() -> pd.DataFrame:
    rows = [(p["gpu_model"], pd.Timestamp(p["effective_from"], tz=TZ), Fraction(p["price_per_gpu_hour"]))
            for p in synth.DEMO_PRICES]
    return pd.DataFrame(rows, columns=["gpu_model", "since", "price"])


def _price(model: str, at: pd.Timestamp, table: pd.DataFrame) -> Fraction:
    rows = table[(table.gpu_model == model) & (table.since <= at)].sort_values("since")
    return rows.price.iloc[-1]


@pytest.fixture(scope="module")
def usage(demo) -> pd.DataFrame:
    """gpu_usage with local month, the owner's labels and the price in effect."""
    u = demo.usage.copy()
    u["month"] = u.interval_start.dt.tz_convert(TZ).dt.strftime("%Y-%m")
    u = u.merge(demo.jobs[["job_id", "project", "user_name", "image_tag"]], on="job_id", how="left")
    table = _price_table()
    u["price"] = None
    for model, prices in table.sort_values("since").groupby("gpu_model"):
        rows = u.gpu_model == model
        since = prices.since.dt.tz_convert("UTC").to_numpy(dtype="datetime64[us]")
        at = u.interval_start[rows].dt.tz_convert("UTC").to_numpy(dtype="datetime64[us]")
        pick = np.searchsorted(since, at, side="right") - 1
        assert (pick >= 0).all()
        u.loc[rows, "price"] = prices.price.to_numpy()[pick]
    assert u.price.notna().all()
    return u


def _cost(rows: pd.DataFrame) -> Fraction:
    per_price = rows.groupby("price", sort=False).seconds_present.sum()
    return sum((Fraction(int(s)) * p / 3600 for p, s in per_price.items()), Fraction(0))


def _close(text: str, exact: Fraction) -> bool:
    return abs(Fraction(text) - exact) <= HALF_ULP


def test_month_totals(demo, usage):
    for month, m in demo.truth["months"].items():
        rows = usage[usage.month == month]
        held = rows[rows.job_id.notna()]
        unl = held[held.project.isna()]
        free = rows[rows.job_id.isna()]
        assert m["capacity_seconds"] == rows.seconds_present.sum()
        assert m["attributed_seconds"] == held.seconds_present.sum()
        assert m["unlabeled_seconds"] == unl.seconds_present.sum()
        assert m["unallocated_seconds"] == free.seconds_present.sum()
        assert m["energy_mj"] == rows.energy_mj.sum()
        assert _close(m["energy_cost"], Fraction(int(rows.energy_mj.sum())) * Fraction("0.21") / 3_600_000_000)
        assert _close(m["capacity_cost"], _cost(rows))
        assert _close(m["attributed_gpu_cost"], _cost(held))
        assert _close(m["unlabeled_gpu_cost"], _cost(unl))
        assert _close(m["unallocated_gpu_cost"], _cost(free))
        for project, p in m["projects"].items():
            mine = held[held.project == project]
            assert p["seconds"] == mine.seconds_present.sum()
            assert p["busy_seconds"] == mine.seconds_busy.sum()
            assert p["idle_seconds"] == mine.seconds_idle.sum()
            assert p["energy_mj"] == mine.energy_mj.sum()
            assert _close(p["gpu_cost"], _cost(mine))
        assert set(m["projects"]) == set(held.project.dropna())
        for user, p in m["users"].items():
            mine = held[held.user_name == user]
            assert p["seconds"] == mine.seconds_present.sum()
            assert _close(p["gpu_cost"], _cost(mine))
        for model, g in m["gpu_models"].items():
            mine = rows[rows.gpu_model == model]
            assert g["capacity_seconds"] == mine.seconds_present.sum()
            assert g["unallocated_seconds"] == mine[mine.job_id.isna()].seconds_present.sum()
            assert _close(g["capacity_cost"], _cost(mine))
            assert _close(g["gpu_cost"], _cost(mine[mine.job_id.notna()]))


def test_conservation(demo):
    for month, m in demo.truth["months"].items():
        parts = [p["gpu_cost"] for p in m["projects"].values()] + [m["unlabeled_gpu_cost"], m["unallocated_gpu_cost"]]
        total = sum(Fraction(x) for x in parts)
        assert abs(total - Fraction(m["capacity_cost"])) <= HALF_ULP * (len(parts) + 1), month
        seconds = sum(p["seconds"] for p in m["projects"].values()) + m["unlabeled_seconds"] + m["unallocated_seconds"]
        assert seconds == m["capacity_seconds"]
        assert m["attributed_seconds"] + m["unallocated_seconds"] == m["capacity_seconds"]
        assert sum(s["seconds"] for s in m["tag_status"].values()) == m["attributed_seconds"]
        assert sum(u["seconds"] for u in m["users"].values()) == m["attributed_seconds"]
    october = demo.truth["months"]["2026-10"]
    assert october["unlabeled_seconds"] > 0
    assert set(october["tag_status"]) == {"ok", "latest", "empty", "digest_only", "nonconforming"}
    assert october["capacity_seconds"] == (48 * 745 - 4 * 26) * 3600  # 25-hour day, 4 GPUs down for 26 h


def test_jobs_truth(demo, usage):
    gt = demo.truth["jobs"]
    assert set(gt) == set(demo.jobs.job_id)
    held = usage[usage.job_id.notna()]
    per = held.groupby(["job_id", "month"]).agg(
        seconds=("seconds_present", "sum"), busy=("seconds_busy", "sum"), idle=("seconds_idle", "sum"),
        energy=("energy_mj", "sum"))
    for (job, month), row in per.iterrows():
        m = gt[job]["months"][month]
        assert (m["seconds_present"], m["seconds_busy"], m["seconds_idle"], m["energy_mj"]) == tuple(row), job
    assert sum(len(j["months"]) for j in gt.values()) == len(per)
    peak = held.groupby("job_id").mem_peak_mib.max()
    assert all(gt[k]["mem_peak_mib"] == v for k, v in peak.items())
    results = demo.results.set_index("job_id")
    for job, j in gt.items():
        if job in results.index:
            assert (j["map50"], j["map50_95"], j["best_epoch"]) == tuple(results.loc[job, ["map50", "map50_95",
                                                                                           "best_epoch"]])
        else:
            assert j["map50"] is None and j["map50_95"] is None
    jobs = demo.jobs.set_index("job_id")
    for job, j in gt.items():
        assert j["project"] == (None if pd.isna(jobs.project[job]) else jobs.project[job])
        assert j["user"] == jobs.user_name[job] and j["image_digest"] == jobs.image_digest[job]
        assert j["gpu_request"] == jobs.gpu_request[job]


def _breakers_from_tables(demo) -> list[tuple]:
    """The breaker definition applied to the raw tables, as the SQL models will."""
    u = demo.usage[demo.usage.job_id.notna()]
    u = u.assign(w=u.util_mean * u.seconds_present)
    per = u.groupby(["job_id", "interval_start"]).agg(w=("w", "sum"), sp=("seconds_present", "sum")).reset_index()
    per = per[per.w / per.sp < 40]
    p = demo.progress
    loss = p[p.metric.str.startswith("train/")].groupby(["job_id", "epoch"]).agg(
        ts=("ts", "first"), loss=("value", "sum")).reset_index()
    grain = pd.Timedelta(seconds=synth.GRAIN_SECONDS)
    found = []
    for job, rows in per.groupby("job_id"):
        starts = rows.interval_start.sort_values().reset_index(drop=True)
        run_id = (starts.diff() != grain).cumsum()
        for _, run in starts.groupby(run_id):
            a, end = run.iloc[0], run.iloc[-1] + grain
            if end - a < pd.Timedelta(hours=2):
                continue
            epochs = loss[loss.job_id == job].sort_values("ts")
            before = epochs[epochs.ts <= a]
            if before.empty:
                continue
            improvement = before.loss.iloc[-1] - epochs[epochs.ts < end].loss.min()
            if improvement < 0.001:
                sp = rows[rows.interval_start.isin(run)].sp.sum()
                found.append((job, a.strftime("%Y-%m-%dT%H:%M:%SZ"), end.strftime("%Y-%m-%dT%H:%M:%SZ"), int(sp)))
    return sorted(found)


def test_breakers(demo):
    gt = demo.truth["breakers"]
    assert len(gt) >= 3
    assert sorted((b["job_id"], b["start"], b["end"], b["gpu_seconds"]) for b in gt) == _breakers_from_tables(demo)
    assert demo.result.breaker_job_ids == tuple(sorted(demo.result.stalled_job_ids))
    for b in gt:
        assert 3 <= b["hours"] <= 8 + 1.5 and b["improvement"] < 0.0005
        assert demo.truth["jobs"][b["job_id"]]["breakers"][0]["start"] == b["start"]
        model = demo.truth["jobs"][b["job_id"]]["gpu_model"]
        start = pd.Timestamp(b["start"]).tz_convert(TZ)
        price = _price(model, start, _price_table())
        if start.month == pd.Timestamp(b["end"]).tz_convert(TZ).month:
            assert _close(b["gpu_cost"], Fraction(b["gpu_seconds"]) * price / 3600)


def test_stalls_keep_their_utilization_low(demo):
    u = demo.usage
    for b in demo.truth["breakers"]:
        rows = u[(u.job_id == b["job_id"]) & (u.interval_start >= pd.Timestamp(b["start"]))
                 & (u.interval_start < pd.Timestamp(b["end"]))]
        assert rows.util_mean.between(10, 40).all()
        assert rows.seconds_present.sum() == b["gpu_seconds"]


def test_money_strings():
    from yolocost.synth.truth import money

    assert money(Fraction(1, 3)) == "0.333333333333"
    assert money(Fraction(5, 10**13)) == "0.000000000000"  # half to even
    assert money(Fraction(15, 10**13)) == "0.000000000002"
    assert money(Fraction(-7, 2)) == "-3.500000000000"
    assert np.isclose(float(money(Fraction(2930, 1200))), 2.441666666667)
