"""The finance CSV (`yolocost export finance`): FOCUS columns, cents that add up, no names.

Hand-made fixtures go through the real loader into a real DuckDB file (tests/helpers/builders.py);
their figures are worked out in the test. Prices are chosen so that a 5-minute row costs a
known fraction of a cent: 0.04/h -> 300 s cost 0.0033333..., 0.06/h -> 0.005, 0.084/h ->
0.007. The sample month checks the sums against the marts and the generator's ground truth.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest

from helpers.builders import EUR_CONFIG, gpu_seconds, job_row, money, usage_row, usage_run, write_raw, yolocost
from yolocost import finance
from yolocost.errors import YolocostError
from yolocost.finance import FOCUS_MANDATORY_COLUMNS, export_finance, project_totals_cents, total_cents
from yolocost.money import round_cents
from yolocost.resources import shipped_dir

D = Decimal
CENT = D("0.01")
T0 = "2026-03-02T00:00Z"  # a Monday in March (UTC fixtures): no month boundary near
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMERIC = {"BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity", "ConsumedQuantity",
           "ContractedUnitPrice", "ListUnitPrice", "x_Jobs", "x_EffectiveComputeDensity", "x_IdleGpuHours",
           "x_IdleCost", "x_UnroundedCost"}
# the FOCUS v1.2 mandatory columns, as the issue lists them
MANDATORY = ["BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
             "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
             "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
             "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName"]


def cents(value) -> Decimal:
    return D(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows, parsed by the csv module as a consumer would (UTF-8, RFC 4180)."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def export(db, month: str, name: str = "finance.csv"):
    """Run the export of `month` into the fixture's folder; (result, header, rows)."""
    result = export_finance(db.config, month, db.raw_dir.parent / name)
    header, rows = read_csv(result.path)
    return result, header, rows


def by_project(rows: list[dict[str, str]]) -> dict[str, Decimal]:
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        sums[row["SubAccountId"]] += D(row["BilledCost"])
    return dict(sums)


def totals(db, month: str) -> tuple[dict[str, Decimal], Decimal]:
    con = duckdb.connect(str(db.path), read_only=True)
    try:
        return project_totals_cents(con, month), total_cents(con, month)
    finally:
        con.close()


def assert_cells_are_safe(rows: list[dict[str, str]]) -> None:
    """No text cell can run as a spreadsheet formula; numeric cells are plain decimals."""
    for row in rows:
        for column, value in row.items():
            if column in NUMERIC:
                if value != "":
                    D(value)  # parses
                    assert "E" not in value and "e" not in value and not value.startswith("+"), (column, value)
            else:
                assert not value.startswith(FORMULA_START), (column, value)


# =========================================================================== cents that add up


def test_three_projects_at_a_third_of_a_cent_each(built_db):
    """Three GPUs held 5 min each by three projects at 0.04/h: 300 x 0.04 / 3600 = 0.00333...
    each. The marts round rows cumulatively to 9 decimals (g1, g2, g3 in that order):
    0.003333333, 0.006666667 - 0.003333333 = 0.003333334, 0.01 - 0.006666667 = 0.003333333.
    Month total 0.01 exactly. Each project rounded alone is 0.00 (total 0.00, a cent short);
    the largest remainder gives the cent to p-b (0.3333334 cent beats 0.3333333)."""
    usage = [usage_row(T0, "g1", "ja"), usage_row(T0, "g2", "jb"), usage_row(T0, "g3", "jc")]
    jobs = [job_row("ja", project="p-a"), job_row("jb", project="p-b"), job_row("jc", project="p-c")]
    db = built_db(usage, jobs=jobs, prices=[("A100", "0.04")])

    exact = {r["project"]: r["cost"] for r in db.query("SELECT project, cost FROM mart_project_month")}
    assert exact == {"p-a": D("0.003333333"), "p-b": D("0.003333334"), "p-c": D("0.003333333")}
    assert db.value("SELECT total_cost FROM mart_cluster_month") == D("0.01")

    result, header, rows = export(db, "2026-03")
    assert [(r["SubAccountId"], r["BilledCost"], r["x_UnroundedCost"]) for r in rows] == [
        ("p-a", "0.00", "0.003333333"),
        ("p-b", "0.01", "0.003333334"),
        ("p-c", "0.00", "0.003333333"),
    ]
    assert result.total == D("0.01") and result.rows == 3
    projects, total = totals(db, "2026-03")
    assert projects == {"p-a": D("0.00"), "p-b": D("0.01"), "p-c": D("0.00")}
    assert total == D("0.01") == sum(projects.values())
    assert sum(round_cents(v) for v in exact.values()) == D("0.00")  # why reports must not round alone


def hierarchy_db(built_db, prices=(("A100", "0.06"), ("T4", "0.084")), **kwargs):
    """p1: 2026-03-02 A100 0.005 + T4 0.007, 2026-03-03 A100 0.005 = 0.017
    p2: 2026-03-02 A100, three rows = 0.015
    (unallocated): 2026-03-02 T4 0.007                     month total 0.039
    (A100 at 0.06/h: 300 s cost 0.005; T4 at 0.084/h: 0.007; all exact in 9 decimals.)"""
    cluster = kwargs.get("cluster", {}).get("name", "c1")  # the rows are the config's cluster's
    usage = [
        usage_row("2026-03-02T00:00Z", "g1", "j1", cluster=cluster),
        usage_row("2026-03-02T00:00Z", "t1", "j1", model="T4", cluster=cluster),
        usage_row("2026-03-03T00:00Z", "g1", "j1", cluster=cluster),
        *usage_run("2026-03-02T01:00Z", 3, "g2", "j2", util=2.0, cluster=cluster),  # idle: under 5 %
        usage_row("2026-03-02T02:00Z", "t2", None, model="T4", cluster=cluster),
    ]
    jobs = [job_row("j1", project="p1", user="alice.secret", image_tag="train-yolov8-medium-cu118"),
            job_row("j2", project="p2", user="bob.hidden", image_tag="latest")]
    return built_db(usage, jobs=jobs, prices=list(prices), **kwargs)


