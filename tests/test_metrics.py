"""Every metric of DESIGN.md, checked on tiny hand-made fixtures against hand arithmetic.

Each fixture goes through the real Parquet loader into a real DuckDB file (tests/helpers/builders.py).
Money in the marts is DECIMAL and is compared exactly with Decimal arithmetic written out in
the test; only inherently floating values (hours, density, kWh, per-mAP ratios) use approx.
Unless a test says otherwise: price of an A100 GPU-hour 2.93, grain 5 min, time zone UTC.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from helpers.builders import (
    MJ_PER_KWH,
    NANO,
    epoch_rows,
    gpu_seconds,
    intervals,
    job_row,
    losses,
    money,
    result_row,
    ts,
    usage_row,
    usage_run,
)
from yolocost.errors import YolocostError
from yolocost.models import mart_names

PRICE = Decimal("2.93")
T0 = "2026-03-02T00:00Z"  # a Monday, mid-month: nothing near a month boundary
HOUR = 12  # grain intervals in an hour


def approx(value, rel=1e-12, abs=1e-12):
    return pytest.approx(value, rel=rel, abs=abs)


def at(minutes, start=T0):
    """The instant `minutes` after `start`."""
    return ts(start) + dt.timedelta(minutes=minutes)


# =========================================================================== GPU-hours


def test_gpu_hours_of_an_owner_are_its_gpus_present_seconds(built_db):
    """A job holding 2 GPUs for 1 h has 2 GPU-hours and costs 2 x the hourly price."""
    usage = usage_run(T0, HOUR, "g1", "j1") + usage_run(T0, HOUR, "g2", "j1")
    db = built_db(usage, jobs=[job_row("j1", project="p1")])

    expected_seconds = Decimal(2 * 3600)
    expected_cost = Decimal("2") * PRICE  # 2 GPUs x 1 h x 2.93

    job = db.one("SELECT * FROM mart_job WHERE job_id = 'j1'")
    assert job["gpus"] == 2
    assert job["gpu_seconds"] == expected_seconds
    assert job["gpu_hours"] == approx(2.0)
    assert job["gpu_cost"] == expected_cost

    project = db.one("SELECT * FROM mart_project_month WHERE project = 'p1'")
    assert project["month"] == "2026-03"
    assert project["gpu_hours"] == approx(2.0)
    assert project["gpu_cost"] == expected_cost

    user = db.one("SELECT * FROM mart_user_month WHERE user_name = 'alice'")
    assert user["gpu_hours"] == approx(2.0)
    assert user["gpu_cost"] == expected_cost


def test_capacity_unallocated_and_unlabeled_buckets(built_db):
    """Capacity counts every present GPU second; unallocated = present, no job; unlabeled =
    jobs with a NULL or empty project, or no jobs row at all, kept as '(unlabeled)'."""
    usage = (
        usage_run(T0, HOUR, "g1", "j1")  # p1: 1 h
        + usage_run(T0, HOUR, "g2", "j2")  # project NULL: 1 h
        + usage_run(T0, HOUR, "g3", None)  # present, held by nobody: 1 h
        + usage_run(T0, 6, "g4", "j3")  # project '': 30 min
        + usage_run(at(30), 6, "g4", "ghost")  # no jobs row: 30 min
    )
    jobs = [job_row("j1", project="p1"), job_row("j2", project=None), job_row("j3", project="")]
    db = built_db(usage, jobs=jobs)

    capacity_h, project_h, unlabeled_h, unallocated_h = 4, 1, 1 + 0.5 + 0.5, 1
    month = db.one("SELECT * FROM mart_cluster_month")
    assert month["gpus"] == 4
    assert month["capacity_gpu_hours"] == approx(capacity_h)
    assert month["attributed_gpu_hours"] == approx(project_h + unlabeled_h)
    assert month["unlabeled_gpu_hours"] == approx(unlabeled_h)
    assert month["unallocated_gpu_hours"] == approx(unallocated_h)
    assert month["capacity_cost"] == Decimal("4") * PRICE
    assert month["project_cost"] == Decimal("1") * PRICE
    assert month["unlabeled_cost"] == Decimal("2") * PRICE
    assert month["unallocated_cost"] == Decimal("1") * PRICE
    assert month["attributed_cost"] == Decimal("3") * PRICE

    rows = db.by("mart_project_month", "project")
    assert set(rows) == {"p1", "(unlabeled)", "(unallocated)"}
    assert rows["p1"]["bucket"] == "project"
    assert rows["(unlabeled)"]["bucket"] == "unlabeled"
    assert rows["(unlabeled)"]["jobs"] == 3  # j2, j3 and the job with no jobs row
    assert rows["(unlabeled)"]["gpu_hours"] == approx(unlabeled_h)
    assert rows["(unlabeled)"]["gpu_cost"] == Decimal("2") * PRICE
    assert rows["(unallocated)"]["bucket"] == "unallocated"
    assert rows["(unallocated)"]["jobs"] == 0
    assert rows["(unallocated)"]["gpu_hours"] == approx(unallocated_h)
    assert rows["(unallocated)"]["gpu_cost"] == Decimal("1") * PRICE
    assert sum(r["gpu_cost"] for r in rows.values()) == month["capacity_cost"]

    ghost = db.one("SELECT * FROM mart_job WHERE job_id = 'ghost'")
    assert (ghost["bucket"], ghost["project"]) == ("unlabeled", "(unlabeled)")
    assert ghost["gpu_cost"] == Decimal("0.5") * PRICE


# =========================================================================== MIG


def test_mig_instance_counts_its_slices_of_seven(built_db):
    """A 3g.40gb instance held 1 h is 3/7 of an A100 GPU-hour and costs 3/7 of its price;
    an A30 2g.12gb instance (4 slices on an A30) is 2/4."""
    usage = usage_run(T0, HOUR, "mig-3g", "j1", mig="3g.40gb") + usage_run(
        T0, HOUR, "mig-a30", "j2", mig="2g.12gb", model="A30"
    )
    db = built_db(usage, jobs=[job_row("j1"), job_row("j2")], prices=[("A100", "2.93"), ("A30", "1.10")])

    # stg_gpu_usage keeps each row's GPU-seconds to 6 decimals: 300 x 3/7 = 128.571429
    row_seconds = gpu_seconds(300 * Decimal(3) / Decimal(7))
    assert row_seconds == Decimal("128.571429")
    expected_seconds = HOUR * row_seconds  # 1542.857148
    expected_cost = money(expected_seconds * PRICE / 3600)

    j1 = db.one("SELECT * FROM mart_job WHERE job_id = 'j1'")
    assert j1["gpu_seconds"] == expected_seconds
    assert j1["gpu_hours"] == approx(3 / 7, rel=1e-8)
    assert j1["gpu_cost"] == expected_cost
    assert j1["gpu_cost"] == pytest.approx(Decimal(3) / Decimal(7) * PRICE, abs=Decimal("1e-8"))

    j2 = db.one("SELECT * FROM mart_job WHERE job_id = 'j2'")
    assert j2["gpu_seconds"] == Decimal(3600) / 2
    assert j2["gpu_cost"] == Decimal("0.5") * Decimal("1.10")

    a100 = db.one("SELECT * FROM mart_gpu_model_month WHERE gpu_model = 'A100'")
    assert a100["capacity_gpu_hours"] == approx(3 / 7, rel=1e-8)
    assert a100["capacity_cost"] == expected_cost


def test_explicitly_priced_mig_profile_uses_its_own_price(built_db):
    """With a price entry 'A100 3g.40gb', a 3g.40gb instance is billed at that price per
    instance-hour (share 1, not 3/7); a 1g.10gb instance on the same model still counts 1/7."""
    usage = usage_run(T0, HOUR, "mig-3g", "j1", mig="3g.40gb") + usage_run(T0, HOUR, "mig-1g", "j2", mig="1g.10gb")
    prices = [("A100", "2.93"), ("A100 3g.40gb", "1.50")]
    db = built_db(usage, jobs=[job_row("j1"), job_row("j2")], prices=prices)

    jobs = db.by("mart_job", "job_id")
    assert jobs["j1"]["gpu_seconds"] == Decimal(3600)  # explicitly priced: share 1 (stg_gpu_usage)
    assert jobs["j1"]["gpu_cost"] == Decimal("1") * Decimal("1.50")

    one_slice = HOUR * gpu_seconds(300 * Decimal(1) / Decimal(7))  # 12 x 42.857143
    assert jobs["j2"]["gpu_seconds"] == one_slice
    assert jobs["j2"]["gpu_cost"] == money(one_slice * PRICE / 3600)


# =========================================================================== cost


def test_price_change_applies_from_local_midnight_of_its_date(built_db):
    """A price effective_from 2026-03-10 in Europe/Berlin starts at 2026-03-09T23:00Z (CET):
    the hour before is billed at the old price, the hour after at the new one."""
    usage = usage_run("2026-03-09T22:00Z", 2 * HOUR, "g1", "j1")
    prices = [("A100", "1970-01-01", "2.93"), ("A100", "2026-03-10", "3.50")]
    db = built_db(usage, jobs=[job_row("j1")], prices=prices, timezone="Europe/Berlin")

    expected = Decimal("1") * Decimal("2.93") + Decimal("1") * Decimal("3.50")
    assert db.value("SELECT gpu_cost FROM mart_job") == expected
    days = db.by("mart_daily", "day")  # local days: 23:00-00:00 local on the 9th, 00:00-01:00 on the 10th
    assert {str(d): r["gpu_cost"] for d, r in days.items()} == {"2026-03-09": Decimal("2.93"), "2026-03-10": Decimal("3.50")}


def test_price_change_in_a_half_hour_offset_zone(built_db):
    """Asia/Kolkata (UTC+5:30) with a 30 min grain: local midnight of the change is 18:30Z, an
    interval boundary, so 17:30Z and 18:00Z keep the old price and 18:30Z takes the new one.
    (A grain that would straddle local midnight there, such as 1 h, is refused by the config.)"""
    usage = [usage_row(t, "g1", "j1", seconds=1800) for t in intervals("2026-03-09T17:30Z", 3, grain=1800)]
    prices = [("A100", "1970-01-01", "2.93"), ("A100", "2026-03-10", "3.50")]
    db = built_db(usage, jobs=[job_row("j1")], prices=prices, timezone="Asia/Kolkata",
                  ingest={"grain_seconds": 1800})

    expected = Decimal("0.5") * Decimal("2.93") * 2 + Decimal("0.5") * Decimal("3.50")
    assert db.value("SELECT gpu_cost FROM mart_job") == expected
    days = {str(r["day"]): r["gpu_cost"] for r in db.query("SELECT day, gpu_cost FROM mart_daily")}
    assert days == {"2026-03-09": Decimal("0.5") * Decimal("2.93") * 2, "2026-03-10": Decimal("0.5") * Decimal("3.50")}


def test_energy_cost_is_kwh_times_energy_price(built_db):
    """energy_mj / 3.6e9 = kWh; energy cost = kWh x the energy price in effect; the job's
    cost = GPU cost + energy cost."""
    # 1 h at 1 kW: 12 x 300,000,000 mJ = 3.6e9 mJ = 1 kWh, all of it on 2026-03-02, before
    # the energy price changes from 0.25 to 0.40 on 2026-03-03
    usage = usage_run(T0, HOUR, "g1", "j1", energy_mj=300_000_000)
    db = built_db(usage, jobs=[job_row("j1")],
                  energy_prices=[("1970-01-01", "0.25"), ("2026-03-03", "0.40")])

    job = db.one("SELECT * FROM mart_job")
    assert job["energy_mj"] == 12 * 300_000_000
    assert job["energy_kwh"] == approx(1.0)
    assert job["energy_cost"] == Decimal("1") * Decimal("0.25")
    assert job["gpu_cost"] == Decimal("1") * PRICE
    assert job["cost"] == Decimal("1") * PRICE + Decimal("1") * Decimal("0.25")
    month = db.one("SELECT * FROM mart_cluster_month")
    assert month["energy_cost"] == Decimal("0.25")
    assert month["total_cost"] == month["capacity_cost"] + month["energy_cost"]


def test_energy_cost_awkward_amount_and_price_change(built_db):
    """1,000,000,007 mJ at 0.31/kWh is 0.0861111117...: kept rounded half-up to 9 decimals;
    energy after a new energy price's local midnight is billed at the new price."""
    usage = [
        usage_row("2026-03-02T12:00Z", "g1", "j1", energy_mj=1_000_000_007),
        usage_row("2026-03-03T12:00Z", "g1", "j1", energy_mj=1_800_000_000),  # 0.5 kWh
    ]
    db = built_db(usage, jobs=[job_row("j1")], energy_prices=[("1970-01-01", "0.31"), ("2026-03-03", "0.40")])

    first = money(Decimal(1_000_000_007) / MJ_PER_KWH * Decimal("0.31"))
    assert first == Decimal("0.086111112")
    second = Decimal("0.5") * Decimal("0.40")
    assert db.value("SELECT energy_cost FROM mart_job") == first + second


