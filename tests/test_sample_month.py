"""The whole sample month against the generator's ground truth (computed from its own
event list and samples with exact fractions, independently of the SQL).

Seconds, busy/idle seconds (so density and idle hours) and energy are integers and must
match exactly. Money: the marts keep 9 decimals and round each grain row's cost
cumulatively inside its month x price period, so a month's total per price period is
exact to 1e-9 and any other sum of rows is within 1e-9 per row of the exact figure; in
cents every figure is identical.
"""

import json
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal

import pytest

from yolocost.resources import shipped_dir

NANO = Decimal("1e-9")


@pytest.fixture(scope="module")
def truth() -> dict:
    return json.loads((shipped_dir("sample_data") / "ground_truth.json").read_text(encoding="utf-8"))


def cents(value) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def assert_money(got, want: str, rows: int) -> None:
    """`got` (DECIMAL from the marts) is within 1e-9 per grain row of the exact `want`, and equal in cents."""
    want = Decimal(want)
    assert abs(got - want) <= NANO * max(rows, 1), (got, want)
    assert cents(got) == cents(want)


def row_counts(db, key_sql: str) -> dict:
    return {r["k"]: r["n"] for r in db.query(f"SELECT {key_sql} AS k, count(*) AS n FROM int_usage_priced GROUP BY ALL")}


def test_the_month_has_what_the_design_asks_for(sample_db, truth):
    m = sample_db.one("SELECT * FROM mart_cluster_month WHERE month = '2026-10'")
    assert m["gpus"] >= 40
    assert sample_db.value("SELECT count(DISTINCT gpu_model) FROM mart_gpu_model_month WHERE month = '2026-10'") >= 3
    assert m["jobs"] >= 150 and m["projects"] >= 5 and m["users"] >= 12
    assert sample_db.value("SELECT count(*) FROM mart_breakers WHERE month = '2026-10'") >= 3
    statuses = {r["tag_status"] for r in sample_db.query("SELECT DISTINCT tag_status FROM mart_tag_violations")}
    assert {"latest", "digest_only"} <= statuses
    assert sample_db.value("SELECT count(*) FROM mart_job WHERE months > 1") >= 2


@pytest.mark.parametrize("month", ["2026-09", "2026-10", "2026-11"])
def test_cluster_month_matches_ground_truth(sample_db, truth, month):
    t = truth["months"][month]
    m = sample_db.one("SELECT * FROM mart_cluster_month WHERE month = ?", [month])
    hours = lambda s: s / 3600  # noqa: E731
    assert m["capacity_gpu_seconds"] == t["capacity_seconds"]
    assert m["capacity_gpu_hours"] == pytest.approx(hours(t["capacity_seconds"]), rel=1e-15)
    assert m["attributed_gpu_hours"] == pytest.approx(hours(t["attributed_seconds"]), rel=1e-15)
    assert m["unlabeled_gpu_hours"] == pytest.approx(hours(t["unlabeled_seconds"]), rel=1e-15)
    assert m["unallocated_gpu_hours"] == pytest.approx(hours(t["unallocated_seconds"]), rel=1e-15)
    assert m["energy_mj"] == t["energy_mj"]
    periods = sample_db.value(
        "SELECT count(DISTINCT price_id) FROM int_usage_priced WHERE month = ?", [month])
    # capacity is a sum over whole price periods: exact up to one rounding per period
    assert abs(m["capacity_cost"] - Decimal(t["capacity_cost"])) <= NANO * periods / 2
    assert abs(m["energy_cost"] - Decimal(t["energy_cost"])) <= NANO / 2
    n = defaultdict(int, row_counts(sample_db, "month || bucket"))
    assert_money(m["unallocated_cost"], t["unallocated_gpu_cost"], n[month + "unallocated"])
    assert_money(m["unlabeled_cost"], t["unlabeled_gpu_cost"], n[month + "unlabeled"])
    assert_money(m["attributed_cost"], t["attributed_gpu_cost"], n[month + "project"] + n[month + "unlabeled"])


def test_conservation_is_exact_on_the_sample_month(sample_db):
    for m in sample_db.query("SELECT * FROM mart_cluster_month"):
        parts = sample_db.one(
            "SELECT coalesce(sum(gpu_cost) FILTER (WHERE bucket = 'project'), 0) AS projects, "
            "coalesce(sum(gpu_cost) FILTER (WHERE bucket = 'unlabeled'), 0) AS unlabeled, "
            "coalesce(sum(gpu_cost) FILTER (WHERE bucket = 'unallocated'), 0) AS unallocated, "
            "sum(energy_cost) AS energy FROM mart_project_month WHERE month = ?", [m["month"]])
        assert parts["projects"] + parts["unlabeled"] + parts["unallocated"] == m["capacity_cost"]
        assert parts["energy"] == m["energy_cost"]
        # capacity x price, computed here from the capacity seconds of each price period
        expected = Decimal(0)
        for r in sample_db.query(
            "SELECT sum(gpu_seconds) AS s, any_value(p.price_per_gpu_hour) AS price FROM int_usage_priced u "
            "JOIN stg_prices p USING (price_id) WHERE u.month = ? GROUP BY price_id", [m["month"]]):
            expected += (r["s"] * r["price"] / 3600).quantize(NANO, rounding=ROUND_HALF_UP)
        assert m["capacity_cost"] == expected
        days = sample_db.value("SELECT sum(gpu_cost) FROM mart_daily WHERE month = ?", [m["month"]])
        assert days == m["capacity_cost"]