def test_a_currency_without_cents_is_billed_in_whole_units(built_db):
    """The hierarchy above in yen, a hundred times dearer: rows 0.55, 0.7, 0.55 (p1, 1.8),
    1.65 (p2), 0.7 (unallocated), 4.15 in all. Rounded to whole yen: the total 4; projects
    floored 1 + 1 + 0 take the two missing yen by largest remainder, p1 (0.8) and
    (unallocated) (0.7); p1's rows take theirs by remainder, the T4 row (0.7) and the first
    A100 row (0.55, ahead of the equal later one)."""
    db = hierarchy_db(built_db, prices=(("A100", "6.6"), ("T4", "8.4")), cluster={"currency": "JPY"})
    _, _, rows = export(db, "2026-03")
    got = [(r["SubAccountId"], r["x_ChargeDate"], r["SkuId"], r["BilledCost"], r["BillingCurrency"]) for r in rows]
    assert got == [
        ("p1", "2026-03-02", "A100", "1", "JPY"),
        ("p1", "2026-03-02", "T4", "1", "JPY"),
        ("p1", "2026-03-03", "A100", "0", "JPY"),
        ("p2", "2026-03-02", "A100", "1", "JPY"),
        ("(unallocated)", "2026-03-02", "T4", "1", "JPY"),
    ]
    projects, total = totals(db, "2026-03")
    assert projects == {"p1": D("2"), "p2": D("1"), "(unallocated)": D("1")} and total == D("4")


def test_a_currency_with_three_decimals_is_billed_in_thousandths(built_db):
    """The same rows in KWD (fils, 3 decimals): 0.0005 per A100 row, 0.0007 per T4 row."""
    db = hierarchy_db(built_db, prices=(("A100", "0.006"), ("T4", "0.0084")), cluster={"currency": "KWD"})
    _, _, rows = export(db, "2026-03")
    assert [r["BilledCost"] for r in rows] == ["0.001", "0.001", "0.000", "0.001", "0.001"]
    assert totals(db, "2026-03") == ({"p1": D("0.002"), "p2": D("0.001"), "(unallocated)": D("0.001")}, D("0.004"))


def test_rows_are_rounded_within_their_project_and_projects_within_the_total(built_db):
    """Projects first: exact 0.017, 0.015, 0.007 (sum 0.039 -> 0.04); floors 0.01, 0.01, 0.00
    leave two cents for the largest remainders, p1 (0.7 cent) and (unallocated) (0.7 cent,
    p2 has 0.5): 0.02, 0.01, 0.01. Rounded alone they would print 0.02 + 0.02 + 0.01 = 0.05.
    Then p1's rows towards 0.02: remainders 0.5 (03-02 A100), 0.7 (03-02 T4), 0.5 (03-03 A100):
    the T4 row and the first A100 row get the cents."""
    db = hierarchy_db(built_db)
    _, header, rows = export(db, "2026-03")
    got = [(r["SubAccountId"], r["x_ChargeDate"], r["SkuId"], r["BilledCost"], r["x_UnroundedCost"]) for r in rows]
    assert got == [
        ("p1", "2026-03-02", "A100", "0.01", "0.005000000"),
        ("p1", "2026-03-02", "T4", "0.01", "0.007000000"),
        ("p1", "2026-03-03", "A100", "0.00", "0.005000000"),
        ("p2", "2026-03-02", "A100", "0.01", "0.015000000"),
        ("(unallocated)", "2026-03-02", "T4", "0.01", "0.007000000"),
    ]
    projects, total = totals(db, "2026-03")
    assert projects == {"p1": D("0.02"), "p2": D("0.01"), "(unallocated)": D("0.01")}
    assert by_project(rows) == projects
    assert total == D("0.04") == cents(db.value("SELECT total_cost FROM mart_cluster_month"))
    assert sum(D(r["BilledCost"]) for r in rows) == total
    for cost_field in ("ListCost", "ContractedCost", "EffectiveCost"):
        assert [r[cost_field] for r in rows] == [r["BilledCost"] for r in rows]


