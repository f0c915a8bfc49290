"""The rate card (Prices section): each price period of the month with what was billed at it,
adding up to the ledger's total for the report's audience."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import tomllib
from decimal import Decimal

import duckdb
import pytest
from helpers.reportkit import MONTH

from yolocost import db, finance
from yolocost.report import data, ratecard, render_reports, sections
from yolocost.resources import shipped_dir

A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture(scope="module")
def con(sample_db):
    connection = db.connect(sample_db.path, read_only=True)  # as the reports open it: both may be open at once
    yield connection
    connection.close()


def _collect(con, config, project):
    return sections.collect(con, MONTH, project, timezone=config.timezone, grain_seconds=config.grain_seconds,
                            currency=config.currency)


def _ledger(con, project=None, by="") -> list[tuple]:
    where, params = ("", []) if project is None else (" AND bucket = 'project' AND project = ?", [project])
    group = f"{by}, " if by else ""
    return con.execute(f"""
        SELECT {group} sum(cost), sum(cost) FILTER (WHERE charge_kind = 'gpu'),
               sum(cost) FILTER (WHERE charge_kind = 'energy'), sum(gpu_hours),
               sum(quantity) FILTER (WHERE charge_kind = 'energy')
        FROM ledger_charges WHERE month = ?{where} {'GROUP BY ' + by if by else ''}""",
                       [MONTH, *params]).fetchall()


def test_admin_rate_card_adds_up_to_the_month_total(con, sample_db):
    report = _collect(con, sample_db.config, None)
    card = report["rate_card"]
    total, gpu, energy, hours, kwh = _ledger(con)[0]
    assert card["cents"] == total == finance.total_cents(con, MONTH) == report["headline"]["current"]["total_cents"]
    assert sum(r["cents"] for r in card["gpu"]) == card["gpu_cents"] == gpu
    assert sum(r["cents"] for r in card["energy"]) == card["energy_cents"] == energy
    assert card["gpu_cents"] + card["energy_cents"] == total
    assert sum(r["gpu_hours"] for r in card["gpu"]) == card["gpu_hours"] == hours
    assert card["energy_kwh"] == kwh
    # each period's figures are the ledger's rows billed at it
    billed = {(sku, model): (cost, h) for sku, model, cost, h in con.execute(
        "SELECT sku_price_id, gpu_model, sum(cost), sum(gpu_hours) FROM ledger_charges "
        "WHERE month = ? AND charge_kind = 'gpu' GROUP BY ALL", [MONTH]).fetchall()}
    assert {(r["sku_price_id"], r["gpu_model"]): (r["cents"], r["gpu_hours"]) for r in card["gpu"]} == billed


def test_the_a100_shows_both_periods_at_the_configured_prices(con, sample_db):
    config = tomllib.loads((shipped_dir("sample_data") / "yolocost.toml").read_text(encoding="utf-8"))
    a100 = sorted((p["effective_from"], Decimal(p["price_per_gpu_hour"])) for p in config["prices"]
                  if p["gpu_model"] == A100)
    assert len(a100) == 2 and a100[1][0] == dt.date(2026, 10, 15)
    card = ratecard.rate_card(con, MONTH, None, "USD")
    rows = [r for r in card["gpu"] if r["gpu_model"] == A100]
    assert [(r["from"], r["to"], r["unit_price"]) for r in rows] == [
        ("2026-10-01", (a100[1][0] - dt.timedelta(days=1)).isoformat(), a100[0][1]),
        (a100[1][0].isoformat(), "2026-10-31", a100[1][1]),
    ]
    for r in rows:
        cost, days = con.execute(
            "SELECT sum(cost), count(DISTINCT day) FROM ledger_charges WHERE month = ? AND sku_price_id = ? "
            "AND charge_kind = 'gpu'", [MONTH, r["sku_price_id"]]).fetchone()
        assert r["cents"] == cost and cost > 0
        assert days == (dt.date.fromisoformat(r["to"]) - dt.date.fromisoformat(r["from"])).days + 1
    energy = [(e["effective_from"], Decimal(e["price_per_kwh"])) for e in config["energy_prices"]]
    assert [(r["effective_from"], r["unit_price"]) for r in card["energy"]] == energy


def test_a_project_rate_card_has_only_its_own_rows(con, sample_db):
    admin = ratecard.rate_card(con, MONTH, None, "USD")
    projects = data.month_projects(con, MONTH)
    assert len(projects) >= 5
    for project in projects:
        report = _collect(con, sample_db.config, project)
        card = report["rate_card"]
        total, gpu, energy, hours, kwh = _ledger(con, project)[0]
        assert card["cents"] == report["headline"]["current"]["billed_cents"]  # the report's total
        assert (card["cents"], card["gpu_cents"], card["energy_cents"]) == (total, gpu, energy)
        assert card["gpu_hours"] == hours and card["energy_kwh"] == kwh
        assert sum(r["cents"] for r in card["gpu"] + card["energy"]) == total
        own = {sku: (cost, h) for sku, cost, _, _, h, _ in _ledger(con, project, "sku_price_id")
               if not sku.startswith("energy ")}
        assert {r["sku_price_id"]: (r["cents"], r["gpu_hours"]) for r in card["gpu"]} == own
        assert card["cents"] < admin["cents"]


def test_the_page_shows_prices_and_totals_with_the_currency(con, sample_db, tmp_path):
    config = dataclasses.replace(sample_db.config, report_dir=tmp_path)
    project = "retail-shelf"
    result = render_reports(config, MONTH, ["admin", f"project:{project}"], ["html"])
    totals = {p: _ledger(con, p)[0][0] for p in (None, project)}
    for path, who in zip(result.files, (None, project)):
        page = path.read_text(encoding="utf-8")
        section = re.search(r'<section id="rate_card">(.*?)</section>', page, re.S).group(1)
        assert '<a href="#rate_card">Prices</a>' in page
        for price in ("2.93 USD", "2.61 USD", "0.21 USD"):
            assert f"<td>{price}</td>" in section
        assert f"<strong>{totals[who]:,.2f} USD</strong>" in section
        # every money cell names the currency
        cells = re.findall(r"<td>([\d,]+\.\d\d(?: [A-Z]{3})?)</td>", section)
        assert cells and all(c.endswith(" USD") for c in cells), cells


def test_every_price_period_of_the_finance_csv_is_on_the_card(con, sample_db, tmp_path):
    """Finance joins the CSV to the report's price table by x_PricePeriod: the A100 price set on
    2026-01-01 is shown from the month's first day, and its price period is the CSV's, 'from
    2026-01-01'."""
    import csv

    config = dataclasses.replace(sample_db.config, report_dir=tmp_path)
    page = render_reports(config, MONTH, ["admin"], ["html"]).files[0].read_text(encoding="utf-8")
    section = re.search(r'<section id="rate_card">(.*?)</section>', page, re.S).group(1)
    shown = set(re.findall(r'<td class="l">([^<]* from \d{4}-\d\d-\d\d)</td>', section))
    exported = finance.export_finance(config, MONTH, tmp_path / "finance.csv")
    with open(exported.path, encoding="utf-8", newline="") as handle:
        ids = {row["x_PricePeriod"] for row in csv.DictReader(handle)}
    assert f"{A100} from 2026-01-01" in ids and f"{A100} from 2026-10-15" in ids and "energy from 2026-01-01" in ids
    assert ids <= shown, ids - shown


