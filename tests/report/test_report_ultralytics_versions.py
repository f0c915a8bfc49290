"""Ultralytics version share: the version an image tag names (the documented rule,
yolocost.report.data.VERSION_PATTERN, the same in the named query ultralytics_version_share),
and per version the month's jobs, GPU-hours and their share, cost, epochs and epochs per
GPU-hour, '(unknown)' for tags that name none; in both reports (a project's: its own jobs).

Hand-made month (UTC, A10G at 1.20 per GPU-hour, 12 intervals of 5 minutes = one GPU-hour):

  v1 (p1) train-yolov8-medium-cu118-u8.3.40  2 GPU-hours, 20 epochs
  v2 (p2) ultralytics-8.3.40                 1 GPU-hour,   5 epochs
  v3 (p1) ultralytics8.2.103                 1 GPU-hour,   8 epochs
  u1 (p1) train-yolov10-medium-cu118         3 GPU-hours, no epoch
  u2 (p1) latest                             1 GPU-hour,   6 epochs

  8.3.40:    2 jobs, 3.0 GPU-hours (37.5 % of 8.0), 3.60, 2 runs with 25 epochs, 25 / 3 = 8.333 per GPU-hour
  8.2.103:   1 job,  1.0 (12.5 %), 1.20, 1 run, 8 epochs, 8.0 per GPU-hour
  (unknown): 2 jobs, 4.0 (50.0 %), 4.80, 1 run (u2), 6 epochs, 6.0 per GPU-hour (u1's hours finished no epoch)
"""

from __future__ import annotations

import re
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import build_db, epoch_rows, intervals, job_row, usage_run
from helpers.pages import cells, collect, named_query

from yolocost import queries
from yolocost.report import data
from yolocost.templating import environment

MONTH = "2026-03"
D = Decimal

RULE_CASES = {
    "ultralytics-8.3.40": "8.3.40",
    "ultralytics8.3.40": "8.3.40",
    "ultralytics-v8.3.40": "8.3.40",
    "Ultralytics_8.1": "8.1",
    "train-yolov8-medium-cu118-u8.3.40": "8.3.40",
    "train-yolov8-medium-cu118-U8.3.40": "8.3.40",
    "bench-u8.2.103-cu121": "8.2.103",
    "registry/ultralytics:8.3.40": "8.3.40",
    "8.3.40-cpu": None,  # the official image's tag: the repository (ultralytics/ultralytics) is not kept
    "yolo/u8.3.40+cpu": "8.3.40",
    "train-yolov10-medium-cu118": None,  # cu118: the u follows a letter, and no dot
    "train-yolov8-medium-cu118": None,
    "v8.3.40": None,  # a bare v: maybe the image's own version
    "train-u8": None,  # one number is no version
    "u8.3.40.1": None,  # four numbers are not one
    "latest": None,
    "(empty)": None,
    "": None,
}


def test_the_rule_reads_the_version_a_tag_names():
    for tag, version in RULE_CASES.items():
        assert data.ultralytics_version(tag) == version, tag
    assert data.ultralytics_version(None) is None


def test_the_named_query_holds_the_same_rule():
    text = queries.resolve("ultralytics_version_share").sql
    [pattern] = re.findall(r"regexp_extract\(m\.image_tag,\s*'([^']+)', 1\)", text)
    assert pattern == data.VERSION_PATTERN
    con = duckdb.connect()
    try:
        got = {tag: con.execute("SELECT nullif(regexp_extract(?, ?, 1), '')", [tag, pattern]).fetchone()[0]
               for tag in RULE_CASES}
    finally:
        con.close()
    assert got == RULE_CASES  # DuckDB's RE2 reads it as Python's re does


def _job(job: str, day: int, hours: int, epochs: int) -> tuple[list[dict], list[dict]]:
    start = f"2026-03-{day:02d}T00:00Z"
    usage = usage_run(start, 12 * hours, f"g-{job}", job, model="A10G")
    progress = []
    for epoch, t in enumerate(intervals(start, epochs + 1, 300)[1:], start=1):
        progress += epoch_rows(job, epoch, t, loss=1.0 / epoch)
    return usage, progress