def test_unpriced_gpu_model_is_an_error_and_the_default_price_is_explicit(built_db):
    """A GPU model with no price refuses the load (never a silent 0); [pricing]
    default_price_per_gpu_hour prices it explicitly."""
    usage = usage_run(T0, HOUR, "g1", "j1", model="H100")
    with pytest.raises(YolocostError, match="H100"):
        built_db(usage, jobs=[job_row("j1")])
    db = built_db(usage, jobs=[job_row("j1")], pricing={"default_price_per_gpu_hour": "4.10"})
    assert db.value("SELECT gpu_cost FROM mart_job") == Decimal("1") * Decimal("4.10")


def test_conservation_is_exact_with_awkward_seconds(built_db):
    """7 s rows over 301 intervals at 2.93 (3600 does not divide 7 x 2.93): the month's capacity
    cost is the exact value rounded half-up to 9 decimals, projects + unlabeled + unallocated
    add up to it exactly, and each job is within 1e-9 x its rows of its exact cost."""
    n = 301
    usage = []
    owners = ("j1", "j2", None)  # g1 rotates: p1, unlabeled, unallocated
    for i, t in enumerate(intervals(T0, n)):
        usage.append(usage_row(t, "g1", owners[i % 3], seconds=7))
        usage.append(usage_row(t, "g2", "j3", seconds=7))  # g2: p2 the whole time
    jobs = [job_row("j1", project="p1"), job_row("j2", project=None), job_row("j3", project="p2")]
    db = built_db(usage, jobs=jobs)

    exact_capacity = Decimal(2 * n * 7) * PRICE / 3600  # 4214 s x 2.93 / 3600
    assert exact_capacity != money(exact_capacity)  # the case is awkward indeed
    month = db.one("SELECT * FROM mart_cluster_month")
    assert month["capacity_gpu_seconds"] == Decimal(2 * n * 7)
    assert month["capacity_cost"] == money(exact_capacity)
    assert month["project_cost"] + month["unlabeled_cost"] + month["unallocated_cost"] == month["capacity_cost"]
    assert db.value("SELECT sum(gpu_cost) FROM mart_project_month") == month["capacity_cost"]
    assert db.value("SELECT sum(gpu_cost) FROM mart_daily") == month["capacity_cost"]
    assert db.value("SELECT sum(capacity_cost) FROM mart_gpu_model_month") == month["capacity_cost"]

    rows = {"j1": len(range(0, n, 3)), "j2": len(range(1, n, 3)), "j3": n}  # 101, 100, 301
    for job_id, cost in ((r["job_id"], r["gpu_cost"]) for r in db.query("SELECT * FROM mart_job")):
        exact = Decimal(rows[job_id] * 7) * PRICE / 3600
        assert abs(cost - exact) <= rows[job_id] * NANO, job_id
    unallocated = db.one("SELECT gpu_cost FROM mart_project_month WHERE bucket = 'unallocated'")["gpu_cost"]
    unallocated_rows = len(range(2, n, 3))
    assert abs(unallocated - Decimal(unallocated_rows * 7) * PRICE / 3600) <= unallocated_rows * NANO


