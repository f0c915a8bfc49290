"""No stale figure leaves the tool, and an archived month keeps its own currency.

A month's figures depend on its usage rows and on the config it was built with (prices,
time zone, thresholds, policies, currency: its fingerprint in month_builds). A read command
(`report`, `export finance`, `whatif`, a named query of a month, `estimate`) compares the
month's fingerprint with the config: a month built otherwise is refused with one line naming
what changed and the command that rebuilds it, and nothing is written. An archived month is
final: it is shown as built, in the currency it was built in, whatever the config says now.

Each database here is October 2026 (UTC) on two A10G GPUs, loaded with the real loader; the
commands run through the real CLI.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.builders import assert_one_line_error, job_row, result_row, usage_run, write_raw, yolocost

from yolocost.config import load_config
from yolocost.load import load_parquet_dir

MONTH = "2026-10"
GENERATED = re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
DOCUMENTS = "html,summary,csv,index"


def toml(price: str = "1.50", timezone: str = "UTC", currency: str = "USD", extra: str = "") -> str:
    return (f'[cluster]\nname = "c1"\ntimezone = "{timezone}"\ncurrency = "{currency}"\n'
            '[database]\npath = "yolocost.duckdb"\n[reports]\noutput_dir = "reports"\n'
            f'[[prices]]\ngpu_model = "A10G"\nprice_per_gpu_hour = "{price}"\n{extra}')


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A database of October 2026: two A10G jobs on its first day (one of them idle for hours) and
    one of the GPUs present all month, built with the config in folder/yolocost.toml (A10G at
    1.50 USD)."""
    usage = usage_run("2026-10-01T00:00Z", 24, "GPU-0", "job-1", model="A10G")
    usage += usage_run("2026-10-01T00:00Z", 36, "GPU-1", "job-2", model="A10G", util=1.0, index=1)
    usage += usage_run("2026-10-01T02:00Z", 31 * 288 - 24, "GPU-0", None, model="A10G")  # the whole month
    jobs = [job_row("job-1", gpu_model="A10G", end="2026-10-01T02:00Z", epochs=10),
            job_row("job-2", project="p2", gpu_model="A10G", end="2026-10-01T03:00Z", epochs=10)]
    raw = write_raw(tmp_path / "raw", usage, jobs, results=[result_row("job-1", 0.5, 0.3, 10)])
    (tmp_path / "yolocost.toml").write_text(toml(), encoding="utf-8")
    load_parquet_dir(load_config(tmp_path / "yolocost.toml"), raw)
    return tmp_path


def run(folder: Path, *argv: str):
    return yolocost(*argv, cwd=folder)