def test_focus_columns_and_values(built_db):
    """Every mandatory FOCUS column, with the values the module documents."""
    db = hierarchy_db(built_db, cluster={"name": "gpu-west", "currency": "EUR"})
    _, header, rows = export(db, "2026-03")
    assert set(MANDATORY) <= set(header)
    assert list(FOCUS_MANDATORY_COLUMNS) == MANDATORY
    assert {"ConsumedQuantity", "ConsumedUnit", "SkuId", "SubAccountId"} <= set(header)
    assert len(header) == len(set(header))
    assert all(c in MANDATORY or c.startswith("x_") or c in finance.FOCUS_OTHER_COLUMNS for c in header)
    for row in rows:
        assert row["ChargeCategory"] == "Usage"
        assert row["ChargeClass"] == ""  # null: a regular charge, no correction
        assert row["BillingCurrency"] == "EUR"
        assert row["BillingAccountId"] == row["BillingAccountName"] == "gpu-west"
        assert row["ProviderName"] == row["PublisherName"] == row["InvoiceIssuerName"] == "gpu-west"
        assert row["BillingPeriodStart"] == "2026-03-01T00:00:00Z"
        assert row["BillingPeriodEnd"] == "2026-04-01T00:00:00Z"
        assert row["PricingUnit"] == row["ConsumedUnit"] == "GPU-Hours"
        assert row["PricingQuantity"] == row["ConsumedQuantity"]
        assert row["ServiceCategory"] == "AI and Machine Learning"
        assert row["ServiceName"] == "GPU training cluster"
        assert row["SubAccountName"] == row["SubAccountId"]
    first, _, _, p2, unallocated = rows
    assert first["ChargePeriodStart"] == "2026-03-02T00:00:00Z" and first["ChargePeriodEnd"] == "2026-03-03T00:00:00Z"
    assert first["ChargeDescription"] == "GPU-hours on A100 for project p1 on 2026-03-02"
    assert first["PricingQuantity"] == "0.083333333"  # 300 s / 3600, 9 decimals (the ledger's quantity)
    assert first["x_Bucket"] == "project" and first["x_Jobs"] == "1"
    assert first["x_ImageTag"] == "train-yolov8-medium-cu118"
    assert first["x_EffectiveComputeDensity"] == "1.000000"  # util 80 %: every second busy
    assert first["x_IdleGpuHours"] == "0.000000" and first["x_IdleCost"] == "0.00"
    assert first["ListUnitPrice"] == first["ContractedUnitPrice"] == "0.06"  # A100 at 0.06 per GPU-hour, as configured
    assert first["SkuId"] == first["x_GpuModel"] == "A100" and first["SkuPriceId"] == "A100" and first["x_PricePeriod"].startswith("A100 from ")
    assert first["x_ChargeKind"] == "gpu" and first["x_Allocation"] == "usage"
    assert json.loads(first["Tags"]) == {"project": "p1", "yolocost/bucket": "project", "yolocost/gpu_model": "A100",
                                         "yolocost/charge_kind": "gpu", "yolocost/allocation": "usage"}
    # p2: 3 rows of 300 s = 0.25 GPU-hours, all idle (util 2 %): idle cost is its whole cost,
    # exact 0.015; the row bills 0.01 (p2's cent, see the hierarchy) and idle is never more
    # than the cost it is part of (rounded alone, 0.015 would print 0.02)
    assert p2["PricingQuantity"] == "0.250000000"
    assert p2["x_EffectiveComputeDensity"] == "0.000000"
    assert p2["BilledCost"] == "0.01"
    assert p2["x_IdleGpuHours"] == "0.250000" and p2["x_IdleCost"] == "0.01"
    assert p2["x_ImageTag"] == "latest"
    assert unallocated["x_Bucket"] == "unallocated" and unallocated["SubAccountId"] == "(unallocated)"
    assert unallocated["ChargeDescription"] == "Unallocated capacity: GPU-hours on T4 held by no job on 2026-03-02"
    assert unallocated["x_Jobs"] == "0" and unallocated["x_ImageTag"] == ""
    assert unallocated["x_IdleGpuHours"] == "" and unallocated["x_IdleCost"] == ""
    assert_cells_are_safe(rows)


def test_unlabeled_jobs_have_their_own_rows(built_db):
    """A job with no project label: SubAccountId '(unlabeled)', never dropped."""
    usage = usage_run(T0, 12, "g1", "j1") + usage_run(T0, 12, "g2", "j2")
    db = built_db(usage, jobs=[job_row("j1", project="p1"), job_row("j2", project=None)])
    _, _, rows = export(db, "2026-03")
    assert [(r["SubAccountId"], r["x_Bucket"], r["BilledCost"]) for r in rows] == [
        ("p1", "project", "2.93"),  # 1 h x 2.93
        ("(unlabeled)", "unlabeled", "2.93"),
    ]
    assert rows[1]["ChargeDescription"] == "GPU-hours on A100 for jobs without a project label on 2026-03-02"


def test_energy_is_a_charge_row_of_its_own(built_db):
    """One 5-min row at 0.06/h (0.005) that used 1 kWh (3.6e9 mJ) at 0.21/kWh (0.21): the
    project's 0.215 bills 0.22 (half up), shared over its two charges by largest remainder:
    GPU time 0.005 -> 0.01 (remainder 0.5), energy 0.21 exactly. Each row has its own unit
    and price, so BilledCost is within a cent of ListUnitPrice x PricingQuantity."""
    db = built_db([usage_row(T0, "g1", "j1", energy_mj=3_600_000_000)], jobs=[job_row("j1")],
                  prices=[("A100", "0.06")], energy_prices=["0.21"])
    result, _, rows = export(db, "2026-03")
    gpu, energy = rows
    assert [(r["x_ChargeKind"], r["BilledCost"], r["x_UnroundedCost"], r["PricingQuantity"], r["PricingUnit"],
             r["ListUnitPrice"], r["SkuId"]) for r in rows] == [
        ("gpu", "0.01", "0.005000000", "0.083333333", "GPU-Hours", "0.06", "A100"),
        ("energy", "0.21", "0.210000000", "1.000000000", "kWh", "0.21", "Energy"),
    ]
    assert energy["x_GpuModel"] == "A100" and energy["SkuPriceId"] == "Energy" and energy["x_PricePeriod"].startswith("energy from ")
    assert energy["ChargeDescription"] == "Energy drawn by A100 for project p1 on 2026-03-02"
    assert energy["x_IdleCost"] == "" and gpu["x_IdleCost"] == "0.00"
    for row in rows:
        assert abs(D(row["BilledCost"]) - D(row["ListUnitPrice"]) * D(row["PricingQuantity"])) < CENT
    assert result.total == D("0.22") == cents(db.value("SELECT total_cost FROM mart_cluster_month"))