# =========================================================================== density


def density_fixture():
    """p1: A (tag T1, 3 busy intervals), D (T1, 1 idle interval), B (T2, 2 intervals with 100 s
    and 200 s busy); p2: C (T1, 1 busy interval); g9: 1 unallocated idle interval."""
    t = intervals(T0, 3)
    usage = [
        *(usage_row(x, "g1", "A", util=90) for x in t),
        usage_row(t[0], "g2", "D", util=2),
        usage_row(t[0], "g3", "B", util=60, busy=100),
        usage_row(t[1], "g3", "B", util=60, busy=200),
        usage_row(t[0], "g4", "C", util=90),
        usage_row(t[0], "g9", None, util=0),
    ]
    jobs = [
        job_row("A", project="p1", image_tag="train-yolov8-t1-cu118"),
        job_row("D", project="p1", image_tag="train-yolov8-t1-cu118"),
        job_row("B", project="p1", image_tag="train-yolov8-t2-cu118"),
        job_row("C", project="p2", image_tag="train-yolov8-t1-cu118"),
    ]
    return usage, jobs


def test_density_is_busy_over_present_seconds_per_job(built_db):
    """ECD of a job = its busy seconds / its present seconds."""
    usage, jobs = density_fixture()
    got = {j: r["density"] for j, r in built_db(usage, jobs=jobs).by("mart_job", "job_id").items()}
    assert got == {"A": approx(900 / 900), "D": approx(0 / 300), "B": approx((100 + 200) / 600), "C": approx(300 / 300)}


