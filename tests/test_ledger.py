"""The cent ledger (yolocost.ledger): cents rounded once per month and summed everywhere, and the
[allocation] unallocated policy. Hand-made fixtures go through the real loader into a real
DuckDB file; every figure is worked out in the test."""

from __future__ import annotations

import csv
import datetime as dt
from decimal import Decimal

import pytest

from helpers.builders import job_row, usage_run
from yolocost import ledger, money
from yolocost.config import ConfigError
from yolocost.finance import export_finance
from yolocost.report import sections

D = Decimal

# 2026-03-02: p1 holds two A100s for an hour (g1, g2), p2 one (g3); g4 (A100) and t1 (T4) sit
# unallocated for an hour. 2026-03-03: p2 holds an A100 for 5 minutes (g3), g4 sits
# unallocated for half an hour. A100 1.00 per GPU-hour, T4 0.50: every figure is exact.
USAGE = [
    *usage_run("2026-03-02T00:00Z", 12, "g1", "j1"),
    *usage_run("2026-03-02T00:00Z", 12, "g2", "j2"),
    *usage_run("2026-03-02T00:00Z", 12, "g3", "j3"),
    *usage_run("2026-03-02T00:00Z", 12, "g4", None),
    *usage_run("2026-03-02T00:00Z", 12, "t1", None, model="T4"),
    *usage_run("2026-03-03T00:00Z", 1, "g3", "j4"),
    *usage_run("2026-03-03T00:00Z", 6, "g4", None),
]
JOBS = [job_row("j1", project="p1"), job_row("j2", project="p1"), job_row("j3", project="p2"),
        job_row("j4", project="p2")]
PRICES = [("A100", "1.00"), ("T4", "0.50")]


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def billed(rows, **match) -> Decimal:
    return sum((D(r["BilledCost"]) for r in rows if all(r[k] == v for k, v in match.items())), D("0.00"))


@pytest.fixture
def proportional(built_db):
    return built_db(USAGE, jobs=JOBS, prices=PRICES, allocation={"unallocated": "proportional"})


def test_proportional_shares_unallocated_capacity_by_gpu_hours_per_model_and_day(proportional):
    """The 1.00 of A100 nobody held on 2 March goes to p1 and p2 by their A100-hours that day,
    2 : 1: quotas 0.666... and 0.333..., floors 0.66 + 0.33, the last cent to the larger
    remainder (p1): 0.67 and 0.33. On 3 March only p2 held an A100: it takes the 0.50. Nobody
    held a T4: its 0.50 stays unallocated. The total is still the capacity cost, 5.08
    (p1 2.00 + p2 1.0833... + 2.00 nobody held = 5.0833...)."""
    db = proportional
    result = export_finance(db.config, "2026-03", db.raw_dir.parent / "finance.csv")
    rows = read_rows(result.path)
    shares = [(r["SubAccountId"], r["x_ChargeDate"], r["x_GpuModel"], r["BilledCost"], r["PricingQuantity"])
              for r in rows if r["x_Allocation"] == "share of unallocated capacity"]
    assert shares == [
        ("p1", "2026-03-02", "A100", "0.67", "0.666666667"),
        ("p2", "2026-03-02", "A100", "0.33", "0.333333333"),
        ("p2", "2026-03-03", "A100", "0.50", "0.500000000"),
    ]
    for r in rows:
        if r["x_Allocation"] != "usage":
            assert r["x_Bucket"] == "project" and r["ChargeDescription"].startswith("Share of unallocated capacity")
    assert billed(rows, SubAccountId="(unallocated)") == D("0.50")
    assert [r["x_GpuModel"] for r in rows if r["SubAccountId"] == "(unallocated)"] == ["T4"]
    assert billed(rows, SubAccountId="p1", x_Allocation="usage") == D("2.00")
    assert billed(rows, SubAccountId="p2", x_Allocation="usage") == D("1.08")
    assert billed(rows, SubAccountId="p1") == D("2.67") and billed(rows, SubAccountId="p2") == D("1.91")
    capacity = db.value("SELECT total_cost FROM mart_cluster_month WHERE month = '2026-03'")
    assert result.total == billed(rows) == money.round_cents(capacity) == D("5.08")