def test_mig_instances_count_their_share_of_a_gpu(built_db):
    """A 3g.40gb instance held 1 h: 12 rows of 300 x 3/7 = 128.571429 s, 1542.857148 s in all
    = 0.428571 GPU-hours; cost 1542.857148 x 2.93 / 3600 = 1.255714... -> 1.26."""
    db = built_db(usage_run(T0, 12, "mig-1", "j1", mig="3g.40gb"), jobs=[job_row("j1")])
    _, _, (row,) = export(db, "2026-03")
    seconds = 12 * gpu_seconds(300 * D(3) / D(7))
    assert seconds == D("1542.857148")
    assert row["PricingQuantity"] == "0.428571430"  # 1542.857148 s / 3600, half up
    assert row["x_UnroundedCost"] == str(money(seconds * D("2.93") / 3600))
    assert row["BilledCost"] == "1.26"


def test_days_and_billing_period_are_cut_in_the_configured_time_zone(built_db):
    """Europe/Berlin: 2026-09-30T22:00Z is local midnight of 1 October (CEST, +2), so it bills
    in October; 25 October has 25 hours (CEST ends); 2026-10-31T23:00Z is 1 November (CET, +1).
    FOCUS date/times are UTC instants."""
    usage = [usage_row("2026-09-30T22:00Z", "g1", "j1"), usage_row("2026-10-25T10:00Z", "g1", "j1"),
             usage_row("2026-10-31T22:55Z", "g1", "j1"), usage_row("2026-10-31T23:00Z", "g1", "j1")]
    db = built_db(usage, jobs=[job_row("j1")], timezone="Europe/Berlin")
    _, _, rows = export(db, "2026-10")
    assert [(r["x_ChargeDate"], r["ChargePeriodStart"], r["ChargePeriodEnd"]) for r in rows] == [
        ("2026-10-01", "2026-09-30T22:00:00Z", "2026-10-01T22:00:00Z"),
        ("2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"),
        ("2026-10-31", "2026-10-30T23:00:00Z", "2026-10-31T23:00:00Z"),
    ]
    assert {(r["BillingPeriodStart"], r["BillingPeriodEnd"]) for r in rows} == {
        ("2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z")}
    assert {r["x_TimeZone"] for r in rows} == {"Europe/Berlin"}
    _, _, november = export(db, "2026-11", "nov.csv")
    assert [(r["x_ChargeDate"], r["BillingPeriodStart"], r["BillingPeriodEnd"]) for r in november] == [
        ("2026-11-01", "2026-10-31T23:00:00Z", "2026-11-30T23:00:00Z")]


# =========================================================================== hostile labels, names


def test_hostile_labels_are_neutralized_and_round_trip(built_db):
    """Labels are data: a formula gets a leading apostrophe, HTML stays text, quotes, commas
    and newlines survive RFC 4180 quoting, and numbers stay numbers."""
    hostile = {
        "j1": '=HYPERLINK("x")',
        "j2": "<script>alert(1)</script>",
        "j3": "+SUM(1,2)",
        "j4": 'a,"b"\nc',
    }
    usage = [usage_row(T0, f"g{i}", job) for i, job in enumerate(hostile)]
    usage.append(usage_row(T0, "g9", "j5", model="@evil"))
    jobs = [job_row(job, project=project, image_tag="-1+2") for job, project in hostile.items()]
    jobs.append(job_row("j5", project="p5", image_tag="@SUM(A1)"))
    db = built_db(usage, jobs=jobs, prices=[("A100", "2.93"), ("@evil", "1.00")])
    result, _, rows = export(db, "2026-03")
    text = result.path.read_text(encoding="utf-8")

    accounts = {r["SubAccountId"] for r in rows}
    assert "'=HYPERLINK(\"x\")" in accounts and '=HYPERLINK("x")' not in accounts
    assert "\"'=HYPERLINK(\"\"x\"\")\"" in text  # the raw cell: apostrophe, quotes doubled
    assert "<script>alert(1)</script>" in accounts  # CSV is not HTML: kept as text, harmless
    assert "'+SUM(1,2)" in accounts
    assert 'a,"b"\nc' in accounts
    assert {r["x_ImageTag"] for r in rows} == {"'-1+2", "'@SUM(A1)"}
    assert "'@evil" in {r["SkuId"] for r in rows}
    assert_cells_are_safe(rows)
    assert sum(D(r["BilledCost"]) for r in rows) == result.total


def test_no_user_or_job_names_in_the_file(built_db):
    db = hierarchy_db(built_db)
    result, _, _ = export(db, "2026-03")
    text = result.path.read_text(encoding="utf-8")
    for name in ("alice.secret", "bob.hidden", "j1", "j2"):
        assert name not in text


def test_same_database_gives_the_same_bytes(built_db):
    """Two exports, and an export after loading the same data again, are byte-identical:
    deterministic order, no time of writing in the file."""
    db = hierarchy_db(built_db)
    first = export(db, "2026-03", "a.csv")[0].path.read_bytes()
    second = export(db, "2026-03", "b.csv")[0].path.read_bytes()
    db.load()
    third = export(db, "2026-03", "c.csv")[0].path.read_bytes()
    assert first == second == third
    assert first.startswith(b"BilledCost,")  # UTF-8 without a BOM
    assert first.endswith(b"\r\n") and first.count(b"\r\n") == 6  # header + 5 rows, RFC 4180 line ends


