"""Every named query that shows money prints the cents the reports, the summary and the
finance CSV print.

Money the ledger holds (yolocost.ledger: ledger_charges, ledger_job_month) is shown as sums
of its stored cents, never rounded again, so each query's money columns add up, to the cent,
to the figures the admin report (yolocost.report.data), the summary (ledger.month_totals)
and the finance CSV (yolocost.finance) print. Money no ledger holds (what a pause or a
stopping policy would have saved, a mean cost per run) follows the report's own rounding
rule. A query that compares two months says when either is partial, in the reports' words,
and then shows no percentage change.

Checked on the bundled sample month (allocation "none"), on the same data built with
[allocation] unallocated = "proportional" (shares of unallocated capacity in projects'
rows), and on two whole months for the comparison.
"""

from __future__ import annotations

import re
from collections import defaultdict
from decimal import Decimal

import pytest
from helpers.builders import BuiltDb, make_config, write_month

from yolocost import db, finance, ledger, load, money, queries, templating, whatif
from yolocost.report import data, sections
from yolocost.report.trend import comparison
from yolocost.resources import shipped_dir

MONTH = "2026-10"
PREVIOUS = "2026-09"
ALL = "100000"  # a `limit` that lists every job
QUERY_FILES = sorted(p.stem for p in shipped_dir("queries").glob("*.sql"))
ALL_MONTHS = {"estimate_inputs"}  # takes no month

# The money columns of each named query. test_every_money_column_is_listed keeps this list
# whole: a new query or column that shows money fails until it is listed and checked here.
MONEY = {
    "breaker_candidates": {"savings"},
    "cost_per_map_leaderboard": {"cost", "mean_cost_per_run"},
    "density_by_image_tag": {"cost"},
    "estimate_inputs": {"cost"},
    "gpu_model_capacity": {"cost", "unallocated_cost"},
    "image_tag_comparison": {"cost", "cost_per_epoch"},
    "most_expensive_jobs": {"cost"},
    "policy_savings": {"saved"},
    "project_month_over_month": {"previous_cost", "cost", "change"},
    "tag_policy_violations": {"cost"},
    "top_idle_wasters": {"idle_cost", "cost"},
    "ultralytics_version_share": {"cost"},
    "unallocated_by_host_day": {"unallocated_cost"},
    "user_costs": {"idle_cost", "cost"},
}
# not money: GPU-hours, percentages, and money per mAP point (a ratio shown to 4 decimals, never summed)
NOT_MONEY = re.compile(r"hours|_pct$|_per_map50")
MONEY_NAME = re.compile(r"cost|cents|saved|saving|spend|billed|price|^change$")


def run(built: BuiltDb, name: str, **params: str) -> list[dict]:
    wanted = {} if name in ALL_MONTHS else {"month": MONTH, **params}
    columns, rows = queries.run(built.path, queries.resolve(name), wanted)
    return [dict(zip(columns, r)) for r in rows]


def figures(built: BuiltDb, month: str = MONTH) -> dict:
    """What the documents print for `month`: the admin report's sections, the what-if jobs,
    the summary's ledger totals and the finance CSV's rows and totals. The connection is
    closed again before any query runs (DuckDB refuses a second configuration at once)."""
    cfg = built.config
    con = db.connect(built.path, read_only=True, sandboxed=True, timezone=cfg.timezone)
    try:
        found = sections.collect(con, month, None, timezone=cfg.timezone, grain_seconds=cfg.grain_seconds,
                                 currency=cfg.currency)
        found["whatif"] = whatif.collect(con, month, None, timezone=cfg.timezone, currency=cfg.currency, limit=None)
        found["summary"] = ledger.month_totals(con, month)
        found["csv_rows"] = finance.month_cents(con, month).rows
        found["csv_projects"] = finance.project_totals_cents(con, month)
        found["csv_total"] = finance.total_cents(con, month)
        prev = data.previous_month(month)
        found["csv_previous"] = finance.project_totals_cents(con, prev) if ledger.month_totals(con, prev) else {}
        found["coverage"] = comparison(con, month, prev)
        found["job_cents"] = {r[0]: r[1] for r in con.execute(
            "SELECT job_id, sum(cost) FROM ledger_job_month GROUP BY job_id").fetchall()}
        found["month_job_cents"] = {r[0]: r[1:] for r in con.execute(
            "SELECT job_id, cost, idle_cost FROM ledger_job_month WHERE month = ?", [month]).fetchall()}
        found["places"] = money.minor_unit(cfg.currency)
        found["currency"] = money.Currency(cfg.currency)
        found["host_days"] = con.execute("""
            SELECT day, hostname, gpu_model, unallocated_cost FROM mart_host_day WHERE month = ?
            ORDER BY day, gpu_model, hostname""", [month]).fetchall()
        return found
    finally:
        con.close()


