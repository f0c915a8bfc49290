"""What-if policies: the replay of idle reclaim and the breaker on a hand-made month.

The month (UTC, 5-minute grain, A100 at 3.60 an hour: 0.30 per GPU interval) holds:
- `zombie`: two GPUs held 3 h at 0 % with no epoch at all (no start time: its start-up grace
  runs from its first interval, 00:00, for the default 30 min);
- `zombie-after-training`: two GPUs, 1 h of training (epochs end at 00:30 and 01:00), then
  3 h at 0 % (the first 15 min after the last epoch end are protected);
- `validator`: 12 epochs of 30 min, each 20 min at 90 % and 10 min of validation at 2 %
  just before its end (longer than the 5-minute idle-reclaim limit, inside the protection);
- `late-improver`: 1 h of training, 3 h stalled at 20 % (one epoch at 03:30 a little
  better), then 1 h of training that improves loss and mAP50.
Every expected figure below is counted from that layout, not read from the code.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from helpers.builders import (assert_one_line_error, build_db, epoch_rows, job_row, losses, make_config, ts, usage_run,
                      yolocost)

from yolocost import months, whatif
from yolocost.config import parse_config
from yolocost.errors import ConfigError
from yolocost.report import render_reports

PRICE = Decimal("3.60")  # per GPU-hour
GRAIN = 300
DAY = "2026-03-02T"
MONTH = "2026-03"
CONFIG_TOML = """[cluster]
name = "c1"
timezone = "UTC"
[database]
path = "yolocost.duckdb"
[[prices]]
gpu_model = "A100"
price_per_gpu_hour = "3.60"
"""


def cost(intervals: int, gpus: int) -> Decimal:
    """What `intervals` grain intervals of `gpus` GPUs cost, by hand."""
    return Decimal(intervals * gpus * GRAIN) * PRICE / 3600


def at(hhmm: str) -> dt.datetime:
    return ts(DAY + hhmm + "Z")


def month_rows():
    usage, progress, jobs = [], [], []
    for g in ("z1", "z2"):
        usage += usage_run(DAY + "00:00Z", 36, g, "zombie", util=0.0)
    jobs.append(job_row("zombie", project="p1", user="alice"))
    for g in ("t1", "t2"):
        usage += usage_run(DAY + "00:00Z", 12, g, "zombie-after-training", util=90.0)
        usage += usage_run(DAY + "01:00Z", 36, g, "zombie-after-training", util=0.0)
    progress += losses("zombie-after-training", [(DAY + "00:30Z", 1.0), (DAY + "01:00Z", 0.8)])
    jobs.append(job_row("zombie-after-training", project="p3", user="carol"))
    for k in range(12):
        start = at("00:00") + dt.timedelta(minutes=30 * k)
        usage += usage_run(start, 4, "v1", "validator", util=90.0)
        usage += usage_run(start + dt.timedelta(minutes=20), 2, "v1", "validator", util=2.0)
        progress += epoch_rows("validator", k + 1, start + dt.timedelta(minutes=30), 1.0 - 0.05 * k, 0.3 + 0.02 * k)
    jobs.append(job_row("validator", project="p2", user="dave"))
    usage += usage_run(DAY + "00:00Z", 12, "i1", "late-improver", util=90.0)
    usage += usage_run(DAY + "01:00Z", 36, "i1", "late-improver", util=20.0)
    usage += usage_run(DAY + "04:00Z", 12, "i1", "late-improver", util=90.0)
    for epoch, (hhmm, loss, map50) in enumerate([("00:30", 1.0, 0.30), ("01:00", 0.9, 0.35), ("03:30", 0.85, 0.36),
                                                 ("04:30", 0.7, 0.50), ("05:00", 0.6, 0.55)], start=1):
        progress += epoch_rows("late-improver", epoch, DAY + hhmm + "Z", loss, map50)
    jobs.append(job_row("late-improver", project="p1", user="bob"))
    return usage, jobs, progress


def build(folder: Path, **config):
    usage, jobs, progress = month_rows()
    built = build_db(folder, usage, jobs=jobs, progress=progress, prices=[("A100", str(PRICE))], **config)
    (folder / "yolocost.toml").write_text(CONFIG_TOML, encoding="utf-8")
    return built


@pytest.fixture(scope="module")
def month_db(tmp_path_factory):
    return build(tmp_path_factory.mktemp("whatif"))


def stops(db, policy: str) -> dict[str, dict]:
    return db.by("mart_policy_savings", "job_id", f"month = '{MONTH}' AND policy = '{policy}'")


def test_idle_reclaim_stops_the_zombie_n_minutes_into_its_quiet_run(month_db):
    got = stops(month_db, "idle_reclaim")
    assert sorted(got) == ["zombie", "zombie-after-training"]
    zombie = got["zombie"]
    # no epoch ever: the start-up grace lasts its 30 min, quiet from 00:30, stopped 5 min later;
    # the other 3 h - 35 min (29 intervals, 2 GPUs) saved
    assert (zombie["trigger_start"], zombie["stop_at"]) == (at("00:30"), at("00:35"))
    assert zombie["saved_intervals"] == 29
    assert zombie["saved_gpu_seconds"] == Decimal((3 * 3600 - 35 * 60) * 2)
    assert zombie["saved_cost"] == cost(29, 2) == Decimal("17.40")
    assert zombie["grain_seconds"] == GRAIN
    assert (zombie["false_positive"], zombie["fp_reason"]) == (False, None)
    # after training the first 15 min past the last epoch end (01:00) are protected: quiet from 01:15
    after = got["zombie-after-training"]
    assert (after["trigger_start"], after["stop_at"]) == (at("01:15"), at("01:20"))
    assert after["saved_gpu_seconds"] == Decimal((3 * 3600 - 20 * 60) * 2)
    assert after["saved_cost"] == cost(32, 2)
    assert after["false_positive"] is False


def test_the_validation_phases_are_not_reclaimed_unless_protection_is_off(month_db, tmp_path):
    assert "validator" not in stops(month_db, "idle_reclaim") and "validator" not in stops(month_db, "breaker")
    # the same month with no protection and no start-up grace: the first validation (00:20-00:30,
    # 2 % for 10 min) is a quiet run, so the check above is the protection's doing
    bare = build(tmp_path / "bare", policies={"idle_reclaim_protect_minutes": 0,
                                               "idle_reclaim_startup_grace_minutes": 0})
    validator = stops(bare, "idle_reclaim")["validator"]
    assert (validator["trigger_start"], validator["stop_at"]) == (at("00:20"), at("00:25"))
    assert validator["saved_intervals"] == 6 * 12 - 5  # 00:25 to 06:00
    assert validator["saved_cost"] == cost(67, 1)
    assert validator["false_positive"] is True  # its loss went on falling


def test_the_breaker_stops_the_stall_and_counts_the_late_improver_as_a_false_positive(month_db):
    got = stops(month_db, "breaker")
    assert sorted(got) == ["late-improver", "zombie-after-training"]  # the zombie has no loss to judge
    late = got["late-improver"]
    # stalled under 40 % from 01:00; after 2 h (03:00) it has seen no better loss than 0.9
    assert (late["trigger_start"], late["stop_at"]) == (at("01:00"), at("03:00"))
    assert late["saved_intervals"] == 24 and late["saved_cost"] == cost(24, 1) == Decimal("7.20")
    assert late["false_positive"] is True
    assert (late["loss_at_stop"], late["best_loss_after"]) == (0.9, 0.6)
    assert (late["map50_at_stop"], late["best_map50_after"]) == (0.35, 0.55)
    assert late["fp_reason"] == "loss 0.9000 -> 0.6000; mAP50 0.350 -> 0.550"
    # mart_breakers judges the whole stretch (the 03:30 epoch improved the loss by 0.05): not a candidate there
    assert month_db.query("SELECT job_id FROM mart_breakers WHERE job_id = 'late-improver'") == []
    after = got["zombie-after-training"]
    assert after["stop_at"] == at("03:00") and after["saved_cost"] == cost(12, 2)
    assert after["false_positive"] is False
    # idle reclaim leaves the stall alone: 20 % is not quiet
    assert "late-improver" not in stops(month_db, "idle_reclaim")


def test_the_month_totals_add_up_the_stops(month_db):
    got = month_db.by("mart_policy_month", "policy", f"month = '{MONTH}'")
    idle, breaker = got["idle_reclaim"], got["breaker"]
    assert (idle["jobs_replayed"], idle["jobs_stopped"], idle["false_positives"]) == (4, 2, 0)
    assert idle["saved_cost"] == cost(29, 2) + cost(32, 2)
    assert (breaker["jobs_stopped"], breaker["false_positives"]) == (2, 1)
    assert breaker["saved_cost"] == cost(24, 1) + cost(12, 2)
    assert idle["grain_seconds"] == GRAIN
    assert "5 min under 5 %" in idle["rule"] and "15 min before each epoch end" in idle["rule"]
    assert "2 h under 40 %" in breaker["rule"]


def test_whatif_prints_the_policies_per_project_and_job(month_db):
    folder = month_db.path.parent
    result = yolocost("whatif", "--month", MONTH, cwd=folder)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Replayed at the grain of the usage rows (5 min)" in out and "exact to one grain" in out
    # the headline is the saving net of false positives, with the count beside it
    # 10.1 GPU-hours over March's 744 hours: 0.0136 GPUs freed on average
    assert (f"would have saved {cost(29, 2) + cost(32, 2):.2f} USD net of false positives (10.1 GPU-hours, 0.01 GPUs "
            "freed on average over the month): stopped 2 job(s), 0 of them false positive(s)") in out  # 36.60
    assert ("would have saved 7.20 USD net of false positives (2.0 GPU-hours, 0.00 GPUs freed on average over the "
            "month): stopped 2 job(s), 1 of them false "
            "positive(s) (training improved after the stop; their 7.20 USD not counted); gross 4.0 GPU-hours, "
            "14.40 USD") in out
    assert re.search(r"late-improver\s+p1\s+bob\s+2026-03-02 03:00\s+2\.0\s+7\.20\s+yes: loss 0\.9000 -> 0\.6000", out)
    assert re.search(r"zombie\s+p1\s+alice\s+2026-03-02 00:35\s+4\.8\s+17\.40\s+no", out)

    data = json.loads(yolocost("whatif", "--month", MONTH, "-f", "json", "--limit", "1", cwd=folder).stdout)
    assert data["grain_seconds"] == GRAIN and data["jobs_replayed"] == 4
    by = {p["policy"]: p for p in data["policies"]}
    for p in by.values():  # the printed total is the sum of the printed project rows
        assert Decimal(p["cost"]) == sum(Decimal(r["cost"]) for r in p["projects"])
        assert Decimal(p["gpu_hours"]) == sum(Decimal(r["gpu_hours"]) for r in p["projects"])
        assert len(p["jobs"]) == 1
    assert by["breaker"]["false_positives"] == 1 and by["breaker"]["cost"] == "14.40"
    assert by["idle_reclaim"]["jobs"][0]["job_id"] == "zombie-after-training"  # 19.20 > 17.40
    assert {r["project"]: r["cost"] for r in by["idle_reclaim"]["projects"]} == {"p1": "17.40", "p3": "19.20"}
    assert by["idle_reclaim"]["net_cost"] == "36.60" and by["breaker"]["net_cost"] == "7.20"
    assert {r["project"]: r["net_cost"] for r in by["breaker"]["projects"]} == {"p1": "0.00", "p3": "7.20"}


def test_whatif_refuses_a_month_without_data_and_a_bad_limit(month_db):
    folder = month_db.path.parent
    assert_one_line_error(yolocost("whatif", "--month", "2026-04", cwd=folder), "no data for 2026-04",
                          "months with data: 2026-03")
    assert_one_line_error(yolocost("whatif", "--month", "2026-4", cwd=folder), "--month", "must read YYYY-MM")
    assert_one_line_error(yolocost("whatif", "--month", MONTH, "--limit", "0", cwd=folder), "--limit: must be at least 1")


def _section(html: str) -> str:
    found = re.search(r'<section id="policies">.*?</section>', html, re.S)
    assert found, "no policies section"
    return found.group(0)


def test_the_reports_show_the_savings_and_a_project_only_its_own(month_db, tmp_path):
    cfg = dataclasses.replace(month_db.config, report_dir=tmp_path / "reports")
    result = render_reports(cfg, MONTH, ["admin", "project:p1"], ["html", "pdf"])
    folder = result.folder
    pdf = subprocess.run(["pdftotext", "-layout", str(folder / "admin.pdf"), "-"], capture_output=True, text=True,
                         check=True).stdout
    assert "What policies would have saved" in pdf and "exact to one grain" in " ".join(pdf.split())
    assert re.search(r"zombie\s+alice\s+p1\s+Idle", pdf)
    assert re.search(r"Total\s+2 \(0\)\s+10\.1\s+36\.60\s+2 \(1\)\s+4\.0\s+14\.40", pdf)
    admin = _section((folder / "admin.html").read_text(encoding="utf-8"))
    assert "What policies would have saved" in admin and "Replayed at the grain of the usage rows (5 min)" in admin
    for name in ("zombie", "zombie-after-training", "late-improver", "p3"):
        assert name in admin
    assert "validator" not in admin
    # the per-project table's total row is the sum of its rows: 17.40 + 19.20 (idle), 7.20 + 7.20 (breaker)
    total = re.search(r"<tfoot><tr><td class=\"l\">Total</td>(.*?)</tr></tfoot>", admin, re.S).group(1)
    assert re.findall(r"<td>([^<]*)</td>", total) == ["2 (0)", "10.1", "36.60", "2 (1)", "4.0", "14.40"]
    assert "yes: loss 0.9000 -&gt; 0.6000; mAP50 0.350 -&gt; 0.550" in admin
    page = re.sub(r"<script>.*?</script>", "", (folder / "project-p1.html").read_text(encoding="utf-8"), flags=re.S)
    mine = _section(page)
    assert "zombie" in mine and "late-improver" in mine and "17.40" in mine and "7.20" in mine
    for other in ("zombie-after-training", "carol", "p3", "19.20"):  # another project's job, user, name, money
        assert other not in page


def test_a_pruned_month_keeps_its_replay(month_db, tmp_path):
    shutil.copytree(month_db.path.parent, tmp_path / "copy")
    cfg = month_db.config.with_database(tmp_path / "copy" / "yolocost.duckdb")
    tables = ("mart_policy_savings", "mart_policy_month")

    def snapshot():
        con = duckdb.connect(str(cfg.database), read_only=True)
        try:
            return {t: sorted(con.execute(f"SELECT * FROM {t} WHERE month = ?", [MONTH]).fetchall(), key=repr)
                    for t in tables}
        finally:
            con.close()

    before, printed = snapshot(), whatif.to_json(whatif.whatif(cfg, MONTH))
    assert len(before["mart_policy_savings"]) == 4
    # the fixture holds a few hours of its month: archiving a partial month takes the flag
    result = months.prune_database(cfg, now=dt.datetime(2026, 7, 15, tzinfo=dt.timezone.utc), include_partial=True)
    assert [m.month for m in result.months] == [MONTH]
    con = duckdb.connect(str(cfg.database), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM int_job_intervals").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM gpu_usage").fetchone()[0] == 0
    finally:
        con.close()
    assert snapshot() == before
    assert whatif.to_json(whatif.whatif(cfg, MONTH)) == printed


def test_policies_config_is_validated_and_enters_the_month_fingerprint(tmp_path):
    base = make_config(tmp_path)
    assert (base.policies.idle_reclaim_minutes, base.policies.idle_reclaim_util_percent,
            base.policies.idle_reclaim_protect_minutes, base.policies.idle_reclaim_startup_grace_minutes) == \
        (5.0, 5.0, 15.0, 30.0)
    graceless = make_config(tmp_path, policies={"idle_reclaim_startup_grace_minutes": 0})
    assert months.fingerprint(graceless, MONTH) != months.fingerprint(base, MONTH)
    changed = make_config(tmp_path, policies={"idle_reclaim_minutes": 10})
    assert changed.policies.idle_reclaim_minutes == 10.0
    assert months.fingerprint(changed, MONTH) != months.fingerprint(base, MONTH)
    for bad, needle in (({"idle_reclaim_minutes": 0}, "policies.idle_reclaim_minutes: must be between"),
                        ({"idle_reclaim_util_percent": 101}, "policies.idle_reclaim_util_percent"),
                        ({"idle_reclaim_protect_minutes": "15"}, "policies.idle_reclaim_protect_minutes"),
                        ({"idle_reclaim_startup_grace_minutes": 1441}, "policies.idle_reclaim_startup_grace_minutes"),
                        ({"idle_minutes": 5}, "unknown key")):
        with pytest.raises(ConfigError, match=re.escape(needle)):
            parse_config({"policies": bad})


def test_a_changed_policy_rebuilds_the_month(month_db, tmp_path):
    shutil.copytree(month_db.path.parent, tmp_path / "copy")
    (tmp_path / "copy" / "yolocost.toml").write_text(CONFIG_TOML + "[policies]\nidle_reclaim_minutes = 30\n",
                                                     encoding="utf-8")
    result = yolocost("build", cwd=tmp_path / "copy")
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(tmp_path / "copy" / "yolocost.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT job_id, stop_at, saved_intervals FROM mart_policy_savings "
                           "WHERE policy = 'idle_reclaim' ORDER BY job_id").fetchall()
        settings = con.execute("SELECT idle_reclaim_seconds FROM settings").fetchone()[0]
    finally:
        con.close()
    assert settings == 1800
    # 30 min quiet: the zombie (quiet after its grace, from 00:30) is stopped at 01:00 (24 of its 36
    # intervals left), the other at 01:45
    assert rows == [("zombie", at("01:00"), 24), ("zombie-after-training", at("01:45"), 27)]


def test_a_settings_table_of_an_older_version_keeps_its_values_and_gets_the_policies(month_db, tmp_path):
    from yolocost import db

    shutil.copytree(month_db.path.parent, tmp_path / "copy")
    path = tmp_path / "copy" / "yolocost.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE TABLE settings AS SELECT * EXCLUDE (idle_reclaim_seconds, "
                "idle_reclaim_util_percent, idle_reclaim_protect_seconds, idle_reclaim_grace_seconds) FROM settings")
    con.close()
    # the migration keeps what the checks before a build compare against (grain, time zone, currency)
    with db.writing(path) as con:
        kept = con.execute("SELECT timezone, currency, grain_seconds, idle_reclaim_seconds FROM settings").fetchall()
    assert kept == [("UTC", "USD", 300, None)]
    result = yolocost("build", cwd=tmp_path / "copy")
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT idle_reclaim_seconds, idle_reclaim_util_percent, idle_reclaim_protect_seconds, "
                           "idle_reclaim_grace_seconds FROM settings").fetchall() == [(300.0, 5.0, 900.0, 1800.0)]
    finally:
        con.close()


def test_a_month_built_before_the_replay_existed_says_so(month_db, tmp_path):
    shutil.copytree(month_db.path.parent, tmp_path / "copy")
    con = duckdb.connect(str(tmp_path / "copy" / "yolocost.duckdb"))
    con.execute("DELETE FROM mart_policy_month")
    con.execute("DELETE FROM mart_policy_savings")
    con.close()
    assert_one_line_error(yolocost("whatif", "--month", MONTH, cwd=tmp_path / "copy"),
                          f"{MONTH} holds no policy replay", f"yolocost build --month {MONTH}")
    cfg = dataclasses.replace(month_db.config.with_database(tmp_path / "copy" / "yolocost.duckdb"),
                              report_dir=tmp_path / "reports")
    folder = render_reports(cfg, MONTH, ["admin"], ["html"]).folder
    assert f"No policy replay is stored for {MONTH}" in _section((folder / "admin.html").read_text(encoding="utf-8"))


def test_a_job_crossing_the_month_end_is_replayed_in_each_month_on_its_own(tmp_path):
    # held at 0 % from March 31 23:00 (its start time) to April 1 01:00 (UTC), no epoch: its start-up
    # grace ends at 23:30, so March sees a quiet run from 23:30 and April one from its own start
    usage = usage_run("2026-03-31T23:00Z", 24, "g1", "night", util=0.0)
    built = build_db(tmp_path, usage, jobs=[job_row("night", start="2026-03-31T23:00Z")], prices=[("A100", str(PRICE))])
    rows = built.query("SELECT month, trigger_start, stop_at, saved_intervals, saved_cost FROM mart_policy_savings "
                       "WHERE policy = 'idle_reclaim' ORDER BY month")
    assert rows == [
        {"month": "2026-03", "trigger_start": ts("2026-03-31T23:30Z"), "stop_at": ts("2026-03-31T23:35Z"),
         "saved_intervals": 5, "saved_cost": cost(5, 1)},
        {"month": "2026-04", "trigger_start": ts("2026-04-01T00:00Z"), "stop_at": ts("2026-04-01T00:05Z"),
         "saved_intervals": 11, "saved_cost": cost(11, 1)},
    ]


def test_the_start_up_grace_spares_data_loading_but_not_a_job_that_never_trains(tmp_path):
    # `loader`: loads its data 25 min at 2 % (no epoch), then trains; its first epoch ends at 00:55.
    # `stuck`: 2 h at 0 % with no epoch at all (a hung data mount).
    usage = usage_run(DAY + "00:00Z", 5, "l1", "loader", util=2.0) + usage_run(DAY + "00:25Z", 19, "l1", "loader",
                                                                                util=90.0)
    progress = losses("loader", [(DAY + "00:55Z", 1.0), (DAY + "01:25Z", 0.8), (DAY + "01:55Z", 0.7)])
    usage += usage_run(DAY + "00:00Z", 24, "s1", "stuck", util=0.0)
    jobs = [job_row("loader", start=DAY + "00:00Z"), job_row("stuck", start=DAY + "00:00Z")]
    built = build_db(tmp_path / "grace", usage, jobs=jobs, progress=progress, prices=[("A100", str(PRICE))])
    got = stops(built, "idle_reclaim")
    # the loader's quiet 25 min lie in its grace (until its first epoch end, at most 30 min): not stopped
    assert sorted(got) == ["stuck"]
    # the stuck job's grace ends 30 min after its start: quiet from 00:30, stopped at 00:35, 17 intervals saved
    assert (got["stuck"]["trigger_start"], got["stuck"]["stop_at"]) == (at("00:30"), at("00:35"))
    assert got["stuck"]["saved_intervals"] == 17 and got["stuck"]["saved_cost"] == cost(17, 1)
    assert got["stuck"]["false_positive"] is False
    # without the grace the loader is stopped at 00:05, a false positive: its first loss comes later
    bare = build_db(tmp_path / "bare", usage, jobs=jobs, progress=progress, prices=[("A100", str(PRICE))],
                    policies={"idle_reclaim_startup_grace_minutes": 0})
    loader = stops(bare, "idle_reclaim")["loader"]
    assert (loader["trigger_start"], loader["stop_at"]) == (at("00:00"), at("00:05"))
    assert loader["saved_intervals"] == 23 and loader["false_positive"] is True
    assert loader["fp_reason"] == "loss 0.7000 recorded after the stop"
    assert stops(bare, "idle_reclaim")["stuck"]["stop_at"] == at("00:05")


def test_a_breaker_stretch_after_which_the_job_recovered_is_a_false_stop(tmp_path):
    # `resumer`: 1 h training (epochs 00:30 loss 1.0, 01:00 0.9), 3 h hung at 10 % with no epoch,
    # then 1 h training again (04:30 loss 0.7, 05:00 0.6). `stalled`: the same first 4 h, then it ends.
    usage, progress = [], []
    for job, gpu, tail in (("resumer", "r1", True), ("stalled", "s1", False)):
        usage += usage_run(DAY + "00:00Z", 12, gpu, job, util=90.0) + usage_run(DAY + "01:00Z", 36, gpu, job, util=10.0)
        points = [(DAY + "00:30Z", 1.0), (DAY + "01:00Z", 0.9)]
        if tail:
            usage += usage_run(DAY + "04:00Z", 12, gpu, job, util=90.0)
            points += [(DAY + "04:30Z", 0.7), (DAY + "05:00Z", 0.6)]
        progress += losses(job, points)
    built = build_db(tmp_path, usage, jobs=[job_row("resumer"), job_row("stalled", project="p2")], progress=progress,
                     prices=[("A100", str(PRICE))])
    rows = built.by("mart_breakers", "job_id")
    # both stretches (01:00-04:00, loss 0.9 -> 0.9) are candidates; the resumer later reached 0.6
    assert {j: (r["loss_before"], r["loss_after"], r["loss_later"], r["improved_later"]) for j, r in rows.items()} == {
        "resumer": (0.9, 0.9, 0.6, True), "stalled": (0.9, 0.9, None, False)}
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        from zoneinfo import ZoneInfo

        from yolocost.money import Currency
        from yolocost.report import data

        br = data.breakers(con, MONTH, None, ZoneInfo("UTC"), Currency("USD"))
    finally:
        con.close()
    # each stretch 36 intervals x 0.30; the saving net of false stops is the stalled job's alone
    assert br["cents"] == 2 * cost(36, 1) and br["net_cents"] == cost(36, 1) == Decimal("10.80")
    assert (br["false_stops"], br["net_jobs"]) == (1, 1)
    # the replay agrees: the resumer's stop (03:00) is a false positive, the stalled job's is not
    got = stops(built, "breaker")
    assert (got["resumer"]["false_positive"], got["stalled"]["false_positive"]) == (True, False)
    assert got["resumer"]["fp_reason"] == "loss 0.9000 -> 0.6000"


@pytest.fixture(scope="module")
def zombie_month(tmp_path_factory):
    """The generator's month with 9 planted zombie jobs (3 of each kind), loaded with the demo config."""
    from yolocost import synth
    from yolocost.config import load_config
    from yolocost.load import load_parquet_dir
    from yolocost.resources import shipped_dir

    folder = tmp_path_factory.mktemp("zombies")
    gen = synth.generate(folder / "data", zombies=9)
    shutil.copyfile(shipped_dir("sample_data") / "yolocost.toml", folder / "yolocost.toml")
    config = load_config(folder / "yolocost.toml")
    load_parquet_dir(config, folder / "data")
    return config, gen.ground_truth["incidents"]["zombies"]