def test_density_per_project_image_tag_and_cluster_weights_by_seconds(built_db):
    """Project and tag density pool seconds (not a mean of job ratios); the cluster's
    density is over attributed seconds only (the unallocated idle GPU does not count)."""
    usage, jobs = density_fixture()
    db = built_db(usage, jobs=jobs)

    projects = {r["project"]: r["density"] for r in db.query("SELECT * FROM mart_project_month")}
    assert projects["p1"] == approx((900 + 0 + 300) / (900 + 300 + 600))  # 2/3, not mean(1, 0, 0.5)
    assert projects["p2"] == approx(1.0)

    tags = {(r["project"], r["image_tag"]): r["density"] for r in db.query("SELECT * FROM mart_image_tag_month")}
    assert tags == {
        ("p1", "train-yolov8-t1-cu118"): approx((900 + 0) / (900 + 300)),
        ("p1", "train-yolov8-t2-cu118"): approx(300 / 600),
        ("p2", "train-yolov8-t1-cu118"): approx(1.0),
    }
    assert db.value("SELECT density FROM mart_cluster_month") == approx((900 + 300 + 300) / (900 + 300 + 600 + 300))


# =========================================================================== idle waste


def test_idle_waste_hours_and_cost(built_db):
    """Idle waste = attributed seconds under 5 % utilization: 6 idle intervals of a job are
    0.5 h and 0.5 x 2.93 in money; an idle unallocated GPU is not anyone's idle waste.
    (The unallocated GPU is an H100, priced on its own, so that the A100's money is the
    job's alone and exact.)"""
    usage = (
        usage_run(T0, 6, "g1", "j1", util=2)
        + usage_run(at(30), 6, "g1", "j1", util=80)
        + usage_run(T0, HOUR, "g2", None, util=0, model="H100")
    )
    db = built_db(usage, jobs=[job_row("j1")], prices=[("A100", PRICE), ("H100", "4.10")])

    expected_hours = 6 * 300 / 3600
    expected_cost = Decimal("0.5") * PRICE
    job = db.one("SELECT * FROM mart_job")
    assert job["seconds_idle"] == Decimal(6 * 300)
    assert job["idle_gpu_hours"] == approx(expected_hours)
    assert job["idle_cost"] == expected_cost
    project = db.one("SELECT * FROM mart_project_month WHERE project = 'p1'")
    assert project["idle_gpu_hours"] == approx(expected_hours)
    assert project["idle_cost"] == expected_cost
    month = db.one("SELECT * FROM mart_cluster_month")
    assert month["idle_gpu_hours"] == approx(expected_hours)
    assert month["idle_cost"] == expected_cost