def test_default_and_mig_prices_are_named_and_unused_ones_listed_for_admins(built_db):
    from helpers.builders import job_row, usage_run

    usage = (usage_run("2026-03-02T00:00Z", 12, "g1", "j1", model="A100")
             + usage_run("2026-03-02T00:00Z", 12, "m1", "j2", model="A100", mig="3g.40gb", host="h2")
             + usage_run("2026-03-02T00:00Z", 12, "t1", "j3", model="T4", host="h3"))
    built = built_db(usage, jobs=[job_row("j1"), job_row("j2", project="p2"), job_row("j3", project="p2")],
                  prices=[("A100", "2.00"), ("A100 3g.40gb", "0.80"), ("H100", "4.0125")],
                  pricing={"default_price_per_gpu_hour": "0.50"})
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        admin = ratecard.rate_card(con, "2026-03", None, "USD")
        p2 = ratecard.rate_card(con, "2026-03", "p2", "USD")
    finally:
        con.close()
    by = {(r["gpu_model"], r["priced_as"]): r for r in admin["gpu"]}
    assert by[("A100", "")]["cents"] == Decimal("2.00") and by[("A100", "")]["gpu_hours"] == Decimal("1.0")
    assert by[("A100", "A100 3g.40gb")]["price"] == "0.80"
    assert by[("T4", "default (*)")]["price"] == "0.50" and by[("T4", "default (*)")]["cents"] == Decimal("0.50")
    assert by[("H100", "")]["price"] == "4.0125" and by[("H100", "")]["cents"] == Decimal("0.00")  # not used
    assert admin["cents"] == sum(r["cents"] for r in admin["gpu"]) and not admin["energy_priced"]
    assert {(r["gpu_model"], r["priced_as"]) for r in p2["gpu"]} == {("A100", "A100 3g.40gb"), ("T4", "default (*)")}


def test_a_projects_share_of_unallocated_capacity_is_its_own_row(built_db, tmp_path):
    from helpers.builders import job_row, usage_run

    usage = (usage_run("2026-03-02T00:00Z", 6, "g1", "j1")  # half an hour held by p1
             + usage_run("2026-03-02T00:30Z", 6, "g1", None))  # half an hour nobody held
    built = built_db(usage, jobs=[job_row("j1")], energy_prices=["0.20"], allocation={"unallocated": "proportional"})
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        card = ratecard.rate_card(con, "2026-03", "p1", "USD")
        total = con.execute("SELECT sum(cost) FROM ledger_charges WHERE month = '2026-03' AND bucket = 'project' "
                            "AND project = 'p1'").fetchone()[0]
    finally:
        con.close()
    assert card["shares"]
    # one GPU-hour at 2.93: half of it (1.465) used, half shared to p1, a cent apart by largest remainder
    assert [(r["allocation"], r["gpu_hours"]) for r in card["gpu"]] == [("usage", Decimal("0.5")),
                                                                       ("unallocated share", Decimal("0.5"))]
    assert sorted(r["cents"] for r in card["gpu"]) == [Decimal("1.46"), Decimal("1.47")]
    assert {r["allocation"] for r in card["energy"]} == {"usage", "unallocated share"}
    assert card["cents"] == total == Decimal("2.93") + card["energy_cents"]
    config = dataclasses.replace(built.config, report_dir=tmp_path / "reports")
    page = render_reports(config, "2026-03", ["project:p1"], ["html"]).files[0].read_text(encoding="utf-8")
    section = re.search(r'<section id="rate_card">(.*?)</section>', page, re.S).group(1)
    assert section.count('<td class="l">unallocated share</td>') == 2  # GPU time and energy
    assert f"<strong>{card['cents']:,.2f} USD</strong>, what the project is billed" in section