def test_proportional_keeps_shares_apart_in_the_reports(proportional):
    """The admin project table shows own use and the share in separate columns; the
    '(unallocated)' row keeps all capacity nobody held and gives the shared part back as a
    negative share, so every column adds up; a project's headline cost is its own use."""
    con = __import__("duckdb").connect(str(proportional.path), read_only=True)
    try:
        admin = sections.collect(con, "2026-03", None, timezone="UTC", grain_seconds=300, currency="USD")
        p1 = sections.collect(con, "2026-03", "p1", timezone="UTC", grain_seconds=300, currency="USD")
    finally:
        con.close()
    table = {r["project"]: r for r in admin["projects"]}
    assert (table["p1"]["cents"], table["p1"]["share_cents"], table["p1"]["billed_cents"]) == (
        D("2.00"), D("0.67"), D("2.67"))
    assert (table["p2"]["cents"], table["p2"]["share_cents"], table["p2"]["billed_cents"]) == (
        D("1.08"), D("0.83"), D("1.91"))
    nobody = table["(unallocated)"]
    assert (nobody["cents"], nobody["share_cents"], nobody["billed_cents"]) == (D("2.00"), D("-1.50"), D("0.50"))
    assert sum(r["share_cents"] for r in admin["projects"]) == 0
    assert sum(r["billed_cents"] for r in admin["projects"]) == admin["headline"]["current"]["total_cents"] == D("5.08")
    cards = {c["key"]: c["value"] for c in p1["headline"]["cards"]}
    assert cards["total_cents"] == D("2.00") and cards["share_cents"] == D("0.67")


def test_the_ledgers_readers_see_an_audiences_rows_and_capacity_nobody_held_alike(proportional):
    """ledger_lines and ledger_jobs (sql/macros.sql), which every document reads the ledger
    through: the admin sees every row, a project only its own (usage and share), and
    `unallocated`/`shared` say what yolocost.ledger means by them. The figures are the ones
    worked out above: 5.08 in all, 2.00 of it capacity nobody held, 1.50 of that shared; p2
    own use 1.08 (j3 1.00, j4 0.08) plus 0.83 of shares."""
    con = __import__("duckdb").connect(str(proportional.path), read_only=True)
    try:
        every = con.execute("SELECT bucket, project, allocation, cost, unallocated, shared "
                            "FROM ledger_lines('2026-03', NULL)").fetchall()
        stored = con.execute("SELECT count(*) FROM ledger_charges WHERE month = '2026-03'").fetchone()[0]
        p2 = con.execute("SELECT bucket, project, cost, shared FROM ledger_lines('2026-03', 'p2')").fetchall()
        p2_jobs = con.execute("SELECT job_id, bucket, project, cost FROM ledger_jobs(?, ?) ORDER BY job_id",
                              ["2026-03", "p2"]).fetchall()
        every_job = con.execute("SELECT count(*) FROM ledger_jobs('2026-03', NULL)").fetchone()[0]
        other_month = con.execute("SELECT count(*) FROM ledger_lines('2026-02', NULL)").fetchone()[0]
    finally:
        con.close()
    assert len(every) == stored and other_month == 0
    for bucket, _, allocation, _, unallocated, shared in every:
        assert shared == (allocation == ledger.SHARE)
        assert unallocated == (bucket == "unallocated" or allocation == ledger.SHARE)
    assert sum(r[3] for r in every) == D("5.08")
    assert sum(r[3] for r in every if r[4]) == D("2.00")
    assert sum(r[3] for r in every if r[5]) == D("1.50")
    assert {(b, p) for b, p, _, _ in p2} == {("project", "p2")}
    assert sum(r[2] for r in p2 if not r[3]) == D("1.08") and sum(r[2] for r in p2 if r[3]) == D("0.83")
    assert p2_jobs == [("j3", "project", "p2", D("1.00")), ("j4", "project", "p2", D("0.08"))]
    assert every_job == 4