def test_idle_cost_of_a_fully_idle_job_equals_its_cost(built_db):
    """A job idle the whole time wasted exactly what it cost: idle cost == GPU cost."""
    db = built_db(usage_run(T0, 6, "g1", "j1", util=0), jobs=[job_row("j1")])
    job = db.one("SELECT * FROM mart_job")
    assert job["gpu_cost"] == Decimal("0.5") * PRICE
    assert job["idle_cost"] == job["gpu_cost"]


# =========================================================================== memory and energy


def test_peak_memory_energy_and_power_cross_check(built_db):
    """Peak memory = max framebuffer used over all the job's GPUs and intervals; energy kWh =
    counter mJ / 3.6e9; power_energy_kwh = sum(mean W x present s) / 3.6e6 (a cross-check)."""
    usage = [
        *(usage_row(t, "g1", "j1", mem=1000 + 100 * i, power=300, energy_mj=75_000_000)
          for i, t in enumerate(intervals(T0, HOUR))),
        *(usage_row(t, "g2", "j1", mem=5000 if i == 7 else 2000, power=250, energy_mj=75_000_000, index=1)
          for i, t in enumerate(intervals(T0, HOUR))),
    ]
    db = built_db(usage, jobs=[job_row("j1")])

    expected_kwh = 24 * 75_000_000 / 3.6e9  # 0.5
    expected_power_kwh = (300 * 3600 + 250 * 3600) / 3.6e6  # 0.55
    for table in ("mart_job", "mart_job_month"):
        row = db.one(f"SELECT * FROM {table}")
        assert row["mem_peak_mib"] == 5000.0
        assert row["energy_mj"] == 24 * 75_000_000
        assert row["energy_kwh"] == approx(expected_kwh)
        assert row["power_energy_kwh"] == approx(expected_power_kwh)
    assert db.value("SELECT mem_peak_mib FROM mart_project_month") == 5000.0
    assert db.value("SELECT energy_kwh FROM mart_cluster_month") == approx(expected_kwh)


# =========================================================================== cost per mAP


def test_cost_per_map_point(built_db):
    """Cost per mAP point = job cost (GPU + energy) / (mAP50 x 100); also per mAP50-95 point;
    a job without a final validation has none."""
    usage = usage_run(T0, HOUR, "g1", "j1", energy_mj=300_000_000) + usage_run(T0, HOUR, "g2", "j2")
    db = built_db(
        usage, jobs=[job_row("j1"), job_row("j2")], results=[result_row("j1", 0.5, 0.25, best_epoch=9)],
        energy_prices=["0.25"],
    )

    cost = Decimal("1") * PRICE + Decimal("1") * Decimal("0.25")  # 1 GPU-hour + 1 kWh
    jobs = db.by("mart_job", "job_id")
    assert jobs["j1"]["cost"] == cost
    assert jobs["j1"]["cost_per_map50_point"] == approx(float(cost / (Decimal("0.5") * 100)))  # 0.0636
    assert jobs["j1"]["cost_per_map50_95_point"] == approx(float(cost / (Decimal("0.25") * 100)))  # 0.1272
    assert jobs["j1"]["best_epoch"] == 9
    assert jobs["j2"]["cost_per_map50_point"] is None


# =========================================================================== breaker


def breaker_job(job, start, busy_before, low, busy_after, gpus=("g1",)):
    """Usage of a job: `busy_before` intervals at 90 %, `low` at 20 %, `busy_after` at 90 %."""
    rows = []
    for k, gpu in enumerate(gpus):
        utils = [90.0] * busy_before + [20.0] * low + [90.0] * busy_after
        rows += [usage_row(t, gpu, job, util=u, index=k) for t, u in zip(intervals(start, len(utils)), utils)]
    return rows


def test_breaker_flags_a_two_hour_low_flat_stretch_with_its_gpu_hours_and_cost(built_db):
    """A job on 2 GPUs under 40 % for exactly 2 h (24 intervals) while the loss improves by
    0.0004 (< 0.001) is a candidate: 2 GPUs x 2 h = 4 GPU-hours, 4 x 2.93."""
    usage = breaker_job("b1", T0, HOUR, 2 * HOUR, HOUR, gpus=("g1", "g2"))
    # epochs every 30 min; the stretch runs from minute 60 to 180
    progress = losses("b1", [(at(30), 2.0), (at(60), 1.5), (at(90), 1.4999), (at(120), 1.4998),
                             (at(150), 1.4996), (at(210), 1.2)])
    db = built_db(usage, jobs=[job_row("b1")], progress=progress)

    b = db.one("SELECT * FROM mart_breakers")
    assert b["job_id"] == "b1"
    assert (b["stretch_start"], b["stretch_end"]) == (at(60), at(180))
    assert b["stretch_hours"] == approx(2.0)
    assert b["gpu_hours"] == approx(2 * 2.0)
    assert b["gpu_cost"] == Decimal("4") * PRICE
    assert b["cost"] == Decimal("4") * PRICE
    assert b["loss_improvement"] == approx(1.5 - 1.4996, abs=1e-9)
    job = db.one("SELECT * FROM mart_job")
    assert (job["breaker_stretches"], job["breaker_gpu_hours"], job["breaker_cost"]) == (1, approx(4.0), Decimal("4") * PRICE)