def test_neutralizing_leaves_negative_numbers_numbers():
    row = {c: "" for c in finance.COLUMNS}
    row.update(BilledCost="-1.50", x_UnroundedCost="-1.500000000", SubAccountId="-1+2")
    (header, line) = finance.to_csv([row]).splitlines()
    cells = next(csv.reader(io.StringIO(line)))
    values = dict(zip(header.split(","), cells))
    assert values["BilledCost"] == "-1.50" and values["x_UnroundedCost"] == "-1.500000000"
    assert values["SubAccountId"] == "'-1+2"


# =========================================================================== errors


def test_month_without_data_or_malformed_is_one_clear_error(built_db):
    db = hierarchy_db(built_db)
    with pytest.raises(YolocostError, match=r"no usage data for 2026-04 .*months held: 2026-03"):
        export_finance(db.config, "2026-04", db.raw_dir.parent / "x.csv")
    with pytest.raises(YolocostError, match="must read YYYY-MM"):
        export_finance(db.config, "2026-3", db.raw_dir.parent / "x.csv")
    assert not (db.raw_dir.parent / "x.csv").exists()


def test_missing_database_is_one_clear_error(built_db, tmp_path):
    db = hierarchy_db(built_db)
    with pytest.raises(YolocostError, match="database not found"):
        export_finance(db.config.with_database(tmp_path / "none.duckdb"), "2026-03", tmp_path / "x.csv")


def test_default_path_is_in_the_report_folder(built_db, tmp_path):
    db = hierarchy_db(built_db, reports={"output_dir": str(tmp_path / "rep")})
    result = export_finance(db.config, "2026-03")
    assert result.path == tmp_path / "rep" / "2026-03" / "finance-2026-03.csv"
    assert result.path.is_file() and result.rows == 5


# =========================================================================== the sample month


@pytest.fixture(scope="module")
def sample_export(sample_db, tmp_path_factory):
    result = export_finance(sample_db.config, "2026-10", tmp_path_factory.mktemp("finance") / "finance.csv")
    header, rows = read_csv(result.path)
    return result, header, rows


def test_sample_month_has_every_focus_column_and_the_finance_grain(sample_db, sample_export):
    result, header, rows = sample_export
    assert set(MANDATORY) <= set(header)
    daily = sample_db.query("SELECT project, gpu_model, day FROM mart_daily WHERE month = '2026-10'")
    charges = sample_db.value("SELECT count(*) FROM ledger_charges WHERE month = '2026-10'")
    keys = [(r["SubAccountId"], r["x_GpuModel"], r["x_ChargeDate"], r["x_ChargeKind"], r["x_PricePeriod"]) for r in rows]
    assert len(keys) == len(set(keys)) == charges == result.rows
    assert {k[:3] for k in keys} == {(d["project"], d["gpu_model"], d["day"].isoformat()) for d in daily}
    assert {r["x_ChargeKind"] for r in rows} == {"gpu", "energy"}
    # the A100 price changes on 15 Oct (sample config): two price periods, each billed at its price
    a100 = {(r["x_PricePeriod"], r["ListUnitPrice"]) for r in rows if r["SkuId"].startswith("NVIDIA A100")}
    assert len(a100) == 2
    assert {r["x_Bucket"] for r in rows} == {"project", "unlabeled", "unallocated"}
    assert len({r["x_ChargeDate"] for r in rows}) == 31
    assert_cells_are_safe(rows)


def test_sample_month_adds_up_to_the_cluster_and_each_project(sample_db, sample_export):
    result, _, rows = sample_export
    month = sample_db.one("SELECT * FROM mart_cluster_month WHERE month = '2026-10'")
    billed = sum(D(r["BilledCost"]) for r in rows)
    projects, total = totals(sample_db, "2026-10")
    assert billed == total == result.total == cents(month["total_cost"]) == sum(projects.values())
    assert by_project(rows) == projects
    exact = {r["project"]: r["cost"] for r in sample_db.query("SELECT project, cost FROM mart_project_month "
                                                               "WHERE month = '2026-10'")}
    assert set(projects) == set(exact)
    for project, value in projects.items():
        assert abs(value - exact[project]) < CENT  # never more than a cent from the exact figure
    for row in rows:
        assert abs(D(row["BilledCost"]) - D(row["x_UnroundedCost"])) < CENT
    hours = sum(D(r["PricingQuantity"]) for r in rows if r["x_ChargeKind"] == "gpu")
    assert abs(hours - D(str(month["capacity_gpu_hours"]))) < D("0.000001") * len(rows)


def test_sample_month_matches_the_ground_truth_in_cents(sample_export):
    truth = json.loads((shipped_dir("sample_data") / "ground_truth.json").read_text(encoding="utf-8"))["months"]["2026-10"]
    result, _, rows = sample_export
    assert result.total == cents(D(truth["capacity_cost"]) + D(truth["energy_cost"]))
    sums = by_project(rows)
    for project, figures in truth["projects"].items():
        assert abs(sums[project] - D(figures["gpu_cost"]) - D(figures["energy_cost"])) < CENT


def test_sample_month_names_no_user_and_no_job(sample_db, sample_export):
    result, _, _ = sample_export
    text = result.path.read_text(encoding="utf-8")
    users = [r["user_name"] for r in sample_db.query("SELECT DISTINCT user_name FROM jobs WHERE user_name IS NOT NULL")]
    jobs = [r["job_id"] for r in sample_db.query("SELECT job_id FROM jobs")]
    assert len(users) >= 12 and len(jobs) >= 150
    assert "视觉质检" in text  # names outside ASCII are written as UTF-8
    for name in users + jobs:
        assert name not in text


