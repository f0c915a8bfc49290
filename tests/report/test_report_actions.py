"""What to do: every action carries the money it would save, computed by hand here from the
figures of the section it comes from, and the list is ranked by it; what saves nothing (the
tag policy) is listed apart, and no action contradicts another."""

from __future__ import annotations

import dataclasses
import html
import re
from decimal import ROUND_HALF_UP, Decimal

import duckdb
import pytest
from helpers.builders import intervals, job_row, result_row, usage_run
from helpers.reportkit import MONTH

from yolocost import db
from yolocost.report import data, render_reports, sections

CENT = Decimal("0.01")


@pytest.fixture(scope="module")
def con(sample_db):
    connection = db.connect(sample_db.path, read_only=True)  # as the reports open it: both may be open at once
    yield connection
    connection.close()


def _collect(con, config, project, month=MONTH):
    return sections.collect(con, month, project, timezone=config.timezone, grain_seconds=config.grain_seconds,
                            currency=config.currency)


def _printed(value) -> Decimal:
    """A figure as the section prints it (the templates' money filter: half up to the cent)."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def _section_figure(report: dict, action: dict) -> Decimal:
    """The saving each action must carry, computed from its section's data."""
    section = action["section"]
    if section == "idle_waste":
        return sum(_printed(j["idle_cost"]) for j in report["idle_waste"]["jobs"][:3])
    if section == "density":  # cost x (1 - density / 50 %) over the jobs under 50 %
        return _printed(report["density"]["low_saving"])
    if section == "leaderboard":  # the dearer configuration's runs at the cheaper one's cost per point
        named = [r for r in report["leaderboard"]
                 if f"of {r['model_type']} on {r['image_tag']} at" in action["basis"]]
        assert len(named) == 1, action["basis"]
        worst = named[0]
        best = next(r for r in report["leaderboard"] if action["title"].startswith(
            f"Prefer {r['model_type']} on {r['image_tag']} for value"))
        ratio = Decimal(repr(best["cost_per_map50_point"])) / Decimal(repr(worst["cost_per_map50_point"]))
        return _printed(worst["runs"] * _printed(worst["mean_cost_per_run"]) * (1 - ratio))
    if section == "policies":  # idle reclaim or the breaker: the replay's saving net of false positives
        policy = next(p for p in report["policies"]["policies"] if p["policy"] == action["policy"])
        return sum((j["cost"] for j in policy["jobs"] if not j["false_positive"]), Decimal("0.00"))
    if section == "gpu_fit":  # the admins: every job that fits a smaller GPU, each job's saving
        return report["gpu_fit"]["saving"]
    if section == "jobs":  # a project: its job table's notes
        return sum((j["fits"]["saving"] for j in report["jobs"]["rows"] if j["fits"]), Decimal("0.00"))
    assert section == "unallocated", section  # the tag policy is never an action
    return report[section]["cents"]


def _check(report: dict) -> list[dict]:
    got = report["actions"]
    amounts = [a["amount"] for a in got]
    assert amounts == sorted(amounts, reverse=True)
    for a in got:
        assert isinstance(a["amount"], Decimal) and a["amount"] == a["amount"].quantize(CENT)
        assert a["amount"] == _section_figure(report, a), a["section"]
        assert a["amount"] > 0 and a["basis"].startswith("saving = ") and a["title"] and a["detail"]
    assert "tag_violations" not in {a["section"] for a in got}  # saves nothing: a policy note
    if report["tag_violations"]["by_status"]:
        assert [n["title"] for n in report["policy_notes"]] == ["Retag images that break the tag policy"]
    # no contradiction: the configuration recommended for value is on a tag the tag policy accepts
    rejected = {j["image_tag"] for j in report["tag_violations"]["jobs"]} if "jobs" in report["tag_violations"] else set()
    for a in got:
        if a["section"] == "leaderboard":
            best = next(r for r in report["leaderboard"]
                        if a["title"].startswith(f"Prefer {r['model_type']} on {r['image_tag']} for value"))
            assert best["tag_ok"] and best["image_tag"] not in rejected, a["title"]
    return got