def test_breaker_ignores_a_stretch_shorter_than_two_hours(built_db):
    """1 h 55 min under 40 % (23 intervals) with a flat loss is not a candidate."""
    usage = breaker_job("b2", T0, HOUR, 2 * HOUR - 1, HOUR)
    progress = losses("b2", [(at(30), 2.0), (at(60), 1.5), (at(90), 1.5), (at(120), 1.5), (at(150), 1.5)])
    db = built_db(usage, jobs=[job_row("b2")], progress=progress)
    assert db.query("SELECT * FROM mart_breakers") == []
    assert db.value("SELECT breaker_cost FROM mart_job") == 0


def test_breaker_ignores_a_long_low_stretch_where_the_loss_still_improves(built_db):
    """3 h under 40 % while the loss improves by 0.01 (>= 0.001) is not a candidate."""
    usage = breaker_job("b3", T0, HOUR, 3 * HOUR, HOUR)
    progress = losses("b3", [(at(30), 2.0), (at(60), 1.5), (at(120), 1.497), (at(180), 1.494), (at(230), 1.49)])
    db = built_db(usage, jobs=[job_row("b3")], progress=progress)
    assert db.query("SELECT * FROM mart_breakers") == []


def test_breaker_measures_improvement_within_the_stretch_only(built_db):
    """The loss bottomed at 0.8 before the stretch, was 0.9 when it started and stayed 0.9
    for its 2 h: it improved by 0 during the stretch, so the stretch is a candidate (an
    earlier, lower loss is not an improvement made while the GPU sat idle)."""
    usage = breaker_job("b4", T0, HOUR, 2 * HOUR, HOUR)
    progress = losses("b4", [(at(20), 1.0), (at(40), 0.8), (at(60), 0.9), (at(90), 0.9),
                             (at(120), 0.9), (at(150), 0.9)])
    db = built_db(usage, jobs=[job_row("b4")], progress=progress)
    rows = db.query("SELECT * FROM mart_breakers")
    assert [(r["job_id"], r["gpu_cost"]) for r in rows] == [("b4", Decimal("2") * PRICE)]


# =========================================================================== tag policy


def test_tag_policy_status_and_violation_spend(built_db):
    """ok / latest / empty ('' and no tag at all) / digest_only / nonconforming, and
    mart_tag_violations carries each violating job's spend and digest. Price 3.60 so a
    5-minute interval costs exactly 0.30 and each job's cost is exact."""
    tags = {  # job: (image_tag, image_digest, hours)
        "ok": ("train-yolov10-medium-cu118", "sha256:aa", 1),
        "latest": ("latest", "sha256:bb", 2),
        "empty": ("", "sha256:cc", 3),
        "digest": (None, "sha256:dd", 4),
        "v2": ("v2", "sha256:ee", 5),
        "none": (None, None, 1),
    }
    usage, jobs = [], []
    for k, (job, (tag, digest, hours)) in enumerate(tags.items()):
        usage += usage_run(T0, hours * HOUR, f"g{k}", job)
        jobs.append(job_row(job, image_tag=tag, image_digest=digest))
    price = Decimal("3.60")
    db = built_db(usage, jobs=jobs, prices=[("A100", price)])

    status = {j: r["tag_status"] for j, r in db.by("mart_job", "job_id").items()}
    assert status == {"ok": "ok", "latest": "latest", "empty": "empty", "digest": "digest_only",
                      "v2": "nonconforming", "none": "empty"}
    assert {j: r["image_digest"] for j, r in db.by("mart_job", "job_id").items()} == {
        j: d for j, (_, d, _) in tags.items()}

    violations = db.by("mart_tag_violations", "job_id")
    assert set(violations) == {"latest", "empty", "digest", "v2", "none"}
    for job, row in violations.items():
        tag, digest, hours = tags[job]
        assert row["cost"] == Decimal(hours) * price, job
        assert row["gpu_hours"] == approx(hours)
        assert row["image_digest"] == digest
    assert violations["digest"]["image_tag"] == "(digest only)"
    assert violations["empty"]["image_tag"] == "(empty)"

    labels = {r["image_tag"]: r["tag_status"] for r in db.query("SELECT * FROM mart_image_tag_month")}
    assert labels["(digest only)"] == "digest_only"
    assert labels["(empty)"] == "empty"


def test_tag_pattern_is_configurable(built_db):
    """With tag_policy.pattern '^v[0-9]+$', 'v2' conforms and the default style does not."""
    usage = usage_run(T0, 1, "g1", "a") + usage_run(T0, 1, "g2", "b")
    jobs = [job_row("a", image_tag="v2"), job_row("b", image_tag="train-yolov10-medium-cu118")]
    db = built_db(usage, jobs=jobs, tag_policy={"pattern": "^v[0-9]+$"})
    assert {j: r["tag_status"] for j, r in db.by("mart_job", "job_id").items()} == {"a": "ok", "b": "nonconforming"}