def test_idle_reclaim_at_the_defaults_catches_every_planted_zombie_with_few_false_positives(zombie_month):
    config, zombies = zombie_month
    assert sorted({z["kind"] for z in zombies}) == ["finished", "hung", "stuck_start"] and len(zombies) == 9
    con = duckdb.connect(str(config.database), read_only=True)
    try:
        got = {r[0]: r[1:] for r in con.execute(
            "SELECT job_id, stop_at, false_positive FROM mart_policy_savings "
            "WHERE month = '2026-10' AND policy = 'idle_reclaim'").fetchall()}
    finally:
        con.close()
    planted = {z["job_id"]: dt.datetime.fromisoformat(z["idle_from"].replace("Z", "+00:00")) for z in zombies}
    caught = {j for j, (stop, _) in got.items() if j in planted and stop >= planted[j]}
    assert caught == set(planted)  # every zombie, each stopped after it stopped working
    false = [j for j in got if j not in caught]
    assert len(false) <= 0.10 * len(got)
    assert not any(fp for _, fp in got.values())  # no stopped job improved later


def test_a_saving_in_whole_gpus_is_its_gpu_hours_over_the_months_hours():
    """720 GPU-hours saved in a 30-day month free one GPU; Europe/Berlin's March has 743 hours
    (the clocks go forward), October 745; 372 GPU-hours in a 744-hour UTC March are half a GPU."""
    from zoneinfo import ZoneInfo

    from yolocost.whatif import gpus_freed, month_hours

    assert month_hours("2026-04", ZoneInfo("UTC")) == 720
    assert month_hours("2026-03", ZoneInfo("Europe/Berlin")) == 743
    assert month_hours("2026-10", ZoneInfo("Europe/Berlin")) == 745
    assert gpus_freed(Decimal("720.0"), Decimal(720)) == Decimal("1.00")
    assert gpus_freed(Decimal("372.0"), month_hours("2026-03", ZoneInfo("UTC"))) == Decimal("0.50")
    assert gpus_freed(Decimal("13000.0"), Decimal(745)) == Decimal("17.45")


