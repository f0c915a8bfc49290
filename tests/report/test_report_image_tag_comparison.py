"""Image tags compared: per model type x GPU model x image tag with a run that finished an epoch
in the month, epochs per GPU-hour, peak GPU memory (largest and median of the runs' peaks), how
many runs fit on one GPU at that peak, cost per epoch on the cent ledger's cents, and each tag
against the fastest of its model type x GPU model; the same rows in the named query
image_tag_comparison (project parameter) and in the admin and project reports.

Hand-made month (UTC; 12 intervals of 5 minutes = one GPU-hour; A10G at 1.20 per GPU-hour,
24 GiB = 24,576 MiB; A100 at 2.93, a bare name of unknown memory), all yolov8m:

  A10G, train-yolov8-full-cu121 (p1): f1 2 GPU-hours, 20 epochs, peak 7,372.8 MiB (7.2 GiB);
      f2 1 GPU-hour, 10 epochs, peak 6,144 MiB (6.0 GiB)
      -> 2 runs, 30 epochs, 3.0 GPU-hours, 10 epochs per GPU-hour (the fastest), peak 7.2 GiB,
         median 6.6 GiB, 24,576 / 7,372.8 = 3.33 -> 3 fit, 3.60, 0.12 per epoch
  A10G, train-yolov8-pruned-cu121 (p2): pr1 2 GPU-hours, 17 epochs, peak 4,915.2 MiB (4.8 GiB)
      -> 8.5 per GPU-hour: -15.0 % speed; 4.8 / 7.2 = -33.3 % memory; 24,576 / 4,915.2 = 5 fit;
         2.40, 2.40 / 17 = 0.1412 per epoch (the design's pruned image)
  A10G, train-yolov8-medium-cu121 (project "all"): z1 1 GPU-hour, 5 epochs, peak 6,000 MiB
      -> 5.0 per GPU-hour: -50.0 % speed; 6,000 / 7,372.8 = -18.6 % memory; 4 fit; 1.20, 0.24
  A10G, train-yolov8-fast-cu121 (p1): x1 from 28 February 23:00 to 1 March 01:00, two epochs in
      February and three in March, peak 20,000 MiB in February and 12,288 MiB (12.0 GiB) in
      March -> in March: 1 run, 3 epochs, 1.0 GPU-hour, 3.0 per GPU-hour (-70.0 % speed),
      +66.7 % memory, 2 fit, 1.20 (March's cents only), 0.40 per epoch
  A100, train-yolov8-full-cu121 (p1): a1 on two GPUs for an hour, 12 epochs, peak 8,192 MiB
      -> 2.0 GPU-hours, 6.0 per GPU-hour (the only tag: the fastest), no fit figure (memory
         unknown), 5.86, 5.86 / 12 = 0.4883 per epoch
  n1 (p1, A10G, full tag) held a GPU for an hour and finished no epoch: not shown.

All of it: 6 runs, 67 epochs, 9.0 GPU-hours, 14.26 (of the month's 15.46 held by jobs).
"""

from __future__ import annotations

import re
from decimal import Decimal

import duckdb
import pytest
from helpers.builders import build_db, epoch_rows, intervals, job_row, usage_run
from helpers.pages import cells, collect, named_query, section

from yolocost import gpumemory, queries
from yolocost.report import ADMIN_SECTIONS, PROJECT_SECTIONS, gpufit
from yolocost.report.tags import TAG_COMPARISON_PRINTED
from yolocost.resources import shipped_dir
from yolocost.templating import environment

MONTH = "2026-03"
FULL, PRUNED, MEDIUM, FAST = (f"train-yolov8-{k}-cu121" for k in ("full", "pruned", "medium", "fast"))
PRICES = [("A10G", "1.20"), ("A100", "2.93")]