# =========================================================================== months


def test_months_are_cut_in_the_configured_time_zone(built_db):
    """In Europe/Berlin (CEST, UTC+2) 2026-09-30T22:00Z is 2026-10-01 00:00 local: October;
    21:55Z is still September. In UTC both are September."""
    usage = [usage_row("2026-09-30T21:55Z", "g1", "a"), usage_row("2026-09-30T22:00Z", "g1", "b")]
    berlin = built_db(usage, jobs=[job_row("a"), job_row("b")], timezone="Europe/Berlin")
    assert {r["job_id"]: r["month"] for r in berlin.query("SELECT * FROM mart_job_month")} == {
        "a": "2026-09", "b": "2026-10"}
    utc = built_db(usage, jobs=[job_row("a"), job_row("b")])
    assert {r["job_id"]: r["month"] for r in utc.query("SELECT * FROM mart_job_month")} == {
        "a": "2026-09", "b": "2026-09"}


def test_job_crossing_a_month_boundary_is_split_and_adds_up(built_db):
    """A job on 2 GPUs from 2026-09-30T21:00Z to 23:00Z (Berlin) has 1 h per GPU in each
    month; its mart_job_month rows add up to mart_job (GPU-hours and cost); each month is
    rounded on its own so odd 7 s rows still add up."""
    usage = []
    for gpu in ("g1", "g2"):
        usage += usage_run("2026-09-30T21:00Z", 2 * HOUR, gpu, "j1")
        usage += usage_run("2026-09-30T21:00Z", 2 * HOUR, gpu + "-odd", "j2", seconds=7)
    db = built_db(usage, jobs=[job_row("j1"), job_row("j2", project="p2")], timezone="Europe/Berlin")

    months = {r["month"]: r for r in db.query("SELECT * FROM mart_job_month WHERE job_id = 'j1'")}
    assert set(months) == {"2026-09", "2026-10"}
    for month in months.values():
        assert month["gpu_hours"] == approx(2 * 1.0)
        # j1's rows interleave with j2's odd ones in the month's cumulative rounding: each
        # of its 24 rows is within 1e-9 of exact
        assert abs(month["gpu_cost"] - Decimal("2") * PRICE) <= 24 * NANO
    for job_id in ("j1", "j2"):
        job = db.one("SELECT * FROM mart_job WHERE job_id = ?", [job_id])
        parts = db.query("SELECT * FROM mart_job_month WHERE job_id = ?", [job_id])
        assert len(parts) == 2 and job["months"] == 2
        assert sum(p["gpu_seconds"] for p in parts) == job["gpu_seconds"]
        assert sum(p["gpu_hours"] for p in parts) == approx(job["gpu_hours"])
        assert sum(p["gpu_cost"] for p in parts) == job["gpu_cost"]
        assert sum(p["cost"] for p in parts) == job["cost"]
    # 2 GPUs x 12 rows x 7 s per month, each month rounded half-up on its own
    for month in ("2026-09", "2026-10"):
        capacity = db.one("SELECT capacity_cost FROM mart_cluster_month WHERE month = ?", [month])["capacity_cost"]
        assert capacity == Decimal("2") * PRICE + money(Decimal(2 * HOUR * 7) * PRICE / 3600)