def total(rows: list[dict], column: str) -> Decimal:
    return sum((r[column] for r in rows), Decimal(0))


def nobody(row: ledger.Charge) -> bool:
    """Capacity nobody held, as the reports count it (`unallocated` of the ledger_lines macro, sql/macros.sql)."""
    return row.bucket == "unallocated" or row.allocation == ledger.SHARE


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def sample(sample_db) -> tuple[BuiltDb, dict]:
    return sample_db, figures(sample_db)


@pytest.fixture(scope="module")
def proportional(sample_built) -> tuple[BuiltDb, dict]:
    """The sample month with unallocated capacity shared over the projects that held the GPU model that day."""
    built = sample_built(unallocated_policy="proportional")
    return built, figures(built)


@pytest.fixture(scope="module")
def yen(sample_built) -> tuple[BuiltDb, dict]:
    """The sample month billed in a currency without a minor unit (whole yen)."""
    built = sample_built(currency="JPY")
    return built, figures(built)


@pytest.fixture(scope="module")
def dinar(sample_built) -> tuple[BuiltDb, dict]:
    """The sample month billed in a currency of three decimals, sharing unallocated capacity."""
    built = sample_built(currency="KWD", unallocated_policy="proportional")
    return built, figures(built)


@pytest.fixture(scope="module")
def whole_months(tmp_path_factory) -> BuiltDb:
    """September and October 2026, every hour of both held (hourly grain, to stay small)."""
    base = tmp_path_factory.mktemp("whole")
    cfg = make_config(base, prices=[("A100", "2.93"), ("V100", "1.10")], ingest={"grain_seconds": 3600})
    for month in (PREVIOUS, MONTH):
        load.load_parquet_dir(cfg, write_month(base / month, cfg, month))
    return BuiltDb(cfg, base / MONTH)


BUILDS = ["sample", "proportional", "yen", "dinar"]


@pytest.fixture(params=BUILDS)
def built(request) -> tuple[BuiltDb, dict]:
    return request.getfixturevalue(request.param)


# --------------------------------------------------------------------------- the list of money columns


def test_every_money_column_is_listed(sample_db):
    for name in QUERY_FILES:
        columns = queries.run(sample_db.path, queries.resolve(name),
                              {} if name in ALL_MONTHS else {"month": MONTH})[0]
        shown = {c for c in columns if MONEY_NAME.search(c) and not NOT_MONEY.search(c)}
        assert shown == MONEY.get(name, set()), name


# --------------------------------------------------------------------------- ledger sums