def test_sample_month_export_is_byte_identical(sample_db, sample_export, tmp_path):
    again = export_finance(sample_db.config, "2026-10", tmp_path / "again.csv")
    assert again.path.read_bytes() == sample_export[0].path.read_bytes()


# =========================================================================== the command


CONFIG = EUR_CONFIG



def test_command_writes_the_csv_and_reports_errors_in_one_line(tmp_path):
    (tmp_path / "yolocost.toml").write_text(CONFIG)
    usage = [usage_row(T0, "g1", "ja"), usage_row(T0, "g2", "jb"), usage_row(T0, "g3", "jc")]
    jobs = [job_row("ja", project='=HYPERLINK("x")'), job_row("jb", project="p-b"), job_row("jc", project="p-c")]
    write_raw(tmp_path / "raw", usage, jobs)
    assert yolocost("load", "raw", cwd=tmp_path).returncode == 0

    done = yolocost("export", "finance", "--month", "2026-03", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "reports" / "2026-03" / "finance-2026-03.csv"
    assert str(path) in done.stdout and "0.01 EUR" in done.stdout
    _, rows = read_csv(path)
    # as in the first test, with g1's project sorted first: '=HYPERLINK("x")' < 'p-b' < 'p-c'
    assert [(r["SubAccountId"], r["BilledCost"]) for r in rows] == [
        ("'=HYPERLINK(\"x\")", "0.00"), ("p-b", "0.01"), ("p-c", "0.00")]

    out = yolocost("export", "finance", "--month", "2026-03", "-o", "out/f.csv", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out" / "f.csv").read_bytes() == path.read_bytes()

    for args, needle in ((["--month", "2026-04"], "no usage data for 2026-04"), (["--month", "march"], "must read YYYY-MM")):
        bad = yolocost("export", "finance", *args, cwd=tmp_path)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        errors = [line for line in bad.stderr.splitlines() if line.startswith("error")]
        assert len(errors) == 1 and needle in errors[0], bad.stderr
    missing = yolocost("export", "finance", cwd=tmp_path)
    assert missing.returncode == 2 and "--month" in missing.stderr

    for cmd in (["export"], ["export", "finance"]):
        helped = yolocost(*cmd, "--help", cwd=tmp_path)
        assert helped.returncode == 0 and "Example" in helped.stdout


# --------------------------------------------------------------------------- a month of every kind of row

MIXED_PRICES = [("A100", "2026-01-01", "2.93"), ("A100", "2026-03-03", "2.61"), ("A100 1g.10gb", "2026-01-01", "0.55"),
                ("T4", "2026-01-01", "0.35")]
MIXED_JOBS = [job_row("j1", project="p1"), job_row("j2", project="p2"), job_row("j3", project="p2"),
              job_row("j4", project=None)]
JOULES_300W = 300 * 300 * 1000  # 300 W for a 300-s interval, in mJ


def mixed_usage() -> list[dict]:
    """2-3 March 2026 (UTC): the A100 price drops at midnight of 3 March; g1 time-sliced by j1 and
    j2 (150 s each per interval); a 3g.40gb MIG instance (3/7 of a GPU) for j3 and an explicitly
    priced 1g.10gb for j1; g2 idle and held by nobody part of the time; a T4 for a job without
    a project. Every row draws 300 W (energy at 0.21 per kWh)."""
    e = {"energy_mj": JOULES_300W}
    half = {"seconds": 150, "energy_mj": JOULES_300W // 2}
    return (usage_run("2026-03-02T20:00Z", 96, "g1", "j1", **half) + usage_run("2026-03-02T20:00Z", 96, "g1", "j2", **half)
            + usage_run("2026-03-02T21:00Z", 60, "m1", "j3", mig="3g.40gb", host="h2", **e)
            + usage_run("2026-03-02T21:00Z", 50, "m2", "j1", mig="1g.10gb", host="h2", index=1, **e)
            + usage_run("2026-03-02T18:00Z", 60, "g2", None, util=0.0, index=1, **e)
            + usage_run("2026-03-02T23:00Z", 30, "g2", "j2", index=1, **e)
            + usage_run("2026-03-02T22:00Z", 40, "t1", "j4", model="T4", host="h3", **e))


@pytest.fixture(scope="module", params=["none", "proportional"])
def mixed_db(request, tmp_path_factory):
    from helpers.builders import build_db

    folder = tmp_path_factory.mktemp(f"mixed-{request.param}")
    return build_db(folder, mixed_usage(), jobs=MIXED_JOBS, prices=MIXED_PRICES, energy_prices=["0.21"],
                    allocation={"unallocated": request.param})


def _export_rows(db, month: str, version: str, folder: Path) -> list[dict[str, str]]:
    result = export_finance(db.config, month, folder / f"finance-{version}.csv", focus_version=version)
    return read_csv(result.path)[1]


def _intervals_per_day(db, month: str) -> dict[str, int]:
    return {r["day"].isoformat(): r["n"] for r in db.query(
        "SELECT day, count(*) AS n FROM int_usage_priced WHERE month = ? GROUP BY day", [month])}


def assert_rows_multiply_out(rows: list[dict[str, str]], intervals: dict[str, int], minor_unit: Decimal) -> None:
    """docs/finance-csv.md: |ListUnitPrice x PricingQuantity - ListCost| < 1 minor unit + 1e-9 per
    interval priced in the row (bounded here by the intervals of the row's day)."""
    for row in rows:
        product = D(row["ListUnitPrice"]) * D(row["PricingQuantity"])
        bound = minor_unit + D("0.000000001") * intervals[row["x_ChargeDate"]]
        assert abs(product - D(row["ListCost"])) < bound, row
        assert D(row["ContractedUnitPrice"]) * D(row["PricingQuantity"]) - D(row["ContractedCost"]) < bound


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_every_row_of_the_sample_month_multiplies_out(sample_db, version, tmp_path):
    rows = _export_rows(sample_db, "2026-10", version, tmp_path)
    assert_rows_multiply_out(rows, _intervals_per_day(sample_db, "2026-10"), CENT)
    # the A100 price changes on 15 Oct: the day's rows are split at it, each at its own price
    a100 = {(r["x_PricePeriod"], r["ListUnitPrice"]) for r in rows
            if r["x_GpuModel"].startswith("NVIDIA A100") and r["x_ChargeKind"] == "gpu"}
    assert a100 == {("NVIDIA A100-SXM4-80GB from 2026-01-01", "2.93"), ("NVIDIA A100-SXM4-80GB from 2026-10-15", "2.61")}


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_every_row_of_a_mixed_month_multiplies_out(mixed_db, version, tmp_path):
    rows = _export_rows(mixed_db, "2026-03", version, tmp_path)
    assert_rows_multiply_out(rows, _intervals_per_day(mixed_db, "2026-03"), CENT)
    prices = {(r["x_PricePeriod"], r["ListUnitPrice"]) for r in rows}
    assert ("A100 from 2026-01-01", "2.93") in prices and ("A100 from 2026-03-03", "2.61") in prices
    assert ("A100 1g.10gb from 2026-01-01", "0.55") in prices and ("energy from 1970-01-01", "0.21") in prices


def test_sku_columns_name_the_meter_the_price_and_its_properties(mixed_db, tmp_path):
    """SkuMeter says what is metered; SkuPriceDetails is per PricingUnit: a GPU-hour is one GPU,
    the explicitly priced MIG profile one instance of it, energy has none; SkuId of that profile
    is the profile; one InvoiceId for the month."""
    rows = _export_rows(mixed_db, "2026-03", "1.2", tmp_path)
    seen = {(r["x_ChargeKind"], r["SkuId"], r["SkuMeter"], r["SkuPriceDetails"]) for r in rows}
    assert seen == {
        ("gpu", "A100", "GPU Time", '{"GpuCount":1}'),
        ("gpu", "A100 1g.10gb", "GPU Time", '{"x_MigProfile":"1g.10gb"}'),
        ("gpu", "T4", "GPU Time", '{"GpuCount":1}'),
        ("energy", "Energy", "Energy", ""),
    }
    assert {r["InvoiceId"] for r in rows} == {"c1-2026-03"}
    # the 1g.10gb profile is priced per instance-hour: 50 intervals of 300 s from 21:00 on 2 March,
    # 36 of them that day (3.000000000 instance-hours at 0.55) and 14 on 3 March
    mig = [(r["x_ChargeDate"], r["PricingUnit"], r["ConsumedUnit"], r["PricingQuantity"]) for r in rows
           if r["SkuId"] == "A100 1g.10gb"]
    assert mig == [("2026-03-02", "Instance-Hours", "Instance-Hours", "3.000000000"),
                   ("2026-03-03", "Instance-Hours", "Instance-Hours", "1.166666667")]
    assert {r["PricingUnit"] for r in rows if r["SkuId"] in ("A100", "T4")} == {"GPU-Hours"}
    # p2's A100 time on 2 March at 2.93: half of g1 for 48 intervals (2 h), g2 for 12 (1 h) and the
    # 3g.40gb instance for 36, each 300 s x 3/7 = 128.571429 s (6 decimals): 4628.571444 s =
    # 1.285714290 h; 4.285714290 GPU-hours in all
    p2 = [r for r in rows if r["SubAccountId"] == "p2" and r["x_ChargeKind"] == "gpu" and r["x_ChargeDate"] == "2026-03-02"
          and r["x_Allocation"] == "usage"]
    assert [(r["x_PricePeriod"], r["PricingQuantity"]) for r in p2] == [("A100 from 2026-01-01", "4.285714290")]


def _origins(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        out[row["x_OriginChargeId"]].append(row)
    return out


FOCUS_13_ALLOCATED = {"AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName",
                      "AllocatedTags"}
SUMMABLE = {"BilledCost", "ListCost", "ContractedCost", "EffectiveCost", "PricingQuantity", "ConsumedQuantity"}


def test_focus_13_allocates_each_gpu_models_daily_capacity_exactly(mixed_db, tmp_path):
    """Each origin charge (a GPU model's capacity of a day at one price, GPU time or energy):
    its AllocatedRatios add up to exactly 1, its allocated rows' cents to the 1.2 rows of the
    same day, model, charge and price, every FOCUS dimension and price is the origin's, capacity
    nobody held has no AllocatedResourceId, and the payers' cents are the projects' totals."""
    rows12 = _export_rows(mixed_db, "2026-03", "1.2", tmp_path)
    rows13 = _export_rows(mixed_db, "2026-03", "1.3", tmp_path)
    assert len(rows12) == len(rows13)
    flat = defaultdict(D)
    for r in rows12:
        flat[(r["x_ChargeDate"], r["x_GpuModel"], r["x_ChargeKind"], r["x_PricePeriod"])] += D(r["BilledCost"])
    origins = _origins(rows13)
    assert len(origins) == len(flat)
    shared_policy = mixed_db.config.unallocated_policy == "proportional"
    for origin, members in origins.items():
        ratios = [json.loads(r["AllocatedMethodDetails"], parse_float=D) for r in members]
        assert sum(d["Elements"][0]["AllocatedRatio"] for d in ratios) == 1, origin
        assert {d["x_OriginChargeId"] for d in ratios} == {origin}
        first = members[0]
        key = (first["x_ChargeDate"], first["x_GpuModel"], first["x_ChargeKind"], first["x_PricePeriod"])
        assert sum(D(r["BilledCost"]) for r in members) == flat[key], origin
        for column in first:
            if column.startswith("x_") or column in FOCUS_13_ALLOCATED or column in SUMMABLE:
                continue
            assert {r[column] for r in members} == {first[column]}, (origin, column)
        for r, d in zip(members, ratios):
            element = d["Elements"][0]
            assert element["UsageQuantity"] == D(r["PricingQuantity"]) and element["UsageUnit"] == r["PricingUnit"]
            unallocated = r["x_Bucket"] == "unallocated"
            assert (r["AllocatedResourceId"] == "") == unallocated and r["AllocatedResourceName"] == r["AllocatedResourceId"]
            tags = json.loads(r["AllocatedTags"])  # the job's own label only: none made up for the others
            assert tags.get("project") == (r["AllocatedResourceId"] if r["x_Bucket"] == "project" else None)
            assert tags["yolocost/bucket"] == r["x_Bucket"] and tags["yolocost/allocation"] == r["x_Allocation"]
        kinds = {r["x_Allocation"] for r in members}
        shared = "share of unallocated capacity" in kinds
        assert shared <= shared_policy
        assert {r["AllocatedMethodId"] for r in members} == {
            ("HeldGpuTime" if first["x_ChargeKind"] == "gpu" else "MeteredEnergy") + ("UnallocatedShared" if shared else "")}
        assert first["SubAccountId"] == "" and json.loads(first["Tags"]) == {
            "yolocost/gpu_model": first["x_GpuModel"], "yolocost/charge_kind": first["x_ChargeKind"]}
    payers = defaultdict(D)
    for r in rows13:
        payers[r["AllocatedResourceName"] or "(unallocated)"] += D(r["BilledCost"])
    projects, total = totals(mixed_db, "2026-03")
    assert {k: v for k, v in payers.items() if v or k in projects} == projects
    assert sum(payers.values()) == total
    if shared_policy:  # nobody-held g2 time on 2 March was shared over p1 and p2 by their A100-hours
        assert any(r["x_Allocation"] == "share of unallocated capacity" for r in rows13)


def test_focus_version_is_checked(built_db, tmp_path):
    db = hierarchy_db(built_db)
    with pytest.raises(YolocostError, match="FOCUS version '1.4' is not one yolocost writes"):
        export_finance(db.config, "2026-03", tmp_path / "f.csv", focus_version="1.4")
    assert not (tmp_path / "f.csv").exists()


def test_the_configured_focus_version_is_what_report_and_export_write(built_db, tmp_path):
    """[reports] focus_version = "1.3": `report` writes the month folder's CSV in 1.3, `export
    finance` without --focus-version writes the same bytes, and --focus-version 1.2 still gives 1.2."""
    from yolocost.report import render_reports

    db = hierarchy_db(built_db, reports={"focus_version": "1.3", "output_dir": str(tmp_path / "reports")})
    assert db.config.focus_version == "1.3"
    render_reports(db.config, "2026-03", ["admin"], ["csv"])
    folder_csv = tmp_path / "reports" / "2026-03" / "finance-2026-03.csv"
    exported = export_finance(db.config, "2026-03", tmp_path / "export.csv")
    assert folder_csv.read_bytes() == exported.path.read_bytes()
    header = read_csv(exported.path)[0]
    assert "AllocatedMethodId" in header and "HostProviderName" in header
    header12 = read_csv(export_finance(db.config, "2026-03", tmp_path / "f12.csv", focus_version="1.2").path)[0]
    assert "AllocatedMethodId" not in header12 and header12[:len(finance.COLUMNS)] == list(finance.COLUMNS)


def test_an_unknown_configured_focus_version_is_one_config_error(tmp_path):
    from helpers.builders import make_config
    from yolocost.config import ConfigError

    with pytest.raises(ConfigError, match=r"reports.focus_version: must be 1.2 or 1.3, got '1.4'"):
        make_config(tmp_path, reports={"focus_version": "1.4"})
    assert make_config(tmp_path, reports={"focus_version": 1.3}).focus_version == "1.3"  # unquoted in the TOML


def test_allocation_numbers_are_plain_decimals_even_when_zero(built_db, tmp_path):
    """A payer whose GPU drew no energy beside one that did: its AllocatedRatio and UsageQuantity
    are 0, written as plain decimals as every number in the file (never 0E-12)."""
    usage = (usage_run("2026-03-02T00:00Z", 12, "g1", "j1", energy_mj=JOULES_300W)
             + usage_run("2026-03-02T00:00Z", 12, "g2", "j2", energy_mj=0, index=1))
    db = built_db(usage, jobs=[job_row("j1", project="p1"), job_row("j2", project="p2")],
                  prices=[("A100", "1.00")], energy_prices=["0.21"])
    rows = _export_rows(db, "2026-03", "1.3", tmp_path)
    energy = {r["AllocatedResourceId"]: r["AllocatedMethodDetails"] for r in rows if r["x_ChargeKind"] == "energy"}
    assert '"AllocatedRatio":0.000000000000,' in energy["p2"] and '"UsageQuantity":0.000000000,' in energy["p2"]
    assert '"AllocatedRatio":1.000000000000,' in energy["p1"]
    assert not re.search(r"\d[eE][-+]?\d", "".join(r["AllocatedMethodDetails"] for r in rows))