JOBS = {  # job: (project, tag, day, GPU-hours, epochs)
    "v1": ("p1", "train-yolov8-medium-cu118-u8.3.40", 2, 2, 20),
    "v2": ("p2", "ultralytics-8.3.40", 3, 1, 5),
    "v3": ("p1", "ultralytics8.2.103", 4, 1, 8),
    "u1": ("p1", "train-yolov10-medium-cu118", 5, 3, 0),
    "u2": ("p1", "latest", 9, 1, 6),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    usage, progress, jobs = [], [], []
    for job, (project, tag, day, hours, epochs) in JOBS.items():
        u, p = _job(job, day, hours, epochs)
        usage += u
        progress += p
        jobs.append(job_row(job, project, image_tag=tag, gpu_model="A10G"))
    return build_db(tmp_path_factory.mktemp("versions"), usage, jobs=jobs, progress=progress,
                    prices=[("A10G", "1.20")])



def named(built, **params) -> list[dict]:
    return named_query(built, "ultralytics_version_share", month=MONTH, **params)


COLUMNS = ("ultralytics_version", "jobs", "gpu_hours", "gpu_hours_share_pct", "cost", "runs_with_epochs", "epochs",
           "epochs_per_gpu_hour")


def figures(rows: list[dict]) -> list[tuple]:
    return [tuple(r[c] for c in COLUMNS) for r in rows]


def test_the_admin_report_shares_by_hand(built):
    found = collect(built, MONTH, None)["versions"]
    assert figures(found["rows"]) == [
        ("8.3.40", 2, D("3.0"), 37.5, D("3.60"), 2, 25, 8.333),
        ("8.2.103", 1, D("1.0"), 12.5, D("1.20"), 1, 8, 8.0),
        ("(unknown)", 2, D("4.0"), 50.0, D("4.80"), 1, 6, 6.0),
    ]
    assert (found["known"], found["jobs"], found["gpu_hours"], found["cents"], found["epochs"],
            found["runs_with_epochs"]) == (2, 5, D("8.0"), D("9.60"), 39, 4)
    ledger = built.value("SELECT sum(cost) FROM ledger_job_month WHERE month = ?", [MONTH])
    assert found["cents"] == ledger  # every job's ledger cents, once


def test_a_project_sees_its_own_jobs_only(built):
    assert figures(collect(built, MONTH, "p2")["versions"]["rows"]) == [("8.3.40", 1, D("1.0"), 100.0, D("1.20"), 1, 5, 5.0)]
    p1 = collect(built, MONTH, "p1")["versions"]["rows"]
    assert figures(p1) == [
        ("8.3.40", 1, D("2.0"), 28.6, D("2.40"), 1, 20, 10.0),
        ("8.2.103", 1, D("1.0"), 14.3, D("1.20"), 1, 8, 8.0),
        ("(unknown)", 2, D("4.0"), 57.1, D("4.80"), 1, 6, 6.0),
    ]


@pytest.mark.parametrize("project", [None, "p1", "p2"])
def test_the_named_query_is_the_report_table(built, project):
    rows = named(built) if project is None else named(built, project=project)
    assert rows == collect(built, MONTH, project)["versions"]["rows"]


def test_the_section_prints_the_versions(built):
    page = environment(None, "USD").get_template("sections/tag_comparison.html")
    text = page.render(r=collect(built, MONTH, None), month=MONTH, audience={"admin": True}, currency="USD",
                       fmt="html")
    versions = text[text.index("Ultralytics versions"):]
    table = cells(versions)
    assert table[0] == ["Ultralytics version", "Jobs", "GPU-hours", "Share of GPU-hours", "Cost", "Runs with epochs",
                        "Epochs", "Epochs per GPU-hour"]
    assert table[1:] == [["8.3.40", "2", "3.0", "37.5 %", "3.60", "2", "25", "8.33"],
                         ["8.2.103", "1", "1.0", "12.5 %", "1.20", "1", "8", "8.00"],
                         ["(unknown)", "2", "4.0", "50.0 %", "4.80", "1", "6", "6.00"],
                         ["Total", "5", "8.0", "100.0 %", "9.60", "4", "39", ""]]