def test_none_charges_unallocated_capacity_to_no_project(built_db):
    """The default: the 2.00 nobody held stays in '(unallocated)', no share rows."""
    db = built_db(USAGE, jobs=JOBS, prices=PRICES)
    rows = read_rows(export_finance(db.config, "2026-03", db.raw_dir.parent / "finance.csv").path)
    assert {r["x_Allocation"] for r in rows} == {"usage"}
    assert billed(rows, SubAccountId="(unallocated)") == D("2.00")
    assert billed(rows) == D("5.08")
    assert db.value("SELECT unallocated_policy FROM settings") == "none"


def test_an_unknown_policy_is_a_config_error(tmp_path):
    from helpers.builders import make_config

    with pytest.raises(ConfigError, match="allocation.unallocated.*none or proportional"):
        make_config(tmp_path, allocation={"unallocated": "everyone"})


def test_jobs_add_up_to_their_project_and_idle_never_exceeds_cost(built_db):
    """Three jobs of one project at 0.04/h, 5 minutes each (exact 0.003333333, 0.003333334
    and 0.003333333: the marts' cumulative rounding gives the middle row the last nano):
    the project bills 0.01 and its jobs share that cent by largest remainder (jb), so the job
    table adds up to the project; each job is fully idle and its idle cost is never more than
    its cost. GPU-hours: 0.25 in all -> 0.3, one tenth per job."""
    usage = [*usage_run("2026-03-02T00:00Z", 1, "g1", "ja", util=1.0),
             *usage_run("2026-03-02T00:00Z", 1, "g2", "jb", util=1.0),
             *usage_run("2026-03-02T00:00Z", 1, "g3", "jc", util=1.0)]
    jobs = [job_row(j, project="p1") for j in ("ja", "jb", "jc")]
    db = built_db(usage, jobs=jobs, prices=[("A100", "0.04")])
    found = db.query("SELECT job_id, cost, idle_cost, gpu_hours FROM ledger_job_month ORDER BY job_id")
    assert [(r["job_id"], r["cost"], r["idle_cost"]) for r in found] == [
        ("ja", D("0.00"), D("0.00")), ("jb", D("0.01"), D("0.01")), ("jc", D("0.00"), D("0.00"))]
    project = db.one("SELECT sum(cost) AS cost, sum(idle_cost) AS idle, sum(gpu_hours) AS hours "
                     "FROM ledger_charges WHERE project = 'p1'")
    assert project == {"cost": D("0.01"), "idle": D("0.01"), "hours": D("0.3")}  # 15 min = 0.25 -> 0.3
    assert [r["gpu_hours"] for r in found] == [D("0.1")] * 3
    for r in found:
        assert r["idle_cost"] <= r["cost"]


def test_allocate_tree_keeps_every_level_within_a_cent():
    """Rows (a, x) 0.004, (a, y) 0.004, (b, x) 0.004: total 0.012 -> 0.01; a (0.008) takes it
    from b (0.004) by remainder, then a's cent goes to its first row."""
    parts = money.allocate_tree([D("0.004")] * 3, [("a", "x"), ("a", "y"), ("b", "x")])
    assert parts == [D("0.01"), D("0.00"), D("0.00")]


def test_apportion_is_hamilton_and_exact():
    assert money.apportion(D("1.00"), [2, 1]) == [D("0.67"), D("0.33")]
    assert money.apportion(D("0.10"), [1, 1, 1]) == [D("0.04"), D("0.03"), D("0.03")]
    assert money.apportion(D("5"), [1, 1], places=0) == [D("3"), D("2")]
    with pytest.raises(ValueError):
        money.apportion(D("1.00"), [0, 0])


