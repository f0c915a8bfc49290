"""The note "fits a smaller GPU": a job whose peak GPU memory is at most 80 % of a cheaper,
smaller priced GPU model's memory names that model, the price difference per GPU-hour at the
job's end and that difference over the job's GPU-hours; in a project's job table (HTML, the
PDF listing) and in the admin report's section gpu_fit."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import build_db, job_row, usage_run
from helpers.reportkit import MONTH
from helpers.pages import cells, collect, section

from yolocost.money import Currency
from yolocost.report import ADMIN_SECTIONS, PROJECT_SECTIONS, gpufit, render_reports

A100 = "NVIDIA A100-SXM4-80GB"  # 80 GiB
PRICES = [(A100, "2026-01-01", "3.00"), (A100, "2026-10-15", "2.50"),  # the A100 gets cheaper on the 15th
          ("NVIDIA L4", "2026-01-01", "0.80"),                  # 24 GiB: holds a peak of 19,660.8 MiB
          ("NVIDIA A10G", "2026-01-01", "1.00"),                # 24 GiB too, dearer than the L4
          ("Tesla T4", "2026-01-01", "0.50"),                   # 16 GiB: holds 13,107.2 MiB
          ("NVIDIA H100 80GB HBM3", "2026-01-01", "4.00"),      # 80 GiB
          ("Mystery GPU X", "2026-01-01", "0.10"),              # memory unknown: never named
          (A100 + " 3g.40gb", "2026-01-01", "1.20")]             # a MIG profile with a price of its own


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Jobs (12 intervals of 5 minutes = 1 GPU-hour), their peak memory and the note each gets:

    p1  j-small  A100, 2 h on 1 Oct, peak 10,000 MiB  -> Tesla T4: 3.00 - 0.50 = 2.50/h x 2.0 h = 5.00
    p1  j-mid    A100, 3 h on 20 Oct, peak 15,000 MiB -> NVIDIA L4 (too big for the T4; cheaper than
                 the A10G): 2.50 - 0.80 = 1.70/h x 3.0 h = 5.10
    p1  j-edge   A100, 1 h, peak 19,660.8 MiB = 80 % of 24 GiB exactly -> NVIDIA L4: 2.20 x 1.0 = 2.20
    p1  j-over   A100, 1 h, peak 19,661 MiB: over 80 % of every 24 GiB GPU -> no note
    p1  j-cross  A100, 23:30 14 Oct to 00:30 15 Oct, peak 5,000 MiB -> Tesla T4 at the prices in
                 effect at its last interval (15 Oct): 2.50 - 0.50 = 2.00 x 1.0 h = 2.00
    p1  j-t4     Tesla T4, peak 1,000 MiB: no cheaper model of known memory -> no note
    p1  j-mig    A100 MIG 1g.10gb slice (1/7 of a GPU), peak 2,000 MiB -> no note
    p1  j-migp   A100 MIG 3g.40gb slice, priced 1.20 (a whole GPU-hour each hour), peak 5,000 MiB -> no note
    p1  j-mixed  an A100 and an L4 -> no note
    p1  j-h100   H100, peak 30,000 MiB: the A100 is cheaper but not smaller -> no note
    p1  j-multi  two A100s at once, peak 5,000 MiB: a smaller model would need a host with two -> no note
    p2  j-p2     A100, 1 h, peak 8,000 MiB -> Tesla T4: 2.50 x 1.0 = 2.50
    --  j-unl    unlabeled, A100, 1 h, peak 8,000 MiB -> Tesla T4: 2.50
    """
    usage = (usage_run("2026-10-01T00:00Z", 24, "GPU-0", "j-small", model=A100, mem=10000)
             + usage_run("2026-10-20T00:00Z", 36, "GPU-1", "j-mid", model=A100, mem=15000)
             + usage_run("2026-10-02T00:00Z", 12, "GPU-2", "j-edge", model=A100, mem=19660.8)
             + usage_run("2026-10-02T00:00Z", 12, "GPU-3", "j-over", model=A100, mem=19661)
             + usage_run("2026-10-14T23:30Z", 12, "GPU-4", "j-cross", model=A100, mem=5000)
             + usage_run("2026-10-02T00:00Z", 12, "GPU-5", "j-t4", model="Tesla T4", mem=1000)
             + usage_run("2026-10-02T00:00Z", 12, "MIG-6", "j-mig", model=A100, mig="1g.10gb", mem=2000)
             + usage_run("2026-10-02T00:00Z", 12, "MIG-12", "j-migp", model=A100, mig="3g.40gb", mem=5000)
             + usage_run("2026-10-02T00:00Z", 6, "GPU-7", "j-mixed", model=A100, mem=1000)
             + usage_run("2026-10-02T00:00Z", 6, "GPU-8", "j-mixed", model="NVIDIA L4", mem=1000)
             + usage_run("2026-10-02T00:00Z", 12, "GPU-9", "j-h100", model="NVIDIA H100 80GB HBM3", mem=30000)
             + usage_run("2026-10-04T00:00Z", 12, "GPU-13", "j-multi", model=A100, mem=5000)
             + usage_run("2026-10-04T00:00Z", 12, "GPU-14", "j-multi", model=A100, mem=5000, index=1)
             + usage_run("2026-10-03T00:00Z", 12, "GPU-10", "j-p2", model=A100, mem=8000)
             + usage_run("2026-10-03T00:00Z", 12, "GPU-11", "j-unl", model=A100, mem=8000))
    p1 = ("j-small", "j-mid", "j-edge", "j-over", "j-cross", "j-t4", "j-mig", "j-migp", "j-mixed", "j-h100", "j-multi")
    jobs = ([job_row(j, project="p1", user="alice") for j in p1]
            + [job_row("j-p2", project="p2", user="bob"), job_row("j-unl", project=None, user="carol")])
    return build_db(tmp_path_factory.mktemp("fit"), usage, jobs=jobs, prices=PRICES)