def test_admin_actions_are_ranked_by_the_money_of_their_sections(con, sample_db):
    report = _collect(con, sample_db.config, None)
    got = _check(report)
    # the demo month: idle reclaim at its defaults stops nothing there, the tag policy saves nothing
    assert {a["section"] for a in got} == {"idle_waste", "policies", "density", "leaderboard", "unallocated",
                                           "gpu_fit"}
    assert got[0]["amount"] == max(a["amount"] for a in got)
    idle = next(a for a in got if a["section"] == "idle_waste")
    assert idle["basis"].startswith("saving = the idle cost of the 3 jobs")
    top = con.execute("SELECT job_id FROM mart_job_month WHERE month = ? ORDER BY idle_cost DESC, job_id LIMIT 3",
                      [MONTH]).fetchall()
    assert all(job in idle["detail"] for (job,) in top)
    # the breaker's saving is the replay's, net of its 4 false stops (job-000094 among them): the same
    # 8.62 as `whatif` and the policies section, not the 13.89 of the whole stalled stretch
    br = next(a for a in got if a["section"] == "policies" and a["policy"] == "breaker")
    assert "net of 4 false stops (5 stops" in br["basis"] and br["amount"] == Decimal("8.62")
    replay = next(p for p in report["policies"]["policies"] if p["policy"] == "breaker")
    assert br["amount"] == replay["net_cost"]
    late = [r for r in report["breakers"]["rows"] if r["job_id"] == "job-000094"]
    assert late and all(r["improved_later"] for r in late)
    value = next(a for a in got if a["section"] == "leaderboard")
    assert "latest" not in value["title"] and "breaks the tag policy" not in value["title"]
    # the host named is the one with the largest unallocated cost, with its hours
    un = next(a for a in got if a["section"] == "unallocated")
    hosts = report["unallocated"]["hosts"]
    host = max(hosts, key=lambda h: h["cents"])
    assert f"largest unallocated cost is {host['hostname']}" in un["detail"]
    assert f"{host['cents']:,.2f} USD of GPU time, {host['unallocated_gpu_hours']:,.1f} GPU-hours" in un["detail"]
    # the sample's configurations with 3 runs or more are compared, and no caveat is needed
    value = next(a for a in got if a["section"] == "leaderboard")
    assert "based on" not in value["title"] and "at least 3 runs are compared" in value["detail"]


def test_project_actions_are_ranked_and_their_own(con, sample_db):
    for project in data.month_projects(con, MONTH):
        got = _check(_collect(con, sample_db.config, project))
        assert got and "unallocated" not in {a["section"] for a in got}


def test_the_page_lists_each_amount_with_its_basis_in_order(con, sample_db, tmp_path):
    config = dataclasses.replace(sample_db.config, report_dir=tmp_path)
    page = render_reports(config, MONTH, ["admin"], ["html"]).files[0].read_text(encoding="utf-8")
    report = _collect(con, sample_db.config, None)
    section = html.unescape(re.search(r'<section id="actions">(.*?)</section>', page, re.S).group(1))
    ranked, notes = section.split("<h3>Policy, no saving</h3>")
    items = re.findall(r"<li>(.*?)</li>", ranked, re.S)
    assert len(items) == len(report["actions"])
    # the tag policy is listed apart, with no amount
    assert re.findall(r'<span class="t">(.*?)</span>', notes) == ["Retag images that break the tag policy."]
    assert 'class="amount"' not in notes
    for item, a in zip(items, report["actions"]):
        assert f'<span class="amount">{a["amount"]:,.2f} USD</span>' in item
        assert f"({a['basis']}; see" in item and f'href="#{a["section"]}"' in item


def _run(job: str, start: int, hours: int, model: str, tag: str) -> tuple[list, dict]:
    """One finished job on its own GPU: `hours` hours from 2026-03-02 00:00 UTC + `start` hours."""
    t0 = intervals("2026-03-02T00:00Z", start * 12 + 1)[-1]
    end = intervals(t0, hours * 12 + 1)[-1]
    return (usage_run(t0, hours * 12, f"g-{job}", job),
            job_row(job, model_type=model, image_tag=tag, start=t0, end=end))


def _board_db(built_db, runs: list[tuple[str, str, int, float]]):
    """Jobs of model configurations: (model, tag, number of runs, mAP50), each run 1 GPU-hour."""
    usage, jobs, results = [], [], []
    n = 0
    for model, tag, count, map50 in runs:
        for _ in range(count):
            n += 1
            rows, job = _run(f"j{n:02d}", n, 1, model, tag)
            usage += rows
            jobs.append(job)
            results.append(result_row(job["job_id"], map50, map50 / 2))
    return built_db(usage, jobs=jobs, results=results)


