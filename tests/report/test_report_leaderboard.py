"""The value leaderboard, whole: every model config x image tag with a finished run, ranked by
cost per mAP50 point on the cent ledger's money, per project in project reports, the same in
the named query cost_per_map_leaderboard (whose `project` parameter picks one project), and
in print both ends of a long board with a line saying how many lie between.

Hand-made month (UTC, A100 at 2.93 per GPU-hour): 24 configurations (6 model configs x 4
image tags), config i with mAP50 0.30 + 0.025 i, each run one GPU-hour on its own GPU in
March 2026 for project p1 (2.93 each). Config 0 (yolov8n on tag-a) has a second run, of
project p2, that started on 28 February at 23:00 and ended on 1 March at 01:00: two
GPU-hours, 2.93 in February's ledger and 2.93 in March's, shown in March (where it ended)
at 5.86."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from helpers.builders import build_db, intervals, job_row, result_row, usage_run

from yolocost import queries, templating
from yolocost.report import charts, data

MONTH = "2026-03"
MODELS = ("yolov8n", "yolov8s", "yolov8m", "yolo11n", "yolo11s", "yolo11m")
TAGS = ("tag-a", "tag-b", "tag-c", "tag-d")
CONFIGS = [(m, t) for m in MODELS for t in TAGS]  # config i = CONFIGS[i]


def map50(i: int) -> float:
    return round(0.30 + 0.025 * i, 3)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    usage, jobs, results = [], [], []
    for i, (model, tag) in enumerate(CONFIGS):
        job = f"j{i:02d}"
        t0 = intervals("2026-03-02T00:00Z", i * 12 + 1)[-1]
        usage += usage_run(t0, 12, f"g-{job}", job)
        jobs.append(job_row(job, project="p1", model_type=model, image_tag=tag, start=t0,
                            end=intervals(t0, 13)[-1]))
        results.append(result_row(job, map50(i), map50(i) / 2))
    # config 0's second run, p2's only one: across the month boundary
    usage += usage_run("2026-02-28T23:00Z", 24, "g-x", "x1")
    jobs.append(job_row("x1", project="p2", model_type="yolov8n", image_tag="tag-a",
                        start="2026-02-28T23:00Z", end="2026-03-01T01:00Z"))
    results.append(result_row("x1", map50(0), map50(0) / 2))
    return build_db(tmp_path_factory.mktemp("board"), usage, jobs=jobs, results=results)


def boards(built) -> dict:
    con = duckdb.connect(str(built.path), read_only=True)
    try:
        return {p: data.leaderboard(con, MONTH, p, built.config.timezone, built.config.grain_seconds)
                for p in (None, "p1", "p2")}
    finally:
        con.close()


def named(built, **params) -> list[dict]:
    columns, rows = queries.run(Path(built.path), queries.resolve("cost_per_map_leaderboard"),
                                {"month": MONTH, **params})
    return [dict(zip(columns, r)) for r in rows]


def test_every_configuration_is_ranked_on_ledger_cents(built):
    board = boards(built)[None]
    assert len(board) == 24  # all of them, not the first 15
    assert [r["rank"] for r in board] == list(range(1, 25))
    # same cost per run everywhere but config 0: the best value is the best mAP50
    assert [(r["model_type"], r["image_tag"]) for r in board[:23]] == [CONFIGS[i] for i in range(23, 0, -1)]
    best, worst = board[0], board[-1]
    assert (best["model_type"], best["image_tag"], best["runs"]) == ("yolo11m", "tag-d", 1)
    assert best["cents"] == Decimal("2.93") and best["mean_cost_per_run"] == Decimal("2.93")
    assert best["cost_per_map50_point"] == pytest.approx(2.93 / 87.5)  # 0.0334857...
    # config 0: 2.93 (p1, March) + 2.93 + 2.93 (p2, February and March) = 8.79 over 2 runs
    assert (worst["model_type"], worst["image_tag"], worst["runs"]) == ("yolov8n", "tag-a", 2)
    assert worst["cents"] == Decimal("8.79")
    assert worst["mean_cost_per_run"] == Decimal("4.395")
    assert templating.money(worst["mean_cost_per_run"]) == "4.40"  # printed half up
    assert worst["cost_per_map50_point"] == pytest.approx(4.395 / 30)  # 0.1465
    assert worst["cost_per_map50_95_point"] == pytest.approx(4.395 / 15)
    assert worst["mean_gpu_hours"] == pytest.approx(1.5)


def test_a_project_sees_its_own_runs_only(built):
    found = boards(built)
    p1, p2 = found["p1"], found["p2"]
    assert len(p1) == 24 and [r["rank"] for r in p1] == list(range(1, 25))
    assert p1[-1]["runs"] == 1 and p1[-1]["cents"] == Decimal("2.93")  # p2's run left out
    assert p1[-1]["cost_per_map50_point"] == pytest.approx(2.93 / 30)
    [only] = p2
    assert (only["model_type"], only["image_tag"], only["runs"], only["rank"]) == ("yolov8n", "tag-a", 1, 1)
    assert only["cents"] == Decimal("5.86")  # both months of its one run
    assert only["cost_per_map50_point"] == pytest.approx(5.86 / 30)
    # every run's cents once: the projects' boards add up to the whole one
    assert sum(r["cents"] for r in p1 + p2) == sum(r["cents"] for r in found[None]) == Decimal("76.18")  # 24 x 2.93 + 5.86


@pytest.mark.parametrize("project", [None, "p1", "p2"])
def test_the_named_query_is_the_printed_board(built, project):
    board = boards(built)[project]
    rows = named(built, **({"project": project} if project else {}))
    assert len(rows) == len(board)
    for r, b in zip(rows, board):
        assert (r["rank"], r["model_type"], r["image_tag"], r["runs"]) == (b["rank"], b["model_type"], b["image_tag"],
                                                                           b["runs"])
        assert r["cost"] == b["cents"]  # ledger cents, summed
        assert f"{r['mean_cost_per_run']:.2f}" == templating.money(b["mean_cost_per_run"])
        assert r["cost_per_map50_point"] == pytest.approx(b["cost_per_map50_point"], abs=6e-5)
    if project is None:
        assert rows == named(built, project="all")
        assert rows[-1]["mean_cost_per_run"] == Decimal("4.40") and rows[-1]["cost"] == Decimal("8.79")
        assert rows[-1]["cost_per_map50_point"] == 0.1465  # 4.395 / 30, to 4 decimals


def test_an_unknown_project_has_an_empty_board(built):
    assert named(built, project="nobody") == []


def _section(board: list[dict], fmt: str, admin: bool = True) -> str:
    from yolocost.templating import environment

    env = environment(None, "USD")
    page = env.get_template("sections/leaderboard.html")
    return page.render(r={"leaderboard": board}, month=MONTH, fmt=fmt, leaderboard_ends=charts.LEADERBOARD_ENDS,
                       audience={"admin": admin}, chart=lambda name: f"[chart {name}]", currency="USD")


def test_print_shows_both_ends_and_says_how_many_are_between(built):
    board = boards(built)[None]
    pdf, page = _section(board, "pdf"), _section(board, "html")
    ranks = lambda text: [int(x) for x in re.findall(r"<tr><td>(\d+)</td>", text)]  # noqa: E731
    assert ranks(pdf) == list(range(1, 11)) + list(range(15, 25))  # the best 10 and the worst 10
    assert "4 configurations ranked #11 to #14" in pdf
    assert "[chart leaderboard_rank]" in pdf and "[chart leaderboard]" not in pdf  # no hover-only bubbles
    assert ranks(page) == list(range(1, 25))  # the HTML table is whole
    assert "[chart leaderboard]" in page and "[chart leaderboard_rank]" in page
    assert "#11 to #14" not in page
    # a project's board: its own runs, said so
    assert "(this project's own runs)" in _section(boards(built)["p2"], "pdf", admin=False)


def test_the_ranked_chart_is_labelled_for_paper(built):
    board = boards(built)[None]
    fig = charts.leaderboard_rank(board, "USD")
    best, gap, worst = fig.data
    assert list(best.y) == [f"#{r['rank']} {r['model_type']} · {r['image_tag']}" for r in board[:10]]
    assert list(worst.y) == [f"#{r['rank']} {r['model_type']} · {r['image_tag']}" for r in board[-10:]]
    assert list(gap.y) == ["… 4 more ranked #11 to #14 …"]
    assert best.text[0] == "0.03" and worst.text[-1] == "0.15"  # each bar names its value on paper
    assert list(fig.layout.yaxis.categoryarray) == [*best.y, *gap.y, *worst.y]
    assert fig.layout.yaxis.autorange == "reversed"  # #1 at the top
    assert "USD" in fig.layout.xaxis.title.text and "best and the worst 10 of 24" in fig.layout.title.text
    small = charts.leaderboard_rank(boards(built)["p2"], "USD")
    assert len(small.data) == 1 and list(small.data[0].y) == ["#1 yolov8n · tag-a"]