NOTES = {  # job: (model named, its GiB, difference per GPU-hour, GPU-hours, saving)
    "j-small": ("Tesla T4", 16, "2.50", "2.0", "5.00"),
    "j-mid": ("NVIDIA L4", 24, "1.70", "3.0", "5.10"),
    "j-edge": ("NVIDIA L4", 24, "2.20", "1.0", "2.20"),
    "j-cross": ("Tesla T4", 16, "2.00", "1.0", "2.00"),
    "j-p2": ("Tesla T4", 16, "2.50", "1.0", "2.50"),
    "j-unl": ("Tesla T4", 16, "2.50", "1.0", "2.50"),
}



def _plain(fit, hours):
    return (fit["model"], fit["memory_gib"], f"{fit['difference']:.2f}", f"{hours:.1f}", f"{fit['saving']:.2f}")


def test_the_memory_table_knows_models_by_their_exporter_names():
    assert gpufit.memory_gib("NVIDIA A100-SXM4-80GB") == gpufit.memory_gib("a100-sxm4-80gb") == 80
    assert gpufit.memory_gib("NVIDIA A100-SXM4-40GB") == 40 and gpufit.memory_gib("NVIDIA A10G") == 24
    assert gpufit.memory_gib("Tesla V100-SXM2-32GB") == 32 and gpufit.memory_gib("Tesla T4") == 16
    assert gpufit.memory_gib("NVIDIA L4") == 24 and gpufit.memory_gib("NVIDIA H100 80GB HBM3") == 80
    assert gpufit.memory_gib("A100") is None and gpufit.memory_gib("Mystery GPU X") is None  # a bare A100: 40 or 80
    assert gpufit.FIT_MARGIN == Decimal("0.8")


def test_the_project_job_table_notes_the_jobs_that_fit(db):
    table = collect(db, MONTH, "p1")["jobs"]
    notes = {j["job_id"]: _plain(j["fits"], j["gpu_hours"]) for j in table["rows"] if j["fits"]}
    assert notes == {k: v for k, v in NOTES.items() if k not in ("j-p2", "j-unl")}
    assert {j["job_id"] for j in table["rows"] if not j["fits"]} == {"j-over", "j-t4", "j-mig", "j-migp", "j-mixed",
                                                                      "j-h100", "j-multi"}
    migp = next(j for j in table["rows"] if j["job_id"] == "j-migp")
    assert (migp["gpu_models"], migp["gpu_hours"], migp["cost"]) == (A100, Decimal("1.0"), Decimal("1.20"))
    assert (table["fit_jobs"], table["fit_saving"]) == (4, Decimal("14.30"))  # 5.00 + 5.10 + 2.20 + 2.00
    small = next(j for j in table["rows"] if j["job_id"] == "j-small")["fits"]
    assert (small["own_price"], small["price"], small["own_memory_gib"]) == (Decimal("3.00"), Decimal("0.50"), 80)
    assert small["peak_gib"] == pytest.approx(10000 / 1024)
    assert small["text"] == "fits Tesla T4: 2.50 less per GPU-hour, 5.00 over the job"
    cross = next(j for j in table["rows"] if j["job_id"] == "j-cross")
    assert cross["cost"] == Decimal("2.75")  # half an hour at 3.00, half at 2.50: the note uses the price at its end
    assert cross["fits"]["own_price"] == Decimal("2.50")


def test_the_admin_section_lists_every_projects_jobs_by_saving(db):
    report = collect(db, MONTH, None)
    g = report["gpu_fit"]
    assert [j["job_id"] for j in g["rows"]] == ["j-mid", "j-small", "j-p2", "j-unl", "j-edge", "j-cross"]
    assert {j["job_id"]: _plain(j["fit"], j["gpu_hours"]) for j in g["rows"]} == NOTES
    assert (g["jobs"], g["gpu_hours"], g["saving"], g["other"]) == (6, Decimal("9.0"), Decimal("19.30"), None)
    assert next(j for j in g["rows"] if j["job_id"] == "j-unl")["bucket"] == "unlabeled"
    assert "gpu_fit" not in collect(db, MONTH, "p1")  # a project reads its notes in its job table
    con = duckdb.connect(str(db.path), read_only=True)
    try:
        two = gpufit.jobs_that_fit(con, MONTH, None, Currency("USD"), top=2)
    finally:
        con.close()
    assert [j["job_id"] for j in two["rows"]] == ["j-mid", "j-small"]
    assert (two["other"]["jobs"], two["other"]["gpu_hours"], two["other"]["saving"]) == (4, Decimal("4.0"),
                                                                                       Decimal("9.20"))
    assert two["saving"] == Decimal("19.30")