def test_unallocated_by_host_day_adds_up_to_the_ledger_per_day_and_gpu_model(built):
    """Each day x GPU model's rows add up to the finance CSV's GPU cents of capacity nobody
    held that day on that model, so the month adds up to the admin report's unallocated GPU
    cost (the sample month: 26,289.32, where rounding each host-day gave 26,289.30)."""
    db_, printed = built
    rows = run(db_, "unallocated_by_host_day", min_hours="0")
    csv = defaultdict(Decimal)
    for r in printed["csv_rows"]:
        if r.charge_kind == "gpu" and nobody(r):
            csv[(r.day, r.gpu_model)] += r.cost
    shown = defaultdict(Decimal)
    for r in rows:
        shown[(r["day"], r["gpu_model"])] += r["unallocated_cost"]
    assert {k: v for k, v in shown.items() if v} == {k: v for k, v in csv.items() if v}
    assert total(rows, "unallocated_cost") == printed["unallocated"]["gpu_cents"] == sum(csv.values())
    by_model = {m["gpu_model"]: m["gpu_cost"] for m in printed["unallocated"]["gpu_models"]}
    for model, cents in by_model.items():
        assert sum((r["unallocated_cost"] for r in rows if r["gpu_model"] == model), Decimal(0)) == cents, model
    # each day x GPU model's cents shared over its hosts by Hamilton's method (yolocost.money.apportion)
    # by their exact amounts, ties to the host name that sorts first
    exact = defaultdict(list)
    for day, host, model, amount in printed["host_days"]:
        exact[(day, model)].append((host, amount))
    cells = {(r["day"], r["hostname"], r["gpu_model"]): r["unallocated_cost"] for r in rows}
    for (day, model), hosts in exact.items():
        if csv.get((day, model)):
            shares = money.apportion(csv[(day, model)], [a for _, a in hosts], printed["places"])
            assert [cells[(day, h, model)] for h, _ in hosts] == shares, (day, model)
    # GPU-hours: the ledger's tenths, shared the same way
    assert total(rows, "unallocated_gpu_hours") == printed["summary"]["unallocated_gpu_hours"]
    assert total(rows, "capacity_gpu_hours") == printed["summary"]["capacity_gpu_hours"]
    # the default hides host-days under 1 GPU-hour, and changes no figure of the rest
    shown_default = run(db_, "unallocated_by_host_day")
    assert shown_default and all(r["unallocated_gpu_hours"] >= 1 for r in shown_default)
    assert all(r in rows for r in shown_default)


def test_unallocated_by_host_day_per_host_is_the_report_table(sample):
    db_, printed = sample
    rows = run(db_, "unallocated_by_host_day", min_hours="0")
    hosts = defaultdict(Decimal)
    for r in rows:
        hosts[(r["hostname"], r["gpu_model"])] += r["unallocated_cost"]
    assert dict(hosts) == {(h["hostname"], h["gpu_model"]): h["cents"] for h in printed["unallocated"]["hosts"]}


def test_gpu_model_capacity_is_the_report_per_gpu_model(built):
    db_, printed = built
    rows = run(db_, "gpu_model_capacity")
    assert {r["gpu_model"]: r["cost"] for r in rows} == {g["gpu_model"]: g["cents"] for g in printed["gpu_models"]}
    nobody_cents = {m["gpu_model"]: m["cents"] for m in printed["unallocated"]["gpu_models"]}
    assert {r["gpu_model"]: r["unallocated_cost"] for r in rows if r["unallocated_cost"]} == nobody_cents
    assert total(rows, "cost") == printed["csv_total"] == printed["summary"]["total"]
    assert total(rows, "unallocated_cost") == printed["summary"]["unallocated_cost"] == printed["unallocated"]["cents"]


def test_project_month_over_month_is_the_finance_csv(built):
    db_, printed = built
    rows = run(db_, "project_month_over_month")
    assert {r["project"]: r["cost"] for r in rows if r["cost"]} == printed["csv_projects"]
    assert {r["project"]: r["previous_cost"] for r in rows if r["previous_cost"]} == printed["csv_previous"]
    assert total(rows, "cost") == printed["csv_total"] == printed["summary"]["total"]
    assert {r["project"]: r["cost"] for r in rows if r["cost"]} == {
        p["project"]: p["billed_cents"] for p in printed["projects"]}
    assert all(r["change"] == r["cost"] - r["previous_cost"] for r in rows)


def test_user_costs_are_the_report_users(built):
    db_, printed = built
    rows = run(db_, "user_costs")
    assert {(r["user_name"] or "(no user)", r["project"]): (r["cost"], r["idle_cost"]) for r in rows} == {
        (u["user_name"], u["project"]): (u["cents"], u["idle_cost"]) for u in printed["users"]}
    summary = printed["summary"]
    assert total(rows, "cost") == summary["total"] - summary["unallocated_cost"]  # every job's own use
    assert total(rows, "idle_cost") == summary["idle_cost"]