def files(folder: Path) -> dict[str, bytes]:
    """Every file under the reports folder, by path, with the minute it was generated masked."""
    root = folder / "reports"
    return {str(p.relative_to(root)): GENERATED.sub(b"(time)", p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()} if root.exists() else {}


def finance(folder: Path) -> bytes:
    return (folder / "reports" / MONTH / f"finance-{MONTH}.csv").read_bytes()


def test_an_unchanged_config_gives_the_same_documents_byte_for_byte(folder):
    first = run(folder, "report", "--month", MONTH, "--format", DOCUMENTS)
    assert first.returncode == 0, first.stderr
    before = files(folder)
    again = run(folder, "report", "--month", MONTH, "--format", DOCUMENTS)
    assert again.returncode == 0 and files(folder) == before, again.stderr
    export = run(folder, "export", "finance", "--month", MONTH)
    assert export.returncode == 0 and export.stderr == "", export.stderr
    assert files(folder) == before
    for argv in (("whatif", "--month", MONTH), ("query", "top_idle_wasters", "--param", f"month={MONTH}"),
                 ("estimate", "--model-type", "yolov8m")):
        assert run(folder, *argv).returncode == 0, argv


@pytest.mark.parametrize(("config", "changed"), [
    (toml(price="15.00"), "price of A10G 1.5 (the config: 15)"),
    (toml(timezone="Asia/Tokyo"), "cluster.timezone 'UTC' (the config: 'Asia/Tokyo')"),
    (toml(extra="[thresholds]\nbusy_util_percent = 60\n"), "thresholds.busy_util_percent 70 (the config: 60)"),
    (toml(extra="[policies]\nidle_reclaim_minutes = 30\n"), "policies.idle_reclaim_minutes 5 (the config: 30)"),
    (toml(currency="EUR"), "cluster.currency 'USD' (the config: 'EUR')"),
], ids=["price x10", "time zone", "threshold", "policy", "currency"])
def test_a_month_built_with_another_config_is_refused_and_nothing_is_written(folder, config, changed):
    assert run(folder, "report", "--month", MONTH, "--format", DOCUMENTS).returncode == 0
    before, csv = files(folder), finance(folder)
    (folder / "yolocost.toml").write_text(config, encoding="utf-8")
    rebuild = f"run `yolocost build --month {MONTH}` to rebuild it"
    for argv in (("report", "--month", MONTH, "--format", DOCUMENTS),
                 ("export", "finance", "--month", MONTH),
                 ("export", "finance", "--month", MONTH, "-o", "elsewhere.csv"),
                 ("whatif", "--month", MONTH),
                 ("query", "top_idle_wasters", "--param", f"month={MONTH}")):
        line = assert_one_line_error(run(folder, *argv), f"{MONTH} was built with {changed}: its stored figures "
                                                         "are stale", rebuild)
        assert "\n" not in line, argv
    assert files(folder) == before and not (folder / "elsewhere.csv").exists()

    estimate = run(folder, "estimate", "--model-type", "yolov8m")
    if changed.startswith("price"):  # the estimate prices with the config's prices: not stale
        assert estimate.returncode == 0, estimate.stderr
    else:
        assert_one_line_error(estimate, f"yolocost estimate: {MONTH} was built with {changed}", "`yolocost build`")

    built = run(folder, "build")
    assert built.returncode == 0, built.stderr
    export = run(folder, "export", "finance", "--month", MONTH)
    assert export.returncode == 0, export.stderr
    if changed.startswith(("price", "cluster.currency")):
        assert finance(folder) != csv


def test_an_archived_month_is_shown_as_built_in_its_own_currency(folder):
    """Pruned, the month is final: a config that now says EUR changes none of its documents,
    and the commands label its USD figures USD (saying that it is shown as built)."""
    (folder / "yolocost.toml").write_text(toml(extra="[ingest]\nretention_days = 7\n"), encoding="utf-8")
    assert run(folder, "prune", "--as-of", "2026-11-20").returncode == 0
    assert run(folder, "report", "--month", MONTH, "--format", DOCUMENTS).returncode == 0
    before = files(folder)
    whatif_usd = run(folder, "whatif", "--month", MONTH).stdout
    assert "USD" in whatif_usd

    (folder / "yolocost.toml").write_text(toml(currency="EUR", extra="[ingest]\nretention_days = 7\n"),
                                          encoding="utf-8")
    assert_one_line_error(run(folder, "build"), "currency is 'EUR', but the database holds archived months")
    report = run(folder, "report", "--month", MONTH, "--format", DOCUMENTS)
    assert report.returncode == 0, report.stderr
    assert files(folder) == before  # every document as built: USD labels, not EUR
    assert b"EUR" not in b"".join(before.values())

    whatif = run(folder, "whatif", "--month", MONTH)
    assert whatif.returncode == 0 and "EUR" not in whatif.stdout, whatif.stdout
    note = f"Note: {MONTH} is archived (its usage rows were pruned on 2026-11-20): shown as built, with " \
           "cluster.currency 'USD' (the config says otherwise); its figures are final."
    assert whatif.stdout == whatif_usd.replace("\n\n", f"\n{note}\n\n", 1)

    export = run(folder, "export", "finance", "--month", MONTH)
    assert export.returncode == 0 and "USD)" in export.stdout and "EUR" not in export.stdout, export.stdout
    assert f"{MONTH} is archived" in export.stderr and "cluster.currency 'USD'" in export.stderr
    assert files(folder) == before


def test_a_month_built_by_an_older_yolocost_asks_for_a_rebuild_not_an_old_config(folder):
    """A database built before a setting existed: its build record has no such setting and other
    model definitions. No config the user could write reads it; the one line says to rebuild."""
    import json

    import duckdb

    con = duckdb.connect(str(folder / "yolocost.duckdb"))
    try:
        doc = json.loads(con.execute("SELECT built_with FROM month_builds WHERE month = ?", [MONTH]).fetchone()[0])
        settings = doc["settings"]
        dropped = "idle_reclaim_grace_seconds"
        del settings[dropped]
        doc["models"] = "an older version"
        con.execute("UPDATE month_builds SET built_with = ?, fingerprint = 'older' WHERE month = ?",
                    [json.dumps(doc), MONTH])
    finally:
        con.close()
    line = assert_one_line_error(run(folder, "export", "finance", "--month", MONTH),
                                 f"{MONTH} was built by an older yolocost (no policies.idle_reclaim_startup_grace_minutes",
                                 "a setting added since (now 30); other model definitions",
                                 f"run `yolocost build --month {MONTH}` to rebuild it")
    assert "use the config it was built with" not in line
    assert run(folder, "build").returncode == 0
    assert run(folder, "export", "finance", "--month", MONTH).returncode == 0