def test_what_to_do_names_the_jobs_that_fit_a_smaller_gpu_with_their_saving(db):
    """The saving is the section's (admin: 6 jobs, 19.30) or the job table's (p1: 4 jobs, 14.30),
    ranked among the other actions by amount; the largest single saving is j-mid's 5.10 (L4)."""
    for project, jobs, amount, sid in ((None, 6, "19.30", "gpu_fit"), ("p1", 4, "14.30", "jobs")):
        report = collect(db, MONTH, project)
        found = [a for a in report["actions"] if a["title"].startswith(f"Run {jobs} jobs on the smaller GPU")]
        assert len(found) == 1, report["actions"]
        action = found[0]
        assert (action["amount"], action["section"]) == (Decimal(amount), sid)
        assert "The largest saving is j-mid: NVIDIA L4 would have cost 5.10 USD less." in action["detail"]
        amounts = [a["amount"] for a in report["actions"]]
        assert amounts == sorted(amounts, reverse=True)


def test_the_notes_in_the_html_of_both_reports(db, tmp_path):
    assert ("gpu_fit", "Jobs that fit a smaller GPU") in ADMIN_SECTIONS and "gpu_fit" not in dict(PROJECT_SECTIONS)
    config = dataclasses.replace(db.config, report_dir=tmp_path / "out")
    result = render_reports(config, MONTH, ["admin", "project:p1"], ["html"])
    admin = (result.folder / "admin.html").read_text(encoding="utf-8")
    p1 = (result.folder / f"{result.audiences[1].stem}.html").read_text(encoding="utf-8")

    rows = cells(section(p1, "jobs"))
    col = {name: i for i, name in enumerate(rows[0])}
    by_job = {r[col["Job"]]: r for r in rows[1:-1]}
    assert by_job["j-mid"][col["Smaller GPU"]] == "fits NVIDIA L4: 1.70 less per GPU-hour, 5.10 over the job"
    assert by_job["j-edge"][col["Smaller GPU"]] == "fits NVIDIA L4: 2.20 less per GPU-hour, 2.20 over the job"
    assert by_job["j-over"][col["Smaller GPU"]] == "" and by_job["j-mig"][col["Smaller GPU"]] == ""
    assert rows[-1][col["Smaller GPU"]] == "4 jobs: 14.30 less"
    assert ('title="peak 9.8 GiB of the 80 GiB GPU; Tesla T4 has 16 GiB (the peak is at most 80 % of it); '
            '3.00 -&gt; 0.50 per GPU-hour"') in p1
    assert 'data-sort="5.10"><span' in p1  # the column sorts by the saving
    assert "4 jobs would fit a smaller GPU" in p1 and "14.30 USD less" in p1
    assert "j-p2" not in p1 and "j-unl" not in p1

    rows = cells(section(admin, "gpu_fit"))
    assert rows[0] == ["Job", "Project", "User", "GPU model", "Peak memory", "Fits", "Price difference", "GPU-hours",
                       "Saving"]
    assert rows[1] == ["j-mid", "p1", "alice", "NVIDIA A100-SXM4-80GB (80 GiB)", "14.6 GiB", "NVIDIA L4 (24 GiB)",
                       "1.70 /GPU-h", "3.0", "5.10"]
    assert rows[4] == ["j-unl", "(unlabeled)", "carol", "NVIDIA A100-SXM4-80GB (80 GiB)", "7.8 GiB",
                       "Tesla T4 (16 GiB)", "2.50 /GPU-h", "1.0", "2.50"]
    assert rows[-1] == ["Total", "6 jobs", "", "", "", "", "", "9.0", "19.30"]
    assert "6 jobs (9.0" in section(admin, "gpu_fit") and "19.30 USD less" in section(admin, "gpu_fit")


def test_the_pdf_listing_carries_the_note_in_short(db):
    table = collect(db, MONTH, "p1")["jobs"]
    listing = table["listing"]
    assert "Smaller GPU (saving)" in listing["header"]
    lines = {line.split()[0]: line for block in listing["blocks"] for line in block}
    assert "T4 (5.00)" in lines["j-small"] and "L4 (5.10)" in lines["j-mid"]
    assert "(" not in lines["j-over"].split("NVIDIA A100-SXM4-80GB", 1)[1].split("train-")[0]
    assert "4 (14.30)" in listing["total"]