def test_density_by_image_tag_is_the_report_image_tags(built):
    db_, printed = built
    rows = run(db_, "density_by_image_tag")
    tags = printed["image_tags"]
    assert total(rows, "cost") == tags["cents"] == printed["summary"]["total"] - printed["summary"]["unallocated_cost"]
    shown = {r["image_tag"]: r["cost"] for r in rows}
    for t in tags["rows"]:
        assert shown[t["image_tag"]] == t["cents"], t["image_tag"]


def test_job_queries_are_the_ledgers_job_cents(built):
    db_, printed = built
    cents = printed["month_job_cents"]
    jobs = run(db_, "most_expensive_jobs", limit=ALL)
    assert {r["job_id"]: r["cost"] for r in jobs} == {j: c for j, (c, _) in cents.items()}
    assert total(jobs, "cost") == printed["summary"]["total"] - printed["summary"]["unallocated_cost"]
    idle = run(db_, "top_idle_wasters", limit=ALL)
    assert {r["job_id"]: (r["cost"], r["idle_cost"]) for r in idle} == {j: c for j, c in cents.items() if c[1] > 0}
    assert total(idle, "idle_cost") == printed["summary"]["idle_cost"]
    report = printed["idle_waste"]["jobs"]
    assert [(r["job_id"], r["idle_cost"], r["cost"]) for r in idle[:len(report)]] == [
        (j["job_id"], j["idle_cost"], j["cost"]) for j in report]


def test_tag_policy_violations_are_the_report_violations(built):
    db_, printed = built
    rows = run(db_, "tag_policy_violations")
    violations = printed["tag_violations"]
    assert len(rows) == violations["total_jobs"]
    assert total(rows, "cost") == violations["cents"]
    assert [(r["job_id"], r["cost"]) for r in rows[:len(violations["jobs"])]] == [
        (j["job_id"], j["cost"]) for j in violations["jobs"]]


def test_estimate_inputs_cost_is_the_jobs_ledger_cents(sample):
    db_, printed = sample
    rows = run(db_, "estimate_inputs")
    assert rows
    for r in rows:
        assert r["cost"] == printed["job_cents"][r["job_id"]], r["job_id"]


def test_image_tag_comparison_is_the_report_table_on_the_runs_ledger_cents(built):
    """Each tag's cost is the sum of its runs' ledger cents of the month (the section prints the
    query's rows); cost per epoch is a rate on those cents (cost / epochs, 4 decimals)."""
    db_, printed = built
    rows = run(db_, "image_tag_comparison")
    shown = printed["tag_comparison"]
    assert rows and [(r["model_type"], r["gpu_model"], r["image_tag"], r["cost"], r["cost_per_epoch"]) for r in rows] == [
        (r["model_type"], r["gpu_model"], r["image_tag"], r["cost"], r["cost_per_epoch"]) for r in shown["rows"]]
    assert total(rows, "cost") == shown["cents"]
    assert total(rows, "cost") <= printed["summary"]["total"] - printed["summary"]["unallocated_cost"]
    places = printed["places"]
    for r in rows:
        assert r["cost"] == r["cost"].quantize(Decimal(1).scaleb(-places))  # ledger cents, never rounded again
        assert r["cost_per_epoch"] == pytest.approx(float(r["cost"]) / r["epochs"], abs=5.000001e-5)  # to 4 decimals


def test_ultralytics_version_share_is_every_jobs_ledger_cents(built):
    db_, printed = built
    rows = run(db_, "ultralytics_version_share")
    assert rows == printed["versions"]["rows"]
    summary = printed["summary"]
    assert total(rows, "cost") == printed["versions"]["cents"] == summary["total"] - summary["unallocated_cost"]
    assert sum(r["jobs"] for r in rows) == len(printed["month_job_cents"])
    assert sum((r["gpu_hours"] for r in rows), Decimal(0)) == sum(
        (u["gpu_hours"] for u in printed["users"]), Decimal(0))


# --------------------------------------------------------------------------- money no ledger holds