def test_daily_rows_add_up_to_the_month(built_db):
    """mart_daily cuts local days (Berlin); a project's days add up exactly to its month in
    mart_project_month, for GPU-hours, GPU cost and energy cost."""
    usage = []
    for i, t in enumerate(intervals("2026-03-02T20:00Z", 3 * 24 * HOUR // 4)):  # 18 h of 5-min rows
        usage.append(usage_row(t, "g1", "j1" if i % 2 else None, seconds=7, energy_mj=1_000_003))
        usage.append(usage_row(t, "g2", "j2", seconds=299, energy_mj=7_777_777))
    db = built_db(usage, jobs=[job_row("j1", project="p1"), job_row("j2", project=None)],
                  timezone="Europe/Berlin", energy_prices=["0.31"])

    days = db.query("SELECT * FROM mart_daily")
    assert {str(d["day"]) for d in days} == {"2026-03-02", "2026-03-03"}  # 21:00 local on the 2nd to 15:00 on the 3rd
    for month in db.query("SELECT * FROM mart_project_month"):
        mine = [d for d in days if d["month"] == month["month"] and d["project"] == month["project"]]
        assert sum(d["gpu_cost"] for d in mine) == month["gpu_cost"], month["project"]
        assert sum(d["energy_cost"] for d in mine) == month["energy_cost"], month["project"]
        assert sum(d["gpu_hours"] for d in mine) == approx(month["gpu_hours"])


# =========================================================================== leaderboard


def test_leaderboard_runs_mean_map_and_cost_per_map_point(built_db):
    """Two finished runs of yolov8m with the same tag (1 h and 2 h on one GPU, mAP50 0.6 and
    0.4): runs 2, mean mAP50 0.5, mean cost per run (2.93 + 5.86) / 2, cost per mAP point =
    that / (0.5 x 100). A run of another tag has its own row; an unfinished run none.
    The runs follow each other on one GPU, so every job's cost is a whole number of hours."""
    tag = "train-yolov8-medium-cu118"
    usage = (
        usage_run(T0, HOUR, "g1", "l1")
        + usage_run(at(60), 2 * HOUR, "g1", "l2")
        + usage_run(at(180), HOUR, "g1", "other")
        + usage_run(at(240), HOUR, "g1", "running")
    )
    jobs = [
        job_row("l1", image_tag=tag, end="2026-03-02T01:00Z"),
        job_row("l2", image_tag=tag, end="2026-03-02T03:00Z"),
        job_row("other", image_tag="train-yolov8-small-cu118", end="2026-03-02T04:00Z"),
        job_row("running", image_tag=tag),
    ]
    results = [result_row("l1", 0.6, 0.4), result_row("l2", 0.4, 0.2), result_row("other", 0.5, 0.3)]
    db = built_db(usage, jobs=jobs, results=results)

    rows = {(r["model_type"], r["image_tag"]): r for r in db.query("SELECT * FROM mart_leaderboard")}
    assert set(rows) == {("yolov8m", tag), ("yolov8m", "train-yolov8-small-cu118")}
    row = rows[("yolov8m", tag)]
    mean_cost = (Decimal("1") * PRICE + Decimal("2") * PRICE) / 2  # 4.395
    mean_map50 = (0.6 + 0.4) / 2
    mean_map50_95 = (0.4 + 0.2) / 2
    assert row["month"] == "2026-03"
    assert row["runs"] == 2
    assert row["mean_map50"] == approx(mean_map50)
    assert row["mean_map50_95"] == approx(mean_map50_95)
    assert row["mean_cost_per_run"] == mean_cost
    assert row["cost_per_map50_point"] == approx(float(mean_cost) / (mean_map50 * 100))  # 0.0879
    assert row["cost_per_map50_95_point"] == approx(float(mean_cost) / (mean_map50_95 * 100))  # 0.1465
    assert row["mean_training_hours"] == approx((1 + 2) / 2)
    assert row["mean_gpu_hours"] == approx((1 + 2) / 2)
    assert rows[("yolov8m", "train-yolov8-small-cu118")]["runs"] == 1


# =========================================================================== idempotence


def test_loading_the_same_fixture_twice_leaves_identical_marts(built_db):
    """Re-loading the same raw files replaces the window: every mart is row-for-row identical
    (SELECT * ORDER BY ALL), raw tables are not duplicated."""
    n = 301
    usage, progress = [], []
    for i, t in enumerate(intervals("2026-09-30T20:00Z", n)):
        usage.append(usage_row(t, "g1", ("j1", "j2", None)[i % 3], seconds=7, util=(i * 37) % 100,
                               energy_mj=1_000_003 * i))
        usage.append(usage_row(t, "g2", "j3", util=20 if 50 <= i < 100 else 90, mem=i))
        usage.append(usage_row(t, "m1", "j2", mig="3g.40gb", util=3))
    progress += losses("j3", [(at(60 * k, "2026-09-30T20:00Z"), 2.0 - k * 0.0001) for k in range(1, 20)])
    progress += epoch_rows("j1", 1, "2026-10-01T00:00Z", 1.0, map50=0.4, map50_95=0.2)
    jobs = [job_row("j1", project="p1", image_tag="latest", end="2026-10-01T12:00Z"),
            job_row("j2", project=None, image_tag=None), job_row("j3", project="p2")]
    results = [result_row("j1", 0.41, 0.21, best_epoch=1)]
    db = built_db(usage, jobs=jobs, progress=progress, results=results, timezone="Europe/Berlin",
                  energy_prices=["0.31"])

    def snapshot():
        return {m: db.query(f"SELECT * FROM {m} ORDER BY ALL") for m in mart_names()}

    before = snapshot()
    assert before["mart_breakers"], "the fixture should exercise every mart"
    assert all(before.values()), [m for m, rows in before.items() if not rows]
    raw_counts = {t: db.value(f"SELECT count(*) FROM {t}") for t in ("gpu_usage", "jobs", "training_progress", "job_results")}

    db.load()
    assert snapshot() == before
    assert {t: db.value(f"SELECT count(*) FROM {t}") for t in raw_counts} == raw_counts


def test_the_largest_price_the_config_takes_is_billed_exactly(built_db):
    """999,999.999999 per GPU-hour (the config's largest): the cost arithmetic stays exact,
    here a week of 3 GPUs, so the running totals reach millions of units."""
    price = Decimal("999999.999999")
    usage = [row for gpu in ("g0", "g1", "g2") for row in usage_run(T0, 7 * 24 * 12, gpu, "j1")]
    db = built_db(usage, jobs=[job_row("j1")], prices=[("A100", str(price))])
    j1 = db.one("SELECT gpu_seconds, gpu_cost FROM mart_job WHERE job_id = 'j1'")
    assert j1["gpu_seconds"] == 3 * 7 * 24 * 3600
    assert j1["gpu_cost"] == 3 * 7 * 24 * price