def _value_action(built) -> tuple[dict, dict]:
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        report = _collect(con, built.config, None, "2026-03")
    finally:
        con.close()
    _check(report)
    return next(a for a in report["actions"] if a["section"] == "leaderboard"), report


def test_a_value_tip_resting_on_one_run_says_so(built_db):
    built = _board_db(built_db, [("yolov8n", "train-yolov8-nano-cu118", 1, 0.8),
                              ("yolov8m", "train-yolov8-medium-cu118", 2, 0.4)])
    action, report = _value_action(built)
    assert action["title"] == "Prefer yolov8n on train-yolov8-nano-cu118 for value (based on 1 run)"
    assert "1 run of yolov8n on train-yolov8-nano-cu118 and 2 runs of yolov8m" in action["detail"]
    # the money: the dearer configuration's 2 runs of 1 GPU-hour at the default A100 price
    # the saving: the dearer configuration's 2 runs of 1 GPU-hour at the default A100 price (5.86),
    # had they cost what yolov8n costs per mAP50 point: 2.93 / 80 against 2.93 / 40 per point, half
    assert action["amount"] == Decimal("2.93")
    assert action["basis"] == ("saving = the cost of the 2 runs of yolov8m on train-yolov8-medium-cu118 at 2.93 USD "
                               "per run x (1 - 0.04 / 0.07 per mAP50 point)")


def test_configurations_with_three_runs_are_compared_first(built_db):
    built = _board_db(built_db, [("yolov8n", "train-yolov8-nano-cu118", 1, 0.9),
                              ("yolov8s", "train-yolov8-small-cu118", 3, 0.6),
                              ("yolov8m", "train-yolov8-medium-cu118", 3, 0.3)])
    action, report = _value_action(built)
    assert report["leaderboard"][0]["model_type"] == "yolov8n"  # the cheapest point rests on 1 run
    assert action["title"] == "Prefer yolov8s on train-yolov8-small-cu118 for value"
    assert "at least 3 runs are compared (1 with fewer left out)" in action["detail"]
    # 3 runs at 2.93, each point 2.93 / 30 against 2.93 / 60: the saving is half of 8.79, 4.395 -> 4.40
    assert action["amount"] == Decimal("4.40")


def test_a_configuration_on_a_rejected_tag_is_never_recommended(built_db):
    # `latest` is the cheapest per mAP50 point, but the tag policy rejects it: the tip names the
    # cheapest configuration on an accepted tag, and says why the other is left out
    built = _board_db(built_db, [("yolov8n", "latest", 3, 0.9),
                              ("yolov8s", "train-yolov8-small-cu118", 3, 0.6),
                              ("yolov8m", "train-yolov8-medium-cu118", 3, 0.3)])
    action, report = _value_action(built)
    assert action["title"] == "Prefer yolov8s on train-yolov8-small-cu118 for value"
    assert "yolov8n on latest is cheaper per point but its image tag breaks the tag policy" in action["detail"]
    assert [n["section"] for n in report["policy_notes"]] == ["tag_violations"]
    assert action["amount"] == Decimal("4.40")  # as above: 8.79 x (1 - 30 / 60)


def test_a_cost_per_point_shows_the_cents_the_leaderboard_and_its_chart_show():
    # 2.675 is stored in binary as 2.67499...: the leaderboard's table and chart labels read a
    # float as it prints (Currency.round), so the tip must say 2.68 too, not 2.67
    from yolocost.money import Currency
    from yolocost.report import actions as tips

    usd = Currency("USD")
    board = [{"model_type": "yolov8n", "image_tag": "a", "runs": 3, "mean_cost_per_run": 10.0,
              "cost_per_map50_point": 2.675},
             {"model_type": "yolov8s", "image_tag": "b", "runs": 3, "mean_cost_per_run": 20.0,
              "cost_per_map50_point": 3.125}]
    [value] = tips._value(board, lambda v: usd.round(tips._dec(v)),
                          lambda v: usd.format(tips._dec(v), with_code=True), usd)  # as actions() calls it
    assert usd.format(2.675) == "2.68" and usd.format(3.125) == "3.13"
    assert "(1 - 2.68 / 3.13 per mAP50 point)" in value["basis"], value["basis"]
    assert value["detail"].startswith("2.68 USD per mAP50 point (3 runs) against 3.13 USD"), value["detail"]