def test_breaker_candidates_are_the_report_breakers(built):
    db_, printed = built
    rows = run(db_, "breaker_candidates")
    breakers = printed["breakers"]
    assert rows and len(rows) == len(breakers["rows"])
    assert [(r["job_id"], r["savings"], r["gpu_hours"]) for r in rows] == [
        (b["job_id"], b["cents"], b["gpu_hours"]) for b in breakers["rows"]]
    assert total(rows, "savings") == breakers["cents"]
    assert total(rows, "gpu_hours") == breakers["gpu_hours"]


def test_policy_savings_are_whatif_and_the_report(built):
    db_, printed = built
    rows = run(db_, "policy_savings")
    for policy in printed["whatif"]["policies"]:
        mine = [r for r in rows if r["policy"] == policy["policy"]]
        assert {r["job_id"]: (r["saved"], r["saved_gpu_hours"]) for r in mine} == {
            j["job_id"]: (j["cost"], j["gpu_hours"]) for j in policy["jobs"]}
        assert total(mine, "saved") == policy["cost"]
        assert total(mine, "saved_gpu_hours") == policy["gpu_hours"]
    reported = {p["policy"]: p["cost"] for p in printed["policies"]["policies"]}
    assert reported == {p["policy"]: p["cost"] for p in printed["whatif"]["policies"]}


def test_leaderboard_mean_cost_per_run_is_the_printed_one(built):
    db_, printed = built
    rows = run(db_, "cost_per_map_leaderboard")
    board = printed["leaderboard"]
    assert len(rows) == len(board)
    places = printed["places"]
    for r, b in zip(rows, board):
        assert (r["rank"], r["model_type"], r["image_tag"]) == (b["rank"], b["model_type"], b["image_tag"])
        assert r["cost"] == b["cents"]  # the runs' ledger cents, summed
        assert f"{r['mean_cost_per_run']:,.{places}f}" == templating.money(b["mean_cost_per_run"], printed["currency"])
        assert r["mean_cost_per_run"] == r["mean_cost_per_run"].quantize(Decimal(1).scaleb(-places))


# --------------------------------------------------------------------------- partial months


def test_a_partial_previous_month_is_said_and_not_compared(sample):
    """September 2026 holds one day of the sample: no percentage change, and the reports' words."""
    db_, printed = sample
    note = printed["coverage"]["note"]
    assert note.startswith("September 2026 is partial: 1.0 of 30 days")
    rows = run(db_, "project_month_over_month")
    assert rows
    assert {r["partial"] for r in rows} == {note}
    assert all(r["change_pct"] is None for r in rows)
    drone = next(r for r in rows if r["project"] == "drone-survey")  # 21.67 -> 6,260.07, "+28,788.2 %" before
    assert drone["previous_cost"] and drone["change"] == drone["cost"] - drone["previous_cost"]


def test_a_partial_current_month_is_said_too(sample_db):
    con = db.connect(sample_db.path, read_only=True, sandboxed=True, timezone=sample_db.config.timezone)
    try:
        note = comparison(con, "2026-11", MONTH)["note"]
    finally:
        con.close()
    assert note.startswith("November 2026 is partial: ")
    rows = run(sample_db, "project_month_over_month", month="2026-11")
    assert rows and {r["partial"] for r in rows} == {note}
    assert all(r["change_pct"] is None for r in rows)


def test_whole_months_are_compared_and_not_flagged(whole_months):
    printed = figures(whole_months)
    assert printed["coverage"]["comparable"] and printed["coverage"]["note"] == ""
    rows = run(whole_months, "project_month_over_month")
    assert rows and all(r["partial"] is None for r in rows)
    report = {p["project"]: p["change"] for p in printed["projects"]}
    compared = [r for r in rows if r["previous_cost"] and r["cost"]]
    assert compared
    for r in compared:
        assert r["change_pct"] is not None, r["project"]
        assert report[r["project"]] is not None
        assert abs(r["change_pct"] - float(report[r["project"]].rstrip(" %"))) <= 0.1, r["project"]
    assert {r["project"]: r["cost"] for r in rows if r["cost"]} == printed["csv_projects"]
    assert {r["project"]: r["previous_cost"] for r in rows if r["previous_cost"]} == printed["csv_previous"]