def _run(start: str, hours: int, gpu: str, job: str, peak: float, model: str = "A10G") -> list[dict]:
    """`hours` of usage rows at 1,000 MiB but one at `peak` (the run's peak)."""
    rows = usage_run(start, 12 * hours, gpu, job, mem=1000.0, model=model)
    rows[len(rows) // 2]["mem_peak_mib"] = float(peak)
    return rows


def _epochs(job: str, start: str, count: int, minutes: int = 5, first: int = 1) -> list[dict]:
    """`count` epochs of `job`, one every `minutes` from `start` (numbered from `first`)."""
    rows = []
    for i, t in enumerate(intervals(start, count + 1, minutes * 60)[1:]):
        rows += epoch_rows(job, first + i, t, loss=1.0 / (first + i))
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    usage = (_run("2026-03-02T00:00Z", 2, "g1", "f1", 7372.8) + _run("2026-03-03T00:00Z", 1, "g1", "f2", 6144)
             + _run("2026-03-02T00:00Z", 2, "g2", "pr1", 4915.2) + _run("2026-03-04T00:00Z", 1, "g2", "z1", 6000)
             + _run("2026-03-05T00:00Z", 1, "g3", "a1", 8192, "A100") + _run("2026-03-05T00:00Z", 1, "g4", "a1", 4000, "A100")
             + _run("2026-03-06T00:00Z", 1, "g1", "n1", 9000))
    # x1: an hour in February (peak 20,000 MiB there), an hour in March (peak 12,288 MiB)
    usage += _run("2026-02-28T23:00Z", 1, "g5", "x1", 20000) + _run("2026-03-01T00:00Z", 1, "g5", "x1", 12288)
    jobs = [job_row("f1", "p1", image_tag=FULL, gpu_model="A10G"), job_row("f2", "p1", image_tag=FULL, gpu_model="A10G"),
            job_row("pr1", "p2", user="bob", image_tag=PRUNED, gpu_model="A10G"),
            job_row("z1", "all", user="zed", image_tag=MEDIUM, gpu_model="A10G"),
            job_row("x1", "p1", image_tag=FAST, gpu_model="A10G", start="2026-02-28T23:00Z", end="2026-03-01T01:00Z"),
            job_row("a1", "p1", image_tag=FULL, gpu_model="A100", gpu_request=2),
            job_row("n1", "p1", image_tag=FULL, gpu_model="A10G")]
    progress = (_epochs("f1", "2026-03-02T00:00Z", 20) + _epochs("f2", "2026-03-03T00:00Z", 10)
                + _epochs("pr1", "2026-03-02T00:00Z", 17) + _epochs("z1", "2026-03-04T00:00Z", 5)
                + _epochs("a1", "2026-03-05T00:00Z", 12)
                + _epochs("x1", "2026-02-28T23:00Z", 2, minutes=20) + _epochs("x1", "2026-03-01T00:00Z", 3, 15, first=3))
    return build_db(tmp_path_factory.mktemp("tags"), usage, jobs=jobs, progress=progress, prices=PRICES)



def named(built, **params) -> list[dict]:
    return named_query(built, "image_tag_comparison", month=MONTH, **params)


def by_tag(rows: list[dict]) -> dict[tuple, dict]:
    return {(r["gpu_model"], r["image_tag"]): r for r in rows}


# (GPU model, tag): runs, epochs, GPU-hours, epochs per GPU-hour, peak GiB, median GiB, fit, cents, per epoch,
# speed and memory against the fastest, in words
EXPECTED = {
    ("A10G", FULL): (2, 30, "3.0", 10.0, 7.2, 6.6, 3, "3.60", 0.12, 0.0, 0.0, "fastest"),
    ("A10G", PRUNED): (1, 17, "2.0", 8.5, 4.8, 4.8, 5, "2.40", 0.1412, -15.0, -33.3, "-15.0 % speed, -33.3 % memory"),
    ("A10G", MEDIUM): (1, 5, "1.0", 5.0, 5.86, 5.86, 4, "1.20", 0.24, -50.0, -18.6, "-50.0 % speed, -18.6 % memory"),
    ("A10G", FAST): (1, 3, "1.0", 3.0, 12.0, 12.0, 2, "1.20", 0.4, -70.0, 66.7, "-70.0 % speed, +66.7 % memory"),
    ("A100", FULL): (1, 12, "2.0", 6.0, 8.0, 8.0, None, "5.86", 0.4883, 0.0, 0.0, "fastest"),
}
COLUMNS = ("runs", "epochs", "gpu_hours", "epochs_per_gpu_hour", "peak_mem_gib", "median_peak_mem_gib", "fits_per_gpu",
           "cost", "cost_per_epoch", "speed_vs_fastest_pct", "memory_vs_fastest_pct", "versus")


# what the report adds to the query's columns: banding, the place in the group, words, a short name
ADDED = ("group", "rank_in_group", "group_size", "versus", "gpu_model_short")


def figures(row: dict) -> tuple:
    out = tuple(row[c] for c in COLUMNS)
    return tuple(Decimal(v) if c in ("gpu_hours", "cost") and isinstance(v, str) else v for c, v in zip(COLUMNS, out))


def expected(key: tuple) -> tuple:
    return tuple(Decimal(v) if c in ("gpu_hours", "cost") else v for c, v in zip(COLUMNS, EXPECTED[key]))


def test_the_admin_report_compares_every_tag_by_hand(built):
    found = collect(built, MONTH, None)["tag_comparison"]
    assert [(r["gpu_model"], r["image_tag"]) for r in found["rows"]] == [  # fastest first in each group
        ("A100", FULL), ("A10G", FULL), ("A10G", PRUNED), ("A10G", MEDIUM), ("A10G", FAST)]
    for key, row in by_tag(found["rows"]).items():
        assert figures(row) == expected(key), key
        assert row["model_type"] == "yolov8m"
    a10g = by_tag(found["rows"])[("A10G", PRUNED)]
    assert a10g["fastest_tag"] == FULL and a10g["gpu_memory_gib"] == 24
    assert by_tag(found["rows"])[("A100", FULL)]["gpu_memory_gib"] is None  # "A100" names several sizes
    assert [r["group"] for r in found["rows"]] == [1, 2, 2, 2, 2]
    assert (found["runs"], found["epochs"], found["gpu_hours"], found["cents"]) == (6, 67, Decimal("9.0"), Decimal("14.26"))


def test_money_is_the_ledger_cents_of_the_runs_in_the_month(built):
    cents = {r["job_id"]: r["cost"] for r in built.query("SELECT job_id, cost FROM ledger_job_month WHERE month = ?",
                                                         [MONTH])}
    assert cents["x1"] == Decimal("1.20")  # March's hour only; February's 1.20 is February's
    shown = sum(cents[j] for j in ("f1", "f2", "pr1", "z1", "x1", "a1"))
    assert collect(built, MONTH, None)["tag_comparison"]["cents"] == shown == Decimal("14.26")
    assert sum(cents.values()) == Decimal("15.46")  # n1 (no epoch) is the difference


@pytest.mark.parametrize("project", [None, "p1", "p2", "all"])
def test_the_named_query_is_the_report_table(built, project):
    report = collect(built, MONTH, project)["tag_comparison"]["rows"]
    if project == "all":  # the query's "all" is every project; the report of the project "all" is its own run
        assert [(r["gpu_model"], r["image_tag"], r["versus"]) for r in report] == [("A10G", MEDIUM, "fastest")]
        return
    rows = named(built) if project is None else named(built, project=project)
    assert len(rows) == len(report)
    for q, r in zip(rows, report):
        assert {k: v for k, v in r.items() if k not in ADDED} == q
    if project is None:
        assert rows == named(built, project="all")


def test_a_project_compares_its_own_runs_only(built):
    p1 = by_tag(collect(built, MONTH, "p1")["tag_comparison"]["rows"])
    assert set(p1) == {("A10G", FULL), ("A10G", FAST), ("A100", FULL)}
    assert figures(p1[("A10G", FULL)]) == expected(("A10G", FULL))
    # the fast tag against p1's own fastest (full): the same figures as the admin's, as full is fastest there too
    assert figures(p1[("A10G", FAST)]) == expected(("A10G", FAST))
    [pruned] = collect(built, MONTH, "p2")["tag_comparison"]["rows"]
    # p2's only tag: the fastest of its own runs, compared with nothing of p1's
    assert (pruned["image_tag"], pruned["versus"], pruned["speed_vs_fastest_pct"]) == (PRUNED, "fastest", 0.0)
    assert (pruned["epochs"], pruned["cost"], pruned["fits_per_gpu"]) == (17, Decimal("2.40"), 5)
    assert named(built, project="nobody") == []


def test_the_memory_table_is_gpufits(built, sample_db):
    con = duckdb.connect(str(sample_db.path), read_only=True)  # the query joins the database's view gpu_memory
    try:
        listed = con.execute("SELECT model_key, memory_gib FROM gpu_memory").fetchall()
    finally:
        con.close()
    assert {k: int(v) for k, v in listed} == gpumemory.MEMORY_BY_KEY
    # names as dcgm-exporter writes them ("NVIDIA A10G", "Tesla V100-SXM2-32GB") find their memory
    columns, found = queries.run(sample_db.path, queries.resolve("image_tag_comparison"), {"month": "2026-10"})
    rows = [dict(zip(columns, r)) for r in found]
    assert {r["gpu_model"] for r in rows} >= {"NVIDIA A10G", "Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB"}
    for r in rows:
        assert r["gpu_memory_gib"] == gpufit.memory_gib(r["gpu_model"]), r["gpu_model"]
        if r["peak_mem_gib"]:
            assert r["fits_per_gpu"] >= 1


def _section(report: dict, admin: bool = True, fmt: str = "html") -> str:
    page = environment(None, "USD").get_template("sections/tag_comparison.html")
    return page.render(r=report, month=MONTH, audience={"admin": admin}, currency="USD", fmt=fmt)


def _table(text: str) -> list[list[str]]:
    """The tag table's rows (the section's first table)."""
    return cells(text[:text.index("</table>")])


def test_the_section_prints_the_figures(built):
    text = _section(collect(built, MONTH, None))
    table = _table(text)
    assert table[0] == ["Model type", "GPU model", "GPUs per run", "Image tag", "Runs", "Epochs", "GPU-hours", "Epochs per GPU-hour",
                        "Peak memory (GiB)", "Median peak (GiB)", "Fit per GPU", "Cost", "Cost per epoch",
                        "Speed vs fastest", "Peak memory vs fastest"]
    assert table[1:-1] == [
        ["yolov8m", "A100", "2", FULL, "1", "12", "2.0", "6.00", "8.00", "8.00", "", "5.86", "0.49", "fastest", ""],
        ["yolov8m", "A10G", "1", FULL, "2", "30", "3.0", "10.00", "7.20", "6.60", "3", "3.60", "0.12", "fastest", ""],
        ["yolov8m", "A10G", "1", PRUNED, "1", "17", "2.0", "8.50", "4.80", "4.80", "5", "2.40", "0.14", "-15.0 %", "-33.3 %"],
        ["yolov8m", "A10G", "1", MEDIUM, "1", "5", "1.0", "5.00", "5.86", "5.86", "4", "1.20", "0.24", "-50.0 %", "-18.6 %"],
        ["yolov8m", "A10G", "1", FAST, "1", "3", "1.0", "3.00", "12.00", "12.00", "2", "1.20", "0.40", "-70.0 %", "+66.7 %"]]
    assert table[-1] == ["Total", "", "", "5 tags", "6", "67", "9.0", "", "", "", "", "14.26", "", "", ""]
    assert "Images per second are not shown: no table records them" in text
    assert "(this project's own runs)" in _section(collect(built, MONTH, "p2"), admin=False)


def test_print_shows_the_fastest_tags_of_each_group_and_says_how_many_are_left(built):
    report = collect(built, MONTH, None)
    assert report["tag_comparison"]["printed_per_group"] == TAG_COMPARISON_PRINTED == 3
    printed = _section(report, fmt="pdf")
    # the PDF prints the rows as aligned text (a table of hundreds of rows is slow to lay out)
    assert "<table" not in printed.split("<h3>", 1)[0]
    lines = [line for block in re.findall(r'<pre class="listing"[^>]*>(.*?)</pre>', printed, re.S)
             for line in block.splitlines()]
    header, *rows, rule, total = lines
    assert header.split()[:6] == ["Model", "type", "GPU", "model", "GPUs", "Image"]
    tags = [next(t for t in (FULL, PRUNED, MEDIUM, FAST) if t in line) for line in rows[:-1]]
    assert tags == [FULL, FULL, PRUNED, MEDIUM]  # A10G's slowest (fast) left out
    assert rows[-1].strip() == "… 1 slower tag of yolov8m on A10G (not printed: see the HTML report) …"
    assert set(rule) == {"-"} and total.startswith("Total") and " 5 tags " in total
    assert total.split()[-1] == "14.26"  # the total is every tag's (nothing after the cost)
    html_rows = {(r[1], r[3]): r for r in _table(_section(report))[1:-1]}
    for line in rows[:-1]:  # the same figures as the HTML table, in its order
        words = line.split()
        row = html_rows[(next(g for g in ("A100", "A10G") if g in words), words[3])]
        figures = [c for c in row[4:13] if c]  # runs .. cost per epoch (a blank fit takes no word)
        assert words[4:4 + len(figures)] == figures, (line, row)
    assert "Printed: the 3 fastest tags of each group" in printed
    assert "Printed:" not in _section(report) and "slower tag" not in _section(report)


def test_admin_and_project_reports_show_the_section(built, tmp_path):
    import dataclasses

    from yolocost.report import render_reports

    assert ("tag_comparison", "Image tags compared") in ADMIN_SECTIONS
    assert ("tag_comparison", "Image tags compared") in PROJECT_SECTIONS
    config = dataclasses.replace(built.config, report_dir=tmp_path)
    result = render_reports(config, MONTH, ["admin", "project:p2"], ["html"])
    pages = {p.name: p.read_text(encoding="utf-8") for p in result.files if p.suffix == ".html"}
    admin = cells(section(pages["admin.html"], "tag_comparison"))
    assert len(admin) == 1 + 5 + 1 and admin[-1][11] == "14.26"
    mine = section(pages["project-p2.html"], "tag_comparison")
    assert [r[3] for r in cells(mine)[1:-1]] == [PRUNED]
    assert FULL not in mine and "p1" not in mine


def test_the_shipped_query_lists_no_images_per_second():
    text = (shipped_dir("queries") / "image_tag_comparison.sql").read_text(encoding="utf-8")
    assert "images_per_second" not in text.split("WITH", 1)[1]