def test_cap_moves_excess_to_the_parts_with_room():
    assert money.cap([D("0.02"), D("0.00")], [D("0.01"), D("0.05")]) == [D("0.01"), D("0.01")]
    assert money.cap([D("0.02")], [D("0.01")]) == [D("0.01")]  # no room anywhere: dropped


def test_policies_are_the_documented_ones():
    assert ledger.POLICIES == ("none", "proportional")


@pytest.mark.parametrize("fmt, reader", [("html", "the report"), ("summary", "the summary"), ("csv", "the finance export")])
def test_a_database_built_before_the_ledger_asks_for_a_build(built_db, fmt, reader):
    """A database whose models an older yolocost built has no ledger tables: `report` says to
    run `yolocost build` in one line (exit 2), whichever document it was asked for."""
    import duckdb

    from helpers.builders import assert_one_line_error, yolocost

    db = built_db(USAGE, jobs=JOBS, prices=PRICES)
    con = duckdb.connect(str(db.path))
    con.execute("DROP TABLE ledger_charges")
    con.execute("DROP TABLE ledger_job_month")
    con.close()
    # the config it was built with, so that the month is not stale (which is checked too)
    toml = db.path.parent / "yolocost.toml"
    toml.write_text('[cluster]\nname = "c1"\ntimezone = "UTC"\n' + "".join(
        f'[[prices]]\ngpu_model = "{model}"\nprice_per_gpu_hour = "{price}"\n' for model, price in PRICES),
        encoding="utf-8")
    result = yolocost("--config", str(toml), "--db", str(db.path), "report", "--month", "2026-03", "--format", fmt,
                      cwd=db.path.parent)
    assert_one_line_error(result, f"lacks a model {reader} reads", "ledger_", "yolocost build")


def _charge(project: str, bucket: str, gpu_seconds: str, exact: str, cost: str) -> ledger.Charge:
    return ledger.Charge(
        month="2026-03", day=dt.date(2026, 3, 2), bucket=bucket, project=project, gpu_model="A100",
        charge_kind="gpu", allocation=ledger.USAGE, sku_price_id="A100 from 2026-01-01", unit_price=D("1"),
        pricing_unit="GPU-Hours", quantity=D(exact), exact_cost=D(exact), cost=D(cost), exact_idle_cost=None,
        idle_cost=None, gpu_hours=D("0.4"), idle_gpu_hours=None, gpu_seconds=D(gpu_seconds), idle_gpu_seconds=None,
        seconds_present=D(gpu_seconds), seconds_busy=D(0), jobs=0 if bucket == "unallocated" else 1)


def test_shares_of_unallocated_capacity_are_each_within_a_cent_of_their_exact_amount():
    """0.431 of capacity nobody held, rounded up to 0.44 by the month's largest remainder, shared
    17 : 1 : 1 by GPU-seconds: exact shares 0.385632 + 0.022684 + 0.022684. Shared from the
    rounded 0.44 (quotas 0.393684, 0.023158, 0.023158) the cents would be 0.40, 0.02, 0.02: the
    first 0.0144 above its exact amount, more than a cent off its price x quantity. From the
    exact amounts, floors 0.38 + 0.02 + 0.02 and the two cents left to the largest remainders
    (0.005632, then 0.002684 of the earlier one): 0.39, 0.03, 0.02, each within a cent."""
    rows = [_charge("p1", "project", "1700", "1.7", "1.70"), _charge("p2", "project", "100", "0.1", "0.10"),
            _charge("p3", "project", "100", "0.1", "0.10"), _charge("(unallocated)", "unallocated", "400", "0.431", "0.44")]
    shares = [r for r in ledger.share_unallocated(rows, 2) if r.allocation == ledger.SHARE]
    assert [(r.project, r.cost) for r in shares] == [("p1", D("0.39")), ("p2", D("0.03")), ("p3", D("0.02"))]
    assert all(abs(r.cost - r.exact_cost) < D("0.01") for r in shares)
    assert sum(r.cost for r in shares) == D("0.44")
