"""The PDF's charts drawn by matplotlib from the plotly figures: every bar, point, title, axis
title and legend entry of the sample month's figures is checked against the plotly figure
the HTML report draws, and labels come through as written (CJK, `<script>`, `$`)."""

from __future__ import annotations

import datetime as dt
import html
import re

import duckdb
import matplotlib
import plotly.graph_objects as go
import pytest
from helpers.reportkit import MONTH

from yolocost.report import charts, paper, sections


@pytest.fixture(scope="module")
def figures(sample_db):
    """Every figure of the admin report and of the CJK project's report (name: plotly figure)."""
    config = sample_db.config
    con = duckdb.connect(str(sample_db.path), read_only=True)
    try:
        found = {}
        for project in (None, "视觉质检"):
            report = sections.collect(con, MONTH, project, timezone=config.timezone, grain_seconds=config.grain_seconds,
                                      currency=config.currency)
            for name, fig in sections.figures(report, config.currency, project).items():
                found[f"{project or 'admin'}:{name}"] = fig
        return found
    finally:
        con.close()


def drawn(fig: go.Figure):
    with matplotlib.rc_context(paper._rc()):
        out = paper.draw(paper.description(fig))
        out.canvas.draw_idle()
        out.savefig(__import__("io").StringIO(), format="svg")  # lays out the text (tick labels)
        return out


def plain(value) -> str:
    return html.unescape(str(value or "")).replace("<br>", "\n")


def _bar_values(trace) -> list[tuple[str, float]]:
    cats, values = (trace.y, trace.x) if trace.orientation == "h" else (trace.x, trace.y)
    return [(plain(c), float(v)) for c, v in zip(cats, values) if v is not None]


def test_every_figure_of_the_sample_month_is_covered(figures):
    names = {key.split(":", 1)[1] for key in figures}
    # each kind of chart the reports have, so the checks below meet every one
    assert {"trend", "daily", "users", "gpu_models", "image_tags", "density", "idle_waste", "leaderboard",
            "leaderboard_rank", "breakers", "tag_violations", "projects", "unallocated"} <= names
    assert any(key.startswith("视觉质检:") for key in figures)


def test_bars_have_the_figures_values_at_their_categories(figures):
    checked = 0
    for key, fig in figures.items():
        traces = [t for t in fig.data if t.type == "bar" and any(v is not None for v in
                                                                (t.x if t.orientation == "h" else t.y))]
        if not traces:
            continue
        out = drawn(fig)
        ax = out.axes[0]
        assert len(ax.containers) == len(traces), key
        horizontal = traces[0].orientation == "h"
        date_axis = fig.layout.xaxis.type == "date"
        labels = {round(t.get_position()[1 if horizontal else 0], 6): t.get_text()
                  for t in (ax.get_yticklabels() if horizontal else ax.get_xticklabels())}
        stacked = fig.layout.barmode == "stack"
        for trace, container in zip(traces, ax.containers):
            want = _bar_values(trace)
            assert len(container.patches) == len(want), key
            for (category, value), patch in zip(want, container.patches):
                length = patch.get_width() if horizontal else patch.get_height()
                assert length == pytest.approx(value, abs=1e-9), (key, category)
                center = (patch.get_y() + patch.get_height() / 2) if horizontal else (patch.get_x() + patch.get_width() / 2)
                if date_axis:  # the bar stands on its day
                    day = matplotlib.dates.num2date(center).replace(tzinfo=None)
                    assert day == dt.datetime.fromisoformat(category), key
                elif not (len(traces) > 1 and not stacked):
                    shown = labels[round(center, 6)]
                    assert shown == paper._short(category), (key, category)
                checked += 1
        if stacked:  # each category's pile adds up to the figure's values
            piles: dict[str, float] = {}
            for trace in traces:
                for category, value in _bar_values(trace):
                    piles[category] = piles.get(category, 0.0) + value
            tops: dict[float, float] = {}
            for container in ax.containers:
                for patch in container.patches:
                    at = round(patch.get_y() + patch.get_height() / 2 if horizontal else patch.get_x() + patch.get_width() / 2, 6)
                    end = patch.get_x() + patch.get_width() if horizontal else patch.get_y() + patch.get_height()
                    tops[at] = max(tops.get(at, 0.0), end)
            assert sorted(tops.values()) == pytest.approx(sorted(piles.values())), key
    assert checked > 300


