"""The finance CSV against the FinOps Foundation's focus-validator (FOCUS 1.2).

The validator runs in its own Python 3.12 venv (`make focus-validator`), offline, with the
applicability criteria docs/focus-validator.md says the CSV has; a failed rule fails the test
unless that doc lists it as a defect of the validator (tests/helpers/focuscheck.py). Until the CSV
meets every other rule these tests fail, naming the rules: that is their job.

Cases: the demo month (the bundled sample, via `yolocost export finance`, whose default is
FOCUS 1.2), a small hand-made month with a price change, MIG instances (one priced on its
own, one as its share of a GPU), a time-sliced GPU, energy, unlabeled jobs and shared
unallocated capacity; and broken copies of the demo CSV, which must fail.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from helpers import focuscheck
from helpers.builders import intervals, job_row, usage_row
from yolocost.finance import export_finance

MONTH = "2026-10"


@pytest.fixture(scope="module")
def validator():
    focuscheck.fail_without_validator()


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def write_rows(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\r\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def demo_csv(sample_db, tmp_path_factory, cli) -> Path:
    """The demo month's finance CSV as the CLI writes it by default (FOCUS 1.2)."""
    out = tmp_path_factory.mktemp("focus-demo") / "finance.csv"
    proc = cli("--config", str(sample_db.raw_dir / "yolocost.toml"), "--db", str(sample_db.path), "export", "finance",
               "--month", MONTH, "-o", str(out), cwd=out.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def demo_verdict(validator, demo_csv, tmp_path_factory) -> focuscheck.Verdict:
    return focuscheck.validate(demo_csv, tmp_path_factory.mktemp("focus-demo-run"))


# =========================================================================== the doc


def test_the_doc_decides_every_criterion_and_lists_only_rules_the_validator_has(validator):
    model = focuscheck.rule_model()
    criteria = focuscheck.criteria_table()
    assert sorted(criteria) == sorted(model["ApplicabilityCriteria"])  # a new criterion needs a decision
    tables = [focuscheck.doc_table("Validator defects"), focuscheck.doc_table(focuscheck.ZERO_DECIMAL_DEFECTS)]
    listed = [cells[0] for table in tables for cells in table]
    assert len(listed) == len(set(listed)), "a rule listed twice"
    unknown = [r for r in listed if r not in model["ModelRules"]]
    assert not unknown, f"docs/focus-validator.md lists rules the validator does not have: {unknown}"
    assert all(cells[1] and cells[2] for table in tables for cells in table), \
        "every defect needs its reason and the FOCUS text"


# =========================================================================== the CSVs


def test_demo_month_meets_focus_1_2(demo_verdict):
    focuscheck.assert_conforms(demo_verdict)


def test_the_criteria_make_the_validator_check_their_rules(demo_verdict):
    """Each criterion passed brings rules that really run (not skipped as non-applicable): a
    criterion the validator did not take would leave them skipped and the run green."""
    status = demo_verdict.status
    assert demo_verdict.count("passed") >= 150
    for criterion in demo_verdict.criteria:
        ran = [r for r in focuscheck.rules_gated_by(criterion) if status.get(r, "skipped") != "skipped"]
        assert ran, f"no rule of {criterion} ran"
    # the columns the CSV carries are checked (rules gated by the criteria above, and not)
    for rule_id in ("ListUnitPrice-C-000-C", "ContractedUnitPrice-C-000-C", "SkuPriceId-C-000-C", "SkuId-C-000-C",
                    "SubAccountId-C-000-C", "SubAccountType-C-000-C", "Tags-C-001-M", "ConsumedQuantity-C-000-C",
                    "ConsumedUnit-C-000-C", "BillingAccountName-C-003-C", "BillingCurrency-C-000-M",
                    "ChargePeriodStart-C-000-M", "PricingQuantity-C-000-M"):
        assert status.get(rule_id, "absent") in ("passed", "failed", "errored"), f"{rule_id} was not checked"


def price_change_mig_and_shared_gpus(built_db, **config):
    """Two days of an A100 cluster in Europe/Berlin around a price change (15 Oct, local midnight:
    2026-10-14T22:00Z), 10:00-12:00 UTC each day:

    * gpu-a: a whole A100 held by j1 (vision);
    * gpu-b: an A100 time-sliced by j2 (vision) and j3 (qualité, a name outside ASCII), half
      of each interval each;
    * mig-3g: a 3g.40gb MIG instance, priced on its own, held by j4 (qualité);
    * mig-1g: a 1g.10gb MIG instance (1/7 of the A100's price) held by j5 (no project label);
    * gpu-c: an A100 held by j1 for the first hour, held by nobody the second; with
      `unallocated = "proportional"` that hour is charged to the projects by their A100 hours;
    * energy on every held row, its price changing on the same day.
    """
    usage, jobs = [], [job_row("j1", project="vision"), job_row("j2", project="vision"),
                       job_row("j3", project="qualité"), job_row("j4", project="qualité"),
                       job_row("j5", project=None)]
    for day in ("2026-10-14T10:00Z", "2026-10-15T10:00Z"):
        for i, t in enumerate(intervals(day, 24)):
            usage.append(usage_row(t, "gpu-a", "j1", energy_mj=90_000_000))
            usage.append(usage_row(t, "gpu-b", "j2", seconds=150, energy_mj=45_000_000, index=1))
            usage.append(usage_row(t, "gpu-b", "j3", seconds=150, util=30.0, energy_mj=45_000_000, index=1))
            usage.append(usage_row(t, "mig-3g", "j4", mig="3g.40gb", energy_mj=30_000_000, index=2))
            usage.append(usage_row(t, "mig-1g", "j5", mig="1g.10gb", util=2.0, energy_mj=10_000_000, index=2))
            usage.append(usage_row(t, "gpu-c", "j1" if i < 12 else None, util=90.0 if i < 12 else 0.0,
                                   energy_mj=80_000_000 if i < 12 else 0, index=3))
    prices = [("A100", "2026-01-01", "2.93"), ("A100", "2026-10-15", "2.61"), ("A100 3g.40gb", "2026-01-01", "1.40")]
    energy = [("2026-01-01", "0.21"), ("2026-10-15", "0.25")]
    return built_db(usage, jobs=jobs, prices=prices, energy_prices=energy, timezone="Europe/Berlin",
                    allocation={"unallocated": "proportional"}, **config)


def test_price_change_mig_and_shared_gpus_meet_focus_1_2(validator, built_db, tmp_path):
    db = price_change_mig_and_shared_gpus(built_db)
    result = export_finance(db.config, MONTH, tmp_path / "finance.csv")
    _, rows = read_rows(result.path)
    # the month is what the docstring says, so the validator sees each case
    gpu = [r for r in rows if r["x_ChargeKind"] == "gpu"]
    assert {r["x_ChargeDate"] for r in rows} == {"2026-10-14", "2026-10-15"}
    # A100 before and after the change (the 1g.10gb instance at 1/7 of it), the 3g.40gb at its own price
    assert {Decimal(r["ListUnitPrice"]) for r in gpu} == {Decimal("2.93"), Decimal("2.61"), Decimal("1.40")}
    assert {Decimal(r["ListUnitPrice"]) for r in rows if r["x_ChargeKind"] == "energy"} == {
        Decimal("0.21"), Decimal("0.25")}
    unlabeled = [r for r in gpu if r["SubAccountId"] == "(unlabeled)"]  # the 1g.10gb instance: 1/7 of 2 h a day
    assert {r["x_ChargeDate"]: round(Decimal(r["PricingQuantity"]), 6) for r in unlabeled} == {
        "2026-10-14": Decimal("0.285714"), "2026-10-15": Decimal("0.285714")}
    assert {r["SubAccountId"] for r in rows} == {"vision", "qualité", "(unlabeled)"}
    assert {r["x_Allocation"] for r in rows} == {"usage", "share of unallocated capacity"}
    shared = db.query("SELECT count(DISTINCT job_id) AS jobs FROM gpu_usage WHERE gpu_uuid = 'gpu-b'")
    assert shared == [{"jobs": 2}]
    verdict = focuscheck.validate(result.path, tmp_path / "run")
    focuscheck.assert_conforms(verdict)


@pytest.mark.parametrize("currency", ["JPY", "KWD"])
def test_a_currency_with_other_minor_units_meets_focus_1_2(validator, built_db, tmp_path, currency):
    """The same month billed in yen (no minor unit: costs are whole numbers) and in Kuwaiti
    dinar (three decimals). Yen costs are integers, which FOCUS's NumericFormat allows and the
    validator's type check does not: those rules are excused for a currency without minor units
    only (docs/focus-validator.md)."""
    db = price_change_mig_and_shared_gpus(built_db, cluster={"currency": currency})
    result = export_finance(db.config, MONTH, tmp_path / "finance.csv")
    _, rows = read_rows(result.path)
    places = 0 if currency == "JPY" else 3
    assert {r["BillingCurrency"] for r in rows} == {currency}
    assert all(len(r["BilledCost"].partition(".")[2]) == places for r in rows)
    verdict = focuscheck.validate(result.path, tmp_path / "run", minor_units=places)
    focuscheck.assert_conforms(verdict)
    if currency == "JPY":  # the excuse is needed, and only these rules use it
        assert set(focuscheck.defect_rules(minor_units=0)) - set(focuscheck.defect_rules()) <= set(verdict.excused)


# =========================================================================== the harness can fail


def drop_column(header, rows, column):
    return [c for c in header if c != column], rows


def set_cell(header, rows, column, value):
    rows[0] = {**rows[0], column: value}
    return header, rows


BROKEN = {
    # a mandatory column missing: its presence rule fails (and its other rules error)
    "no ChargeCategory column": (lambda h, r: drop_column(h, r, "ChargeCategory"), "CostAndUsage-D-008-M"),
    # a value FOCUS does not allow, in one row (2.2.1 checks ChargeCategory's allowed values over
    # the whole column, so one bad row of it passes: BillingCurrency is checked row by row)
    "BillingCurrency XYZ": (lambda h, r: set_cell(h, r, "BillingCurrency", "XYZ"), "BillingCurrency-C-006-M"),
    # a real failure inside a column whose ASCII rule is an excused defect: the column's
    # composite rule is not excused, its failing rules being not all excused
    "ChargeDescription null": (lambda h, r: set_cell(h, r, "ChargeDescription", ""), "ChargeDescription-C-000-M"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_csv_fails(demo_csv, demo_verdict, tmp_path, case):
    breaks, rule_id = BROKEN[case]
    assert rule_id in focuscheck.rule_model()["ModelRules"]
    assert rule_id not in demo_verdict.real, f"{rule_id} fails on the demo CSV already: the case shows nothing"
    header, rows = read_rows(demo_csv)
    broken = write_rows(tmp_path / "broken.csv", *breaks(header, rows))
    verdict = focuscheck.validate(broken, tmp_path / "run")
    assert rule_id in verdict.real, f"{case}: {rule_id} is {verdict.status.get(rule_id)}, real failures {verdict.real}"
    with pytest.raises(AssertionError, match=rule_id):
        focuscheck.assert_conforms(verdict, explain=False)