def test_the_tables_show_money_in_the_currency_s_decimals_as_the_headline_does():
    # a three-decimal currency: 8.617 KWD in the headline, the project and the job rows alike
    # (tables of numbers show two decimals by default, which would print 8.62)
    job = {"job_id": "j1", "project": "p1", "user_name": "ann", "stop": "2026-03-02 00:35",
           "gpu_hours": Decimal("2.5"), "cost": Decimal("8.617"), "false_positive": False, "fp_reason": None}
    policy = {"title": "Idle reclaim", "policy": "idle_reclaim", "rule": "stop after 30 min idle",
              "net_cost": Decimal("8.617"), "net_gpu_hours": Decimal("2.5"), "gpus_freed": Decimal("0.00"),
              "jobs_stopped": 1, "false_positives": 0, "cost": Decimal("8.617"), "gpu_hours": Decimal("2.5"),
              "projects": [{"project": "p1", "jobs_stopped": 1, "false_positives": 0, "net_cost": Decimal("8.617"),
                            "gpu_hours": Decimal("2.5"), "cost": Decimal("8.617")}],
              "jobs": [job]}
    out = whatif.to_table({"currency": "KWD", "month": "2026-03", "jobs_replayed": 1, "timezone": "UTC",
                           "resolution": "Replayed at the grain of the usage rows (5 min)", "policies": [policy]})
    assert "would have saved 8.617 KWD net of false positives" in out
    assert re.search(r"^p1\s+1\s+0\s+8\.617\s+2\.5\s+8\.617$", out, re.M), out
    assert re.search(r"^j1\s+p1\s+ann\s+2026-03-02 00:35\s+2\.5\s+8\.617\s+no$", out, re.M), out
    assert "8.62" not in out