def test_titles_axis_titles_and_legends_are_the_figures(figures):
    for key, fig in figures.items():
        out = drawn(fig)
        ax = out.axes[0]
        title = re.sub(r"\s+", " ", out.get_suptitle())
        assert title == plain(fig.layout.title.text), key
        xtitle, ytitle = plain(fig.layout.xaxis.title.text), plain(fig.layout.yaxis.title.text)
        assert ax.get_xlabel() == xtitle and ax.get_ylabel() == ytitle, key
        second = fig.layout.to_plotly_json().get("yaxis2")
        if second:
            assert out.axes[1].get_ylabel() == plain(second["title"]["text"]), key
        named = [plain(t.name) for t in fig.data if t.showlegend is not False and t.name is not None]
        legends = out.legends
        if fig.layout.showlegend is False or len(named) < 2 and fig.layout.showlegend is not True:
            assert not legends, key
        else:
            assert [t.get_text() for t in legends[0].get_texts()] == named, key


def test_the_trend_line_breaks_at_a_partial_month_and_sits_on_the_right_axis(figures):
    fig = figures["admin:trend"]
    out = drawn(fig)
    line_trace = next(t for t in fig.data if t.type == "scatter" and "lines" in (t.mode or ""))
    twin = out.axes[1]
    line = twin.get_lines()[0]
    ys = list(line.get_ydata())
    want = [float("nan") if v is None else float(v) for v in line_trace.y]
    assert len(ys) == len(want)
    for got, expected in zip(ys, want):
        assert (got != got and expected != expected) or got == pytest.approx(expected)


def test_log_axis_ticks_are_the_figures(figures):
    fig = figures["admin:leaderboard"]
    assert fig.layout.xaxis.type == "log"
    ax = drawn(fig).axes[0]
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == pytest.approx(list(fig.layout.xaxis.tickvals))
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fig.layout.xaxis.ticktext)
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == sum(len(t.x) for t in fig.data)


def test_labels_are_shown_as_written_and_text_stays_text():
    fig = go.Figure(go.Bar(y=[charts.esc("<script>alert(1)</script>"), charts.esc("$5 & 视觉质检")], x=[1, 2],
                           orientation="h"))
    charts._layout(fig, "Cost by project (USD) $x$ 项目", 240, showlegend=False)
    svg = paper.svg(paper.description(fig))
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "<image" not in svg
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert "<script>alert(1)</script>" in texts and "$5 & 视觉质检" in texts
    assert "Cost by project (USD) $x$ 项目" in texts  # not read as mathtext
    assert "<script>" not in svg  # escaped in the SVG markup
    assert paper.svg(paper.description(fig)) == svg  # the same chart, the same bytes


def test_long_labels_end_in_an_ellipsis_and_long_titles_wrap():
    long = "registry.example.com/team/yolo-train:" + "x" * 80
    fig = go.Figure(go.Bar(y=[long], x=[3], orientation="h"))
    charts._layout(fig, "A title " * 30, 240, showlegend=False)
    out = drawn(fig)
    label = out.axes[0].get_yticklabels()[0].get_text()
    assert label.endswith("…") and len(label) == paper.LABEL_MAX and long.startswith(label[:-1])
    assert "\n" in out.get_suptitle()


def _title_box(out):
    title = out.get_suptitle()
    [text] = [t for t in out.findobj(matplotlib.text.Text) if t.get_text() == title and t.get_text()]
    return text.get_window_extent()


@pytest.mark.parametrize("title", [
    "Cost per mAP50 point: the best and the worst 10 of 168 configurations (148 between) (USD)",
    "WWWWWWWW MMMMMMMM " * 6 + "(USD)",
    "视觉质检 项目的每日成本 " * 8,
])
def test_a_long_title_is_wrapped_inside_the_chart(title):
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    charts._layout(fig, title, 300, showlegend=False)
    out = drawn(fig)
    box = _title_box(out)
    assert box.x0 >= 0 and box.x1 <= out.bbox.width, (box, out.bbox.width)
    assert re.sub(r"\s+", " ", out.get_suptitle()).strip() == re.sub(r"\s+", " ", title).strip()


def test_every_title_of_the_sample_month_fits_its_chart(figures):
    for key, fig in figures.items():
        out = drawn(fig)
        box = _title_box(out)
        assert box.x0 >= 0 and box.x1 <= out.bbox.width, key