def test_projects_and_users_match_ground_truth(sample_db, truth):
    t = truth["months"]["2026-10"]
    n = row_counts(sample_db, "month || project_name")
    projects = {r["project"]: r for r in sample_db.query("SELECT * FROM mart_project_month WHERE month = '2026-10'")}
    want = dict(t["projects"], **{"(unlabeled)": t["unlabeled"]})
    assert set(projects) == set(want) | {"(unallocated)"}
    for name, w in want.items():
        got = projects[name]
        assert got["seconds_present"] == w["seconds"], name
        assert got["density"] == pytest.approx(w["busy_seconds"] / w["seconds"], abs=1e-15)
        assert got["idle_gpu_hours"] == pytest.approx(w["idle_seconds"] / 3600, rel=1e-15)
        assert_money(got["gpu_cost"], w["gpu_cost"], n["2026-10" + name])
        assert_money(got["energy_cost"], w["energy_cost"], n["2026-10" + name])

    users = defaultdict(lambda: {"seconds_present": 0, "gpu_cost": Decimal(0)})
    for r in sample_db.query("SELECT * FROM mart_user_month WHERE month = '2026-10'"):
        users[r["user_name"]]["seconds_present"] += r["seconds_present"]
        users[r["user_name"]]["gpu_cost"] += r["gpu_cost"]
    assert set(users) == set(t["users"])
    for name, w in t["users"].items():
        assert users[name]["seconds_present"] == w["seconds"], name
        assert cents(users[name]["gpu_cost"]) == cents(w["gpu_cost"]), name


def test_gpu_models_and_tag_spend_match_ground_truth(sample_db, truth):
    t = truth["months"]["2026-10"]
    for r in sample_db.query("SELECT * FROM mart_gpu_model_month WHERE month = '2026-10'"):
        w = t["gpu_models"][r["gpu_model"]]
        assert r["capacity_gpu_hours"] == pytest.approx(w["capacity_seconds"] / 3600, rel=1e-15)
        assert r["unallocated_gpu_hours"] == pytest.approx(w["unallocated_seconds"] / 3600, rel=1e-15)
        assert cents(r["capacity_cost"]) == cents(w["capacity_cost"])
        assert cents(r["unallocated_cost"]) == cents(w["unallocated_cost"])
    spend = {r["tag_status"]: r for r in sample_db.query(
        "SELECT tag_status, sum(seconds_present) AS s, sum(gpu_cost) AS c FROM mart_job_month "
        "WHERE month = '2026-10' GROUP BY ALL")}
    assert set(spend) == set(t["tag_status"])
    for status, w in t["tag_status"].items():
        assert spend[status]["s"] == w["seconds"]
        assert cents(spend[status]["c"]) == cents(w["gpu_cost"])


def test_every_job_matches_ground_truth(sample_db, truth):
    n = row_counts(sample_db, "month || job_id")
    months = defaultdict(dict)
    for r in sample_db.query("SELECT * FROM mart_job_month"):
        months[r["job_id"]][r["month"]] = r
    jobs = {r["job_id"]: r for r in sample_db.query("SELECT * FROM mart_job")}
    assert set(jobs) == set(truth["jobs"])
    for job_id, w in truth["jobs"].items():
        got = jobs[job_id]
        assert (got["project"], got["user_name"], got["tag_status"]) == (
            w["project"] or "(unlabeled)", w["user"], w["tag_status"]), job_id
        assert got["image_digest"] == w["image_digest"]
        assert set(months[job_id]) == set(w["months"]), job_id
        total = Decimal(0)
        for month, wm in w["months"].items():
            gm = months[job_id][month]
            assert (gm["seconds_present"], gm["seconds_busy"], gm["seconds_idle"], gm["energy_mj"]) == (
                wm["seconds_present"], wm["seconds_busy"], wm["seconds_idle"], wm["energy_mj"]), (job_id, month)
            assert gm["density"] == pytest.approx(wm["seconds_busy"] / wm["seconds_present"], abs=1e-15)
            assert_money(gm["gpu_cost"], wm["gpu_cost"], n[month + job_id])
            assert_money(gm["energy_cost"], wm["energy_cost"], n[month + job_id])
            total += Decimal(wm["gpu_cost"]) + Decimal(wm["energy_cost"])
        assert got["seconds_present"] == w["seconds_present"]
        assert got["mem_peak_mib"] == w["mem_peak_mib"]
        if w["map50"] is None:
            assert got["map50"] is None and got["cost_per_map50_point"] is None
        else:
            assert (got["map50"], got["map50_95"]) == (w["map50"], w["map50_95"])
            rows = sum(n[m + job_id] for m in w["months"])
            assert got["cost_per_map50_point"] == pytest.approx(float(total) / (w["map50"] * 100), abs=2e-9 * rows)
            assert got["cost_per_map50_95_point"] == pytest.approx(float(total) / (w["map50_95"] * 100), abs=2e-9 * rows)


def test_breakers_match_ground_truth(sample_db, truth):
    got = {(r["job_id"], r["stretch_start"].strftime("%Y-%m-%dT%H:%M:%SZ")): r
           for r in sample_db.query("SELECT * FROM mart_breakers")}
    want = {(b["job_id"], b["start"]): b for b in truth["breakers"]}
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert g["stretch_end"].strftime("%Y-%m-%dT%H:%M:%SZ") == w["end"]
        assert g["gpu_hours"] == pytest.approx(w["gpu_seconds"] / 3600, rel=1e-15)
        assert g["loss_before"] == pytest.approx(w["loss_before"], abs=1e-6)
        assert g["loss_after"] == pytest.approx(w["loss_after"], abs=1e-6)
        assert cents(g["gpu_cost"]) == cents(w["gpu_cost"])
